"""consumer.orders: parsing, failure injection and its configuration."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

import pytest

from consumer.orders import (
    FailureInjection,
    InvalidOrder,
    OrderRules,
    load_failure_injection,
    load_order_rules,
    parse_order,
    parse_outage_windows,
)
from tests.support.factories import order_body


def body(**changes: Any) -> str:
    payload = json.loads(order_body("o-1"))
    payload.update(changes)
    return json.dumps({k: v for k, v in payload.items() if v is not None})


def item(quantity: Any = 1, unit_price: Any = "9.90") -> dict[str, Any]:
    return {"sku": "sku-1", "quantity": quantity, "unit_price": unit_price}


def test_valid_order_is_parsed_and_totalled_in_decimal() -> None:
    order = parse_order(body(items=[item(3, "9.90"), item(1, 0.1)]))
    assert (order.order_id, order.customer_id, order.currency) == ("o-1", "c-1", "EUR")
    assert order.total == Decimal("29.80")


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '"an order"',
        *(body(**{field: None}) for field in ("order_id", "customer_id", "currency", "items")),
        body(items=[]),
        body(items={"sku": "sku-1"}),
        body(items=["sku-1"]),
        body(items=[{"sku": "sku-1", "quantity": 1}]),
        *(body(items=[item(quantity=q)]) for q in (0, -1, "two", None)),
        *(body(items=[item(unit_price=p)]) for p in ("-0.01", "free", None)),
    ],
)
def test_invalid_order_is_rejected(text: str) -> None:
    with pytest.raises(InvalidOrder):
        parse_order(text)


@pytest.mark.parametrize("price", ["NaN", "sNaN", "Infinity"])
def test_non_finite_price_is_rejected_as_invalid_order(price: str) -> None:
    with pytest.raises(InvalidOrder):
        parse_order(body(items=[item(unit_price=price)]))


def test_fractional_quantity_is_rejected() -> None:
    with pytest.raises(InvalidOrder):
        parse_order(body(items=[item(quantity=2.5)]))


def test_with_the_fix_a_zero_quantity_line_is_dropped_and_the_order_accepted() -> None:
    fixed = OrderRules(drop_zero_quantity_lines=True)

    order = parse_order(body(items=[item(2, "5.00"), item(0, "7.00")]), fixed)

    assert order.lines == (("sku-1", 2, Decimal("5.00")),)


@pytest.mark.parametrize("items", [[item(0)], [item(0), item(-1)], [item(0), item(1, "NaN")]])
def test_with_the_fix_an_order_of_no_valid_line_is_still_rejected(items: list[dict[str, Any]]) -> None:
    with pytest.raises(InvalidOrder):
        parse_order(body(items=items), OrderRules(drop_zero_quantity_lines=True))


@pytest.mark.parametrize(("value", "drops"), [("true", True), ("TRUE", True), ("false", False), ("", False)])
def test_the_fix_is_read_from_the_environment(value: str, drops: bool) -> None:
    rules = load_order_rules({"ORDERS_DROP_ZERO_QUANTITY_LINES": value})
    assert rules.drop_zero_quantity_lines is drops
    assert load_order_rules({}) == OrderRules()


def test_a_bad_fix_setting_is_named() -> None:
    with pytest.raises(ValueError, match="ORDERS_DROP_ZERO_QUANTITY_LINES must be true or false"):
        load_order_rules({"ORDERS_DROP_ZERO_QUANTITY_LINES": "yes"})


@pytest.mark.parametrize(("now", "fails"), [(99.9, False), (100, True), (150, True), (200, False)])
def test_downstream_fails_inside_an_outage_window_only(now: float, fails: bool) -> None:
    injection = FailureInjection(outage_windows=((100, 200),))
    assert injection.downstream_fails(now, random.Random(0)) is fails


@pytest.mark.parametrize(("rate", "fails"), [(1.0, True), (0.0, False)])
def test_failure_rate_of_one_always_fails_and_zero_never(rate: float, fails: bool) -> None:
    rng = random.Random(0)
    assert {FailureInjection(failure_rate=rate).downstream_fails(0, rng) for _ in range(200)} == {fails}


@pytest.mark.parametrize(
    ("text", "windows"),
    [("1-2,3-4", ((1.0, 2.0), (3.0, 4.0))), (" 10-20 , ", ((10.0, 20.0),)), ("", ())],
)
def test_outage_windows_are_parsed(text: str, windows: tuple[tuple[float, float], ...]) -> None:
    assert parse_outage_windows(text) == windows


@pytest.mark.parametrize("text", ["2-2", "3-1", "abc", "5", "1-x"])
def test_malformed_outage_window_is_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_outage_windows(text)


def test_failure_injection_is_read_from_the_environment() -> None:
    env = {"DOWNSTREAM_FAILURE_RATE": "0.25", "DOWNSTREAM_OUTAGE_WINDOWS": "1-2"}
    assert load_failure_injection(env) == FailureInjection(0.25, ((1.0, 2.0),))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DOWNSTREAM_FAILURE_RATE", "often"),
        ("DOWNSTREAM_FAILURE_RATE", "1.5"),
        ("DOWNSTREAM_FAILURE_RATE", "-0.1"),
        ("DOWNSTREAM_OUTAGE_WINDOWS", "5-1"),
        ("DOWNSTREAM_OUTAGE_WINDOWS", "yesterday"),
    ],
)
def test_bad_failure_injection_setting_is_named(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        load_failure_injection({name: value})
