"""Client configs: Kafka's names, defaults, conversions, cross-checks, and helpful errors for typos."""
import pytest

from kafkalab.clients import Admin, ConfigException, Producer
from kafkalab.clients.config import (ADMIN_CONFIGS, CONSUMER_CONFIGS, PRODUCER_CONFIGS, admin_config,
                                     consumer_config, producer_config)

BS = {"bootstrap.servers": "127.0.0.1:9"}


def test_unknown_key_suggests_the_closest():
    with pytest.raises(ConfigException) as e:
        producer_config({**BS, "lingr.ms": 5})
    assert "Unknown producer configuration 'lingr.ms'" in str(e.value)
    assert "Did you mean 'linger.ms'?" in str(e.value)


def test_unknown_key_without_a_close_match_lists_nothing_silly():
    with pytest.raises(ConfigException) as e:
        admin_config({**BS, "zzzz": 1})
    assert "Unknown admin configuration 'zzzz'." in str(e.value) and "Did you mean" not in str(e.value)


def test_every_unknown_key_is_reported():
    with pytest.raises(ConfigException) as e:
        consumer_config({**BS, "group.idd": "g", "auto.offset.rest": "earliest"})
    msg = str(e.value)
    assert "'group.id'" in msg and "'auto.offset.reset'" in msg


def test_producer_keys_are_not_consumer_keys():
    with pytest.raises(ConfigException, match="Unknown consumer configuration 'acks'"):
        consumer_config({**BS, "acks": "all"})
    with pytest.raises(ConfigException, match="Unknown producer configuration 'group.id'"):
        producer_config({**BS, "group.id": "g"})


def test_defaults_are_the_java_clients():
    cfg = producer_config(BS)
    assert cfg["acks"] == -1 and cfg["enable.idempotence"] is True
    assert cfg["batch.size"] == 16384 and cfg["max.in.flight.requests.per.connection"] == 5
    assert cfg["retries"] == 2**31 - 1 and cfg["retry.backoff.ms"] == 100
    assert cfg["delivery.timeout.ms"] == 120_000 and cfg["request.timeout.ms"] == 30_000
    assert cfg["compression.type"] == "none" and cfg["metadata.max.age.ms"] == 300_000
    assert cfg["client.id"].startswith("producer-")
    c = consumer_config(BS)
    assert c["auto.offset.reset"] == "latest" and c["max.poll.records"] == 500
    assert c["session.timeout.ms"] == 45_000 and c["heartbeat.interval.ms"] == 3_000
    assert c["enable.auto.commit"] is False            # no group.id: nothing to commit to
    assert consumer_config({**BS, "group.id": "g"})["enable.auto.commit"] is True
    assert admin_config(BS)["default.api.timeout.ms"] == 60_000


def test_strings_are_converted_like_java_properties():
    cfg = producer_config({"bootstrap.servers": "a:1, b:2", "linger.ms": "20", "enable.idempotence": "false",
                           "acks": "1"})
    assert cfg["bootstrap.servers"] == ["a:1", "b:2"]
    assert cfg["linger.ms"] == 20 and cfg["enable.idempotence"] is False and cfg["acks"] == 1


@pytest.mark.parametrize("key,value,match", [
    ("linger.ms", -1, "at least 0"),
    ("linger.ms", "soon", "type LONG"),
    ("acks", "2", "one of"),
    ("compression.type", "brotli", "one of"),
    ("max.in.flight.requests.per.connection", 0, "at least 1"),
    ("enable.idempotence", "maybe", "type BOOLEAN"),
])
def test_bad_values(key, value, match):
    with pytest.raises(ConfigException, match=match):
        producer_config({**BS, key: value})


def test_idempotence_conflicts_are_errors_when_asked_for_and_quiet_otherwise():
    with pytest.raises(ConfigException, match="acks to all"):
        producer_config({**BS, "enable.idempotence": True, "acks": 1})
    with pytest.raises(ConfigException, match="at most 5"):
        producer_config({**BS, "enable.idempotence": True, "max.in.flight.requests.per.connection": 6})
    with pytest.raises(ConfigException, match="retries to non-zero"):
        producer_config({**BS, "enable.idempotence": True, "retries": 0})
    assert producer_config({**BS, "acks": "0"})["enable.idempotence"] is False


def test_delivery_timeout_must_cover_linger_and_request_timeout():
    with pytest.raises(ConfigException, match="delivery.timeout.ms"):
        producer_config({**BS, "delivery.timeout.ms": 1000, "request.timeout.ms": 2000})


def test_missing_bootstrap_servers():
    with pytest.raises(ConfigException, match="bootstrap.servers"):
        producer_config({})


def test_clients_reject_before_starting_anything():
    with pytest.raises(ConfigException, match="Did you mean 'batch.size'"):
        Producer({**BS, "batch_size": 10})
    with pytest.raises(ConfigException, match="Did you mean 'request.timeout.ms'"):
        Admin({**BS, "request.timeout": 10})


def test_tables_share_the_common_names():
    for name in ("bootstrap.servers", "client.id", "request.timeout.ms", "reconnect.backoff.ms",
                 "metadata.max.age.ms", "retry.backoff.ms"):
        assert name in PRODUCER_CONFIGS and name in CONSUMER_CONFIGS and name in ADMIN_CONFIGS
