"""Edit and retry on moto: the edited message reaches its source with its identity and the edit in
its mark, the original archived first and deleted last; nothing moves when the edit is refused,
the message moved meanwhile, or the send fails."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local_aws import REGION
from local_aws.clients import ClientProxy
from local_aws.queues import drain, queue_counts
from sqs_redriver.console.editing import document_of, edit_and_retry
from sqs_redriver.console.errors import DocumentError, NotFound
from sqs_redriver.console.tool import find_message
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import EDIT_ARCHIVE_PREFIX
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES
from tests.support.aws import Aws
from tests.support.operator import FIRST_FAILED, operator_tool, park, tool

ORDER = '{"order": 7, "items": [], "note": "héllo"}'
AUDIT_GROUP = "orders-audit"


def with_items(document: str, items: list[Any]) -> str:
    edited = json.loads(document)
    edited["body"]["items"] = items
    return json.dumps(edited)


def edited_originals(aws: Aws) -> list[dict[str, Any]]:
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket, Prefix=f"{EDIT_ARCHIVE_PREFIX}/")
    return [
        json.loads(aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read())
        for o in listed.get("Contents", [])
    ]


def mark_of(message: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"]))


def nothing_moved(aws: Aws) -> None:
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 1
    assert queue_counts(aws.sqs, aws.source_url).total == 0
    assert edited_originals(aws) == []


def test_an_edited_parked_message_arrives_at_its_source_with_its_identity_and_the_edit_in_its_mark(
    aws: Aws,
) -> None:
    park(aws, ORDER, identity="order-7", tenant="acme")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")

    report = edit_and_retry(ops, item, with_items(document_of(item), [{"sku": "A1"}]))

    assert report.clean, report.to_dict()
    [arrived] = drain(aws.sqs, aws.source_url)
    assert json.loads(arrived["Body"]) == {"order": 7, "items": [{"sku": "A1"}], "note": "héllo"}
    assert arrived["MessageAttributes"]["tenant"]["StringValue"] == "acme"
    mark = mark_of(arrived)
    assert (mark["id"], mark["n"], mark["first"]) == ("order-7", 0, FIRST_FAILED)
    assert mark["ed"][0] == 1 and mark["ed"][2] == report.archive_key and [n for _, n in mark["rp"]] == [5]
    [original] = edited_originals(aws)
    assert (original["body"], original["identity"], original["from"]) == (ORDER, "order-7", "parking-lot")
    assert (
        original["mark"]["parked"]["cause"] == "over_limit"
        and original["edited_to"]["body"] == arrived["Body"]
    )
    assert queue_counts(aws.sqs, aws.parking_lot_url).total == 0


def test_an_edit_past_the_size_limit_is_refused_before_anything_is_sent(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")
    document = json.loads(document_of(item))
    document["body"]["note"] = "x" * SQS_MAX_MESSAGE_BYTES

    with pytest.raises(DocumentError) as refused:
        edit_and_retry(ops, item, json.dumps(document))

    assert refused.value.field == "body" and "1048576" in str(refused.value)
    nothing_moved(aws)


def test_a_message_that_moved_meanwhile_is_not_edited_and_nothing_is_sent(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")
    drain(aws.sqs, aws.parking_lot_url)  # someone purged it

    with pytest.raises(NotFound, match="moved meanwhile"):
        edit_and_retry(ops, item, with_items(document_of(item), [1]))

    assert queue_counts(aws.sqs, aws.source_url).total == 0
    assert edited_originals(aws) == []


class FailingSends(ClientProxy):
    """The SQS client, except that every send fails."""

    def send_message_batch(self, **_: Any) -> Any:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "SendMessageBatch")


class InterruptedAfterSending(ClientProxy):
    """The SQS client, except that Ctrl-C comes right after a send arrived (before the delete)."""

    def send_message_batch(self, **kwargs: Any) -> Any:
        self._client.send_message_batch(**kwargs)
        raise KeyboardInterrupt


def test_ctrl_c_after_the_send_reports_that_the_edit_went_and_the_original_stayed(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")
    ops.clients["sqs"] = InterruptedAfterSending(aws.sqs)

    report = edit_and_retry(ops, item, with_items(document_of(item), [1]))

    assert report.interrupted and not report.deleted
    assert "interrupted while sending it" in report.summary() and "sent twice" in report.summary()
    assert queue_counts(aws.sqs, aws.source_url).visible == 1  # it went
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 1  # and the original was given back


def test_a_failed_send_leaves_the_original_where_it_was(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")
    ops.clients["sqs"] = FailingSends(aws.sqs)

    report = edit_and_retry(ops, item, with_items(document_of(item), [1]))

    assert (report.archived, report.sent, report.deleted) == (True, False, False)
    assert "down" in (report.error or "") and "still in the parking-lot" in report.summary()
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 1  # given back at once
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_the_audit_trail_records_the_edit_with_its_archive_key(aws: Aws) -> None:
    boto3.client("logs", region_name=REGION).create_log_group(logGroupName=AUDIT_GROUP)
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws, audit_log_group=AUDIT_GROUP)
    item = find_message(ops, "order-7")

    report = edit_and_retry(ops, item, with_items(document_of(item), [1]))

    assert ops.audit_log is not None
    [action], _ = ops.audit_log.read(int(time.time()) - 60, int(time.time()) + 60, 10)
    assert (action.action, action.outcome.value, action.count) == ("edit", "done", 1)
    assert action.details["archive_key"] == report.archive_key
    assert action.details["identity"] == "order-7"


# -- the command ------------------------------------------------------------------------------------


def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *edits: str) -> None:
    """$EDITOR: a script that applies the next of ``edits`` (Python statements on ``doc``, the
    document as JSON, or ``raw = "..."`` to write text as it is) each time it runs."""
    script = tmp_path / "editor.py"
    state = tmp_path / "runs"
    state.write_text("0")
    script.write_text(
        "import json, sys, pathlib\n"
        f"state = pathlib.Path({str(state)!r}); run = int(state.read_text())\n"
        "state.write_text(str(run + 1))\n"
        f"edits = {list(edits)!r}\n"
        "path = pathlib.Path(sys.argv[1]); doc = json.loads(path.read_text()); raw = None\n"
        "exec(edits[min(run, len(edits) - 1)])\n"
        "path.write_text(raw if raw is not None else json.dumps(doc))\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)


def test_edit_opens_the_editor_shows_the_diff_and_prints_the_archive_key(
    aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    park(aws, ORDER, identity="order-7")
    editor(tmp_path, monkeypatch, "doc['body']['items'] = ['A1']")

    result = tool(aws, "--archive-bucket", aws.archive_bucket, "edit", "order-7", input="y\n")

    assert result.exit_code == 0, result.output
    assert '-    "items": [],' in result.stdout and '+    "items": [' in result.stdout
    assert f"archived at {EDIT_ARCHIVE_PREFIX}/" in result.stdout
    [arrived] = drain(aws.sqs, aws.source_url)
    assert json.loads(arrived["Body"])["items"] == ["A1"]
    # back in the parking lot one day, `show` tells of the edit and where the original is
    aws.sqs.send_message(
        QueueUrl=aws.parking_lot_url,
        MessageBody=arrived["Body"],
        MessageAttributes=arrived["MessageAttributes"],
    )
    shown = tool(aws, "show", "order-7")
    assert "edits" in shown.stdout and f"{EDIT_ARCHIVE_PREFIX}/" in shown.stdout


def test_an_invalid_edit_is_shown_and_reopened_until_it_is_valid(
    aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    park(aws, ORDER, identity="order-7")
    # the second run edits what the first left (the operator's text is kept, not the original)
    editor(tmp_path, monkeypatch, 'raw = \'{"body": "{not json"}\'', "doc['body'] = {'order': 8}")

    result = tool(
        aws, "--archive-bucket", aws.archive_bucket, "edit", "order-7", "--yes", "--json", input="y\n"
    )

    assert result.exit_code == 0, result.output
    assert "not sendable: body: was a JSON object or array and must stay one" in result.stderr
    assert '"deleted": true' in result.stdout  # after the echo of the answer typed
    assert json.loads(drain(aws.sqs, aws.source_url)[0]["Body"])["order"] == 8


def test_an_unchanged_edit_sends_nothing(aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    park(aws, ORDER, identity="order-7")
    editor(tmp_path, monkeypatch, "pass")

    result = tool(aws, "--archive-bucket", aws.archive_bucket, "edit", "order-7", "--yes")

    assert result.exit_code == 0, result.output
    assert "no change: nothing sent" in result.stdout
    nothing_moved(aws)


def test_edit_without_an_archive_bucket_is_refused(
    aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    park(aws, ORDER, identity="order-7")
    editor(tmp_path, monkeypatch, "doc['body']['order'] = 8")

    result = tool(aws, "edit", "order-7", "--yes")

    assert result.exit_code == 2 and "no archive bucket" in result.stderr
    nothing_moved(aws)


def test_an_edit_is_recorded_for_outcome_and_its_mark_carries_the_records_verdict_key(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    ops = operator_tool(aws)
    item = find_message(ops, "order-7")

    report = edit_and_retry(ops, item, with_items(document_of(item), [{"sku": "A1"}]))

    assert report.clean and report.replay_id and report.replay_id in report.summary()
    [arrived] = drain(aws.sqs, aws.source_url)
    assert mark_of(arrived)["v"].endswith(report.replay_id)
    listed = tool(aws, "outcome", report.replay_id, "--json")
    assert listed.exit_code == 0, listed.output
    recorded = json.loads(listed.stdout)
    assert recorded["kind"] == "edit" and [s["identity"] for s in recorded["identities"]] == ["order-7"]
