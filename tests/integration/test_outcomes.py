"""What became of a replay, on moto: the record a replay and a group retry leave, and what
``outcome`` makes of the queues, the consumer kit's verdicts and the time."""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from sqs_redriver.console.controls import mark_group
from sqs_redriver.console.inventory import Where
from sqs_redriver.console.outcomes import Fate, find, judge_replay, latest_line, recent, snapshot
from sqs_redriver.console.replay import MoveReport, choose, parse_selection, replay_chosen
from sqs_redriver.console.tool import Tool
from sqs_redriver.core.table import GroupAction
from sqs_redriver.kit.aws import KitAws, VerdictTally
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.keys import RecordKind, replay_record_key
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import Aws
from tests.support.factories import NamesTheSource
from tests.support.operator import failure, operator_tool, park, tool

TWO_HOURS = 7_200  # past the test source's return window (visibility timeout x receives)


def tool_at(aws: Aws, clock: list[float]) -> Tool:
    return operator_tool(aws, clock=lambda: clock[0])


def replay_three(aws: Aws, clock: list[float]) -> str:
    """Three parked messages of one bug replayed at ``clock``; the replay's id."""
    for n in range(3):
        park(aws, f"bad-{n}", fingerprint="fp-bad")
    operator = tool_at(aws, clock)
    chosen = choose(operator, Where.PARKING_LOT, parse_selection(["fp-bad"]), None)
    report = replay_chosen(operator, chosen, report=MoveReport(), rate=100)
    assert report.moved == 3 and report.replay_id is not None
    return report.replay_id


def take_from_source(aws: Aws) -> dict[str, dict[str, Any]]:
    """Every message of the source queue by its mark's identity, deleted (the consumer took it)."""
    taken: dict[str, dict[str, Any]] = {}
    while messages := aws.sqs.receive_message(
        QueueUrl=aws.source_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages"):
        for message in messages:
            mark = Mark.from_json(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
            taken[mark.identity] = {"mark": mark, "body": message["Body"]}
            aws.sqs.delete_message(QueueUrl=aws.source_url, ReceiptHandle=message["ReceiptHandle"])
    return taken


def fail_back_to_dlq(aws: Aws, mark: Mark, body: str, fingerprint: str) -> None:
    """What the consumer kit does with a terminal failure: to the DLQ, its mark kept, a failure added."""
    failed = Mark(
        identity=mark.identity,
        first_failed_at=mark.first_failed_at,
        replays=mark.replays,
        failure=failure(fingerprint),
    )
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=body,
        MessageAttributes={MARK_ATTRIBUTE: string_attribute(failed.to_json())},
    )


def test_one_back_with_a_new_cause_two_not_back_past_the_return_window(aws: Aws) -> None:
    clock = [time.time() - TWO_HOURS]
    replay_id = replay_three(aws, clock)
    taken = take_from_source(aws)
    fail_back_to_dlq(aws, taken["id-bad-0"]["mark"], "bad-0", "fp-new")

    clock[0] += TWO_HOURS
    operator = tool_at(aws, clock)
    outcome = judge_replay(operator, find(operator, replay_id[:10]), snapshot(operator))

    assert outcome.counts[Fate.BACK_NEW] == 1 and outcome.counts[Fate.NOT_BACK] == 2
    [back] = outcome.of(Fate.BACK_NEW)
    assert (back.identity, back.before, back.fingerprint) == ("id-bad-0", "fp-bad", "fp-new")
    assert "1 back in the DLQ (new cause), 2 not back after 120m" in outcome.line()


def test_a_replay_waiting_unconsumed_in_its_source_is_never_called_consumed_until_it_leaves(aws: Aws) -> None:
    replay_id = replay_three(aws, [time.time() - TWO_HOURS])  # past the return window now

    waiting = tool(aws, "outcome", replay_id, "--json")
    said = tool(aws, "outcome", replay_id)
    take_from_source(aws)  # the consumer, back at last, takes them
    consumed = tool(aws, "outcome", replay_id, "--json")

    assert waiting.exit_code == 0, waiting.output
    shown = json.loads(waiting.stdout)
    assert shown["counts"]["may-be-waiting"] == 3 and shown["counts"]["not-back"] == 0
    assert {i["fate"] for i in shown["identities"]} == {"may-be-waiting"}
    assert shown["identities"][0]["source_queue_holds"] == {"visible": 3, "in_flight": 0, "delayed": 0}
    assert "3 not back after 120m (may still be waiting in its source queue)" in said.stdout
    words = " ".join(said.stdout.split())  # rich wraps long lines
    assert (
        "its source queue still holds 3 message(s) (3 visible, 0 in flight, 0 delayed), so it may be "
        in words
    )
    assert "consumed" not in said.stdout
    after = json.loads(consumed.stdout)
    assert after["counts"]["not-back"] == 3 and after["counts"]["may-be-waiting"] == 0
    assert after["summary"] == "3 sent: 3 not back after 120m, its source queue empty (consumed)"


def test_before_the_return_window_nothing_is_called_consumed(aws: Aws) -> None:
    clock = [time.time()]
    replay_id = replay_three(aws, clock)
    take_from_source(aws)

    operator = tool_at(aws, clock)
    outcome = judge_replay(operator, find(operator, replay_id), snapshot(operator))

    assert outcome.counts[Fate.TOO_EARLY] == 3
    assert all(j.back_by is not None and j.back_by > clock[0] for j in outcome.judged)


def test_the_kits_verdicts_make_the_unseen_consumed(aws: Aws) -> None:
    clock = [time.time()]
    replay_id = replay_three(aws, clock)
    taken = take_from_source(aws)
    fail_back_to_dlq(aws, taken["id-bad-1"]["mark"], "bad-1", "fp-bad")
    record = find(tool_at(aws, clock), replay_id)
    assert record.verdict_key is not None
    assert all(t["mark"].verdict_key == record.verdict_key for t in taken.values())  # the kit reads it
    KitAws(aws.table_name, dlq_url=aws.dlq_url, sqs=aws.sqs, dynamodb=aws.dynamodb).add_verdicts(
        record.verdict_key, VerdictTally(ok=2, terminal=1, fingerprints={"fp-bad"}), int(clock[0])
    )

    operator = tool_at(aws, clock)
    outcome = judge_replay(operator, record, snapshot(operator))

    assert outcome.counts[Fate.CONSUMED] == 2 and outcome.counts[Fate.BACK_SAME] == 1


def test_a_group_retry_follows_the_groups_messages_in_the_dlq(aws: Aws) -> None:
    clock = [time.time()]
    for n in range(2):
        mark = Mark(identity=f"id-dlq-{n}", first_failed_at=int(clock[0]) - 60, failure=failure("fp-bad"))
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=f"dlq-{n}",
            MessageAttributes={MARK_ATTRIBUTE: string_attribute(mark.to_json())},
        )
    operator = tool_at(aws, clock)

    said = mark_group(operator, "fp-bad", GroupAction.RETRY, "fixed in 1.2.4", force=False)

    [listed] = recent(operator)
    assert listed.kind.value == "group-retry" and listed.count == 2 and listed.replay_id in said
    outcome = judge_replay(operator, find(operator, listed.replay_id), snapshot(operator))
    assert outcome.counts[Fate.NOT_SENT_YET] == 2  # the re-driver has not re-driven them yet


def test_a_group_retry_leaves_out_a_message_of_another_source_and_its_record_reads_back(aws: Aws) -> None:
    clock = [time.time()]
    for body in ("ours:1", "theirs:1"):
        mark = Mark(identity=f"id-{body}", first_failed_at=int(clock[0]) - 60, failure=failure("fp-bad"))
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=body,
            MessageAttributes={MARK_ATTRIBUTE: string_attribute(mark.to_json())},
        )
    operator = tool_at(aws, clock)
    # A shared DLQ: SQS names each message's source (moto does not: the proxy does it).
    operator.clients["sqs"] = NamesTheSource(operator.client("sqs"), {"theirs": "someone-elses"})

    mark_group(operator, "fp-bad", GroupAction.RETRY, "fixed in 1.2.4", force=False)

    [listed] = recent(operator)
    record = find(operator, listed.replay_id)  # readable: no source left empty
    assert [sent.identity for sent in record.sent] == ["id-ours:1"]
    assert "cannot be read" not in (latest_line(operator) or "")


def test_the_command_lists_the_recent_replays_and_details_one(aws: Aws) -> None:
    replay_id = replay_three(aws, [time.time()])

    listing = tool(aws, "outcome", "--json")
    details = tool(aws, "outcome", replay_id[:15], "--json")
    status = tool(aws, "status", "--json")
    read = tool(aws, "outcome", replay_id)
    table = tool(aws, "outcome")

    assert listing.exit_code == 0, listing.output
    [row] = json.loads(listing.stdout)
    assert (row["replay_id"], row["sent"], row["counts"]["may-be-waiting"]) == (replay_id, 3, 3)
    assert details.exit_code == 0, details.output
    shown = json.loads(details.stdout)
    assert {i["identity"] for i in shown["identities"]} == {"id-bad-0", "id-bad-1", "id-bad-2"}
    assert json.loads(status.stdout)["latest_replay"].startswith(f"latest replay {replay_id} (replay by")
    assert (
        read.exit_code == 0
        and "3 not back after 0m (may still be waiting in its source queue):" in read.stdout
    )
    assert "  id-bad-2  sent to its source queue at " in read.stdout
    assert table.exit_code == 0 and replay_id in table.stdout and "Recent replays" in table.stdout


def test_a_name_that_names_no_replay_lists_those_there_are(aws: Aws) -> None:
    replay_id = replay_three(aws, [time.time()])

    missing = tool(aws, "outcome", "29991231")

    assert missing.exit_code == 1 and replay_id in missing.output and "Traceback" not in missing.output


def test_a_corrupt_record_is_reported_not_a_crash(aws: Aws) -> None:
    replay_id = replay_three(aws, [time.time()])
    key = replay_record_key(aws.dlq_url, replay_id)
    aws.dynamodb.update_item(
        TableName=aws.table_name,
        Key={"pk": {"S": key}},
        UpdateExpression="SET sent = :x",
        ExpressionAttributeValues={":x": {"L": [{"S": "not an identity!"}]}},
    )

    details = tool(aws, "outcome", replay_id)
    listing = tool(aws, "outcome", "--json")
    operator = tool_at(aws, [time.time()])

    assert details.exit_code == 1 and "sent[0]" in details.output and "Traceback" not in details.output
    assert "sent[0]" in json.loads(listing.stdout)[0]["error"]
    assert latest_line(operator) is not None and "cannot be read" in (latest_line(operator) or "")


def test_a_corrupt_index_is_reported_and_rewritten_by_the_next_replay(aws: Aws) -> None:
    aws.dynamodb.put_item(
        TableName=aws.table_name,
        Item={"pk": {"S": RecordKind.REPLAY_INDEX.key(aws.dlq_url)}, "replays": {"S": "oops"}},
    )
    assert tool(aws, "outcome").exit_code == 1

    replay_id = replay_three(aws, [time.time()])

    assert [entry.replay_id for entry in recent(tool_at(aws, [time.time()]))] == [replay_id]


def refuse(**_: Any) -> Any:
    raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "PutItem")


def test_a_record_that_cannot_be_written_never_hides_what_moved(aws: Aws) -> None:
    for n in range(3):
        park(aws, f"bad-{n}", fingerprint="fp-bad")
    operator = tool_at(aws, [time.time()])
    # The table's client, refusing every PutItem and BatchWriteItem (the records' writes).
    operator.clients["dynamodb"] = ClientProxy(aws.dynamodb, put_item=refuse, batch_write_item=refuse)

    chosen = choose(operator, Where.PARKING_LOT, parse_selection(["fp-bad"]), None)
    report = replay_chosen(operator, chosen, report=MoveReport())

    assert report.moved == 3 and report.replay_id is None
    assert report.error is not None and report.error.startswith("moved, but not recorded for `outcome`")


def test_a_refused_message_gone_from_the_queues_is_never_called_consumed(aws: Aws) -> None:
    # GIVEN a replay of three: the consumer took two, the kit refused one back to the DLQ
    clock = [time.time() - TWO_HOURS]
    replay_id = replay_three(aws, clock)
    taken = take_from_source(aws)
    fail_back_to_dlq(aws, taken["id-bad-1"]["mark"], "bad-1", "fp-bad")
    record = find(tool_at(aws, clock), replay_id)
    assert record.verdict_key is not None
    KitAws(aws.table_name, dlq_url=aws.dlq_url, sqs=aws.sqs, dynamodb=aws.dynamodb).add_verdicts(
        record.verdict_key, VerdictTally(ok=2, terminal=1, fingerprints={"fp-bad"}), int(clock[0])
    )
    # AND the refused copy is gone from the DLQ since (parked and purged, or expired)
    [back] = aws.sqs.receive_message(QueueUrl=aws.dlq_url)["Messages"]
    aws.sqs.delete_message(QueueUrl=aws.dlq_url, ReceiptHandle=back["ReceiptHandle"])

    # WHEN the operator asks what became of it, past the return window
    clock[0] += TWO_HOURS
    result = tool(aws, "outcome", replay_id, "--json")

    # THEN none is called consumed: any of the three may be the refused one
    assert result.exit_code == 1, result.output
    shown = json.loads(result.stdout)
    assert {i["fate"] for i in shown["identities"]} == {"may-have-been-refused"}
    assert shown["counts"]["consumed"] == shown["counts"]["not-back"] == 0
    assert "3 not found, and may have been refused (not called consumed)" in shown["summary"]
    assert "the consumer kit refused 1" in shown["summary"]


def test_a_replayed_message_whose_state_record_cannot_be_read_is_never_called_consumed(aws: Aws) -> None:
    # GIVEN a replay of three the consumer took, one with a message record that is not one
    clock = [time.time() - TWO_HOURS]
    replay_id = replay_three(aws, clock)
    take_from_source(aws)
    key = RecordKind.MESSAGE.key("id-bad-0")
    aws.dynamodb.put_item(
        TableName=aws.table_name, Item={"pk": {"S": key}, "identity": {"S": "id-someone-else"}}
    )

    # WHEN the operator asks past the return window
    clock[0] += TWO_HOURS
    operator = tool_at(aws, clock)
    outcome = judge_replay(operator, find(operator, replay_id), snapshot(operator))

    # THEN that one is not called consumed, and the reason names the record and its field
    fates = {judged.identity: judged.fate for judged in outcome.judged}
    assert fates == {"id-bad-0": Fate.MAYBE_REFUSED, "id-bad-1": Fate.NOT_BACK, "id-bad-2": Fate.NOT_BACK}
    [unread] = outcome.of(Fate.MAYBE_REFUSED)
    assert unread.cause == (
        f"its state records could not be read whole (corrupt state record {key!r}: identity: not the "
        "identity of its key): one may say it came back since"
    )
