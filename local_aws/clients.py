"""Stand-ins for boto3 clients: a proxy that forwards to a real client everything it does not
replace, and the one moto needs for parallel receives."""

from __future__ import annotations

import threading
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


class AtomicReceive(ClientProxy):
    """A client whose receives are serialized. SQS hides a message in the same step that returns
    it; moto does not (two threads can both take a message before either marks it received), in
    process or behind its server. Parallel batches against moto need this; against SQS they do not."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self._lock = threading.Lock()

    def receive_message(self, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.receive_message(**kwargs)
