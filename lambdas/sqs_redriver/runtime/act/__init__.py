"""Carrying out decisions through the adapters: records, sends, parkings, deletes, breaker writes."""
