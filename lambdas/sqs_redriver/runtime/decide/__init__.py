"""Pure decisions: values in, decision out. Nothing here calls AWS or reads a clock."""
