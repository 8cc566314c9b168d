"""A replay from the web console moves exactly the messages its preview page showed, on moto: the
page's form carries their MessageIds and the confirmation moves those, whatever reached or left the
queue meanwhile (one gone is reported, none taken in its place); the posted ids are checked as any
input, a bad list being a 400 that names the field."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from local_aws.queues import drain, make_visible, queue_counts
from sqs_redriver.console.web import actions
from sqs_redriver.console.web.actions import MAX_REPLAY_MESSAGES
from sqs_redriver.console.web.guard import FORM_BYTES
from tests.support.aws import Aws
from tests.support.console import get, open_console, post, previewed_ids
from tests.support.operator import park, park_groups, take_away

PREVIEW = "/replay?from=parking-lot&group=fp-bad"
LONGEST_ID = "i" * 100  # the longest SQS MessageId AWS documents


def confirmation(preview: str, **fields: str | list[str]) -> dict[str, str | list[str]]:
    """What the preview's form posts: the selection and the MessageIds it showed (or ``fields``)."""
    return {"from": "parking-lot", "group": ["fp-bad"], "message_id": previewed_ids(preview), **fields}


def bodies(messages: list[dict[str, Any]]) -> set[str]:
    return {message["Body"] for message in messages}


def test_the_confirmation_moves_the_messages_previewed_not_those_that_arrived_since(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, PREVIEW)
    for n in range(3, 6):
        park(aws, f"bad-{n}", fingerprint="fp-bad")  # the same bug, parked after the preview

    code, done = post(client, "/replay", preview, **confirmation(preview))

    assert code == 200 and "Done, with problems" not in done and "replayed: 3" in done
    assert bodies(drain(aws.sqs, aws.source_url)) == {"bad-0", "bad-1", "bad-2"}
    assert bodies(drain(aws.sqs, aws.parking_lot_url)) == {"bad-3", "bad-4", "bad-5", "poison"}


def test_the_confirmation_moves_the_messages_previewed_not_those_held_elsewhere_during_it(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    held = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, MaxNumberOfMessages=2, VisibilityTimeout=300)
    _code, preview = get(client, PREVIEW)
    make_visible(aws.parking_lot_url)  # back before the operator confirms
    previewed = {"bad-0", "bad-1", "bad-2"} - bodies(held["Messages"])

    code, done = post(client, "/replay", preview, **confirmation(preview))

    assert code == 200 and f"replayed: {len(previewed)}" in done
    assert bodies(drain(aws.sqs, aws.source_url)) == previewed


def test_a_previewed_message_gone_before_the_confirmation_is_reported_and_none_moves_in_its_place(
    aws: Aws,
) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, PREVIEW)
    gone = previewed_ids(preview)[0]
    take_away(aws, gone)
    park(aws, "bad-3", fingerprint="fp-bad")

    code, done = post(client, "/replay", preview, **confirmation(preview))

    assert code == 200 and "Done, with problems" in done and "replayed: 2" in done
    assert f"nothing moved in their place: {gone}" in done
    assert len(drain(aws.sqs, aws.source_url)) == 2
    assert bodies(drain(aws.sqs, aws.parking_lot_url)) == {"bad-3", "poison"}
    _code, audit = get(client, "/audit")
    assert "1 no longer there" in audit


def test_a_preview_that_chose_more_than_one_replay_moves_offers_the_first_and_says_so(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actions, "MAX_REPLAY_MESSAGES", 2)
    park_groups(aws)
    client, _tool = open_console(aws)

    _code, preview = get(client, PREVIEW)
    code, done = post(client, "/replay", preview, **confirmation(preview))

    assert "Replay 2 message(s) from the parking-lot" in preview and "3 messages match" in preview
    assert len(previewed_ids(preview)) == 2
    assert code == 200 and "replayed: 2" in done
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 2  # one of fp-bad, and poison


FORGED = {
    "none": ([], "names no previewed message"),
    "markup": (["<script>window.pwned=1</script>"], "not an SQS MessageId"),
    "too long": ([LONGEST_ID + "i"], "not an SQS MessageId"),
    "a control character": (["ab\u202ecd"], "not an SQS MessageId"),
    "one twice": (["a-1", "a-1"], "named more than once"),
    "too many": (
        [f"m-{n}" for n in range(MAX_REPLAY_MESSAGES + 1)],
        f"{MAX_REPLAY_MESSAGES + 1} messages named; a replay from the console moves at most",
    ),
}


@pytest.mark.parametrize(("ids", "said"), FORGED.values(), ids=FORGED.keys())
def test_a_forged_list_of_message_ids_is_a_400_naming_the_field_and_moves_nothing(
    aws: Aws, ids: list[str], said: str
) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, PREVIEW)

    code, page = post(client, "/replay", preview, **confirmation(preview, message_id=ids))

    assert code == 400 and "message_id: " in page and said in page
    assert "Traceback" not in page and "<script>" not in page and "\u202e" not in page
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4
    assert queue_counts(aws.sqs, aws.source_url).visible == 0


def test_the_largest_list_the_preview_may_carry_fits_the_body_limit_and_is_read(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, PREVIEW)
    longest = [f"{n:05d}{LONGEST_ID}"[:100] for n in range(MAX_REPLAY_MESSAGES)]
    form = confirmation(preview, message_id=longest)
    assert len(urlencode({**form, "csrf": "c" * 43}, doseq=True)) < FORM_BYTES

    code, done = post(client, "/replay", preview, **form)

    assert code == 200 and "replayed: 0" in done and longest[-1] in done  # each reported missing
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4
