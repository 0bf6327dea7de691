"""Kafka's broker and topic config names (generated from Kafka 3.9's source) against kafkalab's tables, and the
rule built on them: a Kafka key kafkalab does not implement is refused wherever configuration enters the broker
(``server.properties``, ``--override``, ``Cluster(overrides=...)``, ``KafkaServer(...)``, topic configs), while
a key that is not Kafka's at all only gets Kafka's "isn't a known config" warning."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.common.config import ConfigDef, ConfigException
from kafkalab.common.config import Type as T
from kafkalab.common.kafka_config_names import (AUTHORIZER_CONFIG_NAMES, BROKER_CONFIG_NAMES, KAFKA_VERSION,
                                                TOPIC_CONFIG_NAMES)
from kafkalab.server.config import BROKER_CONFIGS, KAFKA_BROKER_KEYS, KafkaConfig, unimplemented_kafka_keys
from kafkalab.storage.errors import InvalidConfigurationError
from kafkalab.storage.log_config import TOPIC_CONFIGS, LogConfig

ROOT = Path(__file__).resolve().parents[2]

#: kafkalab's own broker keys. ``min.incremental.fetch.session.eviction.ms`` is the name KIP-227 proposed;
#: Kafka itself hard-codes that value (120000 ms) and never made it a config.
KAFKALAB_EXTENSIONS = {"min.incremental.fetch.session.eviction.ms"}


def not_kafkas(definitions, kafka_names) -> list[str]:
    return sorted(k for k in definitions if k not in kafka_names and k not in KAFKALAB_EXTENSIONS
                  and not k.startswith("kafkalab."))


# -- the generated names ------------------------------------------------------------------------------------------
def test_every_broker_key_kafkalab_defines_is_kafkas_or_a_listed_extension():
    assert not_kafkas(BROKER_CONFIGS, KAFKA_BROKER_KEYS) == []


def test_every_topic_config_kafkalab_defines_is_kafkas():
    assert not_kafkas(TOPIC_CONFIGS, TOPIC_CONFIG_NAMES) == []


def test_a_misspelt_key_in_a_table_is_caught():
    table = ConfigDef(BROKER_CONFIGS).define("log.retention.hour", T.INT, 1)
    assert not_kafkas(table, KAFKA_BROKER_KEYS) == ["log.retention.hour"]


def test_the_names_are_kafka_39s():
    assert KAFKA_VERSION == "3.9.0"
    # ZooKeeper-mode, KRaft-only, log.* defaults, security, transactions, share groups, dynamic-only, authorizers
    for name in ("zookeeper.connect", "process.roles", "controller.quorum.voters", "log.cleaner.threads",
                 "ssl.keystore.location", "sasl.jaas.config", "transaction.state.log.min.isr",
                 "group.share.enable", "remote.log.storage.system.enable", "leader.replication.throttled.rate"):
        assert name in BROKER_CONFIG_NAMES, name
    assert {"super.users", "authorizer.zookeeper.url"} <= AUTHORIZER_CONFIG_NAMES
    assert {"retention.ms", "remote.storage.enable", "message.timestamp.after.max.ms"} <= TOPIC_CONFIG_NAMES
    assert not any(n.startswith("kafkalab.") for n in KAFKA_BROKER_KEYS | TOPIC_CONFIG_NAMES)
    assert "log.dirz" not in BROKER_CONFIG_NAMES and "segment.bytes" not in BROKER_CONFIG_NAMES


# -- KafkaConfig --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["transaction.partition.verification.enable", "process.roles", "log.cleaner.threads",
                                 "sasl.jaas.config", "authorizer.zookeeper.url", "leader.replication.throttled.rate"])
def test_a_kafka_key_kafkalab_does_not_implement_is_refused(key):
    with pytest.raises(ConfigException, match=rf"^{key} is not implemented by kafkalab\. It is a Kafka broker "
                                              r"configuration: kafkalab refuses"):
        KafkaConfig({key: "1"})


def test_every_refused_key_is_named_in_one_message():
    with pytest.raises(ConfigException) as e:
        KafkaConfig({"log.cleaner.threads": "2", "transaction.partition.verification.enable": "false", "log.dirz": "/x"})
    assert str(e.value).startswith("log.cleaner.threads is not implemented by kafkalab; transaction.partition.verification.enable "
                                   "is not implemented by kafkalab. They are Kafka broker configurations")
    assert "log.dirz" not in str(e.value)


@pytest.mark.parametrize("key, base", [
    ("listener.name.plaintext.num.io.threads", "num.io.threads"),
    ("listener.name.sasl_plaintext.sasl.jaas.config", "sasl.jaas.config"),   # only <mechanism>.sasl.jaas.config
    ("listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class", "sasl.server.callback.handler.class"),
    ("listener.name.ssl.ssl.keystore.certificate.chain.typo", None),
])
def test_per_listener_forms_of_keys_kafkalab_does_not_read_per_listener_are_refused(key, base):
    if base is None:   # not a Kafka key: kept, as before
        assert KafkaConfig({key: "x"}).originals[key] == "x"
        return
    with pytest.raises(ConfigException, match=rf"{key} is not implemented by kafkalab: it does not read {base} "
                                              r"per listener"):
        KafkaConfig({key: "x"})


def test_per_listener_keys_kafkalab_reads_are_accepted():
    props = {"listener.name.plaintext.max.connections": "10",
             "listener.name.plaintext.max.connection.creation.rate": "5",
             "listener.name.plaintext.ssl.client.auth": "required",
             "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.connections.max.reauth.ms": "1000",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x"}
    assert unimplemented_kafka_keys(props) == []
    assert KafkaConfig({"listener.name.plaintext.max.connections": "10"}).unknown == []


def test_keys_that_are_not_kafkas_are_still_only_reported():
    c = KafkaConfig({"log.dirz": "/oops", "metric.reporters.custom": "x"})
    assert c.unknown == ["log.dirz", "metric.reporters.custom"]


def test_an_inert_broker_key_is_accepted_only_at_its_default():
    assert KafkaConfig({"log.preallocate": "false", "log.local.retention.ms": "-2"})["log.preallocate"] is False
    with pytest.raises(ConfigException, match=r"log.preallocate=true is not implemented by kafkalab \(only the "
                                              r"default of log.preallocate is accepted\)"):
        KafkaConfig({"log.preallocate": "true"})


def test_a_properties_file_is_checked_too(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\ntransaction.partition.verification.enable=false\n", encoding="utf-8")
    with pytest.raises(ConfigException, match="transaction.partition.verification.enable is not implemented"):
        KafkaConfig.from_file(path)


# -- where configuration enters -----------------------------------------------------------------------------------
def test_cli_broker_exits_1_naming_the_key(capsys):
    from kafkalab.cli import broker as cli_broker

    args = argparse.Namespace(properties=None, override=["transaction.partition.verification.enable=false"], log_level="CRITICAL")
    assert cli_broker.run(args) == 1
    assert "kafkalab broker: transaction.partition.verification.enable is not implemented by kafkalab" in capsys.readouterr().err


def test_the_broker_command_refuses_before_it_listens(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "kafkalab.cli", "broker", "--override",
                           "transaction.partition.verification.enable=false", "--override", f"log.dirs={tmp_path / 'logs'}",
                           "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert "transaction.partition.verification.enable is not implemented by kafkalab" in done.stderr
    assert not (tmp_path / "logs").exists()


def test_cli_cluster_exits_1_naming_the_key(tmp_path, capsys, monkeypatch):
    import logging
    import signal

    from kafkalab.cli import cluster as cli_cluster

    monkeypatch.setattr(logging, "basicConfig", lambda **kw: None)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}   # run() installs its own
    args = argparse.Namespace(brokers=1, override=["log.cleaner.threads=2"], log_dirs=str(tmp_path), host="127.0.0.1",
                              base_port=0, log_level="CRITICAL")
    try:
        assert cli_cluster.run(args) == 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert "kafkalab cluster: could not start: log.cleaner.threads is not implemented by kafkalab" in \
        capsys.readouterr().err


def test_kafka_server_and_cluster_refuse(tmp_path):
    from kafkalab.cluster import Cluster
    from kafkalab.server import KafkaServer

    with pytest.raises(ConfigException, match="log.cleaner.threads is not implemented by kafkalab"):
        KafkaServer({"log.dirs": str(tmp_path / "a"), "log.cleaner.threads": "2"})
    cluster = Cluster(brokers=1, overrides={"transaction.partition.verification.enable": "true"}, log_dirs=str(tmp_path / "c"))
    with pytest.raises(ConfigException, match="transaction.partition.verification.enable is not implemented by kafkalab"):
        cluster.start()


# -- topic configs ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key, value", [("remote.storage.enable", "true"), ("preallocate", "true"),
                                        ("local.retention.ms", "1000"),
                                        ("leader.replication.throttled.replicas", "0:1")])
def test_an_inert_topic_config_other_than_its_default_is_invalid(key, value):
    with pytest.raises(InvalidConfigurationError, match=rf"{key}=.* is not implemented by kafkalab: only the "
                                                        rf"default of {key} is accepted"):
        LogConfig({key: value})


def test_inert_topic_configs_at_their_default_and_the_ignored_ones_are_accepted():
    c = LogConfig({"remote.storage.enable": "false", "preallocate": "false", "local.retention.ms": "-2",
                   "message.format.version": "2.8", "message.downconversion.enable": "false"})
    assert c["remote.storage.enable"] is False and c["message.format.version"] == "2.8"
