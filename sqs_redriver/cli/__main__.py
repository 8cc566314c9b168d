"""``python -m sqs_redriver.cli``: the same as the ``sqs-redriver`` console script."""

from sqs_redriver.cli import main

main()
