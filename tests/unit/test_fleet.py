"""The fleet view's pure part: queues' attributes and the stacks' re-drivers in, dead-letter queues
out. Whatever the attributes say, nothing raises; every DLQ a valid policy names appears once, with
exactly its sources and guards, in order; what does not parse is a problem naming its queue."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sqs_redriver.console.cli.render import fleet_view
from sqs_redriver.console.errors import NotAQueueName, UsageError
from sqs_redriver.console.fleet import (
    REGION_LABEL,
    Fleet,
    Gaps,
    Guard,
    ListedQueue,
    Problem,
    QueueRef,
    assemble,
    guards_of_stack,
    parse_listing,
    regions_to_read,
)
from sqs_redriver.console.tool import Deployment
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from tests.support.record_strategies import robust

REGION = "eu-west-1"
ACCOUNT = "123456789012"
NOW = 1_800_000_000
NAMES = st.sampled_from([f"q{n}" for n in range(8)])
URL_FORMS = (
    "https://sqs.{region}.amazonaws.com/{account}/{name}",
    "https://{region}.queue.amazonaws.com/{account}/{name}",
    "http://localhost:4566/{account}/{name}",
)
BAD_POLICIES = st.one_of(
    st.text(max_size=20).filter(lambda text: not _is_json(text)),
    st.sampled_from(["[]", "3", "null", '"x"', "{}", '{"deadLetterTargetArn": 7}']),
    st.builds(lambda t: json.dumps({"deadLetterTargetArn": t}), st.text(max_size=30)).filter(
        lambda text: not _valid_arn(json.loads(text)["deadLetterTargetArn"])
    ),
)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _valid_arn(arn: str) -> bool:
    try:
        QueueRef.from_arn(arn)
    except NotAQueueName:
        return False
    return True


def url(name: str, form: int = 0, region: str = REGION) -> str:
    return URL_FORMS[form].format(region=region, account=ACCOUNT, name=name)


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def policy(target: str) -> str:
    return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": 5})


def attributes(visible: int = 0, *, redrive: str | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "ApproximateNumberOfMessages": str(visible),
        "ApproximateNumberOfMessagesNotVisible": "0",
        "ApproximateNumberOfMessagesDelayed": "0",
        "MessageRetentionPeriod": "345600",
        **extra,
    }
    if redrive is not None:
        found["RedrivePolicy"] = redrive
    return found


def fleet_of(listed: list[ListedQueue], guards: Sequence[Guard] = (), **options: Any) -> Fleet:
    return assemble(
        parse_listing(listed), guards, options.pop("ages", {}), at=NOW, regions=[REGION], **options
    )


@st.composite
def accounts(draw: st.DrawFn) -> tuple[list[ListedQueue], dict[str, str], dict[str, str], list[Guard]]:
    """Queues with a valid, a bad or no redrive policy, and re-drivers naming DLQs in any URL form;
    also the valid policies (source -> DLQ) and the bad ones (source -> policy text)."""
    names = draw(st.lists(NAMES, unique=True, max_size=8))
    valid: dict[str, str] = {}
    bad: dict[str, str] = {}
    listed = []
    for name in names:
        kind = draw(st.sampled_from(["none", "valid", "bad"]))
        redrive = None
        if kind == "valid":
            valid[name] = draw(NAMES)
            redrive = policy(valid[name])
        elif kind == "bad":
            bad[name] = redrive = draw(BAD_POLICIES)
        listed.append(ListedQueue(REGION, url(name), attributes(draw(st.integers(0, 99)), redrive=redrive)))
    guarded = draw(st.lists(NAMES, unique=True, max_size=3))
    guards = [
        Guard(
            "Stack",
            f"Stack/{name}",
            QueueRef.from_url(url(name, draw(st.integers(0, 2))), default_region=REGION),
        )
        for name in guarded
    ]
    return listed, valid, bad, guards


@robust
@given(accounts())
def test_every_dlq_a_valid_policy_names_appears_once_with_exactly_its_sources(account: Any) -> None:
    listed, valid, _, guards = account

    fleet = fleet_of(listed, guards)

    names = [row.queue.name for row in fleet.rows]
    assert len(names) == len(set(names))
    assert set(valid.values()) <= set(names)
    for row in fleet.rows:
        assert {source.name for source in row.sources} == {s for s, d in valid.items() if d == row.queue.name}


@robust
@given(accounts())
def test_a_bad_policy_never_raises_and_is_a_problem_naming_its_queue(account: Any) -> None:
    listed, _, bad, guards = account

    fleet = fleet_of(listed, guards)

    policy_problems = {p.subject for p in fleet.problems if p.what.startswith("RedrivePolicy")}
    assert policy_problems == set(bad)
    json.dumps(fleet.to_dict())


@robust
@given(accounts())
def test_rows_come_most_messages_first_then_by_name_and_each_is_guarded_whatever_the_url_form(
    account: Any,
) -> None:
    listed, _, _, guards = account

    fleet = fleet_of(listed, guards)

    keys = [(-(row.depth.total if row.depth else -1), row.queue.name) for row in fleet.rows]
    assert keys == sorted(keys)
    for row in fleet.rows:
        assert row.guards == tuple(g for g in guards if g.dlq.name == row.queue.name)


def test_the_time_to_expiry_is_retention_less_the_oldest_age_and_within_a_day_is_a_problem() -> None:
    listed = [
        ListedQueue(REGION, url("orders"), attributes(redrive=policy("orders-dlq"))),
        ListedQueue(REGION, url("orders-dlq"), attributes(3)),
    ]
    dlq = QueueRef(REGION, ACCOUNT, "orders-dlq")

    fleet = fleet_of(listed, ages={dlq: 345_600 - 3600})

    assert fleet.rows[0].time_to_expiry_seconds == 3600
    assert fleet.problems == (Problem(REGION, "orders-dlq", "the oldest message expires in 3600 s"),)
    assert fleet_of(listed).rows[0].time_to_expiry_seconds is None  # age unknown


def test_a_dlq_that_is_not_listed_two_guards_and_unread_guards_are_said() -> None:
    listed = [ListedQueue(REGION, url("orders"), attributes(redrive=policy("gone-dlq")))]
    gone = QueueRef(REGION, ACCOUNT, "gone-dlq")
    guards = [Guard("A", "A/R", gone), Guard("B", "B/R", gone)]

    fleet = fleet_of(listed, guards)

    assert fleet.rows[0].depth is None and fleet.rows[0].url is None
    assert [p.what.split(";")[0].split(":")[0] for p in fleet.problems] == [
        "guarded by 2 re-drivers at once",
        "not among the queues listed (deleted, or not listable)",
    ]
    unread = fleet_of(listed, guards, gaps=Gaps(unlisted={REGION}, guards_unread={REGION}))
    assert unread.rows[0].guards is None
    assert unread.problems == ()  # the reads' own problems say why; "not listed" would be noise


def test_unreadable_attributes_are_a_problem_and_the_queue_still_counts_as_a_source() -> None:
    listed = [
        ListedQueue(
            REGION, url("orders"), attributes(redrive=policy("dlq"), ApproximateNumberOfMessages="-1")
        ),
        ListedQueue(REGION, url("dlq"), error="GetQueueAttributes failed: AccessDenied"),
    ]

    fleet = fleet_of(listed)

    assert [(row.queue.name, row.depth, [s.name for s in row.sources]) for row in fleet.rows] == [
        ("dlq", None, ["orders"])
    ]
    assert {p.subject for p in fleet.problems} == {"orders", "dlq"}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("https://sqs.eu-west-1.amazonaws.com/1/q", QueueRef("eu-west-1", "1", "q")),
        ("https://eu-west-1.queue.amazonaws.com/1/q", QueueRef("eu-west-1", "1", "q")),
        ("https://queue.amazonaws.com/1/q", QueueRef("us-east-1", "1", "q")),
        ("http://sqs.us-east-2.localhost.localstack.cloud:4566/1/q", QueueRef("us-east-2", "1", "q")),
        ("http://localhost:4566/1/q", QueueRef(REGION, "1", "q")),
        ("https://sqs.amazonaws.com/1/q", QueueRef(REGION, "1", "q")),
    ],
)
def test_a_queue_url_names_its_queue_in_every_form(name: str, expected: QueueRef) -> None:
    assert QueueRef.from_url(name, default_region=REGION) == expected


@pytest.mark.parametrize("name", ["", "q", "https://h/q", "https://h/1/2/q", "ftp://h/1/q", "http://[/1/q"])
def test_what_names_no_queue_is_refused(name: str) -> None:
    with pytest.raises(NotAQueueName):
        QueueRef.from_url(name, default_region=REGION)


def test_a_stack_output_that_is_not_a_deployment_is_a_problem_naming_the_stack_and_output() -> None:
    good = Deployment("Orders/Redriver", url("orders-dlq", 1), (url("orders"),), url("lot"), "table")
    outputs = [
        {"OutputKey": "Good", "OutputValue": good.to_json(), "Description": OUTPUT_DESCRIPTION},
        {"OutputKey": "Text", "OutputValue": "not json", "Description": OUTPUT_DESCRIPTION},
        {"OutputKey": "List", "OutputValue": "[1]", "Description": OUTPUT_DESCRIPTION},
        {
            "OutputKey": "Url",
            "OutputValue": good.to_json().replace("https://", "x"),
            "Description": OUTPUT_DESCRIPTION,
        },
        {"OutputKey": "Other", "OutputValue": "whatever"},
    ]

    guards, problems = guards_of_stack(REGION, "Orders", outputs)

    assert guards == [Guard("Orders", "Orders/Redriver", QueueRef(REGION, ACCOUNT, "orders-dlq"))]
    assert [(p.subject, p.what.split(" (")[0]) for p in problems] == [
        ("Orders", f"output {key} is not a re-driver deployment") for key in ("Text", "List", "Url")
    ]


def test_the_table_shows_unknowns_and_hostile_names_inertly() -> None:
    listed = [
        ListedQueue(REGION, url("orders"), attributes(redrive=policy("orders-dlq"))),
        ListedQueue(REGION, url("orders-dlq"), attributes(2)),
        ListedQueue(REGION, url("idle"), attributes(redrive=policy("idle-dlq"))),
        ListedQueue(REGION, url("idle-dlq"), attributes(0)),
    ]
    hostile = Guard("S", "\x1b[31mS/[bold]x[/bold]", QueueRef(REGION, ACCOUNT, "orders-dlq"))
    console = Console(file=io.StringIO(), force_terminal=True, width=200)

    console.print(fleet_view(fleet_of(listed, [hostile])))

    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[31mS" not in shown and "\\x1b[31mS/[bold]x[/bold] (stack S)" in shown
    assert "unknown" in shown and "unguarded" in shown


@given(st.lists(st.sampled_from(["eu-west-1", "us-east-1", "ap-south-2", "eu west", "", "<b>"]), max_size=5))
def test_the_regions_asked_are_read_each_once_in_order_or_the_bad_one_is_named(asked: list[str]) -> None:
    bad = [name for name in asked if not REGION_LABEL.fullmatch(name)]
    if bad:
        with pytest.raises(UsageError, match="is not a region name"):
            regions_to_read(asked, "us-east-1")
        return

    regions = regions_to_read(asked, "us-east-1")

    assert regions == (list(dict.fromkeys(asked)) or ["us-east-1"])
