"""The one redaction at the boundary where the re-driver reads what a sender may write: a dead
letter's error, request id and origin (every shape), a mark's or a FAILURE# record's consumer
failure, and every Rejection's words. What goes back to the target (the payload) stays as it was.
And every parking reason built of those parts fits the mark attribute the parking lot carries."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.message import Tracked
from sqs_redriver.core.sqs import EntryFailure
from sqs_redriver.protocol.dead_letters import (
    MAX_CAUSE_CODE_CHARS,
    MAX_CAUSE_MESSAGE_CHARS,
    MAX_ORIGIN_CHARS,
    DeadLetter,
    compact_json,
    read_dead_letter,
)
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage, attribute_size, string_attribute
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.limits import MAX_MARK_BYTES, MAX_MARK_HISTORY
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.redact import MASK
from sqs_redriver.protocol.wire import Rejection
from sqs_redriver.runtime.parking import (
    over_limit_reason,
    rejected_reason,
    unknown_source_reason,
    unreplayable_reason,
)
from sqs_redriver.runtime.routing import Routes
from tests.support.dead_letters import (
    FUNCTION_ARN,
    FUNCTION_SOURCE,
    RULE_ARN,
    RULE_TARGET_SOURCE,
    SUBSCRIPTION_SOURCE,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)
from tests.support.secret_corpus import CORPUS, Secret, leaks

EVENT = {"order": "o-1", "items": 2}
NOW = 1_800_000_000


def shown(dead_letter: DeadLetter) -> str:
    """All a dead letter gives the run to show: its cause, request id, origin and problem."""
    cause = dead_letter.cause.describe() if dead_letter.cause is not None else ""
    return "\n".join([cause, dead_letter.request_id, dead_letter.origin, str(dead_letter.problem or "")])


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_a_function_s_error_in_its_destination_record_is_redacted_its_event_kept(secret: Secret) -> None:
    letter = destination_record(
        f"{FUNCTION_ARN}:$LATEST", EVENT, error_message=secret.text, error_type=secret.text
    )

    dead_letter = read_dead_letter(letter.body, {}, [FUNCTION_SOURCE])

    assert dead_letter.payload == compact_json(EVENT) and dead_letter.source == FUNCTION_SOURCE
    assert MASK in shown(dead_letter) and leaks(shown(dead_letter), (secret,)) == []


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_lambda_s_error_message_and_request_id_in_a_function_dlq_are_redacted(secret: Secret) -> None:
    letter = function_dlq_message(EVENT, error_message=secret.text, request_id=secret.text[:256])

    dead_letter = read_dead_letter(letter.body, letter.attributes, [FUNCTION_SOURCE])

    assert dead_letter.payload == letter.body
    assert MASK in dead_letter.request_id or leaks(secret.text[:256], (secret,)) == []
    assert leaks(shown(dead_letter), (secret,)) == []


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_eventbridge_s_error_message_and_code_are_redacted(secret: Secret) -> None:
    letter = rule_target_dlq_message(rule_event(EVENT), error_code=secret.text, error_message=secret.text)

    dead_letter = read_dead_letter(letter.body, letter.attributes, [RULE_TARGET_SOURCE])

    assert dead_letter.payload == letter.body and dead_letter.source == RULE_TARGET_SOURCE
    assert leaks(shown(dead_letter), (secret,)) == []


def test_the_topic_a_subscription_s_dead_letter_claims_is_redacted_in_its_problem() -> None:
    key_id = "AKIA" + "Q7" * 8
    topic = f"arn:aws:sns:us-east-1:123456789012:{key_id}"

    dead_letter = read_dead_letter(
        subscription_dlq_message("hi", topic_arn=topic).body, {}, [SUBSCRIPTION_SOURCE]
    )

    assert dead_letter.problem is not None and dead_letter.problem.field == "TopicArn"
    assert key_id not in str(dead_letter.problem) and MASK in dead_letter.problem.problem


def test_the_rule_a_dead_letter_claims_is_kept_as_its_origin_redacted_and_bounded() -> None:
    claimed = f"{RULE_ARN}/token={'t' * 30}" + "x" * 1800
    letter = rule_target_dlq_message(rule_event(EVENT), rule_arn=claimed)

    dead_letter = read_dead_letter(letter.body, letter.attributes, [RULE_TARGET_SOURCE])

    assert dead_letter.source is None and dead_letter.origin.startswith(f"{RULE_ARN}/token={MASK}")
    assert len(dead_letter.origin) <= MAX_ORIGIN_CHARS


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_a_rejection_never_shows_a_secret_it_quotes(secret: Secret) -> None:
    rejection = Rejection("n", f"is {secret.text!r}, not an integer")

    assert leaks(f"{rejection}\n{rejection.field}\n{rejection.problem}", (secret,)) == []


@given(
    field=st.sampled_from(["n", "requestContext.functionArn", "MessageAttributes.tenant"]),
    value=st.integers(),
)
def test_a_rejection_without_a_secret_says_what_it_said(field: str, value: int) -> None:
    rejection = Rejection(field, f"is {value}, outside 0..10", subject="a re-drive mark")

    assert (str(rejection), rejection.field) == (
        f"not a re-drive mark: {field} is {value}, outside 0..10",
        field,
    )


@pytest.mark.parametrize("secret", [s for s in CORPUS if len(s.text) <= 240], ids=str)
def test_a_consumer_failure_a_sender_wrote_is_redacted_as_it_is_read(secret: Secret) -> None:
    written = {
        "kind": "terminal",
        "class": secret.text[:120],
        "msg": secret.text,
        "fp": "f" * 16,
        "at": NOW,
        "try": 1,
        "src": secret.text,
    }

    failure = Failure.from_dict(written)

    assert MASK in failure.message and leaks(json.dumps(failure.to_dict()), (secret,)) == []


# -- every reason built of a dead letter's parts fits the parking lot's mark attribute ------------

LONGEST_SOURCE = FUNCTION_SOURCE
WIDEST = "\U0001f4a5"  # 4 bytes in UTF-8, 12 escaped in JSON


def longest_tracked(dead_letter: DeadLetter) -> Tracked:
    """A dead letter counted in the table under a content identity, with the longest history."""
    mark = Mark("sha256:" + "f" * 64, first_failed_at=NOW - 86_400)
    for i in range(MAX_MARK_HISTORY):
        mark = mark.after_redrive(NOW - 86_000 + 900 * i)
    message = DlqMessage("0f8e7c1a-7d2b-4a38-9c41-5e6f7a8b9c0d", "rh", "{}", dead_letter=dead_letter)
    return Tracked(message, mark)


def widest_dead_letter() -> DeadLetter:
    """The widest error and origin a dead letter's reader keeps."""
    letter = rule_target_dlq_message(
        rule_event(EVENT),
        error_code=WIDEST * 5000,
        error_message=WIDEST * 5000,
        rule_arn=RULE_ARN + WIDEST * 500,
    )
    dead_letter = read_dead_letter(letter.body, letter.attributes, [RULE_TARGET_SOURCE])
    assert dead_letter.cause is not None and dead_letter.origin.endswith(WIDEST)
    assert len(dead_letter.cause.code) <= MAX_CAUSE_CODE_CHARS
    assert len(dead_letter.cause.message) <= MAX_CAUSE_MESSAGE_CHARS
    return replace(dead_letter, request_id="r" * 256, problem=Rejection("body", WIDEST * 5000))


@pytest.mark.parametrize("reason_of", ["over_limit", "rejected", "unknown_source", "unreplayable"])
def test_the_longest_reason_of_a_dead_letter_fits_the_mark_attribute(reason_of: str) -> None:
    tracked = longest_tracked(widest_dead_letter())
    routes = Routes((LONGEST_SOURCE.address,))
    reasons = {
        "over_limit": lambda: over_limit_reason(tracked, MAX_MARK_HISTORY, now=NOW, routes=routes),
        "rejected": lambda: rejected_reason(
            tracked, EntryFailure("InvalidPayload", WIDEST * 5000, True), now=NOW, routes=routes
        ),
        "unknown_source": lambda: unknown_source_reason(tracked, now=NOW, routes=routes),
        "unreplayable": lambda: unreplayable_reason(tracked, now=NOW, routes=routes),
    }
    reason = reasons[reason_of]()

    size = attribute_size(MARK_ATTRIBUTE, string_attribute(tracked.mark.to_json(parked=reason.to_dict())))

    assert WIDEST in reason.why and size <= MAX_MARK_BYTES, size
