"""kafkalab.clients -- kafkalab's own Kafka clients: producer, admin (and the consumer, in its own room).

Theory of operation
-------------------
The labs drive the protocol through these clients so that a learner can open the code that sends each byte.
They behave like Kafka's Java clients and take the same config names, one dict per client::

    from kafkalab.clients import Producer, Admin
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}, trace=True) as p:
        p.send("events", b"hello", key=b"user-1").result()
        p.trace.table()                     # every request and response, with bytes and timings

Rooms: :mod:`.config` (names, defaults, validation), :mod:`.network_client` (one connection per broker,
pipelining, correlation ids, timeouts, reconnect backoff), :mod:`.api_versions` (version negotiation),
:mod:`.metadata` (the cluster cache), :mod:`.tracing` (the trace hook), :mod:`.producer` (KafkaProducer,
RecordAccumulator, Sender, idempotence), :mod:`.admin` (KafkaAdminClient), :mod:`.consumer` (KafkaConsumer, its
fetcher, coordinator and assignors). Each client runs its network I/O on a
:class:`~kafkalab.common.loop_thread.LoopThread` of its own (the sync facade's background loop).

Layering: clients import only ``security``, ``protocol``, ``records`` and ``common`` below them; the broker never imports
them. Mirrors ``clients/src/main/java/org/apache/kafka/clients/``.
"""
from kafkalab.clients.admin import (Admin, AdminError, ConfigResource, NewPartitions, NewTopic, OffsetSpec)
from kafkalab.clients.admin_transactions import (AbortTransactionSpec, PartitionProducerState, ProducerState,
                                                 TransactionDescription, TransactionListing, TransactionState)
from kafkalab.clients.admin_scram import (ScramCredentialInfo, UserScramCredentialDeletion,
                                          UserScramCredentialUpsertion)
from kafkalab.clients.config import ConfigException
from kafkalab.clients.errors import KafkaProtocolError, KafkaTimeoutError
from kafkalab.clients.producer import (Producer, ProducerFencedError, RecordMetadata, TopicPartition,
                                       TransactionError)
from kafkalab.clients.consumer import (CommitFailedError, Consumer, ConsumerRecord, NoOffsetForPartitionError,
                                       OffsetAndMetadata, OffsetAndTimestamp, OffsetOutOfRangeError)
from kafkalab.clients.tracing import ClientTrace, TraceEvent

__all__ = ["Producer", "Admin", "RecordMetadata", "TopicPartition", "ConfigException", "KafkaProtocolError",
           "KafkaTimeoutError", "ClientTrace", "TraceEvent", "AdminError", "NewTopic", "NewPartitions",
           "ConfigResource", "OffsetSpec", "Consumer", "ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp",
           "CommitFailedError", "NoOffsetForPartitionError", "OffsetOutOfRangeError", "ScramCredentialInfo",
           "UserScramCredentialUpsertion", "UserScramCredentialDeletion", "AbortTransactionSpec", "ProducerState",
           "PartitionProducerState", "TransactionDescription", "TransactionListing", "TransactionState", "ProducerFencedError", "TransactionError"]
