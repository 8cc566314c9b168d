"""Stand-ins for boto3 clients: a proxy that forwards to a real client everything it does not
replace, and the one moto needs for parallel receives."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any


class ClientProxy:
    """Proxies a boto3 client: an operation given in ``overrides`` (or defined by a subclass)
    replaces the client's, everything else is the client's own."""

    def __init__(self, client: Any, **overrides: Callable[..., Any]) -> None:
        self._client = client
        self._overrides = overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._client, name)


class Counted(ClientProxy):
    """A client that counts the calls made through it, by operation (the client's method name),
    in ``calls``; shared by threads. Calls still go through the client (or proxy) it wraps."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = super().__getattr__(name)
        if name.startswith("_") or name in {"meta", "exceptions"} or not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            return attribute(*args, **kwargs)

        return counted


class Serialized(ClientProxy):
    """A client whose chosen operations run one at a time across threads."""

    def __init__(self, client: Any, *operations: str) -> None:
        lock = threading.Lock()

        def serialized(operation: Callable[..., Any]) -> Callable[..., Any]:
            def call(**kwargs: Any) -> Any:
                with lock:
                    return operation(**kwargs)

            return call

        super().__init__(client, **{name: serialized(getattr(client, name)) for name in operations})


class AtomicReceive(Serialized):
    """SQS hides a message in the same step that returns it; moto does not (two threads can both
    take a message before either marks it received), in process or behind its server. Parallel
    batches against moto need receives serialized; against SQS they do not. The bench and the demo
    use this one: it adds no wait to the other calls."""

    def __init__(self, client: Any) -> None:
        super().__init__(client, "receive_message")


class AtomicQueueCalls(Serialized):
    """As AtomicReceive, and deletes and visibility changes serialized with the receives too:
    moto's receive scans the in-flight messages while another thread's delete changes them, which
    failed about once in 500 parallel test runs. The simulation uses this one (the tests run
    parallel workers in lockstep instead, one at a time)."""

    def __init__(self, client: Any) -> None:
        super().__init__(
            client,
            "receive_message",
            "delete_message",
            "delete_message_batch",
            "change_message_visibility",
            "change_message_visibility_batch",
        )
