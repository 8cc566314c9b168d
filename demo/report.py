"""The demo's report: where every order of act 1 ended up, and the function act's and act 2's
results beside it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from demo.function_act import FunctionAct
from demo.no_kit_act import NoKitAct
from demo.operator import ToolRun


@dataclass
class PoisonParked:
    """One poison order as the parking lot holds it: the parked mark's reason and the consumer's
    error the kit put in the mark."""

    order_id: str
    bug: str  # which bug the producer put in it
    cause: str  # the parked object's cause: "terminal" when parked on the kit's classification
    error_class: str
    message: str
    fingerprint: str
    redriven: int  # the mark's ``n``: re-drives before it was parked
    attempt: int  # the consumer's delivery that failed it (``err.try``): 1 = its first
    deliveries: int  # how many times the consumer was given it
    failed_at: float  # seconds on the demo's clock: the consumer failed it (first time)
    parked_at: float  # seconds on the demo's clock: it reached the parking lot
    replayed: bool = False  # the operator fixed its bug and replayed it


@dataclass
class Report:
    orders: int
    good_orders: int
    poison_orders: int
    fulfilled_once: int
    fulfilled_more_than_once: list[str]
    parked: dict[str, str]
    lost: list[str]
    unexpected: list[str]
    breaker_transitions: list[str]
    redriven: int
    runs: int
    elapsed_seconds: float
    queues_empty: bool
    finished_in_time: bool
    # Poison: each order's parking, the fingerprints with their counts, the bugs injected.
    poison_parked: list[PoisonParked] = field(default_factory=list)
    fingerprints: dict[str, int] = field(default_factory=dict)
    poison_bugs: int = 0
    # The outage: its window, the good orders it failed, those re-driven, and their fulfilments.
    outage_window: tuple[float, float] = (0.0, 0.0)
    outage_failed_orders: int = 0
    transient_errors: dict[str, int] = field(default_factory=dict)  # error class -> orders
    redriven_orders: int = 0
    redriven_fulfilled_once: int = 0
    # The breaker on the demo's clock, read from the state table while runs go on.
    breaker_timeline: list[tuple[float, str]] = field(default_factory=list)
    breaker_opened_at: float | None = None
    breaker_closed_at: float | None = None
    dlq_drained_at: float | None = None
    closed_after_outage_seconds: float | None = None
    drained_after_outage_seconds: float | None = None
    run_summaries: list[dict[str, Any]] = field(default_factory=list)
    # The operator's part: the tool's commands, the fix, the group replayed after it, its orders.
    operator_runs: list[ToolRun] = field(default_factory=list)
    fix: str = ""
    replayed_group: str = ""
    replayed_group_label: str = ""
    replayed: int = 0  # poison orders the consumer was given again after the replay
    fulfilled_after_replay: int = 0  # of those, fulfilled exactly once
    log_file: str = ""
    problems: list[str] = field(default_factory=list)
    no_kit_act: NoKitAct | None = None  # the second act (demo/no_kit_act.py); its problems are in ours
    function_act: FunctionAct | None = None  # a function's failures (demo/function_act.py); so are its

    def add_function_act(self, act: FunctionAct) -> None:
        """The function act's result: its problems unbalance the whole report."""
        self.function_act = act
        self.problems.extend(f"the function's failures: {problem}" for problem in act.problems)

    def add_no_kit_act(self, act: NoKitAct) -> None:
        """The second act's result: its problems unbalance the whole report."""
        self.no_kit_act = act
        self.problems.extend(f"without the kit: {problem}" for problem in act.problems)

    @property
    def opened_during_outage(self) -> bool:
        start, end = self.outage_window
        return self.breaker_opened_at is not None and start <= self.breaker_opened_at <= end

    @property
    def balanced(self) -> bool:
        return not self.problems

    def to_json(self) -> str:
        derived = {"balanced": self.balanced, "opened_during_outage": self.opened_during_outage}
        return json.dumps({**asdict(self), **derived}, indent=2, sort_keys=True)
