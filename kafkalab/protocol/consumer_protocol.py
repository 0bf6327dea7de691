"""The "consumer" embedded protocol: what members tell the leader, and what the leader tells members.

Theory of operation
-------------------
The classic group protocol (JoinGroup / SyncGroup) is generic: the broker moves opaque byte arrays between
members and never looks inside. Each ``protocol_type`` defines what those bytes mean; for consumers it is
``"consumer"``, and the bytes are two small versioned structures:

* ``ConsumerProtocolSubscription`` -- sent by every member as JoinGroup ``protocols[].metadata``, once per
  assignor it supports (the ``protocols[].name`` is the assignor's name, e.g. ``"range"``)::

      version INT16 | topics [STRING] | user_data NULLABLE_BYTES
                    | owned_partitions [topic STRING, partitions [INT32]]     (v1+, KIP-429)
                    | generation_id INT32                                     (v2+, KIP-792)
                    | rack_id NULLABLE_STRING                                 (v3+, KIP-881)

* ``ConsumerProtocolAssignment`` -- computed by the leader, sent in SyncGroup ``assignments[].assignment``
  and handed back to each member in its SyncGroup response::

      version INT16 | assigned_partitions [topic STRING, partitions [INT32]] | user_data NULLABLE_BYTES

Unlike API messages, the version travels *inside* the bytes, as a leading INT16, and no version is
*flexible* (the JSON says ``"flexibleVersions": "none"``): plain INT16/INT32 lengths, no tagged fields. Both
structures only ever grow at the end, so a reader meeting a newer version than it knows decodes the fields it
knows and ignores the rest; that is how a 2.3 consumer and a 3.x consumer share one group. A version below 0
is rejected; a writer asked for a version above the highest it knows writes its highest. The encoder sorts
the subscribed topics and the owned partitions (so equal subscriptions give equal bytes); an assignment keeps
its partitions' order but gathers each topic's partitions into the topic's first entry.

``group_instance_id`` (static membership, KIP-345) is *not* part of these bytes: the coordinator reports it
next to each member in the JoinGroup response, and the leader attaches it to the decoded
:class:`Subscription` before assigning.

The byte layouts come from the generated schemas in :mod:`kafkalab.protocol.messages.data`, read and written by
the same generated code as every API message (:mod:`kafkalab.protocol.codec`); :func:`annotate_subscription`
and :func:`annotate_assignment` give every byte its field (the annotated decoder), for hex dumps in the labs.
This is the one codec of these bytes in kafkalab: the clients' assignors
(:mod:`kafkalab.clients.consumer.assignors`), the group coordinator (which reads the subscribed topics) and the
labs all use it.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerProtocol.java``,
``ConsumerPartitionAssignor.Subscription`` / ``.Assignment``, and
``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional

from kafkalab.protocol import codec
from kafkalab.protocol.annotate import Row, annotate_message
from kafkalab.protocol.errors import DecodeError, EncodeError
from kafkalab.protocol.messages.data import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kafkalab.protocol.primitives import read_fixed, write_fixed

__all__ = [
    "PROTOCOL_TYPE", "DEFAULT_GENERATION", "LOWEST_VERSION", "HIGHEST_VERSION", "TopicPartition",
    "Subscription", "Assignment", "encode_subscription", "decode_subscription", "encode_assignment",
    "decode_assignment", "annotate_subscription", "annotate_assignment", "group_by_topic",
]

#: JoinGroup ``protocol_type`` of Kafka consumers (``ConsumerProtocol.PROTOCOL_TYPE``).
PROTOCOL_TYPE = "consumer"
#: "No generation known" (``AbstractStickyAssignor.DEFAULT_GENERATION``, the wire default of GenerationId).
DEFAULT_GENERATION = -1

_SUB = CONSUMER_PROTOCOL_SUBSCRIPTION
_ASG = CONSUMER_PROTOCOL_ASSIGNMENT
#: The versions this codec knows (both structures share them: 0-3), straight from the JSON's ``validVersions``.
LOWEST_VERSION = _SUB.valid_versions.lo
HIGHEST_VERSION = _SUB.valid_versions.hi
_SubscriptionBody = _SUB.body_class
_SubscriptionTopicPartition = _SUB.struct_class(_SUB.fields[2])
_AssignmentBody = _ASG.body_class
_AssignmentTopicPartition = _ASG.struct_class(_ASG.fields[0])


class TopicPartition(NamedTuple):
    """One partition of one topic. Orders like Java's ``TopicPartitionComparator``: topic, then partition."""

    topic: str
    partition: int

    def __repr__(self) -> str:  # Kafka's own spelling, e.g. t0-2
        return f"{self.topic}-{self.partition}"


@dataclass
class Subscription:
    """A member's JoinGroup metadata, decoded (``ConsumerPartitionAssignor.Subscription``).

    ``generation_id`` is ``DEFAULT_GENERATION`` (-1) when unknown; ``rack_id`` None when unset (an empty
    rack on the wire also means unset, as in Java). ``group_instance_id`` is not encoded (see module doc).
    """

    topics: list = field(default_factory=list)
    user_data: Optional[bytes] = None
    owned_partitions: list = field(default_factory=list)
    generation_id: int = DEFAULT_GENERATION
    rack_id: Optional[str] = None
    group_instance_id: Optional[str] = None

    def __post_init__(self) -> None:
        self.topics = list(self.topics)
        self.owned_partitions = [TopicPartition(*tp) for tp in self.owned_partitions]


@dataclass
class Assignment:
    """The leader's decision for one member (``ConsumerPartitionAssignor.Assignment``)."""

    partitions: list = field(default_factory=list)
    user_data: Optional[bytes] = None

    def __post_init__(self) -> None:
        self.partitions = [TopicPartition(*tp) for tp in self.partitions]


def group_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """``[(topic, [partition, ...]), ...]`` in order of each topic's first appearance."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _check_version(version: int, what: str) -> int:
    if not isinstance(version, int) or version < LOWEST_VERSION:
        raise EncodeError(f"unsupported {what} version: {version!r}")
    return min(version, HIGHEST_VERSION)


def _read_version(data, what: str) -> tuple[int, int]:
    """(the version written, the version to read it as): newer versions are read as our highest."""
    try:
        version, _ = read_fixed("int16", data, 0)
    except DecodeError as e:
        raise e.located("version") from None
    if version < LOWEST_VERSION:
        raise DecodeError(f"unsupported {what} version: {version}", path="version", offset=0)
    return version, min(version, HIGHEST_VERSION)


# -- subscription -----------------------------------------------------------------------------------------

def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """The JoinGroup metadata bytes of ``subscription``, version-prefixed (Java's ``serializeSubscription``).

    Fields the chosen version cannot carry (owned partitions before v1, ...) are left out, as Kafka does:
    they are all "ignorable". A version above 3 is written as 3.
    """
    version = _check_version(version, "subscription")
    owned = group_by_topic(sorted(subscription.owned_partitions))
    body = _SubscriptionBody(
        topics=tuple(sorted(subscription.topics)),
        user_data=None if subscription.user_data is None else bytes(subscription.user_data),
        owned_partitions=tuple(_SubscriptionTopicPartition(topic=t, partitions=tuple(ps)) for t, ps in owned),
        generation_id=subscription.generation_id if subscription.generation_id is not None else DEFAULT_GENERATION,
        rack_id=subscription.rack_id,
    )
    return write_fixed("int16", version) + codec.encode(_SUB, version, body)


def decode_subscription(data, group_instance_id: Optional[str] = None) -> Subscription:
    """Decode JoinGroup metadata; lenient about newer versions (unknown trailing bytes are ignored)."""
    _, version = _read_version(data, "subscription")
    body, _ = codec.decode(_SUB, version, data, 2)
    return Subscription(
        topics=list(body.topics),
        user_data=body.user_data,
        owned_partitions=[TopicPartition(tp.topic, p) for tp in body.owned_partitions for p in tp.partitions],
        generation_id=body.generation_id if body.generation_id >= 0 else DEFAULT_GENERATION,
        rack_id=body.rack_id or None,
        group_instance_id=group_instance_id,
    )


# -- assignment -------------------------------------------------------------------------------------------

def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """The SyncGroup assignment bytes of ``assignment``, version-prefixed (Java's ``serializeAssignment``)."""
    version = _check_version(version, "assignment")
    body = _AssignmentBody(
        assigned_partitions=tuple(_AssignmentTopicPartition(topic=t, partitions=tuple(ps))
                                  for t, ps in group_by_topic(assignment.partitions)),
        user_data=None if assignment.user_data is None else bytes(assignment.user_data),
    )
    return write_fixed("int16", version) + codec.encode(_ASG, version, body)


def decode_assignment(data) -> Assignment:
    """Decode a member's SyncGroup assignment; lenient about newer versions."""
    _, version = _read_version(data, "assignment")
    body, _ = codec.decode(_ASG, version, data, 2)
    return Assignment(
        partitions=[TopicPartition(tp.topic, p) for tp in body.assigned_partitions for p in tp.partitions],
        user_data=body.user_data,
    )


# -- annotated views (hex dumps in the labs) ---------------------------------------------------------------

def _annotate(message, data, what: str):
    written, version = _read_version(data, what)
    body, end, rows = annotate_message(message, version, data, 2)
    rows = [Row("version", 0, 2, "INT16", written, 0)] + rows
    if end < len(data):                 # fields of a newer version than ours: read past, as Kafka does
        rows.append(Row("trailing_bytes", end, len(data), "IGNORED", len(data) - end, 0))
    return written, body, end, rows


def annotate_subscription(data):
    """``(version, body, end, rows)``: every field of JoinGroup metadata with its byte range, the leading
    ``version`` included (and ``trailing_bytes``, the fields of a version newer than ours, if any)."""
    return _annotate(_SUB, data, "subscription")


def annotate_assignment(data):
    """``(version, body, end, rows)``: every field of a SyncGroup assignment with its byte range."""
    return _annotate(_ASG, data, "assignment")
