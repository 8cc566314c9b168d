"""Every relative link in the README, the docs/ pages and the decision records leads to a file
that exists, and every anchor to a heading of that file (as GitHub names headings)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
PAGES = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *DECISIONS.glob("*.md")])

FENCE = re.compile(r"^```.*?^```", flags=re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", flags=re.MULTILINE)
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", flags=re.IGNORECASE)


def prose(text: str) -> str:
    """``text`` without code blocks, where a bracket or a ``#`` is not markdown."""
    return FENCE.sub("", text)


def links(page: Path) -> list[str]:
    return LINK.findall(INLINE_CODE.sub("", prose(page.read_text(encoding="utf-8"))))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link text kept, lower case, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor in ``page``; a repeated heading's get -1, -2... as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        name = slug(heading)
        found.add(f"{name}-{seen[name]}" if seen[name] else name)
        seen[name] += 1
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    return broken


def test_the_readme_and_the_docs_index_are_checked() -> None:
    assert {ROOT / "README.md", ROOT / "docs" / "README.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_every_docs_page_is_in_the_index() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}

    assert [page.name for page in PAGES if page.parent == index.parent and page not in listed | {index}] == []


def test_every_decision_record_is_in_its_index() -> None:
    index = DECISIONS / "README.md"
    listed = {(DECISIONS / target.partition("#")[0]).resolve() for target in links(index)}

    assert sorted(page.name for page in DECISIONS.glob("*.md") if page not in listed | {index}) == []


def test_a_heading_anchor_follows_githubs_rule() -> None:
    assert slug("2026-11-26: One import root, `sqs_redriver`") == "2026-11-26-one-import-root-sqs_redriver"
    assert slug("The consumer kit's protocol") == "the-consumer-kits-protocol"
    assert slug("A consumer without the kit, judged by its queue's metrics (issue 21, 2026-11-26)") == (
        "a-consumer-without-the-kit-judged-by-its-queues-metrics-issue-21-2026-11-26"
    )
