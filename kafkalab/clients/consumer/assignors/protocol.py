"""The consumer protocol's bytes, as the assignors see them: a re-export of :mod:`kafkalab.protocol.consumer_protocol`.

Theory of operation
-------------------
What a member sends in JoinGroup (``ConsumerProtocolSubscription``) and what the leader sends back in SyncGroup
(``ConsumerProtocolAssignment``) are wire formats, so their one codec lives with the other wire formats in
:mod:`kafkalab.protocol.consumer_protocol`, where the group coordinator (which may not import the clients) can
use it too. The assignors, the consumer's coordinator and the admin client import the same names from here.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerProtocol.java``.
"""
from __future__ import annotations

from kafkalab.protocol.consumer_protocol import (DEFAULT_GENERATION, HIGHEST_VERSION, LOWEST_VERSION, PROTOCOL_TYPE,
                                                 Assignment, Subscription, TopicPartition, annotate_assignment,
                                                 annotate_subscription, decode_assignment, decode_subscription,
                                                 encode_assignment, encode_subscription, group_by_topic)

__all__ = [
    "PROTOCOL_TYPE", "DEFAULT_GENERATION", "LOWEST_VERSION", "HIGHEST_VERSION", "TopicPartition",
    "Subscription", "Assignment", "encode_subscription", "decode_subscription", "encode_assignment",
    "decode_assignment", "annotate_subscription", "annotate_assignment", "group_by_topic",
]
