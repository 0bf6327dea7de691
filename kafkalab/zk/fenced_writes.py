"""The controller's writes to the store: fenced by the controller epoch, and many at once in batches.

Theory of operation
-------------------
**Fencing.** Every write of the controller carries the zkVersion of ``/controller_epoch`` it read when it was
elected, as ``multi([CheckOp("/controller_epoch", version), write])``. Once another broker has become
controller (and bumped the epoch), the check fails and the deposed controller gets
:class:`ControllerMovedException` instead of overwriting its successor's decisions. ``MATCH_ANY_VERSION`` (-1)
writes without the check (a broker's own writes, an admin's).

**Batches.** Some writes come by the thousand and do not depend on each other: a partition state per new
partition, a znode per partition of a deleted topic, an ISR per partition of a dead broker. Kafka's
``KafkaZkClient`` sends such writes as one pipelined batch, and ZooKeeper makes a batch durable with one fsync
(its *group commit*). :func:`write_all` gets the same effect from the store: up to :data:`WRITE_BATCH_OPS` ops
go as one ``multi`` -- one zxid, one record of the store's transaction log, one fsync -- when every op
succeeds, instead of one commit per op (each commit once rewrote the whole tree, which made creating 1,000
partitions quadratic; a commit is still an fsync). When any op of a batch
fails (a partition state another controller created first, a znode already gone), the multi changes nothing and
the batch is written op by op, so each op still gets its own result or error, exactly as one by one.

Mirrors: ``KafkaZkClient.retryRequestsUntilConnected`` with ``MultiRequest``/``CheckOp`` wrapping
(``wrapRequestWithControllerEpochCheck``), ``ControllerMovedException``.
"""
from __future__ import annotations

from typing import Optional

from kafkalab.zk.errors import BadVersionException, KeeperException
from kafkalab.zk.paths import CONTROLLER_EPOCH_PATH
from kafkalab.zk.session import Session
from kafkalab.zk.store import ZkStore
from kafkalab.zk.znode import MATCH_ANY_VERSION, CheckOp, Op

__all__ = ["ControllerMovedException", "write", "write_all", "WRITE_BATCH_OPS"]

#: ops per multi when :func:`write_all` writes many independent znodes
WRITE_BATCH_OPS = 1000


class ControllerMovedException(Exception):
    """Kafka's ``ControllerMovedException``: another broker won the election, or bumped the controller epoch
    since this one read it, so this (former) controller must stop writing."""


def _fenced(store: ZkStore, session: Optional[Session], ops: list, expected_controller_epoch_zk_version: int) -> list:
    """The results of ``ops`` written as one multi, behind the controller-epoch check unless MATCH_ANY_VERSION."""
    if expected_controller_epoch_zk_version == MATCH_ANY_VERSION:
        return store.multi(ops, session=session)
    if expected_controller_epoch_zk_version < 0:
        raise ValueError(f"expected controller epoch zkVersion {expected_controller_epoch_zk_version} "
                         "should be non-negative or -1")
    try:
        return store.multi([CheckOp(CONTROLLER_EPOCH_PATH, expected_controller_epoch_zk_version), *ops],
                           session=session)[1:]
    except BadVersionException as e:
        if e.op_index == 0:
            raise ControllerMovedException("Controller epoch zkVersion check fails. Expected zkVersion = "
                                           f"{expected_controller_epoch_zk_version}") from e
        raise


def write(store: ZkStore, session: Optional[Session], op: Op,
          expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION):
    """One write (its result: created path, Stat or None); raises its KeeperException or ControllerMoved."""
    return _fenced(store, session, [op], expected_controller_epoch_zk_version)[0]


def write_all(store: ZkStore, session: Optional[Session], ops: list,
              expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> list:
    """Many independent writes: per op its result or its KeeperException, in order. ControllerMovedException
    (and anything that is not a KeeperException) raises."""
    results: list = []
    for start in range(0, len(ops), WRITE_BATCH_OPS):
        batch = ops[start:start + WRITE_BATCH_OPS]
        if len(batch) > 1:
            try:
                results += _fenced(store, session, batch, expected_controller_epoch_zk_version)
                continue
            except KeeperException:
                pass   # one op failed and the multi changed nothing: find out which, op by op
        for op in batch:
            try:
                results.append(write(store, session, op, expected_controller_epoch_zk_version))
            except KeeperException as e:
                results.append(e)
    return results
