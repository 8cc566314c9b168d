"""The operator's tool: the ``sqs-redriver`` command (``cli``) and what it reads and moves."""
