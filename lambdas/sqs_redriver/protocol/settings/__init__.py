"""The settings schema: every setting's name, environment variable, kind and default, and the rules
across settings. The construct checks its props with it at synth; the runtime loads its environment
with it at cold start (``sqs_redriver.runtime.settings``)."""
