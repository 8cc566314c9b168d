"""One scheduled run and its phases: the gate, the steps of each mode, the batch drain and its
parallel workers, the retention sweep, the continuation and the run history (runner.py orders them)."""
