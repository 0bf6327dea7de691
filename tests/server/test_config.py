"""KafkaConfig: Kafka's names and defaults, server.properties read as java.util.Properties reads it,
``--override``, the retention synonyms, and start-up validation with Kafka's messages."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafkalab.common.config import ConfigException
from kafkalab.network.endpoint import EndPoint
from kafkalab.server.config import BROKER_CONFIGS, KafkaConfig, load_properties
from kafkalab.storage.log_config import LogConfig


def props_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(text, encoding="utf-8")
    return path


# -- defaults -----------------------------------------------------------------------------------------------------
def test_defaults():
    c = KafkaConfig()
    assert c.broker_id == 0                       # Kafka: -1 (then generated); kafkalab documents 0
    assert c.listeners == [EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    assert c.advertised_listeners == c.listeners
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.log_dirs == [Path("kafka-logs")]
    assert c["num.partitions"] == 1
    assert c["auto.create.topics.enable"] is True
    assert c["default.replication.factor"] == 1
    assert c["min.insync.replicas"] == 1
    assert c["offsets.topic.num.partitions"] == 50
    assert c["offsets.topic.replication.factor"] == 1   # Kafka's sample server.properties value
    assert c["unclean.leader.election.enable"] is False
    assert c["delete.topic.enable"] is True


@pytest.mark.parametrize("name, default", [
    ("num.io.threads", 8), ("num.network.threads", 3), ("queued.max.requests", 500),
    ("socket.request.max.bytes", 104857600), ("connections.max.idle.ms", 600000),
    ("replica.lag.time.max.ms", 30000), ("zookeeper.session.timeout.ms", 18000),
    ("group.initial.rebalance.delay.ms", 3000), ("group.min.session.timeout.ms", 6000),
    ("group.max.session.timeout.ms", 1800000), ("offsets.retention.minutes", 10080),
    ("log.segment.bytes", 1073741824), ("log.retention.hours", 168), ("log.retention.minutes", None),
    ("log.retention.ms", None), ("log.retention.bytes", -1), ("message.max.bytes", 1048588),
    ("log.retention.check.interval.ms", 300000), ("transactional.id.expiration.ms", 604800000),
])
def test_kafkas_defaults(name, default):
    assert KafkaConfig()[name] == default


def test_every_broker_key_has_a_doc_and_a_known_type():
    for key in BROKER_CONFIGS.values():
        assert key.doc and key.type in ("int", "long", "short", "double", "boolean", "string", "list", "password")
        assert key.name == key.name.lower() and " " not in key.name


def test_typed_values_and_originals():
    c = KafkaConfig({"broker.id": "3", "auto.create.topics.enable": "FALSE", "log.dirs": "/a, /b,,",
                     "num.partitions": " 6 "})
    assert (c.broker_id, c["auto.create.topics.enable"], c["num.partitions"]) == (3, False, 6)
    assert c.log_dirs == [Path("/a"), Path("/b")]
    assert c.originals["broker.id"] == "3"
    assert not c.is_default("broker.id") and c.is_default("num.io.threads")
    assert c.get("no.such.key", "fallback") == "fallback"


# -- server.properties --------------------------------------------------------------------------------------------
SAMPLE = r"""# Kafka's sample server.properties, trimmed
############################# Server Basics #############################
broker.id=2
   ! an indented comment with the other marker
listeners = PLAINTEXT://127.0.0.1:9092,\
            SSL://127.0.0.1:9093
num.partitions: 3
log.dirs /tmp/a,/tmp/b
auto.create.topics.enable=false   
empty.value=
flag.without.value
hash.in.value=a#b!c
"""


def test_server_properties_separators_comments_and_continuations(tmp_path):
    props = load_properties(props_file(tmp_path, SAMPLE))
    assert props == {
        "broker.id": "2",
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "num.partitions": "3",
        "log.dirs": "/tmp/a,/tmp/b",
        "auto.create.topics.enable": "false",
        "empty.value": "",
        "flag.without.value": "",
        "hash.in.value": "a#b!c",
    }


@pytest.mark.parametrize("text, expected", [
    (r"log.dirs=C:\\kafka\\logs", {"log.dirs": "C:\\kafka\\logs"}),            # \\ is one backslash
    (r"a=tab\there", {"a": "tab\there"}),
    (r"a=new\nline", {"a": "new\nline"}),
    (r"a=\u0041\u00e9", {"a": "A\u00e9"}),
    (r"a=x\=y\:z", {"a": "x=y:z"}),
    (r"my\ key=v", {"my key": "v"}),                                        # escaped separators in a key
    (r"a\:b\=c=d", {"a:b=c": "d"}),
    (r"a=b\q", {"a": "bq"}),                                                # an unknown escape drops the \
    ("a=ends with two\\\\\nb=next", {"a": "ends with two\\", "b": "next"}),  # even backslashes: no continuation
    ("a=three\\\\\\\n  more", {"a": "three\\more"}),                        # odd: continuation
    ("a=b,\\\n#not a comment", {"a": "b,#not a comment"}),                  # a continued line is never a comment
    ("# comment ending in a backslash \\\na=1", {"a": "1"}),               # a comment does not continue
    ("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}),                    # \r\n, \r and \n all end lines
    ("a=1\na=2", {"a": "2"}),                                               # the last value wins
    ("key = = value", {"key": "= value"}),                                  # one separator only
    ("a=x\\\n\nb=y", {"a": "x", "b": "y"}),                                 # an empty line ends a continuation
])
def test_java_properties_escapes(tmp_path, text, expected):
    assert load_properties(props_file(tmp_path, text)) == expected


def test_malformed_unicode_escape(tmp_path):
    with pytest.raises(ValueError, match=r"Malformed \\uxxxx encoding"):
        load_properties(props_file(tmp_path, r"a=\u00g1"))


def test_from_file_applies_overrides_last(tmp_path):
    path = props_file(tmp_path, "broker.id=1\nnum.partitions=4\n")
    c = KafkaConfig.from_file(path, {"num.partitions": "8", "log.dirs": "/data"})
    assert (c.broker_id, c["num.partitions"], c.log_dirs) == (1, 8, [Path("/data")])


def test_cli_override_parsing():
    from kafkalab.cli.broker import parse_overrides
    assert parse_overrides(["log.dirs=/data", " num.partitions = 3 ", "a=b=c", "empty="]) == \
        {"log.dirs": "/data", "num.partitions": "3", "a": "b=c", "empty": ""}
    for bad in ("no-equals", "=value"):
        with pytest.raises(SystemExit, match="--override expects key=value"):
            parse_overrides([bad])


def test_cli_override_beats_the_file_and_unknown_keys_are_warned_about(tmp_path, monkeypatch, caplog):
    import argparse

    import kafkalab.server
    from kafkalab.cli import broker as cli_broker

    seen = {}

    class FakeServer:
        def __init__(self, config):
            seen["config"] = config

    async def fake_serve(server):
        return 0
    monkeypatch.setattr(kafkalab.server, "KafkaServer", FakeServer)
    monkeypatch.setattr(cli_broker, "_serve", fake_serve)
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: None)
    path = props_file(tmp_path, "broker.id=1\nnum.partitions=4\nlog.dirs=/from/file\nlog.dirz=/typo\n")
    args = argparse.Namespace(properties=str(path), override=["num.partitions=9"], log_level="INFO")
    with caplog.at_level(logging.WARNING, logger="kafkalab.server.KafkaConfig"):
        assert cli_broker.run(args) == 0
    c = seen["config"]
    assert (c.broker_id, c["num.partitions"], c.log_dirs) == (1, 9, [Path("/from/file")])
    assert [r.getMessage() for r in caplog.records] == \
        ["The configuration 'log.dirz' was supplied but isn't a known config."]


def test_cli_reports_an_invalid_value_and_exits_1(tmp_path, capsys):
    import argparse

    from kafkalab.cli import broker as cli_broker
    args = argparse.Namespace(properties=None, override=["num.partitions=many"], log_level="CRITICAL")
    assert cli_broker.run(args) == 1
    assert "Invalid value many for configuration num.partitions: Not a number of type INT" in capsys.readouterr().err


# -- unknown keys -------------------------------------------------------------------------------------------------
def test_unknown_keys_are_accepted_and_kept():
    """Kafka's broker does not reject keys it does not know: they stay in the originals (plugins, metrics
    reporters and per-listener settings read them). kafkalab lists them in ``unknown`` (its CLI warns)."""
    c = KafkaConfig({"log.dirz": "/oops", "metric.reporters.custom": "x", "listener.name.client.ssl.keystore": "k"})
    assert c.unknown == ["log.dirz", "metric.reporters.custom"]    # listener.name.* are per-listener overrides
    assert c["log.dirz"] == "/oops"
    assert c.log_dirs == [Path("kafka-logs")]


# -- retention synonyms -------------------------------------------------------------------------------------------
HOUR, MINUTE = 3_600_000, 60_000


@pytest.mark.parametrize("props, retention_ms", [
    ({}, 168 * HOUR),
    ({"log.retention.hours": "48"}, 48 * HOUR),
    ({"log.retention.hours": "48", "log.retention.minutes": "30"}, 30 * MINUTE),
    ({"log.retention.hours": "48", "log.retention.minutes": "30", "log.retention.ms": "1234"}, 1234),
    ({"log.retention.ms": "-1", "log.retention.hours": "1"}, -1),
    ({"log.retention.minutes": "5"}, 5 * MINUTE),
])
def test_retention_ms_beats_minutes_beats_hours(props, retention_ms):
    config = KafkaConfig(props)
    assert LogConfig.from_broker(config.originals)["retention.ms"] == retention_ms


# -- invalid values -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("props, message", [
    ({"broker.id": "one"}, "Invalid value one for configuration broker.id: Not a number of type INT"),
    ({"connections.max.idle.ms": "1.5"},
     "Invalid value 1.5 for configuration connections.max.idle.ms: Not a number of type LONG"),
    ({"log.retention.hours": "a day"},
     "Invalid value a day for configuration log.retention.hours: Not a number of type INT"),
    ({"auto.create.topics.enable": "yes"},
     "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"broker.id": "-2"}, "Invalid value -2 for configuration broker.id: Value must be at least -1"),
    ({"queued.max.requests": "0"}, "Value must be at least 1"),
    ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "Each listener must have a different name"),
    ({"listeners": "CLIENT://h:1"}, "No security protocol defined for listener CLIENT"),
    # (the inter-broker listener is checked first, as Kafka does: keep PLAINTEXT advertised to reach this rule)
    ({"listeners": "PLAINTEXT://h:1", "advertised.listeners": "PLAINTEXT://h:1,SSL://h:2"},
     "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "cannot use the nonroutable meta-address 0.0.0.0"),
    ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
    ({"inter.broker.listener.name": "BROKER"},
     "Listener with name BROKER defined in inter.broker.listener.name not found in listener.security.protocol.map"),
    ({"security.inter.broker.protocol": "SSL"},
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ({"queued.max.request.bytes": "1000"},
     "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"),
    ({"connections.max.idle.ms": "100"}, "connection.failed.authentication.delay.ms=100 should always be less than "
                                         "connections.max.idle.ms=100"),
    ({"replica.fetch.wait.max.ms": "40000"},
     "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"),
])
def test_invalid_values_stop_the_broker_with_kafkas_message(props, message):
    with pytest.raises(ConfigException) as e:
        KafkaConfig(props)
    assert message in str(e.value)


def test_listeners_with_a_custom_map_and_inter_broker_listener():
    c = KafkaConfig({"listeners": "CLIENT://0.0.0.0:9092,BROKER://127.0.0.1:9093",
                     "advertised.listeners": "CLIENT://kafka.example:9092,BROKER://127.0.0.1:9093",
                     "listener.security.protocol.map": "CLIENT:SASL_SSL,BROKER:PLAINTEXT",
                     "inter.broker.listener.name": "broker", "sasl.enabled.mechanisms": "PLAIN",
                     "listener.name.client.plain.sasl.jaas.config":
                         'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";'})
    assert [(e.listener_name, e.host, e.security_protocol) for e in c.listeners] == \
        [("CLIENT", "0.0.0.0", "SASL_SSL"), ("BROKER", "127.0.0.1", "PLAINTEXT")]
    assert [e.host for e in c.advertised_listeners] == ["kafka.example", "127.0.0.1"]
    assert c.inter_broker_listener_name == "BROKER"


def test_inter_broker_listener_follows_security_inter_broker_protocol():
    c = KafkaConfig({"listeners": "PLAINTEXT://h:1,SSL://h:2", "security.inter.broker.protocol": "SSL"})
    assert c.inter_broker_listener_name == "SSL"


def test_advertised_listeners_may_share_a_port():
    c = KafkaConfig({"listeners": "PLAINTEXT://h:1,SSL://h:2",
                     "advertised.listeners": "PLAINTEXT://lb:9092,SSL://lb:9092"})
    assert [e.port for e in c.advertised_listeners] == [9092, 9092]


# -- control.plane.listener.name (KIP-291) ------------------------------------------------------------------------
CONTROL_PLANE = {"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROL://127.0.0.1:9094",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:SSL",
                 "control.plane.listener.name": "control"}


def test_control_plane_listener_is_a_listener_of_its_own():
    c = KafkaConfig(CONTROL_PLANE)
    assert c.control_plane_listener_name == "CONTROL"          # normalised, as Kafka's ListenerName.normalised
    assert c.control_plane_listener == EndPoint("CONTROL", "127.0.0.1", 9094, "SSL")
    assert [e.listener_name for e in c.data_plane_listeners] == ["PLAINTEXT"]
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.controller_to_broker_listener_name == "CONTROL"
    plain = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    assert plain.control_plane_listener is None and plain.controller_to_broker_listener_name == "PLAINTEXT"
    assert plain.data_plane_listeners == plain.listeners


@pytest.mark.parametrize("props, message", [
    ({"control.plane.listener.name": "PLAINTEXT"},
     "requirement failed: control.plane.listener.name, when defined, should have a different value from the inter "
     "broker listener name. Currently they both have the value PLAINTEXT"),
    ({**CONTROL_PLANE, "control.plane.listener.name": "BROKER"},
     "Listener with BROKER defined in control.plane.listener.name not found in listener.security.protocol.map."),
    ({**CONTROL_PLANE, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:SSL,BROKER:PLAINTEXT",
      "control.plane.listener.name": "BROKER"},
     "requirement failed: control.plane.listener.name must be a listener name defined in advertised.listeners. The "
     "valid options based on currently configured listeners are PLAINTEXT,CONTROL"),
    ({**CONTROL_PLANE, "advertised.listeners": "PLAINTEXT://127.0.0.1:9092"},
     "requirement failed: control.plane.listener.name must be a listener name defined in advertised.listeners. The "
     "valid options based on currently configured listeners are PLAINTEXT"),
    ({**CONTROL_PLANE, "inter.broker.listener.name": "CONTROL"},
     "requirement failed: control.plane.listener.name, when defined, should have a different value from the inter "
     "broker listener name. Currently they both have the value CONTROL"),
])
def test_control_plane_listener_rules_with_kafkas_messages(props, message):
    with pytest.raises(ConfigException) as e:
        KafkaConfig(props)
    assert str(e.value) == message


# -- the inter-broker listener: inter.broker.listener.name or security.inter.broker.protocol ----------------------
def test_security_inter_broker_protocol_picks_the_listener_named_like_the_protocol():
    # Kafka's ListenerName.forSecurityProtocol: the listener *named* SASL_PLAINTEXT, not any listener using it.
    c = KafkaConfig({"listeners": "CLIENT://h:1,SASL_PLAINTEXT://h:2,INTERNAL://h:3",
                     "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                                       "INTERNAL:SASL_PLAINTEXT",
                     "security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
                     "sasl.mechanism.inter.broker.protocol": "PLAIN",
                     **{f"listener.name.{n}.plain.sasl.jaas.config":
                        'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
                        for n in ("client", "sasl_plaintext", "internal")}})
    assert c.inter_broker_listener_name == "SASL_PLAINTEXT"


def test_security_inter_broker_protocol_without_a_listener_of_that_name_is_refused():
    # Two listeners use SASL_PLAINTEXT, none is named so: Kafka refuses rather than picking one.
    with pytest.raises(ConfigException) as e:
        KafkaConfig({"listeners": "CLIENT://h:1,INTERNAL://h:2",
                     "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
                     "security.inter.broker.protocol": "SASL_PLAINTEXT"})
    assert str(e.value) == ("requirement failed: inter.broker.listener.name must be a listener name defined in "
                            "advertised.listeners. The valid options based on currently configured listeners are "
                            "CLIENT,INTERNAL")


def test_both_inter_broker_keys_are_refused_and_neither_means_plaintext():
    with pytest.raises(ConfigException) as e:
        KafkaConfig({"listeners": "PLAINTEXT://h:1,SSL://h:2", "inter.broker.listener.name": "SSL",
                     "security.inter.broker.protocol": "SSL"})
    assert str(e.value) == "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
    c = KafkaConfig({"listeners": "SSL://h:2,PLAINTEXT://h:1"})
    assert c.inter_broker_listener_name == "PLAINTEXT"
    with pytest.raises(ConfigException) as e:       # neither, and no PLAINTEXT listener
        KafkaConfig({"listeners": "SSL://h:2"})
    assert str(e.value) == ("requirement failed: inter.broker.listener.name must be a listener name defined in "
                            "advertised.listeners. The valid options based on currently configured listeners are SSL")


def test_security_inter_broker_protocol_takes_only_kafkas_protocol_names():
    with pytest.raises(ConfigException) as e:
        KafkaConfig({"listeners": "SSL://h:2", "security.inter.broker.protocol": "ssl"})
    assert str(e.value) == ("Invalid value ssl for configuration security.inter.broker.protocol: String must be one "
                            "of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")


