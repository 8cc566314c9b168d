"""Which failures are worth retrying: the rules a consumer configures, applied to one exception.

Pure: an exception in, a FailureKind out. The order, first match wins:

1. the user's predicates (``exc -> FailureKind | None``), in the order given;
2. the exception's class: the most specific class of its MRO that a rule names (the user's types,
   ``TerminalError`` / ``TransientError``, and the built-in transient types; a user rule for the
   same class replaces a built-in one);
3. the built-in predicates: botocore ``ClientError`` codes of throttling and 5xx;
4. its ``__cause__`` (``raise Domain(...) from exc``), classified by the same rules: a wrapped
   timeout stays transient unless a rule names the wrapper;
5. ``unknown`` (terminal unless configured otherwise).

Whatever the exception: a predicate that raises, or answers something that is not a FailureKind,
has no opinion, and an exception whose attributes lie (a ``ClientError`` without a response dict) is
judged by the rules that can read it; classifying never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from sqs_redriver.protocol.failure import FailureKind

Predicate = Callable[[BaseException], FailureKind | None]
ExceptionTypes = Iterable[type[BaseException]]

# How deep a chain of causes is followed (chains are short; this only guards against cycles).
MAX_CAUSE_DEPTH = 8

# AWS error codes that mean "try again later", whichever service raised them.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "SlowDown",
        "PriorRequestNotComplete",
        "TransactionInProgressException",
        "EC2ThrottledException",
        "RequestTimeout",
        "RequestTimeoutException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "KMSThrottlingException",
    }
)


class TerminalError(Exception):
    """Raise it (or a subclass) when a message will never succeed as it is."""


class TransientError(Exception):
    """Raise it (or a subclass) when trying the message again later may succeed."""


BUILTIN_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    TimeoutError,
    ConnectionError,
    BotocoreConnectionError,  # connect timeouts, endpoint unreachable, proxy errors
    ConnectionClosedError,
    ReadTimeoutError,
)


def aws_transient_error(exc: BaseException) -> FailureKind | None:
    """Transient for a botocore ClientError of throttling or an HTTP 5xx, else no opinion."""
    response = getattr(exc, "response", None) if isinstance(exc, ClientError) else None
    if not isinstance(response, Mapping):
        return None
    error, metadata = response.get("Error"), response.get("ResponseMetadata")
    code = error.get("Code") if isinstance(error, Mapping) else None
    status = metadata.get("HTTPStatusCode") if isinstance(metadata, Mapping) else None
    if (isinstance(code, str) and code in TRANSIENT_ERROR_CODES) or (
        isinstance(status, int) and 500 <= status <= 599
    ):
        return FailureKind.TRANSIENT
    return None


BUILTIN_PREDICATES: tuple[Predicate, ...] = (aws_transient_error,)


@dataclass(frozen=True)
class Classifier:
    """Classification rules; build one with ``Classifier.of(...)``."""

    types: Mapping[type[BaseException], FailureKind] = field(default_factory=dict)
    predicates: tuple[Predicate, ...] = ()
    fallback_predicates: tuple[Predicate, ...] = BUILTIN_PREDICATES
    unknown: FailureKind = FailureKind.TERMINAL

    @classmethod
    def of(
        cls,
        *,
        terminal: ExceptionTypes = (),
        transient: ExceptionTypes = (),
        predicates: Iterable[Predicate] = (),
        unknown: FailureKind = FailureKind.TERMINAL,
        builtin_transient: bool = True,
    ) -> Classifier:
        """Rules from exception types, predicates and a default; ``builtin_transient=False`` drops
        the built-in transient rules (timeouts, connection errors, AWS throttling and 5xx)."""
        terminal, transient = tuple(terminal), tuple(transient)
        both = set(terminal) & set(transient)
        if both:
            names = ", ".join(sorted(t.__qualname__ for t in both))
            raise ValueError(f"exception types both terminal and transient: {names}")
        for kind_type in (*terminal, *transient):
            if not (isinstance(kind_type, type) and issubclass(kind_type, BaseException)):
                raise TypeError(f"not an exception class: {kind_type!r}")
        types: dict[type[BaseException], FailureKind] = {}
        if builtin_transient:
            types.update(dict.fromkeys(BUILTIN_TRANSIENT_TYPES, FailureKind.TRANSIENT))
        types[TerminalError] = FailureKind.TERMINAL
        types[TransientError] = FailureKind.TRANSIENT
        types.update(dict.fromkeys(terminal, FailureKind.TERMINAL))
        types.update(dict.fromkeys(transient, FailureKind.TRANSIENT))
        return cls(
            types=MappingProxyType(types),
            predicates=tuple(predicates),
            fallback_predicates=BUILTIN_PREDICATES if builtin_transient else (),
            unknown=FailureKind(unknown),
        )

    def classify(self, exc: BaseException) -> FailureKind:
        """The kind of failure ``exc`` is (see the module's docstring for the order of rules)."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen and len(seen) < MAX_CAUSE_DEPTH:
            seen.add(id(current))
            kind = self._match(current)
            if kind is not None:
                return kind
            current = _cause(current)
        return self.unknown

    def _match(self, exc: BaseException) -> FailureKind | None:
        for predicate in self.predicates:
            kind = _opinion(predicate, exc)
            if kind is not None:
                return kind
        for klass in type(exc).__mro__:
            if klass in self.types:
                return self.types[klass]
        for predicate in self.fallback_predicates:
            kind = _opinion(predicate, exc)
            if kind is not None:
                return kind
        return None


def _cause(exc: BaseException) -> BaseException | None:
    try:
        cause = exc.__cause__
    except Exception:  # a class may override it with a property that raises
        return None
    return cause if isinstance(cause, BaseException) else None


def _opinion(predicate: Predicate, exc: BaseException) -> FailureKind | None:
    """The predicate's answer; None when it raises or answers something that is not a kind."""
    try:
        answer = predicate(exc)
        return None if answer is None else FailureKind(answer)
    except Exception:  # a broken predicate must not stop the failure from being dead-lettered
        return None
