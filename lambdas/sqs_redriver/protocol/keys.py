"""The state table's keys, built in this one module: a prefix per record kind, then its subject.

The re-driver, the consumer kit and the operator's tool all build their keys here, and the
state table's parsers tell a record's kind from its key (``kind_of``).
"""

from __future__ import annotations

import hashlib

from sqs_redriver.protocol.limits import DYNAMODB_MAX_KEY_BYTES
from sqs_redriver.protocol.str_enum import StrEnum


class RecordKind(StrEnum):
    """A kind of state record, named by the prefix of its key; ``key(subject)`` is the key of one
    record (the subject of each kind is after its prefix, below)."""

    BREAKER = "BREAKER#"  # <source queue URL>: its circuit breaker (each source of a shared DLQ has one)
    # <content identity>: the re-drive history of a message with no room for a mark (a dead
    # letter's parking reason); <content identity>#<trip>: a dead letter's count (trip_subject)
    MESSAGE = "MSG#"
    # <DLQ URL>#<content identity>: the consumer kit's failure of such a message (kit_record_key)
    FAILURE = "FAILURE#"
    # <DLQ URL>#<verdict key>: the kit's verdict counts on the re-drives tagged with it
    VERDICTS = "VERDICTS#"
    RETRY = "RETRY#"  # <fingerprint>: an operator's retry of a failure group instead of parking
    PARK = "PARK#"  # <fingerprint>: an operator's park of every failure of a group on sight
    PAUSE = "PAUSE#"  # <DLQ URL>: an operator's pause of the re-driver of that DLQ
    RUNS = "RUNS#"  # <DLQ URL>: the re-driver's run history, its last runs' summaries
    SWEEP = "SWEEP#"  # <DLQ URL>: when the re-driver's next retention sweep is due
    HELD = "HELD#"  # <DLQ URL>: the failure groups the re-driver holds in a partial outage, their canaries
    CONTINUATION = "CONTINUATION#"  # <DLQ URL>: the re-driver's one pending continuation
    # <DLQ URL>#<n>: the lease of a large drain's n-th worker (1 .. MAX_WORKERS - 1; the chain is the 0th)
    WORKER = "WORKER#"
    DRAIN = "DRAIN#"  # <DLQ URL>: a large drain's pace, the workers it wants and what the DLQ held
    # <source queue URL>: its messages waiting and in flight when a chain began re-driving a large
    # backlog to a consumer without the kit, kept for its redrive window (core/source_growth.py)
    BACKLOG = "BACKLOG#"
    # <DLQ URL>#<hash of the event id>: Powertools' idempotency records of the re-driver's
    # invocations (its grant allows the keys of its own DLQ alone)
    IDEMPOTENCY = "IDEMPOTENCY#"
    GROUP_INDEX = "GROUPS#"  # index: the tool's list of the fingerprints it wrote records for
    REPLAY = "REPLAY#"  # <DLQ URL>#<replay id>[#part]: what a replay, edit or group retry sent
    REPLAY_INDEX = "REPLAYS#"  # <DLQ URL>: the operator's tool's list of a re-driver's recent replays

    def key(self, subject: str) -> str:
        """The key of this kind's record about ``subject``."""
        return self.value + subject


RETRY_RECORD_PREFIX = RecordKind.RETRY.value
PARK_RECORD_PREFIX = RecordKind.PARK.value

# Where the archive bucket keeps parked messages: the only objects the re-driver writes.
ARCHIVE_PREFIX = "parked"
# Where the operator's tool archives the original of each message it edits (the only objects it writes).
EDIT_ARCHIVE_PREFIX = "edited"


def kind_of(key: str) -> RecordKind | None:
    """The kind of the record under ``key`` (None: no kind the re-driver knows)."""
    return next((kind for kind in RecordKind if key.startswith(kind.value)), None)


def storable(key: str) -> bool:
    """Whether DynamoDB can hold a record under ``key`` (non-empty, valid UTF-8, at most 2,048
    bytes): a read of any other key finds nothing, and is not sent (DynamoDB would reject it)."""
    try:
        return 0 < len(key.encode("utf-8")) <= DYNAMODB_MAX_KEY_BYTES
    except UnicodeEncodeError:
        return False


def subject_of(key: str) -> str:
    """What the record under ``key`` is about: the key without its kind's prefix."""
    kind = kind_of(key)
    return key.removeprefix(kind.value) if kind else key


# A dead letter's trip: the hex digits of its handle's hash after the identity (trip_subject).
TRIP_SEPARATOR = "#"
TRIP_DIGITS = 32


# The state table's one index: each message record (``MSG#<identity>``, each trip of it) under its
# ``identity`` attribute, keys only. How the operator's tool finds the trips of a dead letter, whose
# keys hash a request id only the run's Invoke got (StateTable.load_trips).
IDENTITY_INDEX = "identity"
IDENTITY_ATTRIBUTE = "identity"


def trip_subject(identity: str, handle: str) -> str:
    """The subject of the record that counts one trip of a dead letter of another service: its
    identity, then a hash of its ``handle``, what ties this DLQ message to the re-drive it came
    back from (a function's: the request id Lambda gave the invocation that failed, which is the
    one the re-driver's Invoke got back; a target that answers in the call: the DLQ MessageId).
    Hashed: a handle is untrusted text, the subject stays short and of plain characters."""
    digest = hashlib.sha256(handle.encode("utf-8", "surrogatepass")).hexdigest()[:TRIP_DIGITS]
    return f"{identity}{TRIP_SEPARATOR}{digest}"


def is_trip_of(subject: str, identity: str) -> bool:
    """Whether ``subject`` is the subject of ``identity`` itself or of one of its trips."""
    if subject == identity:
        return True
    prefix = identity + TRIP_SEPARATOR
    digest = subject.removeprefix(prefix)
    return (
        subject.startswith(prefix)
        and len(digest) == TRIP_DIGITS
        and all(c in "0123456789abcdef" for c in digest)
    )


def kit_record_key(kind: RecordKind, dlq_url: str, subject: str) -> str:
    """The key of a consumer kit's record (FAILURE#, VERDICTS#) for the re-driver of ``dlq_url``:
    scoped to it, so that on a state table several re-drivers share, a consumer granted one
    re-driver's kit (its IAM grant: this prefix alone) cannot write a record another one reads."""
    assert kind in (RecordKind.FAILURE, RecordKind.VERDICTS), "only the kit's records are scoped so"
    return kind.key(f"{dlq_url}#{subject}")


def kit_record_prefix(kind: RecordKind, dlq_url: str) -> str:
    """What every key of the kit's records of this kind for the re-driver of ``dlq_url`` starts with."""
    return kit_record_key(kind, dlq_url, "")


def run_verdict_key(now: int, token: str) -> str:
    """The verdict key of a run's re-drives (``run/<time>/<token>``), which their marks carry."""
    return f"run/{now}/{token}"


def canary_verdict_key(sent_at: int, identity: str) -> str:
    """The verdict key of a probe's canaries (``canary/<time sent>/<first canary's identity>``)."""
    return f"canary/{sent_at}/{identity}"


def group_index_key() -> str:
    """The one item listing the fingerprints the operator's tool wrote a RETRY#/PARK# record for."""
    return RecordKind.GROUP_INDEX.key("index")


def replay_record_key(dlq_url: str, replay_id: str, part: int = 0) -> str:
    """Part ``part`` of the record of what one operator's replay (edit, group retry) sent from the
    re-driver of ``dlq_url``: part 0 holds who, when and the first identities, parts 1.. the rest."""
    suffix = f"#{part}" if part else ""
    return RecordKind.REPLAY.key(f"{dlq_url}#{replay_id}{suffix}")


def replay_verdict_key(sent_at: int, replay_id: str) -> str:
    """The verdict key a replay's marks carry (``replay/<time>/<replay id>``): the consumer kit
    counts its verdicts on them under it."""
    return f"replay/{sent_at}/{replay_id}"


def queue_key_from_url(url: str) -> str:
    """``account/name`` of a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)."""
    account, name = url.rstrip("/").split("/")[-2:]
    return f"{account}/{name}"


def queue_key_from_arn(arn: str) -> str:
    """``account/name`` of a queue ARN (arn:PARTITION:sqs:REGION:ACCOUNT:NAME)."""
    account, name = arn.split(":")[-2:]
    return f"{account}/{name}"


def worker_key(dlq_url: str, slot: int) -> str:
    """The lease record of a large drain's ``slot``-th worker (1 and up)."""
    return RecordKind.WORKER.key(f"{dlq_url}#{slot}")
