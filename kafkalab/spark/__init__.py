"""kafkalab.spark -- read and write the lab broker from Spark Structured Streaming (PySpark's Python Data Source API).

Theory of operation
-------------------
Spark's own Kafka connector is a set of jars fetched from Maven; a classroom with only ``pip`` cannot get them.
This package is the same connector written in Python on kafkalab's own clients, so a pipeline reads::

    from kafkalab.spark import spark_session
    spark = spark_session()                                  # local[2], quiet, format("kafkalab") registered
    events = (spark.readStream.format("kafkalab")
              .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", "events").option("startingOffsets", "earliest").load())

and moving to a real cluster means changing ``"kafkalab"`` to ``"kafka"`` and adding the connector package.
Rooms: :mod:`.offsets` (options, offsets, rate limits, data loss -- plain Python, no Spark), :mod:`.source`
(the reader: planner, source runner, executors), :mod:`.sink` (the writer), :mod:`.session` (the
SparkSession), :mod:`.java` (finding Java 17/21).

PySpark is optional (``pip install 'kafkalab[spark]'``): importing this package does not import it;
:func:`spark_session`, :func:`register` and :class:`KafkalabDataSource` do, when used.

Mirrors Spark's ``connector/kafka-0-10-sql`` (``KafkaSourceProvider`` and friends).
"""
from __future__ import annotations

__all__ = ["spark_session", "register", "KafkalabDataSource"]


def spark_session(app_name: str = "kafkalab", master: str = "local[2]", **conf):
    """A local SparkSession with kafkalab's settings and ``format("kafkalab")`` registered (see :mod:`.session`)."""
    from kafkalab.spark.session import spark_session as build
    return build(app_name, master, **conf)


def register(spark) -> None:
    """Register ``format("kafkalab")`` with an existing SparkSession."""
    from kafkalab.spark.session import register as reg
    reg(spark)


def __getattr__(name):
    if name == "KafkalabDataSource":
        from kafkalab.spark.source import KafkalabDataSource
        return KafkalabDataSource
    raise AttributeError(f"module 'kafkalab.spark' has no attribute {name!r}")
