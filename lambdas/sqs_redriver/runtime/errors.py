"""The re-drive Lambda's own errors: a setting its environment gets wrong (at cold start), and a
queue's CloudWatch reading that is not used. An AWS call that fails is the core's ``AwsCallError``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqs_redriver.protocol.settings import InvalidSetting

if TYPE_CHECKING:
    from sqs_redriver.runtime.consumer_metrics import Query


class ConfigError(InvalidSetting):
    """A setting is missing or outside what the re-driver accepts."""


class Problem(ValueError):
    """Why one queue's reading is not used: the metric, the response field and what was wrong."""

    def __init__(self, query: Query, field_name: str, problem: str) -> None:
        super().__init__(f"{query.series.label} {field_name}: {problem}")
        self.query = query
        self.field = field_name
        self.problem = problem
