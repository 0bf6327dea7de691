"""``kafkalab reassign-partitions`` and ``kafkalab metadata-quorum``: Kafka tools this cluster cannot serve.

Theory of operation
-------------------
Two of Kafka's 3.9 tools need broker APIs kafkalab does not implement, so the commands exist only to say so, in
the words Kafka's tools print when a broker does not offer the API they need, then plainly, and exit with 1:

* ``kafka-reassign-partitions.sh`` moves replicas between brokers with AlterPartitionReassignments (API 45) and
  follows the moves with ListPartitionReassignments (API 46). kafkalab's brokers serve neither: a partition's
  replicas stay where topic creation (or CreatePartitions) placed them. Kafka's tool prints its failure on stdout
  (``Error: <the exception>``).
* ``kafka-metadata-quorum.sh`` describes (DescribeQuorum, API 55) or changes (AddRaftVoter, RemoveRaftVoter) the
  KRaft controller quorum. kafkalab's cluster is ZooKeeper-based, as Kafka was until 4.0: one controller elected
  through the ``/controller`` znode, no quorum, no metadata log. Kafka's tool prints its failure on stderr.

Nothing is sent: the answer would be the same from every kafkalab broker. Both commands take whatever arguments
Kafka's tools take.

Mirrors the failure paths of ``tools/.../reassign/ReassignPartitionsCommand.java`` and
``tools/.../MetadataQuorumCommand.java`` (Kafka 3.9) against a broker without those APIs.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["add_parsers", "run_reassign_partitions", "run_metadata_quorum"]

_UNSUPPORTED = "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support {}"
REASSIGNMENT_NOT_IMPLEMENTED = ("kafkalab does not implement partition reassignment (AlterPartitionReassignments, "
                                "ListPartitionReassignments): replicas stay on the brokers that topic creation "
                                "placed them on.")
NO_QUORUM = ("kafkalab's cluster is ZooKeeper-based, as Kafka was before 4.0: its controller is elected through "
             "the /controller znode and there is no KRaft metadata quorum to describe or change.")


def add_parsers(sub) -> None:
    p = sub.add_parser("reassign-partitions", help="not implemented: this cluster cannot move replicas "
                                                   "(kafka-reassign-partitions.sh)",
                       description=REASSIGNMENT_NOT_IMPLEMENTED + " The command takes kafka-reassign-partitions.sh's "
                                   "arguments, sends nothing and exits with 1, saying what Kafka's tool says when a "
                                   "broker does not offer the API it needs.")
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="kafka-reassign-partitions.sh's options (ignored)")
    p.set_defaults(run=lambda args: run_reassign_partitions(args.arguments))
    q = sub.add_parser("metadata-quorum", help="not applicable: ZooKeeper-based cluster, no KRaft quorum "
                                               "(kafka-metadata-quorum.sh)",
                       description=NO_QUORUM + " The command takes kafka-metadata-quorum.sh's arguments, sends "
                                   "nothing and exits with 1, saying what Kafka's tool says when a broker does not "
                                   "offer the API it needs.")
    q.add_argument("arguments", nargs=argparse.REMAINDER, help="kafka-metadata-quorum.sh's arguments (ignored)")
    q.set_defaults(run=lambda args: run_metadata_quorum(args.arguments))


def run_reassign_partitions(arguments, *, out=None) -> int:
    out = out or sys.stdout
    api = "LIST_PARTITION_REASSIGNMENTS" if {"--verify", "--list"} & set(arguments) else \
        "ALTER_PARTITION_REASSIGNMENTS"
    print("Error: " + _UNSUPPORTED.format(api), file=out)
    print(REASSIGNMENT_NOT_IMPLEMENTED, file=out)
    return 1


def run_metadata_quorum(arguments, *, err=None) -> int:
    err = err or sys.stderr
    api = {"add-controller": "ADD_RAFT_VOTER", "remove-controller": "REMOVE_RAFT_VOTER"}.get(
        next((a for a in arguments if a in ("describe", "add-controller", "remove-controller")), ""),
        "DESCRIBE_QUORUM")
    print(_UNSUPPORTED.format(api), file=err)
    print(NO_QUORUM, file=err)
    return 1
