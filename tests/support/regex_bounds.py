"""A static check that a regular expression's matching work is linear in the text, whatever the
text: it reads the pattern as Python's own parser does (``re._parser``) and names each rule broken.

1. Every quantifier is bounded (no ``*``, ``+`` or ``{n,}``), by at most ``max_repeat``.
2. Only a single character is repeated more than once (``[a-z]{1,9}``, never ``(ab|a){2,9}`` nor
   ``(a{1,9}){1,9}``): no nested quantifiers, no repeated alternation.
3. A variable quantifier is followed by what cannot start with a character it takes (``\\s{0,8}[:=]``)
   unless no variable quantifier follows it (``[^ ]{1,256}@``): giving back characters then costs
   one comparison each, or one try of a bounded tail each, never a new search. A lookaround counts
   as what follows where it stands.

Under these rules one match attempt costs at most the sum of the bounds times the alternatives, so
a scan of n characters costs O(n): no input makes the engine backtrack catastrophically. Character
classes are compared over ASCII and a sample of the Unicode characters the classes treat apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

# ASCII, and characters some classes take and others do not (spaces, letters that fold to ASCII
# under IGNORECASE, a non-ASCII digit).
ALPHABET = tuple(chr(c) for c in range(128)) + tuple(
    "\u00a0\u00b5\u00df\u00e9\u017f\u212a\u2028\u3000\u0663\ufffd"
)
SINGLE_CHARACTER = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY}
REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT}
Item = tuple[Any, Any]


@dataclass(frozen=True)
class Follow:
    """What may come after a point of the pattern: its first characters, and whether everything
    after it is fixed-width."""

    chars: frozenset[str]
    fixed: bool


END = Follow(frozenset(), fixed=True)


def problems(pattern: re.Pattern[str], max_repeat: int) -> list[str]:
    """The rules ``pattern`` breaks, one sentence each; empty when its work is linear."""
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    found: list[str] = []
    _check(list(parsed.data), END, parsed.state.flags, max_repeat, found)
    return found


def _check(items: list[Item], follow: Follow, flags: int, max_repeat: int, found: list[str]) -> None:
    for index, (op, av) in enumerate(items):
        after = _follow(items[index + 1 :], follow, flags)
        if op in REPEATS:
            _check_repeat(av, after, flags, max_repeat, found)
        elif op == sre.SUBPATTERN:
            _check(list(av[3].data), after, _scoped(flags, av), max_repeat, found)
        elif op == sre.BRANCH:
            for alternative in av[1]:
                _check(list(alternative.data), after, flags, max_repeat, found)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            _check(list(av[1].data), END, flags, max_repeat, found)


def _check_repeat(av: Any, after: Follow, flags: int, max_repeat: int, found: list[str]) -> None:
    low, high, body = av
    body_items = list(body.data)
    if high == sre.MAXREPEAT:
        found.append(f"unbounded quantifier over {body_items}")
        return
    if high > max_repeat:
        found.append(f"quantifier bound {high} over {max_repeat}")
    single = len(body_items) == 1 and body_items[0][0] in SINGLE_CHARACTER
    if high > 1 and not single:
        found.append(f"repeated group {body_items} (nested quantifier or repeated alternation)")
        return
    if not single:  # an optional part: checked as if it stood in the sequence
        _check(body_items, after, flags, max_repeat, found)
        return
    overlap = _chars(body_items[0], flags) & after.chars
    if low < high and overlap and not after.fixed:
        found.append(
            f"{body_items[0]}{{{low},{high}}} is followed by a variable part that may start with "
            f"{''.join(sorted(overlap))[:20]!r}"
        )


def _follow(rest: list[Item], follow: Follow, flags: int) -> Follow:
    chars, nullable = _first(rest, flags)
    fixed = all(_fixed(item) for item in rest)
    if nullable:
        return Follow(chars | follow.chars, fixed and follow.fixed)
    return Follow(chars, fixed and follow.fixed)


def _first(items: list[Item], flags: int) -> tuple[frozenset[str], bool]:
    """The characters a match of ``items`` may start with, and whether it may be empty."""
    chars: frozenset[str] = frozenset()
    for item in items:
        item_chars, nullable = _first_of(item, flags)
        chars |= item_chars
        if not nullable:
            return chars, False
    return chars, True


def _first_of(item: Item, flags: int) -> tuple[frozenset[str], bool]:
    op, av = item
    if op in SINGLE_CHARACTER:
        return _chars(item, flags), False
    if op in (sre.ASSERT, sre.ASSERT_NOT):  # zero-width, but tried where what follows starts
        return _first(list(av[1].data), flags)[0], True
    if op == sre.AT:
        return frozenset(), True
    if op == sre.SUBPATTERN:
        return _first(list(av[3].data), _scoped(flags, av))
    if op == sre.BRANCH:
        firsts = [_first(list(alternative.data), flags) for alternative in av[1]]
        return frozenset().union(*(c for c, _ in firsts)), any(n for _, n in firsts)
    if op in REPEATS:
        chars, nullable = _first(list(av[2].data), flags)
        return chars, nullable or av[0] == 0
    raise ValueError(f"the check does not know {op} (back-references and conditionals are not linear)")


def _fixed(item: Item) -> bool:
    """True when ``item`` holds no variable quantifier: trying it costs at most its width times its
    alternatives, whatever the text."""
    op, av = item
    if op in REPEATS:
        return bool(av[0] == av[1] and all(_fixed(i) for i in av[2].data))
    if op == sre.SUBPATTERN:
        return all(_fixed(i) for i in av[3].data)
    if op == sre.BRANCH:
        return all(_fixed(i) for alternative in av[1] for i in alternative.data)
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return all(_fixed(i) for i in av[1].data)
    return True


def _chars(item: Item, flags: int) -> frozenset[str]:
    """The characters of ALPHABET a single-character item matches, under ``flags``."""
    single = _parser.SubPattern(_parser.State(), [item])
    compiled = re._compiler.compile(single, flags)  # type: ignore[attr-defined]
    return frozenset(c for c in ALPHABET if compiled.fullmatch(c))


def _scoped(flags: int, av: Any) -> int:
    _, add_flags, del_flags, _ = av
    return int((flags | add_flags) & ~del_flags)
