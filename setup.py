"""The wheel's package list; pyproject.toml holds everything else, the folder of each package too.

pyproject.toml can find packages or list them, not both: infra/ ships as ``sqs_redriver.infra`` (a
folder mapped under another package's name, which no search finds), and every other package is
found, so a new subpackage of sqs_redriver, redriver or redriver_kit needs no edit here.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["sqs_redriver", "sqs_redriver.*"]),
        "sqs_redriver.infra",
        *find_packages("lambdas", include=["redriver", "redriver.*", "redriver_kit", "redriver_kit.*"]),
    ]
)
