"""Lab 09's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". Fast: no broker (the notebook itself runs the cluster scenarios under nbval)."""
from __future__ import annotations

from types import SimpleNamespace as NS

from kafkalab.labs import lab09
from kafkalab.protocol import ApiKey

ZNODES = {"/brokers/ids/1": {}, "/brokers/ids/3": {}, "/brokers/topics/t": {"partitions": {"0": [1, 2, 3]}},
          "/controller": {"version": 2, "brokerid": 3}, "/controller_epoch": 5}
STATES = {0: {"replicas": [3, 1, 2], "leader": 3, "isr": [3, 1, 2]},
          1: {"replicas": [1, 2, 3], "leader": 1, "isr": [1, 3]},
          2: {"replicas": [2, 3, 1], "leader": 3, "isr": [3, 1]}}


def test_read_zk_and_expected_failover():
    assert lab09.read_zk(ZNODES) == {"controller": 3, "controller_epoch": 5, "live_brokers": [1, 3]}
    assert lab09.read_zk({}) == {"controller": -1, "controller_epoch": 0, "live_brokers": []}
    assert lab09.expected_failover(STATES, 3) == {0: (1, [1, 2]), 1: (1, [1]), 2: (1, [1])}
    assert lab09.expected_failover(STATES, 2) == {0: (3, [3, 1]), 1: (1, [1, 3]), 2: (3, [3, 1])}


def test_body_rows_keep_stable_fields_only():
    ps = NS(partition_index=0, leader=1, leader_epoch=2, isr=(1, 0), controller_epoch=3)
    lai = NS(topic_states=(NS(topic_name="orders", partition_states=(ps,)),))
    um = NS(topic_states=lai.topic_states, live_brokers=(NS(id=1), NS(id=0)))
    rows = lab09.body_rows([(0, 1, ApiKey.UPDATE_METADATA, 7, um), (0, 1, ApiKey.LEADER_AND_ISR, 6, lai),
                            (0, 1, ApiKey.STOP_REPLICA, 3, None)])
    assert [r["request"] for r in rows] == ["LeaderAndIsr v6", "UpdateMetadata v7"]
    assert rows[1] == {"to": "broker 1", "request": "UpdateMetadata v7", "partition": "orders-0", "leader": 1,
                       "leader_epoch": 2, "isr": [1, 0], "controller_epoch": 3, "live_brokers": "[0, 1]"}


def test_stable_znode_data():
    assert lab09._stable("/controller", '{"version":2,"brokerid":4,"timestamp":"17"}', "t") == "brokerid 4"
    text = lab09._stable("/brokers/ids/0", '{"endpoints":["PLAINTEXT://h:1234"],"host":"h","port":1234}', "t")
    assert "1234" not in text and "PLAINTEXT" in text
    text = lab09._stable("/brokers/topics/t", '{"partitions":{"0":[1]},"topic_id":"XYZ"}', "t")
    assert "XYZ" not in text


def test_check_zk_reading():
    assert lab09.check_zk_reading({"controller": 3, "controller_epoch": 5, "live_brokers": [3, 1]}, ZNODES).passed
    assert lab09.check_zk_reading(..., ZNODES).status == "todo"
    wrong = lab09.check_zk_reading({"controller": 3, "controller_epoch": 5, "live_brokers": [1, 2, 3]}, ZNODES)
    assert not wrong.passed and "ephemeral" in [p for p in wrong.parts if p.label == "live_brokers"][0].note
    assert lab09.check_zk_reading({"controller": 3, "controller_epoch": 6, "live_brokers": [1, 3]},
                                  {**ZNODES, "/controller_epoch": 6}).passed            # follows the data


def test_check_failover():
    right = {0: (1, [1, 2]), 1: (1, [1]), 2: (1, [1])}
    assert lab09.check_failover(right, STATES, 3).passed
    assert lab09.check_failover({p: list(v) for p, v in right.items()}, STATES, 3).passed
    assert lab09.check_failover(..., STATES, 3).status == "todo"
    not_in_isr = lab09.check_failover({**right, 2: (2, [1])}, STATES, 3)
    assert not not_in_isr.passed and "ISR only" in [p for p in not_in_isr.parts if p.label == "partition 2"][0].note
    kept_dead = lab09.check_failover({**right, 1: (1, [1, 3])}, STATES, 3)
    assert "dead broker" in [p for p in kept_dead.parts if p.label == "partition 1"][0].note


def test_check_stale_requests():
    reqs = {"a": 7, "b": 8, "c": 9}
    assert lab09.check_stale_requests({"a"}, reqs, 8).passed
    assert lab09.check_stale_requests(["a"], reqs, 8).passed
    assert lab09.check_stale_requests(..., reqs, 8).status == "todo"
    assert "current epoch" in lab09.check_stale_requests({"a", "b"}, reqs, 8).hint
    assert "missing" in lab09.check_stale_requests(set(), reqs, 8).hint
    assert lab09.check_stale_requests(set(), reqs, 7).passed                          # follows the data
