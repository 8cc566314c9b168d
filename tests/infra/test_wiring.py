"""Wiring refused at synth: every mistake of an app at once, each led by the construct's path,
saying what is wrong and the line to write; and an app wired right synthesizes clean.

Most tests read a re-driver's findings from its node's validations (what synth runs, without
synthesizing: tests/support/stacks.wiring_findings); one synthesizes an app with every mistake,
one the README's snippet and one a shared DLQ with the nag packs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.storage import secure_queue
from tests.support.stacks import (
    ACCOUNT,
    REGION,
    app_with_nag,
    assert_nag_clean,
    dead_letter_queue,
    nag_report,
    queue_pair,
    wiring_findings,
)
from tests.support.templates import properties

ROOT = Path(__file__).resolve().parents[2]
DAY = 86_400
DLQ_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq"
SOURCE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"


def stranger_stack() -> cdk.Stack:
    """The stack of a fresh app, named as a user's would be."""
    return cdk.Stack(cdk.App(), "App")


def redriving(scope: cdk.Stack, name: str, dlq: sqs.IQueue, **props: Any) -> sqs.Queue:
    """A queue that dead-letters into ``dlq`` after 5 receives, as README.md writes it."""
    return sqs.Queue(
        scope, name, dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=5), **props
    )


def failing_function(scope: cdk.Stack, name: str, dlq: sqs.IQueue) -> lambda_.Function:
    """A function whose on-failure destination is ``dlq``."""
    return lambda_.Function(
        scope,
        name,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        on_failure=destinations.SqsDestination(dlq),
    )


# --- the README's first snippet -------------------------------------------------------------------


def readme_snippet() -> str:
    """The README's first python block that attaches a re-driver."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)
    return next(block for block in blocks if "SqsRedriver(self," in block)


def test_the_readmes_first_snippet_synthesizes_as_printed(tmp_path: Path) -> None:
    # GIVEN the snippet, run in a stack as `self`
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "App")
    names: dict[str, Any] = {"self": stack}

    # WHEN it runs and the app synthesizes
    exec(compile(readme_snippet(), "README.md", "exec"), names)
    assembly = app.synth()

    # THEN nothing is refused, and the DLQ keeps its messages longer than the source
    assert assembly.get_stack_by_name("App").messages == []
    template = Template.from_stack(stack)
    assert properties(template, names["orders_dlq"])["MessageRetentionPeriod"] == 14 * DAY
    assert "MessageRetentionPeriod" not in properties(template, names["orders_queue"])  # CDK's 4 days


# --- the DLQ's retention --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source_days", "dlq_days", "said", "fix"),
    [
        (
            None,
            None,
            "keeps messages 4 days, no longer than source_queue App/Orders (4 days)",
            "Duration.days(14) on App/OrdersDlq",
        ),
        (
            14,
            14,
            "keeps messages 14 days, no longer than source_queue App/Orders (14 days)",
            "Duration.days(13) or less on App/Orders",
        ),
        (
            2,
            1.5,
            "keeps messages 1.50 days (129600 s), no longer than source_queue App/Orders (2 days)",
            "Duration.days(14) on App/OrdersDlq",
        ),
    ],
    ids=["cdk defaults", "both at the most", "hours"],
)
def test_a_dlq_that_keeps_messages_no_longer_than_its_source_is_refused_in_days_with_the_fix(
    source_days: float | None, dlq_days: float | None, said: str, fix: str
) -> None:
    # GIVEN queues as a stranger writes them, CDK's default retention unless given
    stack = stranger_stack()
    days = {
        name: cdk.Duration.hours(d * 24) if d else None for name, d in (("s", source_days), ("d", dlq_days))
    }
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=days["d"])
    orders = redriving(stack, "Orders", dlq, retention_period=days["s"])

    # WHEN
    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    # THEN one finding: both retentions in days, the queues' paths, the retention_period to set
    [finding] = wiring_findings(redriver)
    assert finding.startswith(f"dead_letter_queue App/OrdersDlq {said}")
    assert finding.endswith(
        f"retention_period={fix}" + ("" if "or less" in fix else " (the longest SQS keeps a message)")
    )


def test_a_fifo_dlq_may_keep_messages_as_long_as_its_source() -> None:
    # a FIFO DLQ restarts the retention clock when a message arrives
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", fifo=True)
    orders = redriving(stack, "Orders", dlq, fifo=True)

    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    assert wiring_findings(redriver) == []


# --- the sources' redrive policies ----------------------------------------------------------------


def test_a_source_without_a_redrive_policy_is_refused_with_the_policy_to_write() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders = sqs.Queue(stack, "Orders")

    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    assert wiring_findings(redriver) == [
        "source_queue App/Orders has no redrive policy, so none of its messages ever reaches "
        "dead_letter_queue App/OrdersDlq: give it one, sqs.Queue(..., dead_letter_queue="
        "sqs.DeadLetterQueue(queue=orders_dlq, max_receive_count=5))"
    ]


def test_a_source_that_dead_letters_into_another_queue_is_refused_naming_both() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    elsewhere = sqs.Queue(stack, "OldDlq", retention_period=cdk.Duration.days(14))
    payments = sqs.Queue(stack, "Payments")
    orders = sqs.Queue(
        stack, "Orders", dead_letter_queue=sqs.DeadLetterQueue(queue=elsewhere, max_receive_count=3)
    )

    redriver = SqsRedriver(
        stack, "OrdersRedriver", source_queue=payments, other_source_queues=[orders], dead_letter_queue=dlq
    )

    [no_policy, elsewhere_finding] = wiring_findings(redriver)
    assert no_policy.startswith("source_queue App/Payments has no redrive policy")
    assert elsewhere_finding == (
        "other_source_queues[0] App/Orders dead-letters into App/OldDlq, not into dead_letter_queue "
        "App/OrdersDlq: pass dead_letter_queue=old_dlq to the re-driver, or redrive the source into "
        "this one: sqs.Queue(..., dead_letter_queue=sqs.DeadLetterQueue(queue=orders_dlq, "
        "max_receive_count=3))"
    )


def test_a_redrive_policy_written_on_the_l1_queue_counts() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders = sqs.Queue(stack, "Orders")
    cfn = orders.node.default_child
    assert isinstance(cfn, sqs.CfnQueue)
    cfn.redrive_policy = {"deadLetterTargetArn": dlq.queue_arn, "maxReceiveCount": 4}

    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    assert wiring_findings(redriver) == []


def test_an_imported_sources_redrive_policy_is_not_checked() -> None:
    # SQS does not say at synth what an imported queue's redrive policy is
    stack = cdk.Stack(cdk.App(), "App", env=cdk.Environment(account=ACCOUNT, region=REGION))

    redriver = SqsRedriver.from_queue_arns(
        stack, "OrdersRedriver", source_queue_arn=SOURCE_ARN, dead_letter_queue_arn=DLQ_ARN
    )

    assert wiring_findings(redriver) == []


# --- one DLQ, one re-driver -----------------------------------------------------------------------


def test_a_second_redriver_of_one_dlq_is_refused_once_naming_the_first_and_the_line_to_write() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders, payments = redriving(stack, "Orders", dlq), redriving(stack, "Payments", dlq)

    first = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)
    second = SqsRedriver(stack, "PaymentsRedriver", source_queue=payments, dead_letter_queue=dlq)

    assert wiring_findings(first) == []
    assert wiring_findings(second) == [
        "dead_letter_queue App/OrdersDlq is read by the re-driver App/OrdersRedriver too: two "
        "re-drivers of one DLQ take each other's messages, and each parks the other's dead letters as "
        "of no configured source. Keep one re-driver per DLQ: remove this one and name its queues in "
        "App/OrdersRedriver's other_source_queues=[payments], or give them a DLQ of their own"
    ]


def test_a_second_redriver_of_the_same_queues_is_told_to_go() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders = redriving(stack, "Orders", dlq)
    SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    again = SqsRedriver(stack, "Again", source_queue=orders, dead_letter_queue=dlq)

    [finding] = wiring_findings(again)
    assert finding.endswith("Remove this one: App/OrdersRedriver re-drives its queues already")


@pytest.mark.parametrize(
    ("other_dlq", "refused"), [(DLQ_ARN, True), (DLQ_ARN.replace(ACCOUNT, "210987654321"), False)]
)
def test_one_imported_dlq_read_from_two_stacks_is_refused(other_dlq: str, refused: bool) -> None:
    app = cdk.App()
    first, second = (cdk.Stack(app, name) for name in ("Ordering", "Billing"))
    SqsRedriver.from_queue_arns(first, "Redriver", source_queue_arn=SOURCE_ARN, dead_letter_queue_arn=DLQ_ARN)

    redriver = SqsRedriver.from_queue_arns(
        second, "Redriver", source_queue_arn=f"{SOURCE_ARN}-2", dead_letter_queue_arn=other_dlq
    )

    findings = wiring_findings(redriver)
    assert bool(findings) is refused
    if refused:
        assert findings[0].startswith(
            f"dead_letter_queue Billing/RedriverImports/DeadLetter ({DLQ_ARN}) is read by the re-driver "
            "Ordering/Redriver too"
        )


def test_two_function_redrivers_of_one_dlq_are_told_to_give_each_function_its_own() -> None:
    stack = cdk.Stack(cdk.App(), "App", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = sqs.Queue(stack, "Failures", retention_period=cdk.Duration.days(14))
    SqsRedriver.for_function(stack, "NotifierRedriver", function=failing_function(stack, "Notifier", dlq))

    second = SqsRedriver.for_function(
        stack, "MailerRedriver", function=failing_function(stack, "Mailer", dlq)
    )

    [finding] = wiring_findings(second)
    assert finding.startswith("dead_letter_queue App/Failures is read by the re-driver App/NotifierRedriver")
    assert finding.endswith("Give each source (queue, function, rule target, subscription) its own DLQ")


# --- another queue dead-lettering into the DLQ ----------------------------------------------------


@pytest.mark.parametrize("defined", ["before", "after"])
def test_a_queue_that_dead_letters_into_the_dlq_unnamed_is_refused_with_the_line_to_write(
    defined: str,
) -> None:
    # GIVEN a second queue of the app whose redrive policy names the DLQ, defined before or after
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders = redriving(stack, "Orders", dlq)
    if defined == "before":
        redriving(stack, "Payments", dlq)

    # WHEN the re-driver names only the first
    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)
    if defined == "after":
        redriving(stack, "Payments", dlq)

    # THEN it is refused: its dead letters would be parked as of no source
    assert wiring_findings(redriver) == [
        "queues of the app dead-letter into dead_letter_queue App/OrdersDlq that this re-driver does "
        "not name: App/Payments; their dead letters would be parked as of no configured source. Name "
        "them: other_source_queues=[payments] (or give each a DLQ of its own)"
    ]


def test_every_unnamed_queue_is_named_in_one_line_to_write() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders, refunds = redriving(stack, "Orders", dlq), redriving(stack, "Refunds", dlq)
    redriving(stack, "Payments", dlq)
    redriving(stack, "InvoiceQueue", dlq)

    redriver = SqsRedriver(
        stack, "OrdersRedriver", source_queue=orders, other_source_queues=[refunds], dead_letter_queue=dlq
    )

    [finding] = wiring_findings(redriver)
    assert "does not name: App/Payments, App/InvoiceQueue;" in finding
    assert "other_source_queues=[refunds, payments, invoice_queue]" in finding


def test_a_shared_dlq_with_every_source_named_is_accepted() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(14))
    orders, payments = redriving(stack, "Orders", dlq), redriving(stack, "Payments", dlq)

    redriver = SqsRedriver(
        stack, "OrdersRedriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq
    )

    assert wiring_findings(redriver) == []


def test_a_queue_that_dead_letters_into_a_functions_dlq_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "App", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = sqs.Queue(stack, "Failures", retention_period=cdk.Duration.days(14))
    redriving(stack, "Orders", dlq)

    redriver = SqsRedriver.for_function(
        stack, "NotifierRedriver", function=failing_function(stack, "Notifier", dlq)
    )

    assert wiring_findings(redriver) == [
        "queues of the app dead-letter into dead_letter_queue App/Failures, which holds the dead "
        "letters of the function App/Notifier: App/Orders; a DLQ holds one kind's, so give each a DLQ "
        "of its own"
    ]


# --- settings -------------------------------------------------------------------------------------


def test_settings_may_be_a_dict_of_the_fields() -> None:
    stack = stranger_stack()
    orders, dlq = queue_pair(stack)

    redriver = SqsRedriver(
        stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq, settings={"max_redrive_count": 3}
    )

    assert redriver.settings == RedriverSettings(max_redrive_count=3)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"max_redrives_count": 3},
            r"^\[App/OrdersRedriver\] unknown settings key\(s\) \['max_redrives_count'\] \(did you mean "
            r"'max_redrive_count' for 'max_redrives_count'\?\); allowed: "
            r"\[.*'max_redrive_count', .*'schedule'",
        ),
        (
            {"max_redrive_count": "3", "canary_size": 0},
            r"^\[App/OrdersRedriver\] max_redrive_count must be an integer from 1 to 50, got '3'; "
            r"canary_size must be an integer from 1 to \d+, got 0$",
        ),
        (
            3,
            r"^\[App/OrdersRedriver\] settings must be a RedriverSettings or a dict of its fields, got int: "
            r"settings=RedriverSettings\(max_redrive_count=3\) or settings=\{\"max_redrive_count\": 3\}$",
        ),
    ],
    ids=["unknown key", "every bad value", "another type"],
)
def test_settings_it_cannot_take_are_refused_at_once_saying_what_to_pass(settings: Any, message: str) -> None:
    stack = stranger_stack()
    orders, dlq = queue_pair(stack)

    with pytest.raises(SettingsError, match=message):
        SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq, settings=settings)


# --- the expiry margin and dlq_retention ----------------------------------------------------------


def test_an_expiry_margin_not_shorter_than_the_dlqs_retention_is_refused_with_the_fix() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "OrdersDlq", retention_period=cdk.Duration.days(1))
    orders = redriving(stack, "Orders", dlq, retention_period=cdk.Duration.hours(1))

    redriver = SqsRedriver(stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq)

    assert wiring_findings(redriver) == [
        "expiry_margin_seconds (86400 s: 1 day) must be shorter than the retention of dead_letter_queue "
        "App/OrdersDlq (1 day): messages are parked from retention - margin of age on, so every one "
        "would be parked on sight; set settings=RedriverSettings(expiry_margin_seconds=...) below "
        "86400, or a longer retention_period on App/OrdersDlq"
    ]


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {},
            r"expiry_margin_seconds \(432000 s: 5 days\) must be shorter than .* \(4 days\).* "
            r"for an imported queue, dlq_retention=Duration.days\(N\)",
        ),
        ({"dlq_retention": cdk.Duration.days(7)}, None),
        ({"monitoring": False}, None),  # the Lambda reads the retention at run time
    ],
    ids=["sqs default", "dlq_retention", "no monitoring"],
)
def test_an_imported_dlqs_margin_is_checked_against_the_retention_its_alarm_counts_from(
    props: dict[str, Any], expected: str | None
) -> None:
    stack = cdk.Stack(cdk.App(), "App", env=cdk.Environment(account=ACCOUNT, region=REGION))

    redriver = SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn=SOURCE_ARN,
        dead_letter_queue_arn=DLQ_ARN,
        settings=RedriverSettings(expiry_margin_seconds=5 * DAY),
        **props,
    )

    findings = wiring_findings(redriver)
    if expected is None:
        assert findings == []
    else:
        [finding] = findings
        assert re.search(expected, finding)


def test_a_dlq_retention_that_contradicts_the_queue_is_refused() -> None:
    stack = stranger_stack()
    orders, dlq = queue_pair(stack)

    redriver = SqsRedriver(
        stack, "Redriver", source_queue=orders, dead_letter_queue=dlq, dlq_retention=cdk.Duration.days(7)
    )

    assert wiring_findings(redriver) == [
        "dlq_retention (7 days) contradicts the retention of dead_letter_queue App/Dlq (14 days): omit "
        "dlq_retention=, which is for an imported queue"
    ]


# --- the queues' roles and kinds ------------------------------------------------------------------


def test_a_fifo_source_with_a_standard_dlq_is_refused() -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
    source = sqs.Queue(stack, "Source", fifo=True)

    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)

    assert any(
        f.startswith(
            "source_queue and dead_letter_queue must be the same kind of queue (here FIFO and standard"
        )
        for f in wiring_findings(redriver)
    )


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ({"source_queue": "Orders", "dead_letter_queue": "Orders"}, "dead_letter_queue and source_queue"),
        (
            {"source_queue": "Orders", "other_source_queues": ["Orders"], "dead_letter_queue": "Dlq"},
            "source_queue and other_source_queues[0]",
        ),
    ],
)
def test_one_queue_in_two_roles_is_refused(roles: dict[str, Any], message: str) -> None:
    stack = stranger_stack()
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
    queues = {"Orders": redriving(stack, "Orders", dlq), "Dlq": dlq}
    props = {
        role: [queues[n] for n in name] if isinstance(name, list) else queues[name]
        for role, name in roles.items()
    }

    redriver = SqsRedriver(stack, "Redriver", **props)

    assert f"{message} must be different queues" in wiring_findings(redriver)


# --- the whole app at synth -----------------------------------------------------------------------


def test_synth_reports_every_mistake_of_the_app_at_once_each_led_by_its_construct(tmp_path: Path) -> None:
    # GIVEN an app with a mistake in each of four re-drivers, one of them three
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "App", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = sqs.Queue(stack, "OrdersDlq")  # CDK's 4 days, as long as the source's
    orders = redriving(stack, "Orders", dlq)
    redriving(stack, "Invoices", dlq)  # unnamed
    SqsRedriver(
        stack, "OrdersRedriver", source_queue=orders, dead_letter_queue=dlq, settings={"canary_size": 2}
    )
    SqsRedriver(stack, "Again", source_queue=orders, dead_letter_queue=dlq)
    other_dlq = sqs.Queue(stack, "PaymentsDlq", retention_period=cdk.Duration.days(14))
    SqsRedriver(
        stack, "PaymentsRedriver", source_queue=sqs.Queue(stack, "Payments"), dead_letter_queue=other_dlq
    )
    failures = sqs.Queue(stack, "Failures", retention_period=cdk.Duration.days(14))
    SqsRedriver.for_function(
        stack,
        "NotifierRedriver",
        function=failing_function(stack, "Notifier", failures),
        settings=RedriverSettings(consumer_verdicts=True),
    )

    # WHEN it synthesizes
    with pytest.raises(RuntimeError, match="Validation failed with the following errors") as refused:
        app.synth()

    # THEN one error lists them all, each line led by the construct's path
    lines = [line.strip() for line in str(refused.value).splitlines()[1:]]
    expected = [
        ("[App/OrdersRedriver]", "dead_letter_queue App/OrdersDlq keeps mes"),
        ("[App/OrdersRedriver]", "queues of the app dead-letter into dead_letter_queue App/OrdersDlq that"),
        ("[App/Again]", "dead_letter_queue App/OrdersDlq keeps mes"),
        ("[App/Again]", "dead_letter_queue App/OrdersDlq is read by"),
        ("[App/Again]", "queues of the app dead-letter into dead_letter_queue App/OrdersDlq that"),
        ("[App/PaymentsRedriver]", "source_queue App/Payments has no redrive "),
        ("[App/NotifierRedriver]", "consumer_verdicts is on for a DLQ of anot"),
    ]
    assert len(lines) == len(expected)
    for line, (path, start) in zip(lines, expected, strict=True):
        assert line.startswith(f"{path} {start}"), line


def test_an_app_sharing_a_dlq_rightly_synthesizes_clean_with_the_nag_packs(tmp_path: Path) -> None:
    # every kind alone: tests/infra/test_dead_letter_sources.py (one app) and test_stack.py
    app = app_with_nag(tmp_path)
    stack = cdk.Stack(app, "Shared", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = dead_letter_queue(stack)
    orders, payments = (
        secure_queue(stack, name, dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
        for name in ("Orders", "Payments")
    )

    SqsRedriver(stack, "Redriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq)

    assert_nag_clean(nag_report(app))
