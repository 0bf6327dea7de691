"""kafkalab's consumer: ``poll()``, consumer groups, offsets -- the client side of reading from Kafka.

Theory of operation
-------------------
A Kafka consumer pulls. It asks partition leaders for records from its *position* in each partition, and it
either picks its partitions itself (``assign``) or joins a *consumer group* (``subscribe``) whose leader
member divides the partitions among the members. The rooms, bottom up:

* :mod:`.subscription_state` -- what is subscribed and assigned, and the position in each partition;
* :mod:`.completed_fetch` -- one partition's fetched bytes turned into records (``read_committed``, skipping);
* :mod:`.fetcher` -- FetchRequests per leader, prefetch; :mod:`.offset_fetcher` -- ListOffsets (resets, times);
* :mod:`.abstract_coordinator` -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup;
* :mod:`.consumer_coordinator` -- subscriptions and assignments in those messages, commits, committed offsets;
* :mod:`.assignors` -- who gets which partition (range, roundrobin, sticky, cooperative-sticky);
* :mod:`.consumer` -- :class:`Consumer`, the facade that drives it all from ``poll()``.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/consumer/`` (``KafkaConsumer``, ``internals/``).
"""
from kafkalab.clients.consumer.abstract_coordinator import Generation, MemberState
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.consumer.completed_fetch import CompletedFetch, ConsumerRecord
from kafkalab.clients.consumer.consumer import Consumer
from kafkalab.clients.consumer.consumer_coordinator import CommitFailedError
from kafkalab.clients.consumer.fetcher import OffsetOutOfRangeError
from kafkalab.clients.consumer.group_metadata import ConsumerGroupMetadata
from kafkalab.clients.consumer.offset_fetcher import OffsetAndTimestamp
from kafkalab.clients.consumer.subscription_state import (IllegalStateError, NoOffsetForPartitionError,
                                                          OffsetAndMetadata, SubscriptionState)

__all__ = ["Consumer", "ConsumerRecord", "CompletedFetch", "CommitFailedError", "OffsetOutOfRangeError",
           "OffsetAndTimestamp", "IllegalStateError", "NoOffsetForPartitionError", "OffsetAndMetadata",
           "SubscriptionState", "TopicPartition", "Generation", "MemberState", "ConsumerGroupMetadata"]
