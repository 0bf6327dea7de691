"""ConsumerGroupMetadata: who a consumer is in its group, handed to a transactional producer.

Theory of operation
-------------------
In a consume-process-produce loop the producer commits the consumer's offsets inside its transaction
(``producer.send_offsets_to_transaction(offsets, consumer.group_metadata())``). The group coordinator must be
able to refuse those offsets from a consumer that is no longer a member of the current generation -- a
*zombie* whose partitions were already given to someone else -- exactly as it refuses its plain OffsetCommit.
So the producer passes on the consumer's identity: the group id, the generation and member id of the last
completed rebalance, and the static ``group.instance.id``. TxnOffsetCommit v3+ (KIP-447) carries them and the
coordinator checks them (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); older versions carry
only the group id.

Before the first rebalance completes (or for a consumer that uses ``assign()``) the generation is -1 and the
member id empty: the coordinator then checks nothing but the group.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/ConsumerGroupMetadata.java`` and
``ConsumerCoordinator.groupMetadata()``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

__all__ = ["ConsumerGroupMetadata", "UNKNOWN_GENERATION_ID", "UNKNOWN_MEMBER_ID"]

UNKNOWN_GENERATION_ID = -1
UNKNOWN_MEMBER_ID = ""


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's place in its group, as Java's ``ConsumerGroupMetadata``."""

    group_id: str
    generation_id: int = UNKNOWN_GENERATION_ID
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: Optional[str] = None
