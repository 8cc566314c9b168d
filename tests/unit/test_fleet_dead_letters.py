"""The fleet view's parsing of other services' dead letters: functions, rule targets and
subscriptions as AWS lists them in, DLQ rows, destinations elsewhere and problems out. Whatever the
listings say, nothing raises; a valid SQS ARN makes its source a row's; another service's ARN is a
destination elsewhere, never a problem; anything else is a problem naming the source."""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sqs_redriver.console.cli.render import fleet_view
from sqs_redriver.console.fleet import (
    Fleet,
    Guard,
    ListedFunction,
    ListedQueue,
    ListedRule,
    ListedSubscription,
    assemble,
    guards_of_stack,
    parse_listing,
)
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind
from tests.support.record_strategies import robust

REGION = "eu-west-1"
ACCOUNT = "123456789012"
NOW = 1_800_000_000
# Text without a colon: no ARN (of another service, a destination elsewhere rather than junk).
SHORT_TEXT = st.text(st.characters(exclude_characters=":"), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | SHORT_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
OTHER_SERVICE_ARNS = st.sampled_from(
    [
        f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts",
        f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:fallback",
        "arn:aws:s3:::failures-bucket",
    ]
)
# What is neither an SQS queue's ARN nor another service's: a problem.
NOT_ARNS = st.one_of(
    st.text(min_size=1, max_size=20).filter(lambda text: not text.startswith("arn:")),
    st.sampled_from([f"arn:aws:sqs:{REGION}:{ACCOUNT}:", "arn:aws:sqs:bad", "arn:", "arn:aws:sqs:r:1:a:b"]),
    st.integers(),
    st.lists(st.integers(), max_size=2),
)
JUNK_POLICIES = st.one_of(
    st.text(max_size=20),
    st.builds(json.dumps, JSON_VALUES),
    st.builds(lambda value: json.dumps({"deadLetterTargetArn": value}), NOT_ARNS),
    st.sampled_from(["[" * 5000, '{"deadLetterTargetArn": ' + "[" * 3000 + "]" * 3000 + "}", "{}", "null"]),
)


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def url(name: str) -> str:
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"


def queue(name: str, visible: int = 0) -> ListedQueue:
    counts = (
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    )
    attributes = dict.fromkeys(counts, "0") | {"ApproximateNumberOfMessages": str(visible)}
    return ListedQueue(REGION, url(name), {**attributes, "MessageRetentionPeriod": "345600"})


def subscription(n: int, policy: str | None) -> ListedSubscription:
    entry = {
        "SubscriptionArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:orders:{n:04d}",
        "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:orders",
        "Endpoint": arn(f"consumer-{n}"),
    }
    attributes = {} if policy is None else {"RedrivePolicy": policy}
    return ListedSubscription(REGION, entry, attributes)


def function(name: str, dead_letter_config: Any = None, configs: list[Any] | None = None) -> ListedFunction:
    entry: dict[str, Any] = {
        "FunctionName": name,
        "FunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
    }
    if dead_letter_config is not None:
        entry["DeadLetterConfig"] = dead_letter_config
    return ListedFunction(REGION, entry, [] if configs is None else configs)


def fleet_of(*, guards: list[Guard] | None = None, **listings: Any) -> Fleet:
    queues = listings.pop("queues", [])
    return assemble(parse_listing(queues, **listings), guards or [], {}, at=NOW, regions=[REGION])


@st.composite
def subscriptions(draw: st.DrawFn) -> tuple[list[ListedSubscription], dict[str, str], set[str]]:
    """Subscriptions with a valid, a junk or no redrive policy; the valid ones' DLQ by subject, and
    the junk ones' subjects."""
    listed, valid, junk = [], {}, set()
    for n in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["valid", "junk", "none"]))
        policy = None
        if kind == "valid":
            dlq = draw(st.sampled_from(["a-dlq", "b-dlq"]))
            policy = json.dumps({"deadLetterTargetArn": arn(dlq)})
        elif kind == "junk":
            policy = draw(JUNK_POLICIES)
        listed.append(subscription(n, policy))
        subject = f"subscription orders → consumer-{n}"
        if kind == "valid":
            valid[subject] = dlq
        elif kind == "junk":
            junk.add(subject)
    return listed, valid, junk


@robust
@given(subscriptions())
def test_junk_redrive_policies_never_raise_and_each_is_a_problem_naming_its_subscription(drawn: Any) -> None:
    listed, valid, junk = drawn

    fleet = fleet_of(queues=[queue("a-dlq"), queue("b-dlq")], subscriptions=listed)

    problem_subjects = {p.subject for p in fleet.problems}
    named = {f"subscription {s.label}": row.queue.name for row in fleet.rows for s in row.sources}
    assert named == valid
    assert problem_subjects == junk
    assert all(p.what.startswith("RedrivePolicy") for p in fleet.problems)
    json.dumps(fleet.to_dict())


@robust
@given(JUNK_POLICIES)
def test_a_policy_that_names_no_dlq_is_one_problem(policy: str) -> None:
    fleet = fleet_of(subscriptions=[subscription(1, policy)])

    assert fleet.rows == ()
    assert [p.subject for p in fleet.problems] == ["subscription orders → consumer-1"]


@robust
@given(
    st.lists(st.one_of(JSON_VALUES, st.fixed_dictionaries({"DestinationConfig": JSON_VALUES})), max_size=4),
    JSON_VALUES,
)
def test_junk_in_a_function_s_configuration_never_raises(configs: list[Any], dead_letter_config: Any) -> None:
    fleet = fleet_of(functions=[function("resize", {"TargetArn": dead_letter_config}, configs)])

    assert all(p.subject == "function resize" for p in fleet.problems)
    json.dumps(fleet.to_dict())


@robust
@given(NOT_ARNS, OTHER_SERVICE_ARNS)
def test_another_service_s_arn_is_a_destination_elsewhere_and_a_non_arn_a_problem(
    not_an_arn: Any, elsewhere: str
) -> None:
    configs = [{"DestinationConfig": {"OnFailure": {"Destination": elsewhere}}}]
    fleet = fleet_of(
        functions=[function("resize", {"TargetArn": not_an_arn}, configs)],
    )

    assert fleet.rows == ()
    assert [(o.destination, o.source.kind.value, o.source.name) for o in fleet.elsewhere] == [
        (elsewhere, "lambda destination", "resize")
    ]
    assert [(p.subject, p.what.split(" is ")[0]) for p in fleet.problems] == [
        ("function resize", "DeadLetterConfig.TargetArn")
    ]


def test_a_function_s_dlq_and_each_qualifier_s_destination_are_its_sources() -> None:
    base = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:resize"
    configs = [
        {
            "FunctionArn": f"{base}:$LATEST",
            "DestinationConfig": {"OnFailure": {"Destination": arn("dest-dlq")}},
        },
        {"FunctionArn": f"{base}:live", "DestinationConfig": {"OnFailure": {"Destination": arn("dest-dlq")}}},
    ]

    fleet = fleet_of(
        queues=[queue("dest-dlq"), queue("fn-dlq")],
        functions=[function("resize", {"TargetArn": arn("fn-dlq")}, configs)],
    )

    rows = {row.queue.name: [(s.kind.value, s.label, s.arn) for s in row.sources] for row in fleet.rows}
    assert rows == {
        "dest-dlq": [
            ("lambda destination", "resize", base),
            ("lambda destination", "resize:live", f"{base}:live"),
        ],
        "fn-dlq": [("lambda DLQ", "resize", base)],
    }
    assert fleet.problems == ()


def test_a_rule_target_is_named_by_its_bus_rule_and_id_and_one_without_an_id_is_a_problem() -> None:
    rule = {
        "Name": "shipped",
        "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders/shipped",
        "EventBusName": "orders",
    }
    targets = [
        {
            "Id": "t1",
            "Arn": "arn:aws:lambda:eu-west-1:1:function:f",
            "DeadLetterConfig": {"Arn": arn("rule-dlq")},
        },
        {"Id": "t2", "Arn": "arn:aws:lambda:eu-west-1:1:function:g"},
        {"Arn": "arn:aws:lambda:eu-west-1:1:function:h", "DeadLetterConfig": {"Arn": arn("rule-dlq")}},
    ]

    fleet = fleet_of(queues=[queue("rule-dlq")], rules=[ListedRule(REGION, "orders", rule, targets)])

    assert [(row.queue.name, [s.label for s in row.sources]) for row in fleet.rows] == [
        ("rule-dlq", ["orders/shipped target t1"])
    ]
    assert [(p.subject, p.what.split(":")[0]) for p in fleet.problems] == [
        ("rule orders/shipped", "a target has no Id or Arn")
    ]


def test_reads_that_failed_alike_are_one_problem_and_a_pending_subscription_is_skipped() -> None:
    denied = "lambda:ListFunctionEventInvokeConfigs failed: access denied"
    functions = [ListedFunction(REGION, function(name).function, error=denied) for name in ("a", "b")]
    functions.append(ListedFunction(REGION, function("c").function, error="throttled"))
    pending = ListedSubscription(REGION, {"SubscriptionArn": "PendingConfirmation", "TopicArn": "t"})

    fleet = fleet_of(functions=functions, subscriptions=[pending])

    assert [(p.subject, p.what) for p in fleet.problems] == [
        ("", f"{denied} (2 sources: function a, function b)"),
        ("function c", "throttled"),
    ]


def test_a_re_driver_re_drives_the_sources_its_output_names_and_a_bad_one_is_a_problem() -> None:
    base = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
    named = DeadLetterSource(
        SourceKind.FUNCTION, f"{base}resize:$LATEST", TargetKind.FUNCTION, f"{base}resize"
    )
    outputs = [
        output("Good", "App/R", "fn-dlq", [named.to_json()]),
        output("Bad", "App/S", "other-dlq", [{"kind": "sqs"}]),
    ]

    guards, problems = guards_of_stack(REGION, "App", outputs)
    fleet = fleet_of(
        queues=[queue("fn-dlq")],
        functions=[
            function("resize", {"TargetArn": arn("fn-dlq")}),
            function("thumbnail", {"TargetArn": arn("fn-dlq")}),
        ],
        guards=guards,
    )

    assert [g.name for g in guards] == ["App/R"]
    assert [p.what.split(": source queues")[0] for p in problems] == [
        "output Bad is not a re-driver deployment (not a re-driver's source: "
        "dead_letter_sources[0].kind is sqs"
    ]
    assert [p.what for p in fleet.problems] == [
        "lambda DLQ thumbnail dead-letters here, but App/R does not re-drive it (not among its "
        "dead_letter_sources)"
    ]


def output(key: str, name: str, dlq: str, sources: list[Any]) -> dict[str, str]:
    """A stack output as the construct publishes a re-driver of ``dlq`` re-driving ``sources``."""
    document = {
        "name": name,
        "dlq_url": url(dlq),
        "source_queue_urls": [],
        "parking_lot_url": url("lot"),
        "table_name": "table",
        "dead_letter_sources": sources,
    }
    return {"OutputKey": key, "OutputValue": json.dumps(document), "Description": OUTPUT_DESCRIPTION}


def test_the_table_shows_kinds_sources_and_destinations_elsewhere_inertly() -> None:
    hostile = "\x1b[31m[bold]x"
    configs = [
        {"DestinationConfig": {"OnFailure": {"Destination": f"arn:aws:sns:{REGION}:{ACCOUNT}:{hostile}"}}}
    ]
    found = fleet_of(
        queues=[queue("fn-dlq", 3)], functions=[function(hostile, {"TargetArn": arn("fn-dlq")}, configs)]
    )
    console = Console(file=io.StringIO(), force_terminal=True, width=240)

    console.print(fleet_view(found))

    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[31m[" not in shown and shown.count("\\x1b[31m[bold]x") == 3
    assert "lambda DLQ" in shown and "lambda destination" in shown
    assert "not re-drivable by this tool" in shown
