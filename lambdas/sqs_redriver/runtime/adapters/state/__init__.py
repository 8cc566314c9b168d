"""The state table's adapters, one per record kind, each behind its port in adapters/ports.py;
adapters/state_table.py puts them together over one client.

Every item read is parsed once by adapters/records/; a corrupt one is reported (a log line naming
its key, the CorruptRecords metric) and meets the fixed fate its kind has here (docs/decisions.md).
"""
