"""sqs_redriver.protocol.redact, the kit's and the re-driver's one redaction: no secret the rules
know leaves the consumer, whatever text surrounds it (a corpus of real-looking ones, in the
messages real libraries raise); the text is capped; redacting twice changes nothing; no text makes
a rule's work more than linear."""

from __future__ import annotations

import re
import string
from unittest.mock import patch

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sqs_redriver.kit import Redactor
from sqs_redriver.kit.errors import RedactionPatternError
from sqs_redriver.protocol.redact import BUILTIN_PATTERNS, MASK, SCAN_LIMIT, TRIGGERS, cap, compile_patterns
from tests.support.record_strategies import robust
from tests.support.regex_bounds import problems
from tests.support.secret_corpus import CORPUS, Secret, leaks

DEFAULT = Redactor()
BASE64 = string.ascii_letters + string.digits + "/+"
KEY_ID = string.ascii_uppercase + string.digits
TOKEN = string.ascii_letters + string.digits + "-._~+/"
VALUE = string.ascii_letters + string.digits + "!#$%*-_.:"
# Patterns a user might write, some of which match inside the mask or across its edges.
USER_PATTERNS = ("e", "[a-z]+", "d>x", r"card=\d+", "(?P<secret>[0-9]{4})-", ".", "<", "redacted")


# Pieces of the rules, to build texts that start a match everywhere and finish none.
FRAGMENTS = (
    "eyJ",
    ".ey",
    "eyJa.",
    "gh" + "p_",
    "github" + "_pat_",
    "xo" + "xb-",
    "sk" + "_live_",
    "AKIA",
    "a",
    "0",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END",
    "postgres://",
    "u:",
    "@",
    "/",
    ":",
    "=",
    "{",
    "'",
    '"',
    "password ",
    "is ",
    "pwd=",
    "token",
    "Bearer ",
    "Authorization: ",
    "hooks.slack.com/services/",
    "/services/T0123456/B0123456/",
    " ",
    "\n",
    "é",
)


def texts(max_size: int = 300) -> st.SearchStrategy[str]:
    return st.text(max_size=max_size)


# --- generated secrets: (the secret, the text that carries it) --------------------------------

aws_access_key_ids = st.builds(
    lambda prefix, rest: (prefix + rest, prefix + rest),
    st.sampled_from(["AKIA", "ASIA"]),
    st.text(KEY_ID, min_size=16, max_size=16),
)
aws_secret_keys = st.builds(
    lambda label, separator, key: (key, f"{label}{separator}{key}"),
    st.sampled_from(["aws_secret_access_key", "SecretAccessKey", "secret key", "AWS key", "secret"]),
    st.sampled_from(["=", ": ", " = ", '": "', " "]),
    st.text(BASE64, min_size=40, max_size=40),
)
bearer_tokens = st.builds(
    lambda header, token: (token, f"{header}{token}"),
    st.sampled_from(
        ["Bearer ", "bearer ", "Authorization: Bearer ", '"Authorization": "Bearer ', "authorization="]
    ),
    st.text(TOKEN, min_size=8, max_size=60),
)
url_passwords = st.builds(
    lambda scheme, user, password: (password, f"{scheme}://{user}:{password}@db.example.com:5432/orders"),
    st.sampled_from(["https", "postgres", "redis", "mongodb+srv", "amqp"]),
    st.text(string.ascii_lowercase, max_size=10),
    st.text(VALUE + "@", min_size=8, max_size=30).filter(
        lambda p: not p.startswith("@") and not p.endswith("@")
    ),
)
pairs = st.builds(
    lambda label, separator, value: (value, f"{label}{separator}{value}"),
    st.sampled_from(
        ["password", "db_password", "PASSWORD", "secret", "client_secret", "token", "refresh_token"]
        + ["api_key", "apiKey", "X-Api-Key", "X-Auth-Token", "private_key", "passwd", "credentials"]
    ),
    st.sampled_from(["=", ": ", " = ", '": "', "': '", ":"]),
    st.text(VALUE, min_size=8, max_size=40),
)
secrets = st.one_of(aws_access_key_ids, aws_secret_keys, bearer_tokens, url_passwords, pairs)


@given(secret=secrets, before=texts(), after=texts())
@robust
def test_a_known_kind_of_secret_never_leaves_whatever_text_surrounds_it(
    secret: tuple[str, str], before: str, after: str
) -> None:
    value, carried = secret
    assume(value not in before and value not in after and carried.count(value) == 1)
    text = f"{before} {carried} {after}"

    assert value not in DEFAULT.redact(text)
    assert value not in DEFAULT.mask(text)


@given(secret=secrets, before=texts(), after=texts(), patterns=st.lists(st.sampled_from(USER_PATTERNS)))
@robust
def test_user_patterns_never_unmask_a_built_in_secret(
    secret: tuple[str, str], before: str, after: str, patterns: list[str]
) -> None:
    value, carried = secret
    assume(value not in before and value not in after and carried.count(value) == 1)
    redactor = Redactor(extra_patterns=compile_patterns(patterns))

    assert value not in redactor.redact(f"{before} {carried} {after}")


@given(text=texts(1000), max_chars=st.integers(1, 240), patterns=st.lists(st.sampled_from(USER_PATTERNS)))
@robust
def test_redacted_text_is_capped_and_redacting_it_again_changes_nothing(
    text: str, max_chars: int, patterns: list[str]
) -> None:
    redactor = Redactor(max_chars=max_chars, extra_patterns=compile_patterns(patterns))

    once = redactor.redact(text)

    assert len(once) <= max_chars
    assert redactor.redact(once) == once
    once.encode("utf-8")  # no lone surrogate survives


@given(text=st.text(string.digits + string.punctuation.replace("<", "") + " \n", max_size=500))
@robust
def test_text_without_anything_secret_looking_is_only_capped(text: str) -> None:
    assert DEFAULT.redact(text) == cap(text, DEFAULT.max_chars)


@given(text=texts())
@robust
def test_dropped_text_is_empty(text: str) -> None:
    assert Redactor(drop_text=True).redact(text) == ""


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("key AKIAIOSFODNN7EXAMPLE used", "key <redacted> used"),
        ("postgres://admin:s3cr3t@db:5432/orders", "postgres://admin:<redacted>@db:5432/orders"),
        ("redis://:p@ss@cache/0", "redis://:<redacted>@cache/0"),
        ('{"password": "hunter 2", "user": "ann"}', '{"password": <redacted>, "user": "ann"}'),
        ("Authorization: Bearer eyJhbGciOi.e30.sig", "Authorization: Bearer <redacted>"),
        ("GET /orders?token=abc123&page=2", "GET /orders?token=<redacted>&page=2"),
        ("order 'o-17' has 3 lines", "order 'o-17' has 3 lines"),
        ("postgres://app:pa/ss@db:5432/orders", "postgres://app:<redacted>@db:5432/orders"),
        ("Server=db;Uid=app;Pwd={a;b};Encrypt=yes", "Server=db;Uid=app;Pwd=<redacted>;Encrypt=yes"),
        ("PASSWORD hunter2 VALID UNTIL", "PASSWORD <redacted> VALID UNTIL"),
        ("the password is hunter2.", "the password is <redacted>"),
        (
            'FATAL:  password authentication failed for user "app"',
            'FATAL:  password authentication failed for user "app"',
        ),
        ("the password is required", "the password is required"),
        ("Password must be at least 12 characters", "Password must be at least 12 characters"),
        (
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln rejected",
            "token eyJhbGciOiJIUzI1NiJ9.<redacted> rejected",
        ),
        (
            "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----<redacted>-----END EC PRIVATE KEY-----",
        ),
        ("gh" + "p_" + "a" * 36 + " expired", "ghp_<redacted> expired"),
        ("xo" + "xb-1234567890-abcdefghij failed", "xoxb-<redacted> failed"),
        ("https://hooks.slack.com/services/T0/B0/abcdefghij", "https://hooks.slack.com/services/<redacted>"),
        ("sk" + "_live_" + "a" * 24 + " declined", "sk_live_<redacted> declined"),
    ],
)
def test_only_the_secret_part_is_masked_so_the_text_still_says_what_was_wrong(
    text: str, redacted: str
) -> None:
    assert DEFAULT.redact(text) == redacted


def test_a_user_pattern_with_a_secret_group_masks_only_that_group() -> None:
    redactor = Redactor(extra_patterns=compile_patterns([r"card (?P<secret>\d{12})\d{4}"]))

    assert redactor.redact("card 4111111111111111 declined") == f"card {MASK}1111 declined"


def test_an_invalid_user_pattern_is_named_with_its_position() -> None:
    with pytest.raises(
        RedactionPatternError, match=r"pattern 2 \('\(unclosed'\) is not a valid regular expression"
    ):
        compile_patterns(["fine", "(unclosed"])


def test_text_past_the_scan_limit_is_dropped_without_the_word_cut_in_two() -> None:
    text = "x " * (SCAN_LIMIT // 2 - 4) + "AKIA" + "Z" * 40

    head = DEFAULT.mask(text)

    assert len(head) <= SCAN_LIMIT and "AKIA" not in head and head.endswith("…")


def test_a_huge_message_is_redacted() -> None:
    # Every pattern is bounded: a megabyte of label-like text is read only up to the scan limit.
    text = "password" * 200_000 + "=" + "a" * 1_000_000

    assert len(DEFAULT.redact(text)) <= DEFAULT.max_chars


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_a_cap_that_is_not_a_positive_integer_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_chars must be a positive integer"):
        Redactor(max_chars=bad)  # type: ignore[arg-type]


def test_a_compiled_pattern_is_taken_as_it_is() -> None:
    pattern = re.compile("x+")

    assert compile_patterns([pattern]) == (pattern,)


# --- a corpus of real-looking secrets in real libraries' messages ---------------------------------


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_each_secret_of_the_corpus_is_masked_and_its_message_kept(secret: Secret) -> None:
    whole = Redactor(max_chars=SCAN_LIMIT)

    masked = whole.redact(secret.text)

    assert leaks(masked, (secret,)) == [] and leaks(DEFAULT.mask(secret.text), (secret,)) == []
    assert MASK in masked and masked[:12] == secret.text[:12]  # what failed is still said


@given(
    secret=st.sampled_from(CORPUS),
    before=st.one_of(texts(), st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join)),
    after=st.one_of(texts(), st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join)),
    separator=st.sampled_from(["", " ", "\n", ": ", "'", "\t(", "; "]),
    max_chars=st.sampled_from([40, 240, SCAN_LIMIT]),
)
@robust
def test_a_secret_of_the_corpus_never_leaves_wherever_it_is_embedded(
    secret: Secret, before: str, after: str, separator: str, max_chars: int
) -> None:
    assume(not leaks(before + separator + after, (secret,)))
    text = f"{before}{separator}{secret.text}{separator}{after}"
    redactor = Redactor(max_chars=max_chars)

    assert leaks(redactor.redact(text), (secret,)) == []
    assert leaks(redactor.mask(text), (secret,)) == []  # what the fingerprint hashes


# --- no text makes the rules' work more than linear ----------------------------------------------


@pytest.mark.parametrize("pattern", BUILTIN_PATTERNS, ids=lambda p: p.pattern[:40])
def test_every_built_in_rule_does_work_linear_in_the_text(pattern: re.Pattern[str]) -> None:
    assert problems(pattern, max_repeat=SCAN_LIMIT) == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",
        r"\w*@",
        r"(?:a|ab){0,20}c",
        r"\w{0,99}\w{0,99}!",
        r"(?:x\s{0,3}){0,5}",
        r"[a-z]{0,9}(?=[a-z]{0,9}!)",
    ],
)
def test_the_linearity_check_refuses_rules_that_backtrack(pattern: str) -> None:
    assert problems(re.compile(pattern), max_repeat=SCAN_LIMIT) != []


@given(pieces=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=64), repeat=st.integers(1, 600))
@robust
def test_adversarial_long_text_is_redacted_to_its_properties(pieces: list[str], repeat: int) -> None:
    # The work per character is bounded by the check above; here, what comes out of such text:
    # capped, stable, encodable, and the same as for its first SCAN_LIMIT characters alone.
    text = "".join(pieces) * repeat

    once = DEFAULT.redact(text)

    assert len(once) <= DEFAULT.max_chars and DEFAULT.redact(once) == once
    once.encode("utf-8")
    if len(text) > SCAN_LIMIT * 2:
        assert DEFAULT.mask(text) == DEFAULT.mask(text[: SCAN_LIMIT * 2])


# --- the triggers: a rule is skipped only on text where it cannot match --------------------------

CASED_FRAGMENTS = FRAGMENTS + tuple(f.upper() for f in FRAGMENTS) + tuple(f.title() for f in FRAGMENTS)
ascii_texts = st.lists(
    st.sampled_from(CASED_FRAGMENTS) | st.text(string.printable, max_size=6), max_size=40
).map("".join)


def assert_every_match_holds_a_trigger(text: str) -> None:
    for pattern, words in TRIGGERS.items():
        for match in pattern.finditer(text):
            assert any(word in match.group(0).lower() for word in words), (pattern.pattern, match.group(0))


def test_every_rule_has_its_triggers() -> None:
    assert list(TRIGGERS) == list(BUILTIN_PATTERNS)


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_every_match_in_the_corpus_holds_one_of_its_rule_s_triggers(secret: Secret) -> None:
    assert_every_match_holds_a_trigger(secret.text)


@given(text=ascii_texts.filter(str.isascii))
@robust
def test_every_match_in_any_ascii_text_holds_one_of_its_rule_s_triggers(text: str) -> None:
    assert_every_match_holds_a_trigger(text)


@given(text=ascii_texts | st.sampled_from([s.text for s in CORPUS]) | texts())
@robust
def test_a_text_is_masked_as_if_every_rule_ran_on_it(text: str) -> None:
    with patch("sqs_redriver.protocol.redact._builtin_candidates", lambda _: BUILTIN_PATTERNS):
        every_rule = DEFAULT.mask(text), DEFAULT.redact(text)

    assert (DEFAULT.mask(text), DEFAULT.redact(text)) == every_rule
