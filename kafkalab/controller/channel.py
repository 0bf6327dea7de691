"""How the controller talks to brokers: LeaderAndIsr, UpdateMetadata and StopReplica, batched per broker.

Theory of operation
-------------------
The controller never writes a broker's state directly. It decides (in :mod:`.controller`), records the
decision in ZooKeeper, and then *tells* the brokers with three requests of the inter-broker protocol:

* **LeaderAndIsr** to the replicas of a partition: "the leader is 2, epoch 7, ISR [2, 0]; you are leader /
  follower". Only the replicas need it.
* **UpdateMetadata** to *every* live broker: the new leaders, ISRs and live brokers, so that any broker can
  answer a client's Metadata request correctly.
* **StopReplica** to replicas that must stop serving a partition (and delete it, for a deleted topic).

During one controller event many partitions change, so the changes are collected in a
:class:`ControllerBrokerRequestBatch` and sent as one request per broker and kind. Each request carries the
controller id and **controller epoch**, which brokers use to ignore a zombie controller.

A :class:`ControllerChannel` delivers the requests. The controller keeps one channel *per broker*, each with
its own connection and correlation ids, and it reaches every broker -- itself included -- through that
broker's inter-broker listener (``clientId`` = the controller's broker id).

Mirrors: ``core/src/main/scala/kafka/controller/ControllerChannelManager.scala``
(``ControllerChannelManager``, ``AbstractControllerBrokerRequestBatch``).
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from typing import Callable, Optional, Protocol

from kafkalab.protocol import ApiKey, request_class

__all__ = ["ControllerChannel", "ControllerBrokerRequestBatch", "LEADER_AND_ISR_VERSION", "UPDATE_METADATA_VERSION",
           "STOP_REPLICA_VERSION", "LEADER_DURING_DELETE"]

log = logging.getLogger("kafkalab.controller.ControllerChannelManager")

LEADER_AND_ISR_VERSION = 6
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 3
LEADER_DURING_DELETE = -2           # LeaderAndIsr.LeaderDuringDelete: "this topic is being deleted"
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

LeaderAndIsr = request_class(ApiKey.LEADER_AND_ISR)
UpdateMetadata = request_class(ApiKey.UPDATE_METADATA)
StopReplica = request_class(ApiKey.STOP_REPLICA)


class ControllerChannel(Protocol):
    """Delivers one controller request to one broker and returns the response body."""

    async def send(self, broker_id: int, api_key: int, api_version: int, body) -> object: ...


def topic_uuid(topic_id: Optional[str]) -> uuid.UUID:
    """ZooKeeper stores topic ids in Kafka's URL-safe base64; the protocol carries 16 bytes."""
    import base64

    if not topic_id:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


class ControllerBrokerRequestBatch:
    """Collects the requests of one controller event, then sends one request of each kind per broker."""

    def __init__(self, controller_id: int, context):
        self.controller_id = controller_id
        self.context = context
        self.leader_and_isr: dict[int, dict[tuple[str, int], object]] = defaultdict(dict)
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[tuple[str, int], object] = {}
        self.stop_replica: dict[int, dict[tuple[str, int], bool]] = defaultdict(dict)

    def add_leader_and_isr(self, broker_ids, tp: tuple[str, int], is_new: bool = False) -> None:
        """Tell ``broker_ids`` (replicas of ``tp``) its current leader/ISR; UpdateMetadata follows for all."""
        state = self.context.partition_states.get(tp)
        if state is None:
            return
        lai = state.leader_and_isr
        ps = LeaderAndIsr.LeaderAndIsrPartitionState(
            topic_name=tp[0], partition_index=tp[1], controller_epoch=state.controller_epoch, leader=lai.leader,
            leader_epoch=lai.leader_epoch, isr=tuple(lai.isr), partition_epoch=lai.partition_epoch,
            replicas=tuple(self.context.replicas(tp)), is_new=is_new,
            leader_recovery_state=int(lai.leader_recovery_state))
        for b in broker_ids:
            if b >= 0:
                self.leader_and_isr[b][tp] = ps
        self.add_update_metadata(self.context.live_broker_ids(), [tp])

    def add_update_metadata(self, broker_ids, partitions) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            self.update_metadata_partitions[tp] = self._um_state(tp)

    def add_stop_replica(self, broker_ids, tp: tuple[str, int], delete: bool) -> None:
        for b in broker_ids:
            if b >= 0:
                self.stop_replica[b][tp] = delete or self.stop_replica[b].get(tp, False)

    def _um_state(self, tp):
        ctx = self.context
        state = ctx.partition_states.get(tp)
        replicas = tuple(ctx.replicas(tp))
        offline = tuple(b for b in replicas if b not in ctx.live_brokers
                        or tp in ctx.replicas_on_offline_dirs.get(b, ()))
        if state is None or tp[0] in ctx.topics_being_deleted:
            leader, epoch, isr, zkv, cepoch = LEADER_DURING_DELETE, -1, (), 0, ctx.epoch
            if state is not None:
                epoch, isr = state.leader_and_isr.leader_epoch, tuple(state.leader_and_isr.isr)
        else:
            lai = state.leader_and_isr
            leader, epoch, isr, zkv, cepoch = lai.leader, lai.leader_epoch, tuple(lai.isr), lai.partition_epoch, \
                state.controller_epoch
        return UpdateMetadata.UpdateMetadataPartitionState(
            topic_name=tp[0], partition_index=tp[1], controller_epoch=cepoch, leader=leader, leader_epoch=epoch,
            isr=isr, zk_version=zkv, replicas=replicas, offline_replicas=offline)

    # ------------------------------------------------------------------------------------------ building
    def _live_brokers(self):
        brokers = []
        for info in self.context.live_brokers.values():
            brokers.append(UpdateMetadata.UpdateMetadataBroker(
                id=info.id, rack=info.rack,
                endpoints=tuple(UpdateMetadata.UpdateMetadataEndpoint(
                    port=ep.port, host=ep.host or "", listener=ep.listener_name,
                    security_protocol=_PROTOCOL_IDS.get(ep.security_protocol, 0)) for ep in info.endpoints)))
        return tuple(sorted(brokers, key=lambda b: b.id))

    def build(self, controller_epoch: int, broker_epochs: dict[int, int]) -> list[tuple[int, int, int, object]]:
        """``[(broker_id, api_key, api_version, body)]`` in the order Kafka sends them: LeaderAndIsr first, then
        UpdateMetadata, then StopReplica."""
        out = []
        ctx = self.context
        for broker_id, states in sorted(self.leader_and_isr.items()):
            by_topic = defaultdict(list)
            for (topic, _), ps in sorted(states.items()):
                by_topic[topic].append(ps)
            live_leaders = {ps.leader for ps in states.values()}
            body = LeaderAndIsr(
                controller_id=self.controller_id, controller_epoch=controller_epoch,
                broker_epoch=broker_epochs.get(broker_id, -1),
                topic_states=tuple(LeaderAndIsr.LeaderAndIsrTopicState(
                    topic_name=t, topic_id=topic_uuid(ctx.topic_ids.get(t)), partition_states=tuple(ps))
                    for t, ps in by_topic.items()),
                live_leaders=tuple(LeaderAndIsr.LeaderAndIsrLiveLeader(broker_id=b, host_name=h, port=p)
                                   for b, h, p in ctx.leader_endpoints(live_leaders)))
            out.append((broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body))
        if self.update_metadata_brokers:
            by_topic = defaultdict(list)
            for (topic, _), ps in sorted(self.update_metadata_partitions.items()):
                by_topic[topic].append(ps)
            live = self._live_brokers()
            for broker_id in sorted(self.update_metadata_brokers):
                body = UpdateMetadata(
                    controller_id=self.controller_id, controller_epoch=controller_epoch,
                    broker_epoch=broker_epochs.get(broker_id, -1),
                    topic_states=tuple(UpdateMetadata.UpdateMetadataTopicState(
                        topic_name=t, topic_id=topic_uuid(ctx.topic_ids.get(t)), partition_states=tuple(ps))
                        for t, ps in by_topic.items()),
                    live_brokers=live)
                out.append((broker_id, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body))
        for broker_id, parts in sorted(self.stop_replica.items()):
            by_topic = defaultdict(list)
            for (topic, p), delete in sorted(parts.items()):
                state = ctx.partition_states.get((topic, p))
                epoch = state.leader_and_isr.leader_epoch if state else -1
                by_topic[topic].append(StopReplica.StopReplicaPartitionState(
                    partition_index=p, leader_epoch=-2 if delete else epoch, delete_partition=delete))
            body = StopReplica(controller_id=self.controller_id, controller_epoch=controller_epoch,
                               broker_epoch=broker_epochs.get(broker_id, -1),
                               topic_states=tuple(StopReplica.StopReplicaTopicState(topic_name=t, partition_states=tuple(s))
                                                  for t, s in by_topic.items()))
            out.append((broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body))
        return out

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.update_metadata_brokers or self.stop_replica)


async def send_all(channel: ControllerChannel, requests: list, on_response: Optional[Callable] = None) -> None:
    """Send the batch: requests to one broker go in order; brokers are served concurrently."""
    by_broker = defaultdict(list)
    for req in requests:
        by_broker[req[0]].append(req)

    async def to_broker(items):
        for broker_id, api_key, version, body in items:
            try:
                response = await channel.send(broker_id, api_key, version, body)
            except Exception as e:  # a dead broker: the broker-change event will handle it
                log.info("controller request %s to broker %s failed: %s", ApiKey(api_key).name, broker_id, e)
                continue
            if on_response is not None:
                on_response(broker_id, api_key, response)

    await asyncio.gather(*(to_broker(items) for items in by_broker.values()))
