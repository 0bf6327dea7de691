"""Client-side partition assignment of the classic consumer group protocol.

Theory of operation
-------------------
In a classic consumer group (JoinGroup / SyncGroup) the *leader member* decides who reads which partition,
with one of the assignors listed in ``partition.assignment.strategy``. Every member advertises, in order of
preference, the assignors it has; the coordinator picks one all members share, and the leader runs it on
everyone's subscription. This package holds the pieces, all pure functions of their inputs (no sockets,
no clocks):

* :mod:`.protocol` -- the bytes: ``ConsumerProtocolSubscription`` (JoinGroup metadata) and
  ``ConsumerProtocolAssignment`` (SyncGroup assignment), versions 0-3 (the codec is
  :mod:`kafkalab.protocol.consumer_protocol`, shared with the group coordinator);
* :mod:`.abstract` -- what an assignor is; :mod:`.range`, :mod:`.roundrobin` -- the stateless ones;
* :mod:`.abstract_sticky`, :mod:`.sticky`, :mod:`.cooperative_sticky` -- balanced and sticky, eagerly or in
  two cooperative steps.

``partition.assignment.strategy`` accepts Java class names (``org.apache.kafka.clients.consumer.RangeAssignor``)
or the assignors' protocol names (``range``); :func:`get_assignors` turns the config value into instances.
Java's default is ``RangeAssignor, CooperativeStickyAssignor``.

Mirrors: ``ConsumerPartitionAssignor.getAssignorInstances`` in
``clients/src/main/java/org/apache/kafka/clients/consumer/ConsumerPartitionAssignor.java``.
"""
from __future__ import annotations

import difflib
from typing import Iterable, Union

from kafkalab.clients.consumer.assignors.abstract import ConsumerPartitionAssignor, RebalanceProtocol
from kafkalab.clients.consumer.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafkalab.clients.consumer.assignors.protocol import (PROTOCOL_TYPE, Assignment, Subscription, TopicPartition,
                                                          decode_assignment, decode_subscription,
                                                          encode_assignment, encode_subscription)
from kafkalab.clients.consumer.assignors.range import RangeAssignor
from kafkalab.clients.consumer.assignors.roundrobin import RoundRobinAssignor
from kafkalab.clients.consumer.assignors.sticky import StickyAssignor

__all__ = [
    "ConsumerPartitionAssignor", "RebalanceProtocol", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor",
    "CooperativeStickyAssignor", "ASSIGNORS", "ASSIGNORS_BY_CLASS", "DEFAULT_PARTITION_ASSIGNMENT_STRATEGY",
    "assignor_class", "get_assignors", "PROTOCOL_TYPE", "TopicPartition", "Subscription", "Assignment",
    "encode_subscription", "decode_subscription", "encode_assignment", "decode_assignment",
]

_ALL = (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
#: Protocol name -> class ("range", "roundrobin", "sticky", "cooperative-sticky").
ASSIGNORS = {cls.name: cls for cls in _ALL}
#: Java class name -> class, as ``partition.assignment.strategy`` spells them.
ASSIGNORS_BY_CLASS = {cls.java_class: cls for cls in _ALL}
#: The Java consumer's default value of ``partition.assignment.strategy``.
DEFAULT_PARTITION_ASSIGNMENT_STRATEGY = [RangeAssignor.java_class, CooperativeStickyAssignor.java_class]


def assignor_class(name: Union[str, type]) -> type:
    """The assignor class for a Java class name, a short class name or a protocol name."""
    if isinstance(name, type) and issubclass(name, ConsumerPartitionAssignor):
        return name
    key = str(name).strip()
    for table in (ASSIGNORS_BY_CLASS, ASSIGNORS, {cls.__name__: cls for cls in _ALL}):
        if key in table:
            return table[key]
    known = [*ASSIGNORS_BY_CLASS, *ASSIGNORS]
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
    raise ValueError(f"partition.assignment.strategy: unknown assignor {key!r}{hint}")


def get_assignors(strategy: Union[str, Iterable] = None) -> list:
    """Instances for a ``partition.assignment.strategy`` value (a list, or a comma-separated string).

    As in Java, two entries with the same protocol name are an error (``None`` means the default).
    """
    if strategy is None:
        strategy = DEFAULT_PARTITION_ASSIGNMENT_STRATEGY
    if isinstance(strategy, str):
        strategy = [s for s in strategy.split(",") if s.strip()]
    instances = []
    seen: dict = {}
    for entry in strategy:
        cls = assignor_class(entry)
        if cls.name in seen:
            raise ValueError(f"partition.assignment.strategy: the assignor name {cls.name!r} is used by more "
                             f"than one entry ({seen[cls.name]!r} and {entry!r})")
        seen[cls.name] = entry
        instances.append(cls())
    return instances
