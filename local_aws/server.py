"""An embedded moto server, with its depth-dependent SQS costs cut down."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import moto.sqs.models as moto_sqs_models
from moto.core.utils import unix_time as moto_unix_time
from moto.server import ThreadedMotoServer
from moto.sqs.models import SQSBackend

from local_aws import REGION
from local_aws.environment import environment

# What is patched in moto, as Any: moto's annotations do not declare what it sets at run time (a
# queue's attributes, a message's sent_timestamp), nor the names its models module imports.
_MOTO_SQS_MODELS: Any = moto_sqs_models
_SQS_BACKEND: Any = SQSBackend


def _retention_check(backend: SQSBackend, queue_name: str, message: Any) -> bool:
    queue: Any = backend.get_queue(queue_name)
    retention_seconds: int = queue.message_retention_period
    sent_seconds: float = message.sent_timestamp / 1000
    return retention_seconds + sent_seconds > _unix_time()


def _unix_time(dt: datetime | None = None) -> float:
    return time.time() if dt is None else moto_unix_time(dt)


def _unix_time_millis(dt: datetime | None = None) -> float:
    return _unix_time(dt) * 1000.0


def speed_up_moto_sqs() -> None:
    """Cut down the cost of moto's SQS calls that grows with a queue's depth, so deep-queue figures
    measure the code under test more than moto (SQS's own latency does not grow with depth).
    Which messages moto returns does not change.

    moto 5.2 checks every message a receive returns against the retention period by computing all
    the queue's attributes, three of which scan every message (a receive of 10 at a depth of 500
    took ~0.3 s): the retention period is now read directly. Every scan asks the time once per
    message through two datetime constructions: it now reads the same clock directly. What is left
    still grows with depth, only less: each receive scans the queue, and each message sent
    computes the queue's attributes (three scans).
    """
    _SQS_BACKEND.is_message_valid_based_on_retention_period = _retention_check
    _MOTO_SQS_MODELS.unix_time = _unix_time
    _MOTO_SQS_MODELS.unix_time_millis = _unix_time_millis


@contextmanager
def moto_sqs_sped_up() -> Iterator[None]:
    """``speed_up_moto_sqs`` for a while (in-process moto), stock moto again afterwards."""
    saved = (
        _SQS_BACKEND.is_message_valid_based_on_retention_period,
        _MOTO_SQS_MODELS.unix_time,
        _MOTO_SQS_MODELS.unix_time_millis,
    )
    speed_up_moto_sqs()
    try:
        yield
    finally:
        (
            _SQS_BACKEND.is_message_valid_based_on_retention_period,
            _MOTO_SQS_MODELS.unix_time,
            _MOTO_SQS_MODELS.unix_time_millis,
        ) = saved


@contextmanager
def moto_server() -> Iterator[str]:
    """Start moto on 127.0.0.1 (a free port) and point every boto3 client of this process at it;
    yield its endpoint. os.environ is restored on exit."""
    speed_up_moto_sqs()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    variables = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AWS_DEFAULT_REGION": REGION,
    }
    try:
        with environment(variables, unset=["AWS_PROFILE"]):
            yield endpoint
    finally:
        server.stop()


def reset_moto(endpoint: str) -> None:
    """Forget every resource of the moto server at ``endpoint``."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request) as response:  # noqa: S310 - a local moto server
        response.read()
