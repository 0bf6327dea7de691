"""kafkalab.controller -- the ZooKeeper-era controller: election, leader choice, and the requests that tell brokers.

* :mod:`.election` -- pure rules: offline/preferred/controlled-shutdown leader, replica placement.
* :mod:`.context` -- the controller's in-memory copy of the cluster state.
* :mod:`.channel` -- LeaderAndIsr / UpdateMetadata / StopReplica batches, one request per broker.
* :mod:`.replica_election` -- ElectLeaders: an operator's PREFERRED or UNCLEAN election.
* :mod:`.controller_stats` -- what the controller reports: Kafka's ``ControllerStats`` meters and timers, the
  ``KafkaController`` gauges, the ``state.change.logger`` lines.
* :mod:`.controller` -- :class:`KafkaController`: election through ``/controller`` and its event handlers, one
  table of them (:data:`~.controller.EVENTS`).

Mirrors ``core/src/main/scala/kafka/controller/``. The controller reaches brokers only through requests; it never
imports ``kafkalab.server``.
"""
from kafkalab.controller.controller import EVENTS, KafkaController
from kafkalab.controller.election import (assign_replicas_to_brokers, controlled_shutdown_leader,
                                          offline_partition_leader, preferred_replica_leader)

__all__ = ["KafkaController", "EVENTS", "assign_replicas_to_brokers", "offline_partition_leader", "preferred_replica_leader",
           "controlled_shutdown_leader"]
