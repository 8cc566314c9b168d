"""CDK constructs and stacks of the smart DLQ re-driver.

The settings schema lives with the Lambda code, which imports itself as ``redriver.*`` because
Lambda puts the code asset's root, lambdas/, on its path. infra/ runs from the repository root
(``python app.py``, ``cdk synth``), so it puts lambdas/ on the path too and imports the schema under
the same name: one module, one set of classes, not a second copy under ``lambdas.redriver``.
"""

import sys
from pathlib import Path

LAMBDAS_DIR = Path(__file__).resolve().parent.parent / "lambdas"
if str(LAMBDAS_DIR) not in sys.path:
    sys.path.append(str(LAMBDAS_DIR))
