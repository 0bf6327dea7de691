"""``kafkalab configs``: kafka-configs.sh's flags and output for SCRAM users, over a SASL connection
(--command-config), and the user it creates logs in."""
from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Producer
from kafkalab.security.jaas import jaas_line
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1, overrides=sasl_plaintext_overrides({})) as c:
        yield c


@pytest.fixture
def command_config(tmp_path):
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    f"sasl.jaas.config={jaas_line('PLAIN', 'admin', 'admin-secret')}\n")
    return str(path)


def configs(cluster, command_config, *args):
    return main(["configs", "--bootstrap-server", cluster.bootstrap_servers, "--command-config", command_config,
                 *args])


def test_add_describe_login_delete(cluster, command_config, capsys):
    assert configs(cluster, command_config, "--alter", "--add-config",
                   "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-512]",
                   "--entity-type", "users", "--entity-name", "alice") == 0
    assert capsys.readouterr().out == "Completed updating config for user alice.\n"
    assert configs(cluster, command_config, "--describe", "--entity-type", "users", "--entity-name", "alice") == 0
    assert capsys.readouterr().out == ("SCRAM credential configs for user-principal 'alice' are "
                                       "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                   "sasl.mechanism": "SCRAM-SHA-256",
                   "sasl.jaas.config": jaas_line("SCRAM-SHA-256", "alice", "alice-secret")}) as p:
        assert p.send("cli-topic", b"hello").result(10).offset == 0
    assert configs(cluster, command_config, "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users",
                   "--entity-name", "alice") == 0
    capsys.readouterr()
    configs(cluster, command_config, "--describe", "--entity-type", "users")
    assert capsys.readouterr().out == ("SCRAM credential configs for user-principal 'alice' are "
                                       "SCRAM-SHA-256=iterations=8192\n")


@pytest.mark.parametrize("add,message", [
    ("SCRAM-SHA-256=[iterations=1000,password=x]", "Iterations 1000 is less than the minimum 4096 required for "
                                                   "SCRAM-SHA-256"),
    ("SCRAM-SHA-256=[iterations=20000,password=x]", "Too many iterations"),
    ("producer_byte_rate=1000", "Unexpected config names: producer_byte_rate"),
])
def test_errors_never_echo_the_password(cluster, command_config, capsys, add, message):
    assert configs(cluster, command_config, "--alter", "--add-config", add, "--entity-type", "users",
                   "--entity-name", "bob") == 1
    err = capsys.readouterr().err
    assert message in err and "password=x" not in err


def test_a_refused_credential_is_printed_as_kafka_does_without_the_password(cluster, command_config, capsys):
    assert configs(cluster, command_config, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=20000,password=x]",
                   "--entity-type", "users", "--entity-name", "carol") == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"Error while executing config command with args '--bootstrap-server "
                      f"{cluster.bootstrap_servers} --command-config {command_config} --alter --add-config "
                      f"SCRAM-SHA-256=[hidden] --entity-type users --entity-name carol'")
    assert err[1].startswith("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                             "UnacceptableCredentialException: ") and "Too many iterations" in err[1]


def test_no_scram_credentials_for_the_default_user(cluster, command_config, capsys):
    assert configs(cluster, command_config, "--alter", "--add-config", "SCRAM-SHA-256=[password=x]",
                   "--entity-type", "users", "--entity-default") == 1
    assert capsys.readouterr().err == ("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                       "Credentials using --bootstrap-server.\n")
