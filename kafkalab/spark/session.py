"""A SparkSession set up for the labs, with the kafkalab source and sink registered.

Theory of operation
-------------------
``spark_session()`` is ``SparkSession.builder...getOrCreate()`` plus the handful of settings a laptop and a
notebook need (see ``../shared/reference/spark-source.md``):

* **Java.** PySpark drives a JVM; :func:`kafkalab.spark.java.java_home` finds a Java 17/21 (or says what to
  install) and ``JAVA_HOME`` is set before the JVM is launched.
* **The same Python everywhere.** Executors run Python workers of their own; ``PYSPARK_PYTHON`` is set to
  this interpreter (the one with pyarrow and kafkalab installed), and the directory holding the ``kafkalab``
  package is put on ``PYTHONPATH`` so workers can import the source classes even from a source checkout.
* **Small and quiet.** ``local[2]`` (any ``master`` can be given), no web UI, no console progress bars, 2
  shuffle partitions instead of 200, and a log4j2 configuration shipped with this package
  (``log4j2.properties``: errors only) so notebooks show results, not WARN lines.
* **Registered.** ``spark.dataSource.register(KafkalabDataSource)`` makes ``format("kafkalab")`` available
  (Spark reserves ``format("kafka")`` for its own connector; the options and columns are the same).

:func:`register` does only the last step, for a session built elsewhere (e.g. a real cluster: nothing in the
source assumes local mode, as long as executors can import ``kafkalab`` and reach the brokers).
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

__all__ = ["spark_session", "register", "LOG4J2_PROPERTIES", "DEFAULT_CONF"]

LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{LOG4J2_PROPERTIES}",
}


def register(spark) -> None:
    """Register ``format("kafkalab")`` (source and sink) with ``spark``."""
    from kafkalab.spark.source import KafkalabDataSource
    spark.dataSource.register(KafkalabDataSource)


def _prepare_environment() -> None:
    # PySpark 4.3 warns once that it "does not yet fully support pandas >= 3.0.0"; the connector exchanges Arrow
    # batches, not pandas frames, and the labs' small toPandas() calls work: keep notebooks free of the warning.
    warnings.filterwarnings("ignore", message=".*does not yet fully support pandas.*", category=FutureWarning)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    try:
        from kafkalab.spark.java import java_home
    except ImportError:                  # no finder available: spark-submit looks on PATH itself
        return
    home = java_home()                   # raises a clear error saying what to install
    os.environ["JAVA_HOME"] = home


def spark_session(app_name: str = "kafkalab", master: str = "local[2]", **conf: Any):
    """A (new or the active) SparkSession with kafkalab's settings and ``format("kafkalab")`` registered.
    ``conf``: more Spark settings, e.g. ``spark_session(**{"spark.sql.session.timeZone": "UTC"})``."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise ImportError("PySpark is not installed: pip install 'kafkalab[spark]' (Spark also needs Java 17 "
                          "or 21)") from e
    _prepare_environment()
    builder = SparkSession.builder.appName(app_name).master(master)
    settings = dict(DEFAULT_CONF)
    given = {k: str(v) for k, v in conf.items()}
    java_options = given.pop("spark.driver.extraJavaOptions", None)
    if java_options:                     # keep the quiet log4j configuration next to the caller's flags
        settings["spark.driver.extraJavaOptions"] = f"{java_options} {DEFAULT_CONF['spark.driver.extraJavaOptions']}"
    settings.update(given)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
