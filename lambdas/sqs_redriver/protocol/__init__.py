"""What the parts of the re-driver agree on, and nothing else: the mark a re-driven message carries
(``mark``, ``envelope``), the consumer's verdicts and failures (``failure``), the state table's keys
(``keys``), the limits of SQS and DynamoDB (``sqs_limits``, ``message_limits``), and the settings a
construct hands its functions (``settings``). Pure Python: it imports neither the runtime, the kit,
the construct nor the console, so each of them can depend on it."""
