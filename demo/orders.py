"""The orders act 1's producer sends: good ones, and poison with one of two bugs."""

from __future__ import annotations

import json
import random
from typing import Any

# The poison the producer sends: two distinct bugs, each hit by orders whose error messages differ
# only in numbers (so each bug should make one fingerprint).
ZERO_QUANTITY = "a line with quantity 0"
NO_CUSTOMER = "no customer_id"
POISON_BUGS = (ZERO_QUANTITY, NO_CUSTOMER)


def make_orders(count: int, poison: int, seed: int) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(order id, body) pairs in sending order, and the poison ones' ids with their bug."""
    rng = random.Random(seed)
    orders = [_order(f"o-{number:04d}", rng) for number in range(count)]
    chosen = sorted(rng.sample(orders, poison), key=lambda order: str(order["order_id"]))
    bugs: dict[str, str] = {}
    for number, order in enumerate(chosen):
        bug = POISON_BUGS[number % len(POISON_BUGS)]
        _break(order, bug, rng)
        bugs[order["order_id"]] = bug
    return [(order["order_id"], json.dumps(order)) for order in orders], bugs


def _order(order_id: str, rng: random.Random) -> dict[str, Any]:
    items = [
        {
            "sku": f"sku-{rng.randint(1, 50)}",
            "quantity": rng.randint(1, 3),
            "unit_price": f"{rng.uniform(1, 90):.2f}",
        }
        for _ in range(rng.randint(1, 4))
    ]
    return {"order_id": order_id, "customer_id": f"c-{rng.randint(1, 20)}", "currency": "EUR", "items": items}


def _break(order: dict[str, Any], bug: str, rng: random.Random) -> None:
    """Put ``bug`` into ``order``."""
    if bug == ZERO_QUANTITY:  # an extra line (valid once the fix drops it); where, and its price, vary
        line = {"sku": f"sku-{rng.randint(1, 50)}", "quantity": 0, "unit_price": f"{rng.uniform(1, 90):.2f}"}
        order["items"].insert(rng.randint(0, len(order["items"])), line)
    else:
        del order["customer_id"]
