"""The documentation stays short enough to read (issue 41): the README at most 1,000 words, each
decision record at most 400, the docs/ pages (not the records) at most 30,000 in all. A word is
what ``wc -w`` counts: a run of non-whitespace, code blocks included."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_WORDS = 1_000
RECORD_WORDS = 400
DOCS_WORDS = 30_000


def words(page: Path) -> int:
    return len(page.read_text(encoding="utf-8").split())


def decision_records() -> list[Path]:
    """docs/decisions/NNNN-*.md: one record per decision (the index, README.md, is none)."""
    return sorted(page for page in (DOCS / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md"))


def docs_pages() -> list[Path]:
    """docs/*.md, the decision records below docs/decisions/ left out."""
    return sorted(DOCS.glob("*.md"))


def test_a_word_is_a_run_of_non_whitespace_as_wc_counts_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Two commands\n\n```bash\nmake demo  # 1.5-2 min\n```\n\ttab-separated  words\n")

    assert words(page) == 12  # as `wc -w` counts this text


def test_the_pages_measured_are_there() -> None:
    assert len(decision_records()) > 1
    assert {DOCS / "README.md", DOCS / "design.md"} <= set(docs_pages())


def test_the_readme_is_at_most_1000_words() -> None:
    assert words(ROOT / "README.md") <= README_WORDS


def test_each_decision_record_is_at_most_400_words() -> None:
    longer = {page.name: words(page) for page in decision_records() if words(page) > RECORD_WORDS}

    assert longer == {}


def test_the_docs_pages_are_at_most_30000_words_in_all() -> None:
    counts = {page.name: words(page) for page in docs_pages()}

    assert sum(counts.values()) <= DOCS_WORDS, counts
