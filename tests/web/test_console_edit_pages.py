"""Edit and retry, the fleet and the outcomes in the web console on moto: the edit's form, preview
and confirmation (nothing sent before it), a bad document kept with its reason, a message that
moved meanwhile; the fleet with a refused queue; what became of a replay and of an edit."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local_aws.queues import drain, queue_counts
from sqs_redriver.console.tool import Connection
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES
from tests.support.aws import Aws
from tests.support.console import (
    BASE_URL,
    FROM_THE_CONSOLE,
    ROOT,
    get,
    open_console,
    parked_id,
    post,
    previewed_ids,
)
from tests.support.operator import park, park_groups

ORDER = '{"order": 7, "items": []}'
HOSTILE = "</textarea><script>window.pwned=1</script>"
TEXTAREA = re.compile(r"<textarea[^>]*>(.*?)</textarea>", re.S)
HIDDEN_DOCUMENT = re.compile(r'name="document" value="([^"]*)"')


def textarea_of(page: str) -> str:
    found = TEXTAREA.search(page)
    assert found, "the page has no textarea"
    return html.unescape(found.group(1))


def with_items(document: str, items: list[Any]) -> str:
    edited = json.loads(document)
    edited["body"]["items"] = items
    return json.dumps(edited, indent=2)


def test_an_edit_is_previewed_as_a_diff_then_sent_when_confirmed(aws: Aws) -> None:
    park(aws, ORDER, identity="order-7")
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    _code, form = get(client, f"/messages/{message_id}/edit")
    edited = with_items(textarea_of(form), [{"sku": "A1"}])

    code, preview = post(
        client, f"/messages/{message_id}/edit", form, document=edited, **{"from": "parking-lot"}
    )

    assert code == 200
    assert '<span class="diff-add">+' in preview and '<span class="diff-del">-' in preview
    assert "&#34;sku&#34;: &#34;A1&#34;" in preview
    assert queue_counts(aws.sqs, aws.source_url).total == 0  # a preview sends nothing
    hidden = HIDDEN_DOCUMENT.search(preview)
    assert hidden and html.unescape(hidden.group(1)) == edited

    code, done = post(
        client, f"/messages/{message_id}/edit/confirm", preview, document=edited, **{"from": "parking-lot"}
    )

    assert code == 200 and "edited and sent to" in done and "archived at edited/" in done
    [arrived] = drain(aws.sqs, aws.source_url)
    assert json.loads(arrived["Body"]) == {"order": 7, "items": [{"sku": "A1"}]}
    assert queue_counts(aws.sqs, aws.parking_lot_url).total == 0
    outcome_link = re.search(f'href="{ROOT}(/outcomes/[^"]+)"', done)
    assert outcome_link
    code, outcome = get(client, outcome_link.group(1))
    assert code == 200 and "Edit" in outcome and "order-7" in outcome


def test_the_message_page_links_its_edit_and_the_form_holds_hostile_text_as_text(aws: Aws) -> None:
    park(aws, HOSTILE)
    client, _tool = open_console(aws)
    message_id = parked_id(aws)

    _code, message = get(client, f"/messages/{message_id}")
    code, form = get(client, f"/messages/{message_id}/edit")

    assert f'href="{ROOT}/messages/{message_id}/edit"' in message
    assert code == 200
    assert "<script>" not in form
    assert HOSTILE in json.loads(textarea_of(form))["body"]


def test_a_document_that_is_not_sendable_comes_back_in_the_form_with_its_reason(aws: Aws) -> None:
    park(aws, ORDER)
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    _code, form = get(client, f"/messages/{message_id}/edit")
    typed = '{"body": "no longer json <b>", "attributes": {}}'

    code, page = post(client, f"/messages/{message_id}/edit", form, document=typed, **{"from": "parking-lot"})

    assert code == 400
    assert "Not sendable: body: was a JSON object or array and must stay one" in page
    assert textarea_of(page) == typed
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_an_edit_that_changes_nothing_sends_nothing(aws: Aws) -> None:
    park(aws, ORDER)
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    _code, form = get(client, f"/messages/{message_id}/edit")

    code, page = post(
        client, f"/messages/{message_id}/edit", form, document=textarea_of(form), **{"from": "parking-lot"}
    )

    assert code == 200 and "no change: nothing sent" in page
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_an_edit_of_a_message_that_moved_meanwhile_is_a_404_and_sends_nothing(aws: Aws) -> None:
    park(aws, ORDER)
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    _code, form = get(client, f"/messages/{message_id}/edit")
    edited = with_items(textarea_of(form), [1])
    _code, preview = post(
        client, f"/messages/{message_id}/edit", form, document=edited, **{"from": "parking-lot"}
    )
    aws.sqs.purge_queue(QueueUrl=aws.parking_lot_url)  # someone else got there first

    code, page = post(
        client, f"/messages/{message_id}/edit/confirm", preview, document=edited, **{"from": "parking-lot"}
    )

    assert code == 404 and "moved meanwhile" in page
    assert queue_counts(aws.sqs, aws.source_url).total == 0


@pytest.mark.parametrize("step", ["/edit", "/edit/confirm"])
def test_an_edit_post_without_the_csrf_token_is_refused(aws: Aws, step: str) -> None:
    park(aws, ORDER)
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    document = json.dumps({"body": {"order": 8}, "attributes": {}})

    refused = client.post(
        f"/messages/{message_id}{step}",
        data={"document": document, "from": "parking-lot"},
        base_url=BASE_URL,
        headers=FROM_THE_CONSOLE,
    )

    assert refused.status_code == 403 and b"this form is stale" in refused.data
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_the_fleet_lists_the_dlq_with_its_source_and_a_refused_queue_as_a_problem(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    park_groups(aws)
    aws.sqs.create_queue(QueueName="payments-dlq")
    made = Connection.client

    def refusing(connection: Any, service: str, **options: Any) -> Any:
        client = made(connection, service, **options)
        client.meta.events.register("before-parameter-build.sqs.GetQueueAttributes", refuse_payments)
        return client

    monkeypatch.setattr(Connection, "client", refusing)
    client, _tool = open_console(aws)

    code, page = get(client, "/fleet")

    assert code == 200
    assert "orders-dlq" in page and "orders<" in page  # its source
    assert "payments-dlq" in page and "GetQueueAttributes failed" in page


def refuse_payments(params: dict[str, Any], **_: Any) -> None:
    if str(params.get("QueueUrl", "")).endswith("/payments-dlq"):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not yours"}}, "GetQueueAttributes")


def test_the_fleet_refuses_a_region_that_is_not_one(aws: Aws) -> None:
    client, _tool = open_console(aws)

    code, page = get(client, "/fleet?region=us-east-1&region=%3Cscript%3E")

    assert code == 400 and "is not a region name" in page and "<script>" not in page


def test_a_replay_links_what_became_of_it_and_outcomes_and_status_list_it(aws: Aws) -> None:
    park_groups(aws)
    client, _tool = open_console(aws)
    _code, preview = get(client, "/replay?from=parking-lot&group=fp-bad")
    form = {"from": "parking-lot", "group": "fp-bad", "message_id": previewed_ids(preview)}
    _code, done = post(client, "/replay", preview, **form)
    outcome_link = re.search(f'href="{ROOT}(/outcomes/[^"]+)"', done)
    assert outcome_link

    code, outcome = get(client, outcome_link.group(1))
    _code, recent = get(client, "/outcomes")
    _code, status = get(client, "/")

    assert code == 200 and "3 sent: 3 not back after 0m (may still be waiting in its source queue)" in outcome
    assert "bad-0" in outcome or "id-bad-0" in outcome
    assert outcome_link.group(1) in recent and "3 sent:" in recent
    assert "latest replay" in status and "3 sent:" in status


def test_an_unknown_outcome_is_a_404(aws: Aws) -> None:
    client, _tool = open_console(aws)

    code, page = get(client, "/outcomes/20261123-091240-3f9c")

    assert code == 404 and "no replay" in page


def test_an_edit_of_a_message_of_sqss_largest_size_fits_in_the_form(aws: Aws) -> None:
    """Every byte a quote: the most a byte takes in the form (\\" in JSON, %5C%22 form-encoded); as
    large as an edit may be (SQS's largest, less what the re-driver keeps for its mark)."""
    park(aws, '"' * (SQS_MAX_MESSAGE_BYTES - 8_192), identity="largest")
    client, _tool = open_console(aws)
    message_id = parked_id(aws)
    _code, form = get(client, f"/messages/{message_id}/edit")
    edited = json.loads(textarea_of(form))
    edited["body"] = edited["body"][:-1]

    code, preview = post(
        client, f"/messages/{message_id}/edit", form, document=json.dumps(edited), **{"from": "parking-lot"}
    )

    assert code == 200 and '<span class="diff-del">-' in preview
