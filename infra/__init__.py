"""CDK constructs and stacks of the smart DLQ re-driver.

The settings schema lives with the Lambda code, which imports itself as ``redriver.*`` because
Lambda puts the code asset's root on its path. In the repository, infra/ runs from the repository
root (``python app.py``, ``cdk synth``), so it puts lambdas/ on the path too and imports the schema
under the same name: one module, one set of classes, not a second copy under ``lambdas.redriver``.

Installed from the wheel, this package is ``sqs_redriver.infra`` and ``redriver``, ``redriver_kit``
are top-level packages in site-packages: there is no lambdas/ and nothing to add to the path.
"""

import sys
from pathlib import Path

LAMBDAS_DIR = Path(__file__).resolve().parent.parent / "lambdas"
if __name__ == "infra" and LAMBDAS_DIR.is_dir() and str(LAMBDAS_DIR) not in sys.path:
    sys.path.append(str(LAMBDAS_DIR))
