"""The broker's purgatories, seen from the wire: a Fetch waits in the fetch purgatory until data arrives or
``max_wait_ms`` passes, and the purgatory metrics count what happened."""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkalab.network.inter_broker_client import InterBrokerConnection
from kafkalab.protocol import ApiKey, request_class
from kafkalab.cluster.cluster import Cluster

Fetch = request_class(ApiKey.FETCH)


def fetch_body(topic: str, offset: int, max_wait_ms: int) -> object:
    return Fetch(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                 session_id=0, session_epoch=-1, topics=(Fetch.FetchTopic(topic=topic, partitions=(
                     Fetch.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=offset,
                                          log_start_offset=-1, partition_max_bytes=1 << 20),)),),
                 forgotten_topics_data=(), rack_id="")


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides={"auto.create.topics.enable": False}) as c:
        c.create_topic("waiting", 1, 1)
        yield c


async def _fetch(broker, body, version=11):
    ep = broker.bound_endpoints[0]
    conn = InterBrokerConnection(ep.host, ep.port, client_id="purgatory-test")
    try:
        t0 = time.monotonic()
        response = await conn.send(ApiKey.FETCH, version, body)
        return response, time.monotonic() - t0
    finally:
        conn.close()


def test_an_idle_fetch_expires_after_max_wait(cluster):
    broker = cluster.broker(0)
    before = broker.metrics().get("ExpiresPerSec,delayedOperation=Fetch,fetcherType=consumer", 0)
    response, took = cluster.run(_fetch(broker, fetch_body("waiting", 0, 300)))
    assert 0.25 <= took < 3, took
    [part] = response.responses[0].partitions
    assert part.error_code == 0 and not part.records
    assert broker.metrics()["ExpiresPerSec,delayedOperation=Fetch,fetcherType=consumer"] == before + 1


def test_a_waiting_fetch_completes_when_records_arrive(cluster):
    broker = cluster.broker(0)

    async def scenario():
        task = asyncio.ensure_future(_fetch(broker, fetch_body("waiting", 0, 10_000)))
        await asyncio.sleep(0.2)
        assert broker.metrics()["NumDelayedOperations,delayedOperation=Fetch"] >= 1
        from confluent_kafka import Producer  # a real producer, on a thread: it must not block the loop
        loop = asyncio.get_running_loop()

        def send():
            p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1})
            p.produce("waiting", b"wake up", partition=0)
            p.flush(10)
        await loop.run_in_executor(None, send)
        return await task

    response, took = cluster.run(scenario())
    [part] = response.responses[0].partitions
    assert part.records and took < 5, took
    assert broker.metrics()["NumDelayedOperations,delayedOperation=Fetch"] == 0
