"""What the parts of the re-driver agree on, and nothing else: the mark a re-driven message carries
(``mark``, ``envelope``), the consumer's verdicts and failures (``failure``), the state table's keys
(``keys``), every limit of AWS, of a mark and of a state record (``limits``), the settings schema
(``settings``), the checks of untrusted JSON they share (``wire``, ``str_enum`` for Python 3.10),
and the one redaction of any text that may be shown (``redact``). Pure Python: it imports neither
the runtime, the kit, the construct nor the console, so each of them can depend on it."""
