"""Fixtures shared by every layer of the suite (their helpers are in tests/support)."""

from __future__ import annotations

import functools
import signal
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any
from unittest.mock import patch

import botocore.loaders
import pytest
from _pytest.nodeid import NodeId  # pytest 9's structured node id (see _name_the_groups)
from hypothesis import HealthCheck, settings
from moto import mock_aws
from moto.sqs.models import SQSBackend

from local_aws import REGION
from tests.support.aws import IDEMPOTENCY_TABLE, Aws, create_aws
from tests.support.factories import FakeClock
from tests.support.shared_dlq import create_payments


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background of a non-interactive shell inherits SIGINT ignored, and a
    process it starts would ignore it too: the tests that press Ctrl-C on the operator's tool and
    on the demo need it delivered. A handler here is reset to the default in each process started,
    where Python turns it into KeyboardInterrupt as in a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# No verdict on the machine's speed: Hypothesis times each example (a 200 ms deadline) and its
# draws (the too_slow health check) by the wall clock, which fails a correct test on a busy CI box.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture(autouse=True, scope="session")
def one_botocore_loader() -> Iterator[None]:
    """Each mock_aws() starts a fresh boto3 session, which would read the service models from disk
    again (a third of a second per test); one loader per data path reads each model once a run."""
    with patch("botocore.session.create_loader", functools.cache(botocore.loaders.create_loader)):
        yield


@pytest.fixture(autouse=True, scope="session")
def long_polls_answered_at_once() -> Iterator[None]:
    """In-process moto waits out a long poll of an empty queue in real time: a second idle for each
    scan of the operator's tool. Nothing can arrive meanwhile that a test may count on (no test
    depends on threads' timing), so every receive is answered at once with what it finds."""
    receive = SQSBackend.receive_message

    def at_once(backend: SQSBackend, queue_name: str, count: int, _wait: int, *rest: Any) -> Any:
        return receive(backend, queue_name, count, 0, *rest)

    with patch.object(SQSBackend, "receive_message", at_once):
        yield


@pytest.fixture(autouse=True)
def fake_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_SERVICE_NAME": "redriver-tests",
        "POWERTOOLS_METRICS_NAMESPACE": "RedriverTests",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "IDEMPOTENCY_TABLE_NAME": IDEMPOTENCY_TABLE,
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        yield create_aws()


@pytest.fixture
def fifo() -> Iterator[Aws]:
    """As ``aws``, with FIFO queues."""
    with mock_aws():
        yield create_aws(fifo=True)


@pytest.fixture
def payments(aws: Aws) -> str:
    """A second source queue of ``aws``'s DLQ."""
    return create_payments(aws)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """Under xdist's ``--dist loadgroup``: a module's tests that share a fixture wider than a test
    (a synthesized app, a deployed world) go to one worker, which builds it once; the others spread
    one by one. A wrapper, so that the groups are marked before xdist's own hook reads them (a
    ``tryfirst`` hook of a conftest still ran after it)."""
    grouping = getattr(config.option, "loadgroup", False)  # set in xdist's workers only
    if grouping:
        _group_by_shared_fixtures(items)
    result = yield
    if grouping:
        _name_the_groups(items)
    return result


def _group_by_shared_fixtures(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        definitions = fixtures.name2fixturedefs.values() if fixtures else ()
        if any(d[-1].scope in ("class", "module", "package") for d in definitions):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _name_the_groups(items: list[pytest.Item]) -> None:
    """What xdist's own hook means to do: end each grouped test's id with ``@group``, the scope
    its scheduler reads. pytest 9 builds ids from a structured ``_id``, so xdist 3.8's write to
    ``_nodeid`` is lost and every test ran alone (pytest-xdist#1386; its fix, #1388, sets ``_id``
    as here). Without this, a module's shared fixture was built on both workers."""
    for item in items:
        groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args})
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker: hand the fault-injection figures to the controller, which prints them."""
    from tests.support.faults import FIGURES

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fault_figures"] = [asdict(outcome) for outcome in FIGURES]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the xdist controller: gather a worker's fault-injection figures."""
    from tests.support.faults import FIGURES, Outcome

    FIGURES.extend(Outcome(**fields) for fields in node.workeroutput.get("fault_figures", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the fault-injection figures when that suite ran."""
    from tests.support.faults import FIGURES, figures_line

    if FIGURES:
        terminalreporter.write_line(figures_line())
