"""kafkalab.testing -- run clusters in-process for notebooks and tests (fault injection and the history
checker join in the cluster milestone). Nothing in kafkalab's own rooms imports this package."""
from kafkalab.testing.cluster import Cluster

__all__ = ["Cluster"]
