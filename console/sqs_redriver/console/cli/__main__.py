"""``python -m sqs_redriver.console.cli``: the same as the ``sqs-redriver`` console script."""

from sqs_redriver.console.cli import main

main()
