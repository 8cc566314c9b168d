"""The operator's view of messages: groups, selection, durations, and the stack output contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sqs_redriver.console.errors import DeploymentNotFound
from sqs_redriver.console.inventory import (
    UNCLASSIFIED,
    Selection,
    Where,
    group,
    inspect,
    is_fingerprint,
    parse_attribute_filters,
    parse_duration,
)
from sqs_redriver.console.tool import Deployment, from_stack_outputs
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION

NOW = 1_800_000_000


def failure(fingerprint: str = "fp-1", *, kind: FailureKind = FailureKind.TERMINAL) -> Failure:
    return Failure(
        kind, "orders.InvalidOrder", "no items", fingerprint, NOW - 50, 1, "arn:aws:sqs:r:1:orders"
    )


def raw(
    message_id: str,
    *,
    mark: Mark | None = None,
    parked: dict[str, Any] | None = None,
    sent_at: int = NOW - 100,
    attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message_attributes = dict(attributes or {})
    if mark is not None:
        extra = {"parked": parked} if parked else {}
        message_attributes[MARK_ATTRIBUTE] = string_attribute(mark.to_json(**extra))
    return {
        "MessageId": message_id,
        "ReceiptHandle": f"rh-{message_id}",
        "Body": "{}",
        "MessageAttributes": message_attributes,
        "Attributes": {"SentTimestamp": str(sent_at * 1000)},
    }


def test_a_failure_groups_by_its_fingerprint_and_a_parked_message_without_one_by_its_cause() -> None:
    items = [
        inspect(raw("a", mark=Mark("i-a", 5, NOW - 900, failure=failure("fp-1"))), Where.PARKING_LOT),
        inspect(raw("b", mark=Mark("i-b", 5, NOW - 300, failure=failure("fp-1"))), Where.PARKING_LOT),
        inspect(raw("c", mark=Mark("i-c", 5, NOW - 60), parked={"cause": "over_limit"}), Where.PARKING_LOT),
        inspect(raw("d"), Where.DLQ),
    ]

    groups = {(g.where, g.key): g for g in group(items)}

    fingerprinted = groups[(Where.PARKING_LOT, "fp-1")]
    assert (fingerprinted.count, fingerprinted.oldest, fingerprinted.newest) == (2, NOW - 900, NOW - 300)
    assert fingerprinted.sample_id == "a"  # the oldest
    assert fingerprinted.label == "orders.InvalidOrder: no items"
    assert groups[(Where.PARKING_LOT, "cause:over_limit")].count == 1
    assert groups[(Where.DLQ, UNCLASSIFIED)].count == 1


def test_groups_come_largest_first() -> None:
    items = [inspect(raw(f"x{n}", parked=None), Where.DLQ) for n in range(3)]
    items.append(inspect(raw("y", mark=Mark("i-y", 1, NOW, failure=failure("fp-2"))), Where.DLQ))

    assert [g.key for g in group(items)] == [UNCLASSIFIED, "fp-2"]


def test_a_selection_matches_only_when_every_criterion_given_matches() -> None:
    old = inspect(
        raw(
            "a",
            mark=Mark("i-a", 2, NOW - 7200, failure=failure("fp-1")),
            attributes={"tenant": string_attribute("t1")},
        ),
        Where.PARKING_LOT,
    )
    young = inspect(raw("b", mark=Mark("i-b", 2, NOW - 60, failure=failure("fp-1"))), Where.PARKING_LOT)

    assert Selection(groups=frozenset({"fp-1"})).matches(old, NOW)
    assert not Selection(groups=frozenset({"fp-9"})).matches(old, NOW)
    assert Selection(older_than_seconds=3600).matches(old, NOW)
    assert not Selection(older_than_seconds=3600).matches(young, NOW)
    assert Selection(newer_than_seconds=3600).matches(young, NOW)
    assert Selection(attributes={"tenant": "t1"}).matches(old, NOW)
    assert not Selection(attributes={"tenant": "t1"}).matches(young, NOW)
    assert Selection(ids=frozenset({"i-a"})).matches(old, NOW)  # by identity
    assert Selection(ids=frozenset({"b"})).matches(young, NOW)  # by MessageId
    assert not Selection(groups=frozenset({"fp-1"}), older_than_seconds=3600).matches(young, NOW)
    assert Selection().everything and not Selection(ids=frozenset({"b"})).everything


def test_a_message_without_a_mark_is_known_by_its_message_id_or_its_content() -> None:
    small = inspect(raw("a"), Where.DLQ)
    crowded = inspect(raw("b", attributes={f"a{n}": string_attribute("v") for n in range(10)}), Where.DLQ)

    assert small.identity == "a"
    assert crowded.identity.startswith("sha256:")


def test_a_parking_reason_is_read_from_the_mark_and_a_malformed_mark_is_not_one() -> None:
    parked = inspect(
        raw(
            "a", mark=Mark("i-a", 5, NOW), parked={"cause": "terminal", "source_queue": "https://q/1/orders"}
        ),
        Where.PARKING_LOT,
    )
    broken = raw("b")
    broken["MessageAttributes"][MARK_ATTRIBUTE] = string_attribute("{not json")

    assert parked.parked == {"cause": "terminal", "source_queue": "https://q/1/orders"}
    assert parked.source == "https://q/1/orders"
    assert inspect(broken, Where.PARKING_LOT).parked is None


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("15m", 900), ("2h", 7200), ("3d", 259_200)])
def test_durations_read_whole_numbers_with_a_unit(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "h", "1.5h", "2w", "-1h"])
def test_a_duration_without_a_known_unit_is_refused_with_the_forms_allowed(text: str) -> None:
    with pytest.raises(ValueError, match="s, m, h or d"):
        parse_duration(text)


def test_attribute_filters_need_name_and_equals() -> None:
    assert parse_attribute_filters(["tenant=t1", "kind=a=b"]) == {"tenant": "t1", "kind": "a=b"}
    with pytest.raises(ValueError, match="name=value"):
        parse_attribute_filters(["tenant"])


def deployment(name: str) -> Deployment:
    return Deployment(name, "https://q/1/dlq", ("https://q/1/src",), "https://q/1/lot", "table")


def output(d: Deployment) -> dict[str, str]:
    return {"OutputKey": "x", "OutputValue": d.to_json(), "Description": OUTPUT_DESCRIPTION}


def test_the_stack_output_names_the_deployment_and_picks_one_of_several_by_name() -> None:
    first, second = deployment("App/Orders/Redriver"), deployment("App/Payments/Redriver")
    outputs = [output(first), output(second), {"OutputKey": "Other", "OutputValue": "{}"}]

    assert from_stack_outputs("App", [output(first)], None) == first
    assert from_stack_outputs("App", outputs, "Payments/Redriver") == second
    assert Deployment.from_json(json.dumps(json.loads(first.to_json()))) == first
    with pytest.raises(DeploymentNotFound, match="several re-drivers"):
        from_stack_outputs("App", outputs, None)
    with pytest.raises(DeploymentNotFound, match="no sqs-redriver deployment output"):
        from_stack_outputs("App", outputs[2:], None)


def test_an_unknown_redriver_name_lists_the_re_drivers_of_the_stack() -> None:
    outputs = [output(deployment("App/Orders/Redriver")), output(deployment("App/Payments/Redriver"))]

    with pytest.raises(DeploymentNotFound) as raised:
        from_stack_outputs("App", outputs, "Shipping")

    assert "no re-driver named 'Shipping'" in str(raised.value)
    assert "App/Orders/Redriver, App/Payments/Redriver" in str(raised.value)


def test_a_selection_names_the_groups_and_ids_no_message_answers_to() -> None:
    items = [
        inspect(raw("msg-aaaaaaaa-1", mark=Mark("i-a", 5, NOW - 900, failure=failure("fp-1"))), Where.DLQ),
        inspect(raw("msg-bbbbbbbb-2"), Where.DLQ),
    ]
    selection = Selection(
        groups=frozenset({"fp-1", "fp-typo", UNCLASSIFIED}),
        ids=frozenset({"i-a", "msg-bbbb", "msg-cccc"}),
    )

    assert selection.unknown_groups(items) == ["fp-typo"]
    assert selection.unknown_ids(items) == ["msg-cccc"]  # an identity and a prefix name messages
    assert Selection().unknown_groups(items) == [] and Selection().unknown_ids(items) == []


@pytest.mark.parametrize(
    ("key", "fingerprint"),
    [
        ("3f2a9c0d1e4b5a67", True),
        ("fp-bad", True),
        ("cause:over_limit", False),
        (UNCLASSIFIED, False),
        ("", False),
        ("has space", False),
        ("[/oops]", False),
        ("x" * 65, False),  # longer than a mark's fingerprint may be: no failure could match it
    ],
)
def test_only_what_a_mark_may_carry_is_a_fingerprint_an_operator_can_mark(
    key: str, fingerprint: bool
) -> None:
    assert is_fingerprint(key) is fingerprint
