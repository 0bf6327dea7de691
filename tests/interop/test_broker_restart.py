"""Restart: produce, stop the broker cleanly, start it again on the same port and log directories, read back.

A clean shutdown flushes every log and checkpoints the recovery points and high watermarks, so the restarted
broker loads its logs without recovering them; auto-created topics live in the coordination store and come
back with their partitions. Clients keep their bootstrap address (the broker gets its old port back) and the
offsets continue where they stopped.
"""
from __future__ import annotations

import logging

import pytest

from kafkalab import Cluster

from ._broker_support import (assert_same_records, confluent_consume, confluent_produce, kafka_python_consume,
                              kafka_python_produce, sample_records, stored_records)

pytestmark = [pytest.mark.interop,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")]


def test_clean_restart_keeps_records_and_auto_created_topics(caplog):
    with Cluster(brokers=1, overrides={"num.partitions": 2}) as cluster:
        bs = cluster.bootstrap_servers
        # both topics are created by the broker when the producers first ask for their metadata
        first = sample_records("before-ck")
        second = sample_records("before-kp")
        confluent_produce(bs, "auto-created-ck", first)
        kafka_python_produce(bs, "auto-created-kp", second)
        cache = cluster.broker(0).metadata_cache
        assert cache.partition_count("auto-created-ck") == cache.partition_count("auto-created-kp") == 2

        caplog.clear()
        with caplog.at_level(logging.INFO, logger="kafkalab"):
            cluster.restart(0)
        assert cluster.bootstrap_servers == bs
        messages = [r.getMessage() for r in caplog.records]
        assert any(m.startswith("Loading (clean shutdown)") for m in messages), messages
        recovery = [m for m in messages if "no clean shutdown" in m or "unclean" in m]
        assert not recovery, f"a clean shutdown must not need recovery: {recovery}"

        cache = cluster.broker(0).metadata_cache
        cluster.wait_until(lambda: all(cache.contains_topic(t) for t in ("auto-created-ck", "auto-created-kp")), 10)
        assert cache.partition_count("auto-created-ck") == cache.partition_count("auto-created-kp") == 2

        assert_same_records(confluent_consume(bs, "auto-created-ck", [0, 1], len(first)), first, "ck after restart")
        assert_same_records(kafka_python_consume(bs, "auto-created-kp", [0, 1], len(second)), second,
                            "kafka-python after restart")
        assert_same_records(kafka_python_consume(bs, "auto-created-ck", [0, 1], len(first)), first,
                            "kafka-python reads confluent-kafka's records after restart")

        # writing goes on at the next offsets; a new idempotent producer gets a fresh producer id
        more = sample_records("after")
        offsets = confluent_produce(bs, "auto-created-ck", more)
        for p in (0, 1):
            assert [o for q, o in offsets if q == p] == list(range(6, 12))
        everything = first + more
        assert_same_records(confluent_consume(bs, "auto-created-ck", [0, 1], len(everything)), everything,
                            "before and after the restart")
        assert_same_records(stored_records(cluster, "auto-created-ck", (0, 1)), everything, "stored log")
