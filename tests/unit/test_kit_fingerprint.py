"""The kit's fingerprint: one short, stable id per bug, whatever ids its messages carry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqs_redriver.kit import fingerprint
from sqs_redriver.kit.classify import error_class, normalize_message, place
from tests.support.fingerprinted import InvalidOrder, caught, validate

ROOT = Path(__file__).resolve().parents[2]


def validate_elsewhere(message: str) -> None:
    raise InvalidOrder(message)


def parse(body: str) -> object:
    return json.loads(body)


def test_a_fingerprint_is_sixteen_hex_characters() -> None:
    fp = fingerprint(caught(validate, "bad"))

    assert len(fp) == 16 and int(fp, 16) >= 0


def test_the_same_bug_with_different_ids_has_one_fingerprint() -> None:
    first = caught(validate, "order 'o-17' for 3f2504e0-4f89-11d3-9a0c-0305e82c3301 has 3 items at 0x7f3a")
    second = caught(validate, "order 'o-99' for 6ba7b810-9dad-11d1-80b4-00c04fd430c8 has 12 items at 0x1b")

    assert fingerprint(first) == fingerprint(second)


def test_a_different_message_is_a_different_fingerprint() -> None:
    assert fingerprint(caught(validate, "no items")) != fingerprint(caught(validate, "no customer"))


def test_a_different_place_is_a_different_fingerprint() -> None:
    assert fingerprint(caught(validate, "bad")) != fingerprint(caught(validate_elsewhere, "bad"))


def test_a_different_class_at_the_same_place_is_a_different_fingerprint() -> None:
    def fail(kind: str) -> None:
        raise (KeyError if kind == "key" else ValueError)("bad")

    assert fingerprint(caught(fail, "key")) != fingerprint(caught(fail, "value"))


def test_the_place_is_the_innermost_application_frame_not_the_library_one() -> None:
    exc = caught(parse, "{not json")

    assert place(exc) == f"{__name__}:parse"


def test_the_place_leaves_line_numbers_out() -> None:
    assert place(caught(validate, "bad")) == "tests.support.fingerprinted:validate"


def test_an_exception_never_raised_has_no_place_and_still_a_fingerprint() -> None:
    assert place(InvalidOrder("x")) == "" and len(fingerprint(InvalidOrder("x"))) == 16


def test_error_class_names_the_module_except_for_builtins() -> None:
    assert error_class(InvalidOrder()) == "tests.support.fingerprinted.InvalidOrder"
    assert error_class(ValueError()) == "ValueError"


@pytest.mark.parametrize(
    ("message", "normalized"),
    [
        ("order o-17 failed", "order o-<n> failed"),
        ("took 1.5s", "took <n>s"),
        ("id 3F2504E0-4F89-11D3-9A0C-0305E82C3301", "id <uuid>"),
        ("hash 9f86d081884c7d65 seen", "hash <hex> seen"),
        ("at 0xDEADBEEF", "at <hex>"),
        ("unknown sku 'ABC-DEF' and \"x y\"", "unknown sku <str> and <str>"),
        ("  many \n  spaces\t", "many spaces"),
        ("plain words stay", "plain words stay"),
    ],
)
def test_normalize_message_replaces_ids_numbers_and_quoted_values(message: str, normalized: str) -> None:
    assert normalize_message(message) == normalized


def test_the_fingerprint_is_the_same_in_another_process_with_another_hash_seed() -> None:
    here = fingerprint(caught(validate, "order 'o-1' is invalid"))
    script = (
        "from tests.support.fingerprinted import caught, validate\n"
        "from sqs_redriver.kit import fingerprint\n"
        "print(fingerprint(caught(validate, \"order 'o-2' is invalid\")))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}

    there = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()

    assert there == here
