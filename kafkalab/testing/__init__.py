"""kafkalab.testing -- run clusters in-process for notebooks and tests (fault injection and the history
checker join in the cluster milestone). Nothing in kafkalab's own rooms imports this package."""
from kafkalab.testing.cluster import Cluster
from kafkalab.testing.faults import ZK, LinkTable
from kafkalab.testing.history import History, CheckResult

__all__ = ["Cluster", "ZK", "LinkTable", "History", "CheckResult"]
