"""Every tunable setting of the re-driver, defined once: in a module per theme (backoff, breaker,
activity, pacing, function, retention), put together here.

A setting has its construct / cdk.json name, the re-drive Lambda's environment variable (none for
deploy-only settings), its type, default, allowed range and a one-line meaning; the rules between
settings are in ``rules``. The Lambda parses its environment with the schema at cold start
(``sqs_redriver.runtime.settings``); the CDK side validates construct props and cdk.json context with it at
synth (``sqs_redriver.cdk.settings``); the README's configuration table is rendered from it
(``sqs_redriver.cdk.readme_table``). Standard library only: it is cold-start code.
"""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.settings.activity import ACTIVITY_SETTINGS
from sqs_redriver.protocol.settings.backoff import BACKOFF_SETTINGS
from sqs_redriver.protocol.settings.breaker import BREAKER_SETTINGS
from sqs_redriver.protocol.settings.function import FUNCTION_SETTINGS
from sqs_redriver.protocol.settings.kinds import Setting
from sqs_redriver.protocol.settings.pacing import PACING_SETTINGS
from sqs_redriver.protocol.settings.retention import RETENTION_SETTINGS

# The resources' variables: set by the construct, required by the Lambda, no defaults.
RESOURCE_ENV = {
    "dlq_url": "DLQ_URL",
    "source_queue_url": "SOURCE_QUEUE_URL",  # a shared DLQ's source queues, separated by commas
    "parking_lot_url": "PARKING_LOT_URL",
    "table_name": "DYNAMODB_TABLE_NAME",
    "archive_bucket": "ARCHIVE_BUCKET",  # optional: empty or unset, parked messages are not archived
    # Optional: each source queue's consumer function, in SOURCE_QUEUE_URL's order, separated by
    # commas; an entry may be empty (grant_consumer fills them in). Unset or empty: none known.
    "consumer_function_names": "CONSUMER_FUNCTION_NAMES",
}
URL_SEPARATOR = ","

# In this order in the README's configuration table.
SCHEMA: tuple[Setting[Any], ...] = (
    *BACKOFF_SETTINGS,
    *BREAKER_SETTINGS,
    *ACTIVITY_SETTINGS,
    *PACING_SETTINGS,
    *FUNCTION_SETTINGS,
    *RETENTION_SETTINGS,
)
BY_NAME = {setting.name: setting for setting in SCHEMA}
LAMBDA_SETTINGS = tuple(setting for setting in SCHEMA if setting.env)
CONTEXT_SETTINGS = tuple(setting for setting in SCHEMA if setting.context)


def default(name: str) -> Any:
    return BY_NAME[name].default
