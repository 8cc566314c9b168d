"""A short, stable id for one bug: the same exception class, raised at the same place, with the
same message once ids and numbers are taken out.

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
"""

from __future__ import annotations

import hashlib
import re
import sysconfig
from types import FrameType, TracebackType

from sqs_redriver.kit.redact import Redactor

KIT_PACKAGE = __name__.partition(".")[0]
FINGERPRINT_HEX_CHARS = 16
FINGERPRINT_VERSION = "v1"
# Longest normalized message hashed; beyond it, messages usually carry payloads, not the bug.
MAX_NORMALIZED_CHARS = 500
# Stands for a class whose name or module will not be read.
UNNAMED_CLASS = "exception"
DEFAULT_REDACTOR = Redactor()

_NORMALIZERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE),
        "<uuid>",
    ),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\""), "<str>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)
_LIBRARY_PATHS = tuple(
    {path for name in ("stdlib", "platstdlib", "purelib", "platlib") if (path := sysconfig.get_path(name))}
)


def normalize_message(message: str) -> str:
    """The message with ids, numbers and quoted values replaced by placeholders."""
    for pattern, placeholder in _NORMALIZERS:
        message = pattern.sub(placeholder, message)
    return message.strip()[:MAX_NORMALIZED_CHARS]


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
