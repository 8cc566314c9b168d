"""CDK constructs and stacks of the smart DLQ re-driver."""
