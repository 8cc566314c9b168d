"""The example consumer's business logic: validate and price an order, then hand it downstream."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation


class InvalidOrder(ValueError):
    """The order can never be processed as it is: a permanent failure (poison)."""


class DownstreamUnavailable(RuntimeError):
    """The downstream service failed; trying again later may succeed (a transient failure)."""


@dataclass(frozen=True)
class Order:
    order_id: str
    customer_id: str
    currency: str
    lines: tuple[tuple[str, int, Decimal], ...]

    @property
    def total(self) -> Decimal:
        return sum((quantity * price for _, quantity, price in self.lines), Decimal("0"))


@dataclass(frozen=True)
class OrderRules:
    """What the consumer accepts beyond a valid order: the switches of its configuration."""

    # The fix of a known poison: a line with quantity 0 is dropped instead of refusing the order.
    drop_zero_quantity_lines: bool = False


STRICT = OrderRules()


def parse_order(body: str, rules: OrderRules = STRICT) -> Order:
    """Parse and validate an order body under ``rules``; raise InvalidOrder saying what is wrong."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidOrder(f"body is not JSON: {exc.msg}") from exc
    if not isinstance(payload, dict):
        raise InvalidOrder("body must be a JSON object")
    for name in ("order_id", "customer_id", "currency", "items"):
        if name not in payload:
            raise InvalidOrder(f"missing field {name!r}")
    items = payload["items"]
    if not isinstance(items, list) or not items:
        raise InvalidOrder("items must be a non-empty list")
    lines = []
    for index, item in enumerate(items):
        try:
            sku = str(item["sku"])
            quantity = item["quantity"]
            price = Decimal(str(item["unit_price"]))
        except (KeyError, TypeError, ValueError, InvalidOperation) as exc:
            raise InvalidOrder(f"items[{index}] is malformed: {exc!r}") from exc
        # JSON true is an int in Python, and int(2.5) would silently drop half an item.
        if isinstance(quantity, bool) or not isinstance(quantity, int):
            raise InvalidOrder(f"items[{index}] quantity must be a whole number, got {quantity!r}")
        zero_refused = quantity == 0 and not rules.drop_zero_quantity_lines
        if not price.is_finite() or quantity < 0 or price < 0 or zero_refused:
            raise InvalidOrder(f"items[{index}] has quantity {quantity} and price {price}")
        if quantity:
            lines.append((sku, quantity, price))
    if not lines:
        raise InvalidOrder("every line has quantity 0")
    return Order(
        str(payload["order_id"]), str(payload["customer_id"]), str(payload["currency"]), tuple(lines)
    )


@dataclass(frozen=True)
class FailureInjection:
    """Makes the simulated downstream fail: always inside outage windows, else at a rate; and,
    inside a partial outage's window, for the customers of one domain alone (``partial_outages``:
    start, end, the domain of the customer ids it refuses)."""

    failure_rate: float = 0.0
    outage_windows: Sequence[tuple[float, float]] = ()
    partial_outages: Sequence[tuple[float, float, str]] = ()

    def downstream_fails(self, now: float, rng: random.Random) -> bool:
        if any(start <= now < end for start, end in self.outage_windows):
            return True
        return self.failure_rate > 0 and rng.random() < self.failure_rate

    def refused_domain(self, customer_id: str, now: float) -> str | None:
        """The customer's domain when a partial outage refuses it now, else None."""
        domain = customer_id.rpartition("@")[2]
        refused = any(start <= now < end and domain == d for start, end, d in self.partial_outages)
        return domain if refused else None


class SimulatedDownstream:
    """Stands in for the payment/fulfilment service an order consumer would call."""

    def __init__(
        self,
        injection: FailureInjection,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.injection = injection  # the handler sets it from its configuration at each invocation
        self._clock = clock
        self._rng = rng or random.Random()
        # What the downstream accepted, per order id: the effect that must happen exactly once.
        self.submitted: Counter[str] = Counter()

    def submit(self, order: Order) -> str:
        """Submit the order; return a confirmation id or raise DownstreamUnavailable."""
        if self.injection.downstream_fails(self._clock(), self._rng):
            raise DownstreamUnavailable(f"downstream unavailable for order {order.order_id}")
        domain = self.injection.refused_domain(order.customer_id, self._clock())
        if domain is not None:
            raise DownstreamUnavailable(
                f"mail provider refused {domain} for order {order.order_id}: Connection refused"
            )
        self.submitted[order.order_id] += 1
        return f"conf-{order.order_id}"


def parse_outage_windows(text: str) -> tuple[tuple[float, float], ...]:
    """Parse ``"start-end,start-end"`` (epoch seconds) into windows; raise ValueError if malformed."""
    windows = []
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        start_text, _, end_text = part.partition("-")
        start, end = float(start_text), float(end_text)
        if end <= start:
            raise ValueError(f"outage window {part!r} ends before it starts")
        windows.append((start, end))
    return tuple(windows)


def load_failure_injection(env: Mapping[str, str]) -> FailureInjection:
    """Read DOWNSTREAM_FAILURE_RATE and DOWNSTREAM_OUTAGE_WINDOWS; raise ValueError naming the bad one."""
    raw_rate = env.get("DOWNSTREAM_FAILURE_RATE", "0") or "0"
    try:
        rate = float(raw_rate)
    except ValueError:
        raise ValueError(f"DOWNSTREAM_FAILURE_RATE must be a number in [0, 1], got {raw_rate!r}") from None
    if not 0 <= rate <= 1:
        raise ValueError(f"DOWNSTREAM_FAILURE_RATE must be a number in [0, 1], got {rate}")
    try:
        windows = parse_outage_windows(env.get("DOWNSTREAM_OUTAGE_WINDOWS", ""))
    except ValueError as exc:
        raise ValueError(
            f"DOWNSTREAM_OUTAGE_WINDOWS must be 'start-end,...' in epoch seconds: {exc}"
        ) from None
    return FailureInjection(failure_rate=rate, outage_windows=windows)


DROP_ZERO_QUANTITY_LINES = "ORDERS_DROP_ZERO_QUANTITY_LINES"


def load_order_rules(env: Mapping[str, str]) -> OrderRules:
    """Read ORDERS_DROP_ZERO_QUANTITY_LINES (``true`` or ``false``, unset: false); raise ValueError
    naming it."""
    raw = env.get(DROP_ZERO_QUANTITY_LINES, "").strip().lower() or "false"
    if raw not in ("true", "false"):
        raise ValueError(f"{DROP_ZERO_QUANTITY_LINES} must be true or false, got {raw!r}")
    return OrderRules(drop_zero_quantity_lines=raw == "true")
