"""Fault injection: wrap the re-driver's boto3 clients and make the k-th AWS call fail, or crash.

One ``Faults`` plan is shared by the wrapped SQS and DynamoDB clients, so "the k-th call" counts
every AWS call of the run in order (parallel batches take turns at each call, lockstep.py, so the
order is the same in every run). A crash raises ``SimulatedCrash`` (a BaseException, as a killed
Lambda would not run any except-clause) *before* the k-th call, and every later call of any thread
raises it too: the environment is gone, so the run stops between two steps everywhere.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError

from local_aws.clients import ClientProxy
from sqs_redriver.core.breaker import BreakerPolicy, State
from sqs_redriver.core.table import StateTable


class SimulatedCrash(BaseException):
    """The Lambda environment died: nothing after this point of the run happens."""


class Fault(StrEnum):
    CRASH = "crash before the call"
    THROTTLE = "throttling"
    SERVER_ERROR = "5xx"
    TIMEOUT = "read timeout"
    PARTIAL = "partial batch failure"
    CONDITIONAL = "ConditionalCheckFailed"
    THROUGHPUT = "ProvisionedThroughputExceeded"
    TRANSACTION = "TransactionCanceled"


ERROR_CODES = {
    Fault.THROTTLE: ("ThrottlingException", 400),
    Fault.SERVER_ERROR: ("InternalError", 500),
    Fault.CONDITIONAL: ("ConditionalCheckFailedException", 400),
    Fault.THROUGHPUT: ("ProvisionedThroughputExceededException", 400),
    Fault.TRANSACTION: ("TransactionCanceledException", 400),
}
BATCH_ENTRY_OPERATIONS = {"send_message_batch", "delete_message_batch", "change_message_visibility_batch"}
BATCH_ITEM_OPERATIONS = {"batch_write_item": "UnprocessedItems", "batch_get_item": "UnprocessedKeys"}


@dataclass
class Outcome:
    """The books after one faulted run and the healthy runs that followed it."""

    fault: str
    call: int  # the first call a fault fired at (0: none fired)
    operation: str
    parallel_batches: int = 1
    long_holds: bool = False  # backoff steps past 900 s, waited out in the DLQ
    planned: int = 0  # faults planned; a later one need not fire once the first changed the flow
    fired: int = 0
    messages: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # A large drain's case (tests/integration/test_large_drain_faults.py): the runs it played, the
    # chain's and its workers' (0: a faulted run of the suite above).
    drain_runs: int = 0


# Every outcome of the session, for the figures printed at its end (conftest).
FIGURES: list[Outcome] = []


def figures_line() -> str:
    """The figures of the session: a line for the faulted runs, one for the large drains' cases."""
    runs = [o for o in FIGURES if not o.drain_runs]
    drains = [o for o in FIGURES if o.drain_runs]
    return "\n".join(([_runs_line(runs)] if runs else []) + ([_drains_line(drains)] if drains else []))


def _runs_line(outcomes: list[Outcome]) -> str:
    single = Counter(o.fault for o in outcomes if " + " not in o.fault and not o.fault.startswith("none"))
    parallel = sum(1 for o in outcomes if o.parallel_batches > 1)
    long_holds = sum(1 for o in outcomes if o.long_holds)
    return (
        f"fault injection: {len(outcomes)} faulted runs, {parallel} of them with parallel batches, "
        f"{long_holds} with long holds; "
        f"{sum(single.values())} with one fault, the rest with schedules of 2-3 or none; "
        f"{sum(o.messages for o in outcomes)} messages, "
        f"{sum(len(o.lost) for o in outcomes)} lost, {sum(len(o.duplicates) for o in outcomes)} duplicates "
        f"(each after a send whose delete did not happen); one-fault runs by kind: "
        f"{dict(sorted(single.items()))}; planned faults that fired: "
        f"{sum(o.fired for o in outcomes)} of {sum(o.planned for o in outcomes)} (a schedule's later "
        f"ones may not)"
    )


def _drains_line(outcomes: list[Outcome]) -> str:
    return (
        f"large-drain fault injection: {len(outcomes)} drains ({', '.join(o.fault for o in outcomes)}), "
        f"{sum(o.drain_runs for o in outcomes)} runs of chains and workers, "
        f"{sum(o.messages for o in outcomes)} messages, {sum(len(o.lost) for o in outcomes)} lost, "
        f"{sum(len(o.duplicates) for o in outcomes)} duplicates "
        f"(each sent by a worker lost before its delete)"
    )


@dataclass
class Faults:
    """Which call (1-based, across all wrapped clients and threads) fails, and how; the calls made,
    the thread that made each, and the faults that fired."""

    plan: dict[int, Fault] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    fired: dict[int, Fault] = field(default_factory=dict)
    crashed: bool = False
    # The items of the PutItem calls that succeeded (only the breaker is written with PutItem).
    puts: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, client: Any) -> FaultyClient:
        return FaultyClient(client, self)

    def number(self, name: str) -> tuple[int, Fault | None]:
        """Record a call about to start; its number and its planned fault."""
        with self._lock:
            if self.crashed:
                raise SimulatedCrash(f"the environment crashed before call {len(self.calls) + 1} ({name})")
            self.calls.append(name)
            self.threads.append(threading.current_thread().name)
            index = len(self.calls)
            fault = self.plan.get(index)
            if fault is not None:
                self.fired[index] = fault
            if fault is Fault.CRASH:
                self.crashed = True
            return index, fault

    def succeeded(self, name: str, kwargs: dict[str, Any]) -> None:
        """Record a call that returned (an injected fault never reaches AWS)."""
        if name == "put_item":
            with self._lock:
                self.puts.append(kwargs["Item"])

    def may_duplicate(self) -> bool:
        """Whether a fired fault fell between a send and its delete: a failed delete, or a crash
        after some thread's last send and before that thread's delete."""
        return any(
            self.calls[index - 1] == "delete_message_batch"
            or (fault is Fault.CRASH and self._a_send_awaited_its_delete(before=index))
            for index, fault in self.fired.items()
        )

    def _a_send_awaited_its_delete(self, before: int) -> bool:
        made = list(zip(self.calls[: before - 1], self.threads[: before - 1], strict=True))
        for thread in {t for _, t in made}:
            own = [call for call, t in made if t == thread]
            if "send_message_batch" in own:
                last_send = len(own) - 1 - own[::-1].index("send_message_batch")
                if "delete_message_batch" not in own[last_send:]:
                    return True
        return False


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


def raising(code: str, operation: str) -> Any:
    """A client method that always fails with this error code."""

    def call(**_: Any) -> Any:
        raise client_error(code, operation)

    return call


class FaultyClient(ClientProxy):
    """Numbers every call of the client and fails the one its plan names."""

    def __init__(self, real: Any, faults: Faults) -> None:
        super().__init__(real)
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method):
            return method

        def call(**kwargs: Any) -> Any:
            index, fault = self._faults.number(name)
            if fault is not None:
                return _inject(fault, index, name, method, kwargs)
            response = method(**kwargs)
            self._faults.succeeded(name, kwargs)
            return response

        return call


def _inject(fault: Fault, index: int, name: str, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    if fault is Fault.CRASH:
        raise SimulatedCrash(f"crash before call {index} ({name})")
    if fault is Fault.TIMEOUT:
        raise ReadTimeoutError(endpoint_url="https://aws.example")
    if fault is Fault.PARTIAL and name in BATCH_ENTRY_OPERATIONS:
        return _fail_every_other_entry(method, kwargs)
    if fault is Fault.PARTIAL and name in BATCH_ITEM_OPERATIONS:
        return _all_unprocessed(kwargs, BATCH_ITEM_OPERATIONS[name])
    if fault is Fault.PARTIAL:  # not a batch call: fail it whole
        fault = Fault.SERVER_ERROR
    code, status = ERROR_CODES[fault]
    raise ClientError(
        {
            "Error": {"Code": code, "Message": f"injected {fault.value}"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        name,
    )


def _fail_every_other_entry(method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    entries = kwargs["Entries"]
    passing, failing = entries[::2], entries[1::2]
    response = method(**{**kwargs, "Entries": passing}) if passing else {}
    return {
        "Successful": response.get("Successful", []),
        "Failed": list(response.get("Failed", []))
        + [
            {"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"}
            for e in failing
        ],
    }


def _all_unprocessed(kwargs: dict[str, Any], key: str) -> Any:
    """DynamoDB processed nothing this time (throttled items come back as unprocessed)."""
    request = kwargs["RequestItems"]
    return {"Responses": {}, key: request} if key == "UnprocessedKeys" else {key: request}


BREAKER_ATTRIBUTES = {
    "pk",
    "state",
    "failures",
    "successes",
    "changed_at",
    "version",
    "evidence",
    "judged_until",
    "silent_probes",
}
CANARY_ATTRIBUTES = {"canary_ids", "canary_verdict_at", "canary_groups", "canary_sent_at"}


def breaker_problems(
    dynamodb: Any, table_name: str, key: str, writes: list[dict[str, Any]], policy: BreakerPolicy
) -> list[str]:
    """What is wrong with the stored breaker record, given every PutItem of it that succeeded.

    Each write moves the version on by exactly one (a skipped or repeated version is a lost or
    unguarded update), the stored item is the last write byte for byte, the re-driver can read it,
    and its fields fit its state: counts within their thresholds, a canary only on HALF_OPEN.
    """
    item = dynamodb.get_item(TableName=table_name, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
    ours = [w for w in writes if w.get("pk") == {"S": key}]
    versions = sorted(int(w["version"]["N"]) for w in ours)
    problems = []
    if versions != list(range(1, len(ours) + 1)):
        problems.append(f"the breaker writes that succeeded carry versions {versions}, not 1 to {len(ours)}")
    if not ours:
        return problems + ([f"a breaker record no write made: {item}"] if item else [])
    last = max(ours, key=lambda w: int(w["version"]["N"]))
    if item != last:
        return [*problems, f"the stored breaker {item} is not the last write that succeeded, {last}"]
    expected = BREAKER_ATTRIBUTES | (CANARY_ATTRIBUTES if CANARY_ATTRIBUTES & set(item) else set())
    if set(item) != expected:
        problems.append(f"breaker attributes {sorted(item)}, expected {sorted(expected)}")
    try:
        breaker = StateTable(table_name, dynamodb, ttl_seconds=1).load_breaker(key)
    except (KeyError, ValueError) as exc:
        return [*problems, f"the breaker record does not parse ({exc!r}): {item}"]
    canary = breaker.canary
    if min(breaker.failures, breaker.successes, breaker.changed_at) < 0:
        problems.append(f"negative counts or time: {breaker}")
    if breaker.state is State.CLOSED and (breaker.successes or breaker.failures >= policy.failure_threshold):
        problems.append(f"a CLOSED breaker at {breaker.failures} failures, {breaker.successes} successes")
    if breaker.state is not State.CLOSED and breaker.failures:
        problems.append(f"failures counted on a {breaker.state.value} breaker: {breaker}")
    if breaker.state is State.OPEN and breaker.successes:
        problems.append(f"successes counted on an OPEN breaker: {breaker}")
    if breaker.state is State.HALF_OPEN and breaker.successes >= policy.success_threshold:
        problems.append(f"a HALF_OPEN breaker at {breaker.successes} successes did not close: {breaker}")
    if canary is not None and breaker.state is not State.HALF_OPEN:
        problems.append(f"a canary on a {breaker.state.value} breaker: {breaker}")
    if canary is not None and (
        not canary.identities
        or len(set(canary.identities)) != len(canary.identities)
        or len(canary.groups) not in (0, len(canary.identities))
        or not breaker.changed_at <= canary.sent_at < canary.verdict_at
    ):
        problems.append(f"inconsistent canary: {breaker}")
    return problems
