"""Shared pieces of the consumer-group tests against the kafkalab broker (``test_broker_groups_*.py``)."""
from __future__ import annotations

import time

#: Broker overrides for group tests: a short initial rebalance delay keeps each test at a few seconds while
#: still letting consumers started together form one generation; fewer offsets partitions load faster.
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": 300, "offsets.topic.num.partitions": 5}


def values(n: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def produce_round_robin(bootstrap: str, topic: str, partitions: int, vals) -> None:
    import confluent_kafka as ck

    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, v in enumerate(vals):
        p.produce(topic, value=v, partition=i % partitions)
    assert p.flush(15) == 0


def confluent_group_consumer(bootstrap: str, group: str, **conf):
    import confluent_kafka as ck

    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "enable.auto.commit": False,
              "socket.timeout.ms": 5000}
    config.update(conf)
    return ck.Consumer(config)


def poll_until(consumers, condition, timeout: float = 20.0, on_message=None, explain=None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and m.error() is None and on_message is not None:
                on_message(c, m)
        if condition():
            return
    raise AssertionError("condition not met before the deadline" + (f": {explain()}" if explain else ""))
