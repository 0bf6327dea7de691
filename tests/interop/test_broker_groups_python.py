"""kafka-python and aiokafka consumer groups against the kafkalab broker: subscribe, commit, resume.

kafka-python 3 speaks the newest versions (JoinGroup 7, SyncGroup 5, Heartbeat 4, OffsetFetch 8 with its
groups array, OffsetCommit 8, LeaveGroup 5 with batched members); aiokafka the oldest non-flexible ones
(JoinGroup 5, SyncGroup 3, OffsetCommit/OffsetFetch 3, LeaveGroup 1).
"""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey

from ._broker_support import TIMEOUT_MS, requests, run_async, unique
from ._group_support import GROUP_OVERRIDES, produce_round_robin, values

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES) as c:
        yield c


def kp_consumer(bootstrap, group, topic, client_id):
    from kafka import KafkaConsumer

    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                         auto_offset_reset="earliest", enable_auto_commit=False, request_timeout_ms=TIMEOUT_MS,
                         session_timeout_ms=6000, heartbeat_interval_ms=200, fetch_max_wait_ms=100)


def kp_read(consumer, count, commit=True):
    got = []
    end = time.monotonic() + 20
    while len(got) < count and time.monotonic() < end:
        for _tp, msgs in consumer.poll(timeout_ms=200, max_records=count - len(got)).items():
            got.extend(m.value for m in msgs)
        if commit and got:
            consumer.commit()
    return got


def test_kafka_python_subscribe_commit_resume(cluster):
    topic, group, client_id = unique("kp-grp"), unique("kp"), unique("kp-client")
    cluster.create_topic(topic, 2)
    vals = values(20, "kp")
    produce_round_robin(cluster.bootstrap_servers, topic, 2, vals[:10])
    c1 = kp_consumer(cluster.bootstrap_servers, group, topic, client_id)
    first = kp_read(c1, 10)
    c1.close()
    assert sorted(first) == sorted(vals[:10])
    produce_round_robin(cluster.bootstrap_servers, topic, 2, vals[10:])
    c2 = kp_consumer(cluster.bootstrap_servers, group, topic, client_id)
    second = kp_read(c2, 10)
    c2.close()
    assert sorted(second) == sorted(vals[10:])            # resumed from the commit: nothing twice
    versions = {r.api_name: r.api_version for r in requests(cluster, client_id=client_id)}
    assert versions["JoinGroup"] == 7 and versions["OffsetFetch"] == 8 and versions["OffsetCommit"] == 8
    assert requests(cluster, client_id=client_id, api_key=ApiKey.LEAVE_GROUP)


def test_aiokafka_subscribe_commit_resume(cluster):
    from aiokafka import AIOKafkaConsumer

    topic, group, client_id = unique("aio-grp"), unique("aio"), unique("aio-client")
    cluster.create_topic(topic, 2)
    vals = values(20, "aio")
    produce_round_robin(cluster.bootstrap_servers, topic, 2, vals[:10])

    async def read(count):
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                    client_id=client_id, auto_offset_reset="earliest", enable_auto_commit=False,
                                    request_timeout_ms=TIMEOUT_MS, session_timeout_ms=6000,
                                    heartbeat_interval_ms=200, fetch_max_wait_ms=100)
        await consumer.start()
        got = []
        try:
            loop = asyncio.get_running_loop()
            end = loop.time() + 20
            while len(got) < count and loop.time() < end:
                for _tp, msgs in (await consumer.getmany(timeout_ms=200)).items():
                    got.extend(m.value for m in msgs)
                if got:
                    await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(run_async(read(10))) == sorted(vals[:10])
    produce_round_robin(cluster.bootstrap_servers, topic, 2, vals[10:])
    assert sorted(run_async(read(10))) == sorted(vals[10:])
    versions = {r.api_name: r.api_version for r in requests(cluster, client_id=client_id)}
    assert versions["JoinGroup"] == 5 and versions["SyncGroup"] == 3 and versions["OffsetCommit"] == 3
