"""The transaction coordinator's broker settings (``transaction.*``, ``transactional.id.*``), declared once.

Theory of operation
-------------------
The coordinator is configured by broker keys: the shape of ``__transaction_state``
(``transaction.state.log.num.partitions``, its replication factor, min ISR and segment size, fixed once the topic
exists), how much of it a load reads at a time, the largest ``transaction.timeout.ms`` a producer may ask for
(``transaction.max.timeout.ms``; above it InitProducerId fails with INVALID_TRANSACTION_TIMEOUT), how long an idle
transactional id is remembered, and how often the two scanners run (aborting timed-out transactions, expiring
idle ids). They are declared here, next to the coordinator that reads them, and merged into the broker's table
(``KafkaConfig``), so DescribeConfigs and :class:`TransactionConfig` take their defaults from one place.

Kafka's built-in replication factor and min ISR of ``__transaction_state`` are 3 and 2; its sample
``server.properties`` sets both to 1 for a single broker, and so does kafkalab's default (as for
``offsets.topic.replication.factor``).

Mirrors: ``transaction-coordinator/.../TransactionLogConfigs.java`` and ``TransactionStateManagerConfigs.java``.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from kafkalab.common.config import ConfigDef, Importance, Range
from kafkalab.common.config import Type as T

__all__ = ["TRANSACTION_COORDINATOR_CONFIGS", "TransactionConfig"]

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

TRANSACTION_COORDINATOR_CONFIGS = (
    ConfigDef()
    .define("transaction.state.log.num.partitions", T.INT, 50, Range.at_least(1), H, "Partitions of "
            "__transaction_state (fixed once the topic exists).")
    .define("transaction.state.log.replication.factor", T.SHORT, 1, Range.at_least(1), H, "Replication factor of "
            "__transaction_state (Kafka's built-in default is 3; its sample server.properties sets 1, as kafkalab "
            "does).")
    .define("transaction.state.log.min.isr", T.INT, 1, Range.at_least(1), H, "min.insync.replicas of "
            "__transaction_state (Kafka's built-in default is 2; its sample server.properties sets 1).")
    .define("transaction.state.log.segment.bytes", T.INT, 104857600, Range.at_least(1), H, "segment.bytes of "
            "__transaction_state.")
    .define("transaction.state.log.load.buffer.size", T.INT, 5242880, Range.at_least(1), L, "Bytes read at a "
            "time when a coordinator loads a partition of __transaction_state.")
    .define("transaction.max.timeout.ms", T.INT, 900000, Range.at_least(1), H, "Largest transaction.timeout.ms "
            "a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it).")
    .define("transactional.id.expiration.ms", T.INT, 604800000, Range.at_least(1), H, "Forget a transactional id "
            "with no transaction in progress after this long without a request.")
    .define("transaction.abort.timed.out.transaction.cleanup.interval.ms", T.INT, 10000, Range.at_least(1), L,
            "How often transactions that ran past their timeout are looked for and aborted.")
    .define("transaction.remove.expired.transaction.cleanup.interval.ms", T.INT, 3600000, Range.at_least(1), L,
            "How often transactional ids past transactional.id.expiration.ms are removed.")
)

_D = TRANSACTION_COORDINATOR_CONFIGS.default


class TransactionConfig(NamedTuple):
    """The coordinator's settings as attributes; defaults from :data:`TRANSACTION_COORDINATOR_CONFIGS`."""

    transaction_state_log_num_partitions: int = _D("transaction.state.log.num.partitions")
    transaction_state_log_replication_factor: int = _D("transaction.state.log.replication.factor")
    transaction_state_log_min_isr: int = _D("transaction.state.log.min.isr")
    transaction_state_log_segment_bytes: int = _D("transaction.state.log.segment.bytes")
    transaction_state_log_load_buffer_size: int = _D("transaction.state.log.load.buffer.size")
    transaction_max_timeout_ms: int = _D("transaction.max.timeout.ms")
    transactional_id_expiration_ms: int = _D("transactional.id.expiration.ms")
    abort_timed_out_transactions_interval_ms: int = _D("transaction.abort.timed.out.transaction.cleanup.interval.ms")
    remove_expired_transactional_ids_interval_ms: int = _D(
        "transaction.remove.expired.transaction.cleanup.interval.ms")

    @classmethod
    def from_broker(cls, config: Mapping[str, Any]) -> "TransactionConfig":
        keys = ("transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
                "transaction.state.log.min.isr", "transaction.state.log.segment.bytes",
                "transaction.state.log.load.buffer.size", "transaction.max.timeout.ms",
                "transactional.id.expiration.ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "transaction.remove.expired.transaction.cleanup.interval.ms")
        return cls(*(int(config[k]) for k in keys))
