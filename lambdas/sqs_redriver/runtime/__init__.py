"""The smart DLQ re-driver: circuit breaker, backoff, per-message counts and poison isolation."""
