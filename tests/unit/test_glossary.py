"""One name per concept (docs/design.md, Glossary): the words the glossary retired stay out of the
product's code. The deprecation table (protocol/settings.py) alone may name an old setting."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_FOLDERS = ("infra", "lambdas", "console")
RETIRED = ("ramp", "wave", "WaveTag", "FailedRedrives", "owner", "first_source", "probes_sent")
RETIRED_WORD = re.compile(rf"\b({'|'.join(RETIRED)})\b", re.IGNORECASE)
# Old setting names, kept working for one release; readable only where the renames are listed.
DEPRECATION_TABLE = Path("lambdas/sqs_redriver/protocol/settings.py")
OLD_SETTING = re.compile(r"\b(MAX_REDRIVES|max_redrives)\b")


def product_files() -> list[Path]:
    return sorted(path for folder in PRODUCT_FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_the_product_code_uses_no_retired_word() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in product_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if RETIRED_WORD.search(line)
    ]
    assert found == [], "retired words (see docs/design.md, Glossary):\n" + "\n".join(found)


def test_old_setting_names_appear_only_where_the_renames_are_listed() -> None:
    allowed = {DEPRECATION_TABLE, Path("infra/sqs_redriver/cdk/settings.py")}
    found = [
        str(path.relative_to(ROOT))
        for path in product_files()
        if path.relative_to(ROOT) not in allowed and OLD_SETTING.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_check_finds_a_retired_word() -> None:
    assert RETIRED_WORD.search("the Wave admits") and not RETIRED_WORD.search("BUCKET_OWNER_ENFORCED")
