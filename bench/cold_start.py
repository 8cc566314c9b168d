"""Cold start: fresh interpreters of a runtime-only venv, in the environment Lambda gives the
re-drive function, timed importing the handler (and bare boto3 to compare)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from local_aws import LAMBDAS_DIR, REGION, ROOT
from local_aws.cloudformation import deploy

# Built by `make bench-venv` from bench/runtime-requirements.txt: only what the Lambda runtime and
# the Powertools layer provide, so imports cost what they would there (the development venv holds
# the CDK, moto and more, which slows package discovery).
RUNTIME_VENV = ROOT / ".bench-venv"
RUNTIME_STAMP = RUNTIME_VENV / ".installed"
MAKE_TARGET = "make bench-venv"

# The target compares the imports; the client rows show what the first invocation adds (the
# handler creates its clients then, not at import).
COLD_START_STATEMENTS = {
    "boto3": "import boto3",
    "sqs_redriver.runtime.handler": "import sqs_redriver.runtime.handler",
    "boto3 + sqs and dynamodb clients": "import boto3; boto3.client('sqs'); boto3.client('dynamodb')",
    "the handler + its runtime (clients)": "import sqs_redriver.runtime.handler as h; h._runtime()",
}


def runtime_python() -> str:
    """The runtime-only venv's interpreter; fails, naming the make target, when it is not built."""
    if not RUNTIME_STAMP.exists():
        raise SystemExit(
            f"the bench times cold starts in a venv with only the Lambda runtime's packages, "
            f"{RUNTIME_VENV.name}/, which is missing or incomplete: build it with `{MAKE_TARGET}` "
            f"(`make bench` builds it first)"
        )
    return str(RUNTIME_VENV / "bin" / "python")


def lambda_environment() -> dict[str, str]:
    """The environment Lambda gives the re-drive function: its own variables, read back from the
    default stack deployed into moto, and what the runtime sets. LAMBDA_TASK_ROOT matters most: it
    tells the X-Ray SDK it runs in Lambda, where it samples locally; elsewhere it builds a
    centralized-sampling client at import. Credentials come from variables, as in Lambda (without
    them botocore would search files and the instance metadata service when creating a client)."""
    function = deploy({}).redriver
    return {
        "PATH": os.environ["PATH"],
        # Lambda's /var/task, imitated: the code asset's root on the path (this venv has no install).
        "PYTHONPATH": str(LAMBDAS_DIR),
        "LAMBDA_TASK_ROOT": str(LAMBDAS_DIR),
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "_HANDLER": function.handler,
        **function.environment,
    }


def cold_start_ms(statement: str, repeats: int, environment: dict[str, str]) -> float:
    """Median wall time of a fresh runtime interpreter running ``statement`` in ``environment``,
    minus an empty interpreter."""
    python = runtime_python()

    def timed(code: str) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run([python, "-c", code], env=environment, check=True)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    return round((timed(statement) - timed("pass")) * 1000, 1)


def cold_starts(repeats: int, environment: dict[str, str]) -> dict[str, float]:
    return {
        name: cold_start_ms(statement, repeats, environment)
        for name, statement in COLD_START_STATEMENTS.items()
    }
