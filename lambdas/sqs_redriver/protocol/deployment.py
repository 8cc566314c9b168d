"""How the operator's tool finds a deployment: the construct publishes a stack output with this
description, and the tool lists the stacks' outputs looking for it."""

OUTPUT_DESCRIPTION = "sqs-redriver deployment (read by the sqs-redriver command-line tool)"
