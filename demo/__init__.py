"""`make demo`: the whole re-drive loop on a laptop, on the real template, with no AWS account."""

import sys
from pathlib import Path

# The handlers run in-process; Lambda puts the code asset's root (lambdas/) on sys.path, so do we.
LAMBDAS_DIR = str(Path(__file__).resolve().parent.parent / "lambdas")
if LAMBDAS_DIR not in sys.path:
    sys.path.insert(0, LAMBDAS_DIR)
