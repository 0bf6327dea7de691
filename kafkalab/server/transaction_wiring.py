"""How the broker hosts its transaction coordinator: the log, leader lookups, the marker sender, leadership.

Theory of operation
-------------------
The transaction coordinator (:mod:`kafkalab.coordinator.transaction`) is sans-IO; this module plugs it into the
broker, as ``broker.transaction_coordinator``:

* its ``__transaction_state`` is :class:`~kafkalab.server.apis.transactions.BrokerTransactionLog` (appends through
  the replica manager with acks=-1, loads from the local log);
* producer ids come from the broker's ZooKeeper-backed block (:mod:`kafkalab.server.producer_id_manager`);
* markers go to partition leaders found in the metadata cache, over the **inter-broker listener**, through a
  :class:`~kafkalab.coordinator.transaction.marker_sender.TransactionMarkerSender` whose connections are
  :class:`~kafkalab.network.inter_broker_client.InterBrokerConnection` (clientId = this broker's id, the same TLS
  and SASL login as the controller's channel);
* becoming leader (LeaderAndIsr) of ``__transaction_state-<n>`` at leader epoch E loads it with coordinator epoch
  E; losing it (LeaderAndIsr as follower, StopReplica) unloads it (Kafka's ``onLeadershipChange``);
* ``__transaction_state`` is created on the first FindCoordinator for a transactional id (by the admin manager,
  :func:`kafkalab.server.admin_manager.transaction_topic_configs`).

The partition count is read from the topic when it exists (not from ``transaction.state.log.num.partitions``):
changing the setting later must not move every id to another partition.

Mirrors: ``KafkaServer.startup`` (the transaction coordinator part), ``TransactionStateManager``
(``getTransactionTopicPartitionCount``), ``TransactionMarkerChannelManager.apply``,
``RequestHandlerHelper.onLeadershipChange``.
"""
from __future__ import annotations

import logging

from kafkalab.coordinator.transaction import TransactionConfig, TransactionCoordinator, TransactionMarkerChannelManager
from kafkalab.coordinator.transaction.marker_channel import LEADER_NOT_ALIVE, NO_LEADER
from kafkalab.coordinator.transaction.marker_sender import TransactionMarkerSender
from kafkalab.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.server.apis.transactions import BrokerTransactionLog

__all__ = ["start_transaction_coordinator", "transaction_config", "on_transaction_state_partitions",
           "MARKER_RETRY_INTERVAL_MS", "TRANSACTION_STATE_TOPIC"]

log = logging.getLogger("kafkalab.server.KafkaServer")

#: how often parked markers (leader not alive) and failed Complete* appends are retried
MARKER_RETRY_INTERVAL_MS = 200


def transaction_config(broker_config, zk) -> TransactionConfig:
    """The coordinator's settings; the partition count is the existing topic's if ``__transaction_state`` exists
    (TransactionStateManager.getTransactionTopicPartitionCount): ids must live where FindCoordinator sends them."""
    config = TransactionConfig.from_broker(broker_config)
    existing = zk.get_topic_partition_count(TRANSACTION_STATE_TOPIC)
    if existing is not None and existing != config.transaction_state_log_num_partitions:
        log.warning("__transaction_state has %d partitions, not transaction.state.log.num.partitions=%d; using %d",
                    existing, config.transaction_state_log_num_partitions, existing)
        config = config._replace(transaction_state_log_num_partitions=existing)
    return config


def start_transaction_coordinator(broker) -> tuple[TransactionCoordinator, TransactionMarkerSender]:
    """Build, wire and start the coordinator (call on the broker's loop, after the replica manager)."""
    cfg = broker.config
    cache = broker.metadata_cache
    listener = cfg.inter_broker_listener_name

    def leader_for(topic: str, partition: int) -> int:
        state = cache.partition_state(topic, partition)
        if state is None:
            # Unknown to the metadata cache: deleted (no marker needed), or not learnt yet -- a coordinator that
            # loads its partitions at start-up may run before the first UpdateMetadata. Only a topic gone from
            # ZooKeeper is dropped; otherwise the markers wait for the leader to be known.
            return LEADER_NOT_ALIVE if broker.zk.topic_exists(topic) else NO_LEADER
        if state.leader < 0 or cache.broker_endpoint(state.leader, listener) is None:
            return LEADER_NOT_ALIVE
        return state.leader

    coordinator = TransactionCoordinator(transaction_config(cfg, broker.zk), broker.time, broker.scheduler,
                                         BrokerTransactionLog(broker), broker.producer_ids.generate_producer_id,
                                         broker_id=broker.broker_id)
    channel = TransactionMarkerChannelManager(coordinator.state_manager, leader_for)
    timeout_ms = cfg["request.timeout.ms"]
    sender = TransactionMarkerSender(
        channel, lambda broker_id: cache.broker_endpoint(broker_id, listener),
        lambda host, port, client_id: InterBrokerConnection(
            host, port, client_id=client_id, request_timeout_ms=timeout_ms, link_check=broker._link_up,
            ssl_context=broker.inter_broker_ssl_context, sasl_login=broker.inter_broker_login),
        client_id=f"broker-{broker.broker_id}-txn-marker-sender")      # Kafka's TransactionMarkerChannelManager
    coordinator.markers = channel
    coordinator.startup()

    def retry_markers() -> None:
        channel.retry_unknown_brokers()
        channel.retry_log_appends()
    coordinator.add_periodic_task("transaction-marker-retry", retry_markers, MARKER_RETRY_INTERVAL_MS)
    return coordinator, sender


def on_transaction_state_partitions(broker, leading: dict[int, int], not_leading: dict) -> None:
    """Partitions of ``__transaction_state`` this broker started leading ({partition: leader epoch}) or stopped
    leading ({partition: leader epoch or None})."""
    tc = broker.transaction_coordinator
    if tc is None:
        return
    for partition, epoch in leading.items():
        tc.on_election(partition, epoch)
    for partition, epoch in not_leading.items():
        tc.on_resignation(partition, epoch)
