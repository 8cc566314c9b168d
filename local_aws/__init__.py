"""AWS on this machine, shared by the demo, the bench and the tests: moto, the synthesized stack
deployed into it, and the helpers all three need (events, queues, resources, client proxies, a
re-driver composed for local use). Free of pytest, so the demo and the bench can import it.

The handler packages (``sqs_redriver.runtime``, ``consumer``) import as they do in Lambda: the
editable install (``make install``) puts lambdas/ on the path, as Lambda puts the code asset's root.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAMBDAS_DIR = ROOT / "lambdas"

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
