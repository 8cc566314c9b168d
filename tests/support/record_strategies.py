"""Hypothesis strategies of state table items: any attribute map a record of a kind may hold,
valid or not (tests of adapters/records/ and of StateTable's fates)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from sqs_redriver.protocol.keys import RecordKind

NOW = 1_800_000_000
# Deterministic on a loaded machine: no per-example deadline, no health check that times draws.
robust = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
WEIRD_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "1.5",
    "-0",
    "",
    "abc",
    "0x10",
    " 1",
    "1_000",
    "9" * 60,
]
numbers = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.integers(0, NOW + 10**7).map(str),
    st.sampled_from(WEIRD_NUMBERS),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
)
texts = st.one_of(
    st.text(max_size=12), st.sampled_from(["\ud800", "CLOSED", "OPEN", "HALF_OPEN", "{}", "x" * 5000])
)
scalars = st.one_of(
    st.builds(lambda s: {"S": s}, texts),
    st.builds(lambda n: {"N": n}, numbers),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda ss: {"SS": ss}, st.lists(st.text(min_size=1, max_size=4), max_size=3)),
    st.none(),
    st.integers(),
    st.text(max_size=4),
    st.just({}),
)
attribute_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=4)),
        st.builds(lambda m: {"M": m}, st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    ),
    max_leaves=8,
)
json_texts = st.one_of(
    st.builds(
        lambda s: {"S": s}, st.sampled_from(['{"at": 1e400}', '{"at": NaN}', "[" * 5000, "{", "[]", "1"])
    ),
    st.builds(
        lambda payload: {"S": json.dumps(payload)},
        st.dictionaries(
            st.sampled_from(["kind", "class", "msg", "fp", "at", "try", "src", "other"]),
            st.one_of(
                st.integers(-5, NOW * 2), st.text(max_size=5), st.sampled_from(["terminal", "transient"])
            ),
        ),
    ),
)

# The held groups' JSON text (HELD#): entries of any field, value and group name.
held_json_texts = st.one_of(
    json_texts,
    st.builds(
        lambda payload: {"S": json.dumps(payload)},
        st.dictionaries(
            st.one_of(st.sampled_from(["fp-1", "src-0123456789abcdef"]), st.text(max_size=6)),
            st.one_of(
                st.dictionaries(
                    st.sampled_from(
                        ["since", "failed_canaries", "canary_at", "canary", "sent_at", "verdict_at",
                         "verdict_key", "released_at", "other"]
                    ),
                    st.one_of(st.integers(-5, NOW * 2), st.text(max_size=5), st.none()),
                ),
                st.integers(),
            ),
            max_size=3,
        ),
    ),
)  # fmt: skip

FIELDS: dict[RecordKind, tuple[str, ...]] = {
    RecordKind.BREAKER: ("state", "failures", "successes", "changed_at", "version", "canary_ids",
                         "canary_verdict_at", "canary_groups", "canary_sent_at"),
    RecordKind.MESSAGE: ("identity", "redrive_count", "first_failed_at", "redriven_at", "expires_at"),
    RecordKind.FAILURE: ("failure", "expires_at"),
    RecordKind.VERDICTS: ("ok", "transient", "terminal", "fingerprints", "expires_at"),
    RecordKind.PARK: ("fingerprint", "reason", "by", "at"),
    RecordKind.RETRY: ("fingerprint", "reason", "by", "at"),
    RecordKind.PAUSE: ("reason", "by", "at"),
    RecordKind.RUNS: ("runs",),
    RecordKind.SWEEP: ("due_at",),
    RecordKind.HELD: ("groups",),
    RecordKind.CONTINUATION: ("token", "offered_at", "expires_at"),
    RecordKind.DRAIN: (
        "rate", "phase", "fell_behind_at", "workers", "messages_left", "stepped_at", "started_at",
        "ended_at", "version",
    ),
    RecordKind.BACKLOG: ("depth", "since", "until", "expires_at"),
}  # fmt: skip


def items_of(kind: RecordKind, subject: str = "s-1") -> st.SearchStrategy[dict[str, Any]]:
    """Any attribute map with this kind's key: its fields present or not, of any type or value."""
    texts_of_json = {RecordKind.FAILURE: json_texts, RecordKind.HELD: held_json_texts}
    values = st.one_of(attribute_values, texts_of_json[kind]) if kind in texts_of_json else attribute_values
    fields = st.dictionaries(st.sampled_from(FIELDS[kind] + ("extra",)), values)
    return fields.map(lambda attributes: {**attributes, "pk": {"S": kind.key(subject)}})
