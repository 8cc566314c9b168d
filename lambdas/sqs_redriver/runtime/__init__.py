"""The re-drive Lambda: a module per feature of docs/design.md (docs/layout.md lists them, with the
path of one run); its entry point is ``handler.lambda_handler``."""
