"""kafkalab.clients.producer -- the producer room: partitioner, accumulator, sender, idempotence state.

Theory of operation
-------------------
The journey of one record: :class:`Producer.send` (thread of the caller) -> partitioner (which partition) ->
:class:`RecordAccumulator` (which batch) -> :class:`Sender` (which request, to which leader) -> the broker's
answer -> the record's future. :class:`TransactionManager` keeps the idempotent producer's id, epoch and
sequences, and, for a transactional producer, the state table (:mod:`.transaction_state`) and the queue of
coordinator requests (:mod:`.transactional_requests`). Each module opens with its own theory of operation and names the Java class it mirrors
(``clients/src/main/java/org/apache/kafka/clients/producer/``).
"""
from kafkalab.clients.producer.accumulator import ProducerBatch, RecordAccumulator, RecordMetadata, TopicPartition
from kafkalab.clients.producer.future import FutureRecordMetadata
from kafkalab.clients.producer.partitioner import (Partitioner, StickyPartitioner, crc32_partition, java_partition,
                                                   murmur2, to_positive)
from kafkalab.clients.producer.producer import Producer
from kafkalab.clients.producer.sender import Sender
from kafkalab.clients.producer.transaction_manager import TransactionManager
from kafkalab.clients.producer.transaction_state import (ProducerFencedError, State, TransactionAbortedError,
                                                         TransactionError, TransactionStateError)

__all__ = ["Producer", "RecordMetadata", "FutureRecordMetadata", "TopicPartition", "ProducerBatch", "RecordAccumulator", "Sender",
           "TransactionManager", "State", "TransactionError", "TransactionStateError", "TransactionAbortedError",
           "ProducerFencedError", "Partitioner", "StickyPartitioner", "murmur2", "to_positive", "java_partition",
           "crc32_partition"]
