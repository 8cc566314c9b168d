"""Every way text about a dead letter leaves the re-driver, against moto, for every secret of the
corpus in the error its source wrote: a function's on-failure destination record
(``errorMessage``), a function's dead-letter queue (``ErrorMessage``), a rule target's
(``ERROR_MESSAGE``), a subscription's (the topic it claims), and an SQS message with a hostile mark
(its consumer failure, a field that is no number). The exits: each decision's log line, the parking
reason in the parking lot's mark attribute, the state table, the archive's reason and mark, the
run's report (what the metrics are made of), and, through the real handler, all it prints (its log
lines and the EMF metrics). None shows a secret; each parking reason shows the error, redacted.

The dead letter itself (its body and its own attributes) is kept as it came: it is the message."""

from __future__ import annotations

import json
import logging
import string
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import boto3
import pytest

from local_aws import ACCOUNT, REGION
from local_aws.compose import local_redriver
from local_aws.events import LambdaContext, scheduled_event
from local_aws.queues import drain
from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.mark import read_parked
from sqs_redriver.protocol.sources import DeadLetterSource, sources_json
from sqs_redriver.runtime.report import RunReport
from tests.support.aws import Aws, handler_environment, make_settings
from tests.support.cold_start import import_fresh
from tests.support.dead_letters import (
    FUNCTION_SOURCE,
    OTHER_FUNCTION_SOURCE,
    RULE_TARGET_SOURCE,
    SUBSCRIPTION_SOURCE,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)
from tests.support.factories import LONG_AGO, FakeClock
from tests.support.secret_corpus import CORPUS, Secret, fake, leaks

LATER = 3600
LOGGER = "redriver-secret-exits"
UNCONFIGURED_FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:shipping"
UNCONFIGURED_RULE = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders-refunded"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}"


@dataclass(frozen=True)
class Kind:
    """A kind of dead letter: the sources configured, and the dead letter carrying a secret."""

    name: str
    sources: tuple[DeadLetterSource, ...]
    letter: Callable[[int, Secret], AwsDeadLetter]
    cause: ParkCause

    def __str__(self) -> str:  # pytest ids
        return self.name


def _arn_secrets() -> tuple[Secret, ...]:
    """What an SNS dead letter can carry that the re-driver shows: the topic it claims, an ARN (no
    whitespace), here with a secret in each form an ARN can hold."""
    password, key_id, token, github = (
        fake(12),
        "AKIA" + fake(16, string.ascii_uppercase + string.digits),
        fake(32),
        fake(36),
    )
    return (
        Secret("URL password", f"{TOPIC}:orders/postgres://app:{password}@db:5432", (password,)),
        Secret("AWS access key id", f"{TOPIC}:{key_id}", (key_id,)),
        Secret("token pair", f"{TOPIC}:orders?access_token={token}", (token,)),
        Secret("GitHub token", f"{TOPIC}:orders/ghp_{github}", (github,)),
    )


ARN_SECRETS = _arn_secrets()


KINDS = (
    Kind(
        "function destination record",
        (FUNCTION_SOURCE,),
        lambda i, secret: destination_record(
            UNCONFIGURED_FUNCTION, {"order": i}, error_type="OperationalError", error_message=secret.text
        ),
        ParkCause.UNKNOWN_SOURCE,
    ),
    Kind(
        "function DLQ",
        # Two functions: a function DLQ's message names none, so it belongs to neither.
        (FUNCTION_SOURCE, OTHER_FUNCTION_SOURCE),
        lambda i, secret: function_dlq_message({"order": i}, error_message=secret.text),
        ParkCause.UNKNOWN_SOURCE,
    ),
    Kind(
        "rule target",
        (RULE_TARGET_SOURCE,),
        lambda i, secret: rule_target_dlq_message(
            rule_event({"order": i}), rule_arn=UNCONFIGURED_RULE, error_message=secret.text
        ),
        ParkCause.UNKNOWN_SOURCE,
    ),
)
SUBSCRIPTION = Kind(
    "subscription",
    (SUBSCRIPTION_SOURCE,),
    lambda i, secret: subscription_dlq_message(f"order {i} shipped", topic_arn=secret.text),
    ParkCause.UNREPLAYABLE,
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def run(aws: Aws, clock: FakeClock, *sources: DeadLetterSource) -> RunReport:
    settings = make_settings(
        aws,
        dead_letter_sources=sources,
        source_queue_url=sources[0].address,
        other_source_queue_urls=tuple(source.address for source in sources[1:]),
    )
    redriver = local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        logger_name=LOGGER,
        delivery=lambda service, region: (
            aws.sqs if service == "sqs" else boto3.client(service, region_name=region)
        ),
    )
    clock.advance(LATER)
    return redriver.run(lambda: 600_000)


def put(aws: Aws, letters: list[AwsDeadLetter]) -> None:
    for letter in letters:
        aws.sqs.send_message(QueueUrl=aws.dlq_url, **letter.send_kwargs())


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every log record whole: its message, its arguments and its extra fields."""
    return "\n".join(json.dumps(vars(record), default=str) for record in caplog.records)


def table_dump(aws: Aws) -> str:
    return json.dumps(aws.dynamodb.scan(TableName=aws.table_name)["Items"])


def archived(aws: Aws) -> list[dict[str, Any]]:
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket).get("Contents", [])
    return [
        json.loads(aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read()) for o in listed
    ]


def parking_marks(aws: Aws) -> list[str]:
    """The re-driver's attribute on each parked message: the mark with its parking reason."""
    return [
        m["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"] for m in drain(aws.sqs, aws.parking_lot_url)
    ]


def what_the_redriver_wrote(
    aws: Aws, caplog: pytest.LogCaptureFixture, report: RunReport
) -> tuple[str, list[str]]:
    """All text the re-driver wrote about the dead letters (the messages' own body and attributes
    aside), and the parking reasons in the parking lot."""
    marks = parking_marks(aws)
    documents = archived(aws)
    about = [json.dumps({"reason": d["reason"], "mark": d["mark"]}) for d in documents]
    whys = [str((read_parked(mark) or {}).get("why")) for mark in marks]
    return "\n".join([logged(caplog), table_dump(aws), *marks, *about, repr(report)]), whys


@pytest.mark.parametrize("kind", [*KINDS, SUBSCRIPTION], ids=str)
def test_no_secret_of_a_dead_letter_s_error_leaves_the_redriver(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture, kind: Kind
) -> None:
    # GIVEN dead letters whose source's error holds a secret of the corpus (a subscription's: the
    # topic it claims), of no configured source (a subscription's: not its topic)
    secrets = ARN_SECRETS if kind is SUBSCRIPTION else CORPUS
    put(aws, [kind.letter(i, secret) for i, secret in enumerate(secrets)])

    # WHEN the re-driver parks them, archiving each
    with caplog.at_level(logging.INFO, logger=LOGGER):
        report = run(aws, clock, *kind.sources)

    # THEN every exit says why, redacted, and none shows a secret
    written, whys = what_the_redriver_wrote(aws, caplog, report)
    assert report.parked == len(secrets) and len(whys) == len(secrets)
    assert all("<redacted>" in why for why in whys), whys
    assert written.count(f'"cause": "{kind.cause.value}"') >= len(secrets)
    assert leaks(written, secrets) == []


def hostile_mark(index: int, secret: Secret) -> dict[str, Any]:
    """A mark written by a sender, not the kit: over the limit, its failure holding a secret
    (a message longer than a mark's takes makes the failure left out, with a rejection logged).
    Terminal: a transient one at its limit would be held, not parked (runtime/held.py)."""
    failure = {
        "kind": "terminal",
        "class": "LeakyError",
        "msg": secret.text,
        "fp": "f" * 16,
        "at": LONG_AGO + 10,
        "try": 1,
        "src": secret.text[:256],
    }
    mark = {"id": f"id-{index}", "n": 9, "first": LONG_AGO, "at": [LONG_AGO + 1], "err": failure}
    return {MARK_ATTRIBUTE: string_attribute(json.dumps(mark))}


def test_no_secret_of_a_hostile_mark_leaves_the_redriver(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN SQS dead letters with a forged mark each: over the limit, a secret in its failure; and
    # others whose mark holds a secret where its count belongs
    for index, secret in enumerate(CORPUS):
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"order-{index}", MessageAttributes=hostile_mark(index, secret)
        )
        forged = string_attribute(
            json.dumps({"id": f"c-{index}", "n": secret.text, "first": LONG_AGO, "at": []})
        )
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"count-{index}", MessageAttributes={MARK_ATTRIBUTE: forged}
        )

    # WHEN the re-driver parks the first (over the limit) and re-drives the others (unmarked)
    # (a breaker that never opens: that forged counts open it is another test's, test_hostile_marks)
    never_opens = BreakerPolicy(failure_threshold=10_000, minimum_volume=10_000)
    settings = replace(make_settings(aws), max_redrive_count=3, breaker=never_opens)
    redriver = local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        logger_name=LOGGER,
    )
    with caplog.at_level(logging.INFO, logger=LOGGER):
        report = redriver.run(lambda: 600_000)

    # THEN the reasons say what the mark said, redacted, the rejections are logged, and no exit
    # shows a secret
    written, whys = what_the_redriver_wrote(aws, caplog, report)
    redriven = drain(aws.sqs, aws.source_url)
    assert (report.parked, len(redriven)) == (len(CORPUS), len(CORPUS))
    shown = [why for why in whys if "consumer's terminal error LeakyError" in why]
    assert shown and all("<redacted>" in why for why in shown)
    assert logged(caplog).count('"field": "n"') == len(CORPUS)
    marks_sent = json.dumps([m.get("MessageAttributes") for m in redriven])
    assert leaks(written + marks_sent) == []


@pytest.fixture
def redriver_handler(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    sources = (FUNCTION_SOURCE,)
    environment = handler_environment(
        aws, ARCHIVE_BUCKET=aws.archive_bucket, DEAD_LETTER_SOURCES=sources_json(sources)
    )
    del environment["SOURCE_QUEUE_URL"]  # a DLQ of another kind has its sources instead
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return import_fresh("sqs_redriver.runtime.handler")


def test_no_secret_of_a_function_s_error_leaves_the_real_handler(
    aws: Aws,
    redriver_handler: ModuleType,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN destination records of a function not configured, each with a secret in its error
    put(aws, [KINDS[0].letter(i, secret) for i, secret in enumerate(CORPUS)])

    # WHEN the real handler runs on its schedule
    with caplog.at_level(logging.INFO):
        result = redriver_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())

    # THEN what it logs, prints (the EMF metrics) and returns shows no secret
    printed, logs = capsys.readouterr().out, logged(caplog)
    emf = [json.loads(line) for line in printed.splitlines() if '"_aws"' in line]
    assert result["parked"] == len(CORPUS) and emf and emf[-1]["Parked"] == [float(len(CORPUS))]
    assert logs.count('"msg": "parked"') == len(CORPUS) and logs.count("<redacted>") >= len(CORPUS)
    assert leaks(printed + logs + json.dumps(result) + "\n".join(parking_marks(aws))) == []
