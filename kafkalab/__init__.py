"""kafkalab -- a notebook-driven lab that teaches how Apache Kafka works, down to the bytes on the wire.

``from kafkalab import Cluster`` starts brokers in-process (see :mod:`kafkalab.cluster.cluster`).
"""
__version__ = "0.1.0"
__all__ = ["Cluster", "__version__"]


def __getattr__(name):
    if name == "Cluster":  # imported lazily: `import kafkalab.protocol` must not start the broker machinery
        from kafkalab.cluster.cluster import Cluster

        return Cluster
    raise AttributeError(f"module 'kafkalab' has no attribute {name!r}")
