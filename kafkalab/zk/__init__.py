"""kafkalab.zk -- the ZooKeeper era: an embedded coordination store with ZooKeeper's semantics, and Kafka's use of it.

Theory of operation
-------------------
From 0.8 to 3.x a Kafka cluster was two systems: the brokers, and a ZooKeeper ensemble holding the facts the
brokers had to agree on. A broker registers by creating an *ephemeral* znode that lives exactly as long as its
ZooKeeper session; the controller is the broker that managed to create ``/controller``; every partition's leader
and ISR sit in a znode written with compare-and-set on its version, and the controller fences itself with the
``/controller_epoch`` counter. Kafka 4 moved all of this into KRaft (a Raft log inside the controllers); kafkalab
teaches the ZooKeeper-era design first, because its moving parts are visible -- you can print the tree.

This room runs the "ZooKeeper" in-process, with the semantics Kafka depends on and nothing else:

* :mod:`.znode` -- paths, payloads, :class:`Stat`, the operations of a transaction.
* :mod:`.store` -- :class:`ZkStore`: the tree, zxids, versions, multi, sequential znodes, session expiry,
  fault injection (isolate/heal), persistence, event log, ``tree()``/``dump()``.
* :mod:`.session` -- :class:`Session`: heartbeats, timeouts, ephemeral ownership.
* :mod:`.watches` -- one-shot watches and ordered delivery through a pluggable dispatcher.
* :mod:`.txn_snap_log` -- the data directory: each commit appended to a transaction log, snapshots now and
  then; :mod:`.persistence` -- the two file formats (torn log tails ignored on load).
* :mod:`.errors` -- ZooKeeper's result codes as exceptions (``NodeExistsException``, ``BadVersionException``...).
* :mod:`.paths` -- Kafka's znode layout and JSON formats (``ZkData.scala``).
* :mod:`.client` -- :class:`KafkaZkClient`: registration, election, partition states, notifications.
* :mod:`.fenced_writes` -- the controller's writes: fenced by the controller epoch, many at once in batches
  (one multi, one log record per batch).

Public API::

    store = ZkStore(data_dir=None, *, time=SYSTEM, scheduler=None, tick_time_ms=2000, dispatcher=call_now, ...)
    s = store.open_session(timeout_ms=18000, *, auto_heartbeat=False, dispatcher=None)
    s.heartbeat() -> bool; s.close(); s.add_state_listener(fn); s.state; s.session_id; s.hex_id
    store.create(path, data=None, *, ephemeral=False, sequential=False, session=None, make_parents=False) -> path
    store.get(path, watch=None, *, session=None) -> (data, Stat)
    store.exists(path, watch=None, *, session=None) -> Stat | None
    store.get_children(path, watch=None, *, session=None) -> [names, sorted]
    store.set(path, data, version=-1, *, session=None) -> Stat
    store.delete(path, version=-1, *, session=None)
    store.multi([CheckOp|CreateOp|SetDataOp|DeleteOp, ...], *, session=None) -> [results]
    store.expire_sessions() -> [ids]; store.close_session(s); store.isolate(s); store.heal(s)
    store.tree(path="/") -> str; store.dump(path="/") -> [dict]; store.event_log(since_zxid=None) -> [dict]
    store.add_listener(fn); store.sessions(); store.watches(); store.last_zxid
    store.take_snapshot(); store.disk_stats() -> {log_records, snapshots, bytes_written}

    zk = KafkaZkClient.connect(store, session_timeout_ms=18000)   # or KafkaZkClient(store, session)
    zk.register_broker(BrokerInfo(...)) -> broker epoch; zk.try_create_controller(broker_id) -> bool
    zk.create_topic(topic, {0: [0, 1]}, config) -> topic id; zk.update_leader_and_isr(...); ...

Mirrors: ZooKeeper 3.x (``DataTree``, ``SessionTrackerImpl``, ``WatchManager``) and Kafka's
``core/src/main/scala/kafka/zk/{ZkData,KafkaZkClient,AdminZkClient}.scala``. Taught in lab 09 (controller).
Layering: imports only :mod:`kafkalab.common`.
"""
from kafkalab.zk.client import (ControllerMovedException, KafkaZkClient, TopicExistsException,
                                UpdateLeaderAndIsrResult)
from kafkalab.zk.errors import (BadArgumentsException, BadVersionException, Code, ConnectionLossException,
                                KeeperException, NoChildrenForEphemeralsException, NodeExistsException,
                                NoNodeException, NotEmptyException, SessionExpiredException)
from kafkalab.zk.session import Session, SessionState
from kafkalab.zk.store import ZkStore
from kafkalab.zk.watches import EventType, KeeperState, WatchedEvent, call_now
from kafkalab.zk.znode import MATCH_ANY_VERSION, CheckOp, CreateOp, DeleteOp, Op, SetDataOp, Stat

__all__ = [
    "ZkStore", "Session", "SessionState", "Stat", "CreateOp", "SetDataOp", "DeleteOp", "CheckOp", "Op",
    "MATCH_ANY_VERSION", "EventType", "KeeperState", "WatchedEvent", "call_now",
    "Code", "KeeperException", "BadArgumentsException", "BadVersionException", "ConnectionLossException",
    "NoChildrenForEphemeralsException", "NodeExistsException", "NoNodeException", "NotEmptyException",
    "SessionExpiredException",
    "KafkaZkClient", "ControllerMovedException", "TopicExistsException", "UpdateLeaderAndIsrResult",
]
