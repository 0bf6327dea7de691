"""confluent-kafka (librdkafka) consumer groups against the kafkalab broker.

Three consumers subscribe to a six-partition topic: the group's leader (a librdkafka client) computes the
assignment, the broker relays it; every partition ends up with exactly one member. When one member leaves,
its partitions move to the others. Committed offsets let a new member continue where the group stopped:
committed after processing, nothing is lost and nothing read twice (at-least-once without a crash is exactly
once); committed *before* processing, a crash loses what was not processed (at-most-once).
"""
from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.protocol import ApiKey

from ._broker_support import requests, unique
from ._group_support import GROUP_OVERRIDES, confluent_group_consumer, poll_until, produce_round_robin, values

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES) as c:
        yield c


def assigned(consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_three_members_share_six_partitions_and_partitions_move_on_leave(cluster):
    topic, group = unique("grp-topic"), unique("grp")
    cluster.create_topic(topic, 6)
    consumers = [confluent_group_consumer(cluster.bootstrap_servers, group, **{"client.id": f"member-{i}"})
                 for i in range(3)]
    try:
        for c in consumers:
            c.subscribe([topic])
        gc = cluster.broker(0).group_coordinator

        def explain():
            events = cluster.call(lambda: [e for e in gc.events if e[1] == group])
            return f"assignments {[assigned(c) for c in consumers]}, events {events}"
        poll_until(consumers, lambda: sum(len(assigned(c)) for c in consumers) == 6 and
                   all(assigned(c) for c in consumers), explain=explain)
        owned = [assigned(c) for c in consumers]
        assert sorted(p for o in owned for p in o) == list(range(6)), owned   # each partition exactly once
        assert all(len(o) == 2 for o in owned)
        leaving, stay = consumers[0], consumers[1:]
        leaving.close()
        consumers = stay
        poll_until(stay, lambda: sorted(p for c in stay for p in assigned(c)) == list(range(6)))
        assert not (assigned(stay[0]) & assigned(stay[1]))
        assert any(r.api_key == ApiKey.LEAVE_GROUP for r in requests(cluster, api_key=ApiKey.LEAVE_GROUP))
        describe = cluster.call(cluster.broker(0).group_coordinator.handle_describe_group, group)[1]
        assert describe.state == "Stable" and len(describe.members) == 2
    finally:
        for c in consumers:
            c.close()


def test_committed_offsets_resume_without_loss_or_duplicates(cluster):
    """at-least-once: commit after processing. A member processes part of the records, commits, stops; a
    new member of the same group continues from the committed offsets: every record is read exactly once."""
    topic, group = unique("resume"), unique("resume-grp")
    cluster.create_topic(topic, 3)
    vals = values(60, "r")
    produce_round_robin(cluster.bootstrap_servers, topic, 3, vals)
    first_seen: list = []
    c1 = confluent_group_consumer(cluster.bootstrap_servers, group)
    c1.subscribe([topic])

    def process(c, m):
        if len(first_seen) < 25:
            first_seen.append(m.value())
            c.commit(message=m, asynchronous=False)           # commit after processing
    poll_until([c1], lambda: len(first_seen) >= 25, on_message=process)
    c1.close()
    second_seen: list = []
    c2 = confluent_group_consumer(cluster.bootstrap_servers, group)
    c2.subscribe([topic])
    try:
        poll_until([c2], lambda: len(first_seen) + len(second_seen) >= 60,
                   on_message=lambda c, m: second_seen.append(m.value()))
    finally:
        c2.close()
    assert sorted(first_seen + second_seen) == sorted(vals)   # none lost, none twice
    assert not set(first_seen) & set(second_seen)


def test_commit_before_processing_is_at_most_once(cluster):
    """Commit first, then "crash" before processing: the record is never processed by anyone."""
    topic, group = unique("amo"), unique("amo-grp")
    cluster.create_topic(topic, 1)
    vals = values(10, "a")
    produce_round_robin(cluster.bootstrap_servers, topic, 1, vals)
    c1 = confluent_group_consumer(cluster.bootstrap_servers, group)
    c1.subscribe([topic])
    processed, crashed = [], []

    def handle(c, m):
        if crashed:
            return
        c.commit(message=m, asynchronous=False)              # commit before processing
        if m.offset() == 4:
            crashed.append(m.value())                        # the process dies here: record 4 never processed
            return
        processed.append(m.value())
    poll_until([c1], lambda: bool(crashed), on_message=handle)
    c1.close()
    c2 = confluent_group_consumer(cluster.bootstrap_servers, group)
    c2.subscribe([topic])
    try:
        poll_until([c2], lambda: len(processed) >= 9, on_message=lambda c, m: processed.append(m.value()))
    finally:
        c2.close()
    assert crashed == [b"a-4"] and b"a-4" not in processed and len(processed) == 9


def test_group_state_survives_a_broker_restart(tmp_path):
    topic, group = "restart-topic", "restart-group"
    with Cluster(brokers=1, overrides=GROUP_OVERRIDES, log_dirs=str(tmp_path)) as c:
        c.create_topic(topic, 2)
        produce_round_robin(c.bootstrap_servers, topic, 2, values(10, "x"))
        consumer = confluent_group_consumer(c.bootstrap_servers, group)
        consumer.subscribe([topic])
        seen: list = []

        def process(cons, m):
            seen.append(m.value())
            cons.commit(message=m, asynchronous=False)
        poll_until([consumer], lambda: len(seen) >= 10, on_message=process)
        consumer.close()
        gc = c.broker(0).group_coordinator
        before = c.call(gc.handle_fetch_offsets, group)[1]
        assert {tp: om.offset for tp, om in before.items()} == {(topic, 0): 5, (topic, 1): 5}
        c.restart(0)
        c.wait_until(lambda: c.broker(0).group_coordinator.manager.get_group(group) is not None, 10,
                     "group not reloaded")
        after = c.call(c.broker(0).group_coordinator.handle_fetch_offsets, group)[1]
        assert {tp: om.offset for tp, om in after.items()} == {(topic, 0): 5, (topic, 1): 5}
        group_state = c.call(c.broker(0).group_coordinator.handle_describe_group, group)[1]
        assert group_state.state == "Empty" and group_state.protocol_type == "consumer"
        produce_round_robin(c.bootstrap_servers, topic, 2, [b"after-0", b"after-1"])
        consumer = confluent_group_consumer(c.bootstrap_servers, group)
        consumer.subscribe([topic])
        later: list = []
        try:
            poll_until([consumer], lambda: len(later) >= 2, on_message=lambda cons, m: later.append(m.value()))
        finally:
            consumer.close()
        assert sorted(later) == [b"after-0", b"after-1"]
