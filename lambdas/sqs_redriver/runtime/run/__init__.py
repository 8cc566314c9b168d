"""One scheduled run: the gate, the batch loop and its parallel workers."""
