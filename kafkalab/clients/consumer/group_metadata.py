"""The consumer group a consumer belongs to, as a transactional producer needs it for its offsets.

Theory of operation
-------------------
A consume-process-produce application commits its input offsets *inside* the producer's transaction
(``producer.send_offsets_to_transaction(offsets, consumer.group_metadata())``). The producer sends them with
TxnOffsetCommit to the group coordinator, and from v3 (KIP-447) it also sends who the consumer is in the group
-- generation, member id, group instance id -- so that the coordinator refuses the offsets of a member that was
fenced by a rebalance (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID): a zombie cannot commit.

Mirrors ``clients/src/main/java/org/apache/kafka/clients/consumer/ConsumerGroupMetadata.java``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

__all__ = ["ConsumerGroupMetadata"]


class ConsumerGroupMetadata(NamedTuple):
    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: Optional[str] = None
