"""AWS on this machine, shared by the demo, the bench and the tests: moto, the synthesized stack
deployed into it, and the helpers all three need (events, queues, resources, client proxies, a
re-driver composed for local use). Free of pytest, so the demo and the bench can import it.

Importing it puts ``lambdas/`` on sys.path, as Lambda puts the code asset's root there, so the
handler packages (``redriver``, ``consumer``) import as they do in Lambda.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAMBDAS_DIR = ROOT / "lambdas"
if str(LAMBDAS_DIR) not in sys.path:
    sys.path.insert(0, str(LAMBDAS_DIR))

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
