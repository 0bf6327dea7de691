"""Fixtures of the Spark tests: one SparkSession for the whole run (the JVM start dominates), skipped cleanly
when PySpark or Java is missing -- unless ``KAFKALAB_REQUIRE_SPARK=1`` (CI with the [spark] extra), then it fails."""
from __future__ import annotations

import os

import pytest


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        return f"PySpark is not installed (pip install '.[spark]'): {e}"
    try:
        from kafkalab.spark.java import java_home
        java_home()
    except ImportError:
        import shutil
        if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
            return "no Java runtime for Spark (install Java 17 or 21)"
    except Exception as e:  # noqa: BLE001 - JavaNotFoundError says what to install
        return str(e)
    return None


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("KAFKALAB_REQUIRE_SPARK") == "1":
        pytest.fail(f"KAFKALAB_REQUIRE_SPARK=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def pyspark_only():
    """For tests that import PySpark but start no JVM."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        _skip_or_fail(f"PySpark is not installed (pip install '.[spark]'): {e}")


@pytest.fixture(scope="session")
def spark():
    reason = _spark_missing()
    if reason:
        _skip_or_fail(reason)
    from kafkalab.spark import spark_session
    session = spark_session("kafkalab-tests")
    yield session
    session.stop()
