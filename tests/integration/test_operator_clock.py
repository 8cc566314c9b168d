"""The operator's tool writes times the re-driver accepts even when the operator's clock runs fast:
the re-driver calls a time more than 300 s ahead of its own forged, so the tool never writes one
more than a second ahead of AWS's clock (the Date of its latest response)."""

from __future__ import annotations

import time

from local_aws import REGION
from sqs_redriver.console.controls import open_breakers
from sqs_redriver.console.tool import Connection, Target, Tool
from sqs_redriver.core.breaker import State
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws
from tests.support.operator import operator_tool

AN_HOUR_FAST = 3600


def fast_tool(aws: Aws) -> Tool:
    return operator_tool(aws, clock=lambda: time.time() + AN_HOUR_FAST)


def test_a_breaker_opened_from_a_laptop_an_hour_fast_is_open_for_the_redriver(aws: Aws) -> None:
    before = time.time()

    open_breakers(fast_tool(aws), "consumer down")

    stored = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60).load_breaker(
        RecordKind.BREAKER.key(aws.source_url)
    )
    assert stored.state is State.OPEN  # read as written, not as a forged record (CLOSED)
    assert before - 1 <= stored.changed_at <= time.time() + 1


def test_the_tool_keeps_its_own_clock_until_aws_answers_and_when_it_is_behind(aws: Aws) -> None:
    before = time.time()
    fast = fast_tool(aws)
    assert fast.now() >= int(before) + AN_HOUR_FAST  # no answer from AWS yet

    slow = Tool(Connection(region=REGION), Target(), clock=lambda: 1_000.0)
    slow.client("sqs").list_queues()
    assert slow.now() == 1_000  # behind AWS: a test's fake clock, or a slow laptop, is kept
