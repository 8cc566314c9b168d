"""bench.cost, the arithmetic of docs/cost.md: a month's bill from the template's resources, a
measured idle run, the published prices and the stated assumptions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.cost import (
    OPTIONS,
    REDRIVER_HANDLER,
    Assumed,
    Deployment,
    IdleRun,
    Prices,
    monthly,
    options_table,
    schedule_seconds,
)

DEPLOYMENT = Deployment(
    alarms=7,
    dashboards=1,
    runs_per_month=8640,
    memory_gb=0.25,
    arm64=True,
    traced=True,
    receive_wait_seconds=1.0,
    redrives_per_second=50,
    queue_metrics=True,
)
IDLE = IdleRun(
    requests={"ReceiveMessage": 4, "GetQueueAttributes": 4, "GetItem": 3, "PutItem": 2, "UpdateItem": 1},
    read_units=4.0,
    write_units=5.0,
    log_bytes=1400,
    custom_metrics=11,
)


def template(*, schedule: str = "rate(5 minutes)", alarms: int = 7, dashboards: int = 1) -> dict[str, Any]:
    function = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Handler": REDRIVER_HANDLER,
            "MemorySize": 256,
            "Architectures": ["arm64"],
            "TracingConfig": {"Mode": "Active"},
            "Environment": {
                "Variables": {
                    "RECEIVE_WAIT_SECONDS": "1",
                    "MAX_REDRIVES_PER_SECOND": "50",
                    "QUEUE_METRICS": "true",
                }
            },
        },
    }
    resources = {
        "Fn": function,
        "Consumer": {"Type": "AWS::Lambda::Function", "Properties": {"Handler": "consumer.handler"}},
        "Schedule": {"Type": "AWS::Events::Rule", "Properties": {"ScheduleExpression": schedule}},
    }
    resources |= {f"Alarm{i}": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}} for i in range(alarms)}
    resources |= {
        f"Board{i}": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {}} for i in range(dashboards)
    }
    return {"Resources": resources}


def test_the_deployment_is_read_from_the_template() -> None:
    assert Deployment.from_template(template()) == DEPLOYMENT
    assert Deployment.from_template(template(alarms=0, dashboards=0)).alarms == 0


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [("rate(5 minutes)", 300), ("rate(1 minute)", 60), ("rate(1 hour)", 3600), ("rate(2 days)", 172_800)],
)
def test_a_rate_schedule_has_a_period(expression: str, seconds: int) -> None:
    assert schedule_seconds(expression) == seconds


def test_a_cron_schedule_is_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="only rate"):
        schedule_seconds("cron(0 12 * * ? *)")


def test_an_idle_month_is_the_fixed_charges_plus_8640_idle_runs() -> None:
    bill = monthly(DEPLOYMENT, IDLE, 0)

    assert bill["dashboard"] == 3.00
    assert bill["alarms"] == pytest.approx(0.70)
    assert bill["custom metrics"] == pytest.approx(3.30)
    assert bill["metric reads (GetMetricData)"] == 0
    assert bill["Lambda requests"] == pytest.approx(8640 * 0.20 / 1e6)
    # 1 s of receive wait and 14 calls of 15 ms a run, at 0.25 GB, arm64
    assert bill["Lambda duration"] == pytest.approx(8640 * 1.21 * 0.25 * 0.0000133334)
    assert bill["SQS requests"] == pytest.approx(8640 * 8 * 0.40 / 1e6)
    assert bill["DynamoDB"] == pytest.approx(8640 * (5 * 0.625 + 4 * 0.125) / 1e6)
    assert bill["CloudWatch Logs"] == pytest.approx(8640 * 2000 / 1024**3 * 0.53)
    assert bill["X-Ray traces"] == pytest.approx(8640 * 5 / 1e6)


def test_dead_letters_add_their_requests_duration_and_metric_reads() -> None:
    idle, busy = monthly(DEPLOYMENT, IDLE, 0), monthly(DEPLOYMENT, IDLE, 1_000_000)

    assert busy["SQS requests"] - idle["SQS requests"] == pytest.approx(1_000_000 * 0.317 * 0.40 / 1e6)
    assert busy["Lambda duration"] - idle["Lambda duration"] == pytest.approx(
        1_000_000 / 50 * 0.25 * 0.0000133334
    )
    # one read of 5 metrics in every run: each run has messages to judge
    assert busy["metric reads (GetMetricData)"] == pytest.approx(8640 * 5 * 0.01 / 1000)
    assert monthly(DEPLOYMENT, IDLE, 100)["metric reads (GetMetricData)"] == pytest.approx(
        100 * 5 * 0.01 / 1000
    )


def test_the_options_that_cut_it() -> None:
    base = sum(monthly(DEPLOYMENT, IDLE, 10_000).values())
    quiet = Deployment(**{**DEPLOYMENT.__dict__, "alarms": 0, "dashboards": 0})
    hourly = Deployment(**{**DEPLOYMENT.__dict__, "runs_per_month": 720})
    unread = Deployment(**{**DEPLOYMENT.__dict__, "queue_metrics": False})

    assert base - sum(monthly(quiet, IDLE, 10_000).values()) == pytest.approx(3.70)
    assert sum(monthly(hourly, IDLE, 10_000).values()) < base
    assert base - sum(monthly(unread, IDLE, 10_000).values()) == pytest.approx(8640 * 5 * 0.01 / 1000)


def test_x86_is_billed_at_its_own_rate() -> None:
    x86 = Deployment(**{**DEPLOYMENT.__dict__, "arm64": False})

    ratio = monthly(x86, IDLE, 0)["Lambda duration"] / monthly(DEPLOYMENT, IDLE, 0)["Lambda duration"]
    assert ratio == pytest.approx(Prices().lambda_gb_second_x86 / Prices().lambda_gb_second_arm64)


def test_the_idle_run_is_read_from_its_output() -> None:
    emf = {
        "_aws": {
            "CloudWatchMetrics": [
                {
                    "Namespace": "DlqRedriver",
                    "Dimensions": [["service"]],
                    "Metrics": [{"Name": "Redriven"}, {"Name": "Parked"}],
                }
            ]
        }
    }
    stdout = "\n".join([json.dumps({"message": "run finished"}), json.dumps(emf)] * 2) + "\n"
    runs = [
        {"requests": {"GetItem": 3}, "read_units": 3.0, "write_units": 3.0},
        {"requests": {"GetItem": 3, "ReceiveMessage": 4}, "read_units": 4.0, "write_units": 5.0},
    ]

    idle = IdleRun.from_output(stdout, runs)

    assert (idle.requests, idle.read_units, idle.write_units) == (runs[1]["requests"], 4.0, 5.0)
    assert idle.custom_metrics == 2
    assert idle.log_bytes == len(stdout.encode()) // 2
    assert idle.sqs_requests == 4
    assert Assumed().requests_per_redrive == 0.317


def test_the_options_table_gives_each_options_monthly_totals() -> None:
    lines = options_table(DEPLOYMENT, IDLE, [0, 10_000])

    defaults = sum(monthly(DEPLOYMENT, IDLE, 0).values()), sum(monthly(DEPLOYMENT, IDLE, 10_000).values())
    assert lines[2] == f"| the defaults | ${defaults[0]:.2f} / ${defaults[1]:.2f} |"
    assert len(lines) == 2 + len(OPTIONS)
