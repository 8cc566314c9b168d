"""The web console's pages and actions on moto: what each shows, what each does (through the same
library as the command line), and how each fails."""

from __future__ import annotations

from datetime import UTC, datetime

from botocore.exceptions import ClientError

from local_aws.queues import queue_counts
from tests.support.aws import Aws
from tests.support.console import get, open_console, parked_id, post, previewed_ids
from tests.support.operator import park, park_groups

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'


def test_status_shows_breakers_queues_and_says_there_are_no_datapoints_yet(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)

    code, page = get(client, "/")

    assert code == 200
    assert "Circuit breakers" in page and "CLOSED" in page
    assert "4 message(s) in the parking lot" in page
    assert "no datapoints yet" in page and "<svg" in page


def test_status_draws_the_depth_cloudwatch_has(aws: Aws) -> None:
    client, tool = open_console(aws)
    now = tool.now()
    cloudwatch = tool.client("cloudwatch")
    for minutes_ago, depth in ((30, 2.0), (20, 7.0), (10, 4.0)):
        at = datetime.fromtimestamp(now - minutes_ago * 60, UTC).replace(tzinfo=None)
        cloudwatch.put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {
                    "MetricName": "ApproximateNumberOfMessagesVisible",
                    "Dimensions": [{"Name": "QueueName", "Value": "orders-dlq"}],
                    "Timestamp": at,
                    "Value": depth,
                }
            ],
        )

    _code, page = get(client, "/")

    assert "<polyline" in page and "no datapoints yet" not in page


def test_groups_lists_both_queues_with_links_to_act(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)

    code, page = get(client, "/groups")

    assert code == 200
    assert "5 message(s) in 3 group(s)" in page
    assert "fp-bad" in page and "cause:over_limit" in page and "unclassified" in page
    assert "retry on sight" in page and "/replay?from=parking-lot&amp;group=fp-bad" in page
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4  # given back


def test_a_message_page_shows_its_body_attributes_mark_and_reason_escaped(aws: Aws) -> None:
    park(aws, HOSTILE, count=5, note=HOSTILE)
    client, _tool = open_console(aws)

    code, page = get(client, f"/messages/{parked_id(aws)}")

    assert code == 200
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    assert "over_limit" in page


def test_a_message_page_shows_its_history(aws: Aws) -> None:
    park(aws, "poison", count=5)
    client, _tool = open_console(aws)

    _code, page = get(client, f"/messages/{parked_id(aws)}")

    assert "<th>re-drives</th><td>5</td>" in page and "id-poison" in page
    assert "2023-11-14 22:14:20Z" in page  # first failed (FIRST_FAILED)


def test_a_message_that_is_not_there_is_a_404_that_says_it_may_have_moved(aws: Aws) -> None:
    client, _tool = open_console(aws)

    code, page = get(client, "/messages/no-such-message")

    assert code == 404
    assert "no message no-such-message" in page and "moved meanwhile" in page


def test_a_replay_is_previewed_then_done_and_recorded(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)

    code, preview = get(client, "/replay?from=parking-lot&group=fp-bad")
    assert code == 200 and "Replay 3 message(s) from the parking-lot" in preview
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4  # a preview moves nothing

    form = {"from": "parking-lot", "group": ["fp-bad"], "message_id": previewed_ids(preview), "rate": "50"}
    code, done = post(client, "/replay", preview, **form)

    assert code == 200 and "replayed: 3" in done
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 1
    assert queue_counts(aws.sqs, aws.source_url).visible == 3
    _code, audit = get(client, "/audit")
    assert "replay" in audit and "group=fp-bad" in audit and "done" in audit


def test_a_replay_with_a_bad_rate_or_queue_is_a_400(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, "/replay?from=parking-lot&group=fp-bad")

    rate, _ = post(client, "/replay", preview, **{"from": "parking-lot", "group": ["fp-bad"], "rate": "fast"})
    where, _ = post(client, "/replay", preview, **{"from": "elsewhere", "group": ["fp-bad"]})
    nothing, page = get(client, "/replay?from=parking-lot")

    assert (rate, where, nothing) == (400, 400, 400)
    assert "choose messages" in page


def test_park_on_sight_needs_a_reason_and_records_the_rule(aws: Aws) -> None:
    park_groups(aws)
    client, tool = open_console(aws)
    _code, form = get(client, "/group-rule?fingerprint=fp-bad&action=park")

    no_reason, _ = post(client, "/group-rule", form, fingerprint="fp-bad", action="park", reason=" ")
    code, done = post(client, "/group-rule", form, fingerprint="fp-bad", action="park", reason="bad release")

    assert no_reason == 400
    assert code == 200 and "group fp-bad: park" in done
    assert "fp-bad" in tool.table.load_group_marks(["fp-bad"])


def test_pause_and_resume_from_the_status_page(aws: Aws) -> None:
    client, _tool = open_console(aws)
    _code, status = get(client, "/")

    post(client, "/pause", status, reason="deploying <b>v2</b>")
    _code, paused = get(client, "/")
    post(client, "/resume", paused)
    _code, resumed = get(client, "/")

    assert "PAUSED by" in paused and "deploying &lt;b&gt;v2&lt;/b&gt;" in paused
    assert "PAUSED" not in resumed


def test_the_audit_page_says_when_there_is_no_trail(aws: Aws) -> None:
    client, _tool = open_console(aws, audited=False)

    code, page = get(client, "/audit")

    assert code == 200 and "no audit trail" in page


def test_an_aws_failure_is_a_503_page_with_one_line(aws: Aws) -> None:
    client, _tool = open_console(aws)
    aws.sqs.delete_queue(QueueUrl=aws.parking_lot_url)

    code, page = get(client, "/groups")

    assert code == 503 and "Traceback" not in page


class RefusingMetrics:
    """CloudWatch, refusing every metric read."""

    def get_metric_statistics(self, **_: object) -> object:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no metrics"}}, "GetMetricStatistics")


def test_status_without_the_chart_when_cloudwatch_refuses_it_still_shows_the_rest(aws: Aws) -> None:
    park_groups(aws)
    client, tool = open_console(aws)
    tool.clients["cloudwatch"] = RefusingMetrics()

    code, page = get(client, "/")

    assert code == 200 and "Circuit breakers" in page and "4 message(s) in the parking lot" in page
    assert "No chart: GetMetricStatistics failed" in page and "no metrics" in page
    assert "oldest message age could not be read" in page  # a problem, not the end of the page
