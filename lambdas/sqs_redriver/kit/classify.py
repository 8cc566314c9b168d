"""How the kit judges a consumer's failure: its kind (is it worth retrying?) and its fingerprint
(which bug is it?). Pure: an exception in, a FailureKind or a fingerprint out; neither ever raises.

The kind, from the rules a consumer configures (``Classifier``); the order, first match wins:

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
judged by the rules that can read it.

The fingerprint (``fingerprint``), a short, stable id for one bug: the same exception class, raised
at the same place, with the same message once ids and numbers are taken out.

- *Class*: the exception's module and qualified name (``consumer.orders.InvalidOrder``).
- *Place*: the module and qualified function name of the innermost traceback frame that is
  application code: frames of the standard library, of installed packages (``site-packages``) and
  of the kit itself are skipped, so a ``JSONDecodeError`` groups by the consumer function that
  parsed, not by ``json.decoder``. Falls back to the innermost frame when all are library frames.
  Line numbers are left out on purpose: they shift with unrelated edits, and one function rarely
  holds two bugs raising the same class with the same message.
- *Message*: the exception's text with its secrets masked (``redact.Redactor.mask``: a secret is
  never hashed, and a token that changes per request does not split a group); then UUIDs, hex ids,
  numbers and quoted values are replaced with placeholders and whitespace is collapsed, so
  ``order 'o-17' of 3 items`` and ``order 'o-99' of 4 items`` agree.

Hashed with SHA-256 (never ``hash()``, which is salted per process); 16 hex characters.

The AWS error codes of the built-in rules and the message's normalization are the protocol's
(``protocol/transient.py``): the re-driver applies the same defaults to a source's error.
"""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType, MappingProxyType, TracebackType

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from sqs_redriver.protocol.failure import FailureKind
from sqs_redriver.protocol.redact import Redactor
from sqs_redriver.protocol.transient import TRANSIENT_ERROR_CODES, normalize_message, transient_status

Predicate = Callable[[BaseException], FailureKind | None]
ExceptionTypes = Iterable[type[BaseException]]

# How deep a chain of causes is followed (chains are short; this only guards against cycles).
MAX_CAUSE_DEPTH = 8


# The two exceptions a consumer raises itself live here, not in ``errors``: a class's module is part
# of its fingerprint, so moving them would regroup every failure already recorded with them.
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
    if (isinstance(code, str) and code in TRANSIENT_ERROR_CODES) or transient_status(status):
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


# --- the fingerprint: which bug a failure is ----------------------------------------------------

KIT_PACKAGE = __name__.partition(".")[0]
FINGERPRINT_HEX_CHARS = 16
FINGERPRINT_VERSION = "v1"
# Stands for a class whose name or module will not be read.
UNNAMED_CLASS = "exception"
DEFAULT_REDACTOR = Redactor()

_LIBRARY_PATHS = tuple(
    {path for name in ("stdlib", "platstdlib", "purelib", "platlib") if (path := sysconfig.get_path(name))}
)


def error_class(exc: BaseException) -> str:
    """``module.QualifiedName`` of the exception's class; builtins without the module."""
    module, name = _class_attribute(exc, "__module__"), class_name(exc)
    return name if module in ("builtins", UNNAMED_CLASS) else f"{module}.{name}"


def class_name(exc: BaseException) -> str:
    """The qualified name of the exception's class, or a placeholder when the class will not say."""
    return _class_attribute(exc, "__qualname__")


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, the class's name when that is empty, or ``<unprintable Class>`` when it raises."""
    try:
        text = str.__str__(str(exc))  # a str subclass's own methods are not trusted either
    except Exception:
        return f"<unprintable {class_name(exc)}>"
    return text or class_name(exc)


def place(exc: BaseException) -> str:
    """``module:function`` of the innermost application frame of the traceback ("" without one)."""
    frames = list(_frames(exc.__traceback__))
    if not frames:
        return ""
    application = [tb for tb in frames if not _is_library(tb.tb_frame)]
    frame = (application or frames)[-1].tb_frame
    module = str(frame.f_globals.get("__name__", "?"))
    code = frame.f_code
    return f"{module}:{getattr(code, 'co_qualname', code.co_name)}"  # co_qualname: Python 3.11+


def where(exc: BaseException) -> str:
    """``place(exc)``, or "" when a frame's module name will not print."""
    try:
        return place(exc)
    except Exception:
        return ""


def fingerprint(exc: BaseException, masked_text: str | None = None) -> str:
    """16 hex characters of SHA-256 over class, place and normalized message: ``masked_text``, the
    exception's text as the kit's redactor masked it (by default, masked by the built-in rules)."""
    if masked_text is None:
        masked_text = DEFAULT_REDACTOR.mask(exception_text(exc))
    # A frame whose module name will not print has no place: the class and text still group.
    text = "\n".join((FINGERPRINT_VERSION, error_class(exc), where(exc), normalize_message(masked_text)))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:FINGERPRINT_HEX_CHARS]


def _class_attribute(exc: BaseException, name: str) -> str:
    try:
        value = getattr(type(exc), name)
    except Exception:  # a metaclass's property may raise
        return UNNAMED_CLASS
    return str.__str__(value) if isinstance(value, str) else UNNAMED_CLASS


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames


def _is_library(frame: FrameType) -> bool:
    """Standard library, installed packages, and the kit itself (its wrapper calls the handler)."""
    filename = frame.f_code.co_filename
    module = str(frame.f_globals.get("__name__", ""))
    return (
        filename.startswith(_LIBRARY_PATHS)
        or "site-packages" in filename
        or filename.startswith("<frozen")
        or module == KIT_PACKAGE
        or module.startswith(KIT_PACKAGE + ".")
    )
