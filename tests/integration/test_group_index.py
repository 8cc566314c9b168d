"""The index of group records the operator's tool keeps: conditional writes against a concurrent
operator, and what it does when the race never ends."""

from __future__ import annotations

from typing import Any

import pytest

from sqs_redriver.console.inventory import INDEX_WRITE_ATTEMPTS, GroupIndex
from sqs_redriver.core.errors import AwsCallError
from tests.support.aws import Aws


class Racing:
    """A DynamoDB client before each of whose first ``races`` writes another operator lists a
    fingerprint of their own."""

    def __init__(self, aws: Aws, races: int) -> None:
        self._client = aws.dynamodb
        self._other = GroupIndex(aws.table_name, aws.dynamodb)
        self.races = races

    def get_item(self, **kwargs: Any) -> Any:
        return self._client.get_item(**kwargs)

    def put_item(self, **kwargs: Any) -> Any:
        if self.races:
            self._other.add(f"theirs-{self.races}")
            self.races -= 1
        return self._client.put_item(**kwargs)


def test_adding_and_removing_keeps_a_sorted_list(aws: Aws) -> None:
    index = GroupIndex(aws.table_name, aws.dynamodb)

    index.add("fp-b")
    index.add("fp-a")
    index.add("fp-a")
    index.remove("fp-b")
    index.remove("fp-none")

    assert index.load() == ["fp-a"]


def test_a_write_that_lost_a_race_is_made_again_on_what_the_other_wrote(aws: Aws) -> None:
    index = GroupIndex(aws.table_name, Racing(aws, races=1))

    index.add("mine")

    assert GroupIndex(aws.table_name, aws.dynamodb).load() == ["mine", "theirs-1"]


def test_a_race_lost_at_every_attempt_is_an_error_that_says_to_try_again(aws: Aws) -> None:
    index = GroupIndex(aws.table_name, Racing(aws, races=INDEX_WRITE_ATTEMPTS))

    with pytest.raises(AwsCallError, match="try again"):
        index.add("mine")

    assert "mine" not in GroupIndex(aws.table_name, aws.dynamodb).load()


@pytest.mark.parametrize(
    "corrupt",
    [
        {"fingerprints": {"S": "not a list"}, "version": {"S": "one"}},
        {"fingerprints": {"L": [{"S": "fp-a"}, {"N": "7"}, {"S": "[/oops]\x1b"}]}},
        {"fingerprints": {"L": [{"S": "fp-a"}]}, "version": {"N": "1.5"}},
    ],
    ids=["mistyped", "bad entries, no version", "fractional version"],
)
def test_a_corrupt_index_lists_what_is_valid_says_so_and_is_repaired_by_the_next_write(
    aws: Aws, corrupt: dict[str, Any]
) -> None:
    aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": "GROUPS#index"}, **corrupt})
    index = GroupIndex(aws.table_name, aws.dynamodb)

    listed = index.load()
    assert listed in ([], ["fp-a"]) and index.corrupt is not None and "GROUPS#index" in index.corrupt

    index.add("fp-b")

    assert index.load() == sorted({*listed, "fp-b"}) and index.corrupt is None
