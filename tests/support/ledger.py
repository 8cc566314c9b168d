"""Where every message ended, for the adversarial tests: each body found exactly once, in the
place it should be, and the breaker still CLOSED."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from local_aws.queues import drain, make_visible
from sqs_redriver.core.breaker import State
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import Aws

SOURCE, DLQ, PARKING_LOT = "source", "dlq", "parking lot"


def label(body: str) -> str:
    """A test message's name: its body up to the first ``|`` (bodies may be a megabyte long)."""
    return body.split("|", 1)[0]


def whereabouts(aws: Aws, **queues: str) -> dict[str, list[str]]:
    """Every message of the source, the DLQ and the parking lot (and ``queues``, by place name),
    hidden ones included: the places each label was found in."""
    places = {SOURCE: aws.source_url, DLQ: aws.dlq_url, PARKING_LOT: aws.parking_lot_url, **queues}
    found: dict[str, list[str]] = defaultdict(list)
    for place, url in places.items():
        make_visible(url)
        for message in drain(aws.sqs, url):
            found[label(message["Body"])].append(place)
    return dict(found)


def assert_each_ended_once(aws: Aws, expected: dict[str, str], **queues: str) -> None:
    """Each message is in exactly the one place ``expected`` names, and nothing else is anywhere."""
    assert whereabouts(aws, **queues) == {name: [place] for name, place in expected.items()}


def assert_breaker_closed(redriver: Redriver, settings: Settings, *sources: str) -> None:
    for key in (settings.breaker_key, *(RecordKind.BREAKER.key(url) for url in sources)):
        assert redriver.state.load_breaker(key).state is State.CLOSED


def marked_attribute(text: str) -> dict[str, Any]:
    """The ``dlq-redriver`` attribute holding ``text`` as it is, valid or not."""
    return {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": text}}


def mark_json(**fields: Any) -> str:
    """A mark's JSON with ``fields`` over a valid fresh mark; NaN and Infinity written as JSON allows."""
    return json.dumps({"id": "forged", "n": 0, "first": 1_700_000_000, "at": [], **fields}, allow_nan=True)
