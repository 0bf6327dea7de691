"""``kafkalab configs`` for topics and brokers: kafka-configs.sh 3.9's lines, exit codes and errors, golden against
kafkalab (IncrementalAlterConfigs for topics, the deprecated AlterConfigs for brokers, which kafkalab refuses)."""
from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.cli import main
from kafkalab.clients import Admin
from kafkalab.clients.admin import NewTopic
from kafkalab.tools.configs import parse_configs_to_be_added
from kafkalab.tools.configs_resources import IllegalArgument

BROKER_REFUSAL = "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: " \
                 "Cannot update these configs dynamically: Set({})"


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=2) as c:
        with Admin({"bootstrap.servers": c.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("orders", 1, 1), NewTopic("plain", 1, 1)])
        yield c


def names(lines):
    return [line.split("=", 1)[0] for line in lines]


@pytest.fixture
def configs(cluster, capsys):
    def run(*args):
        capsys.readouterr()
        code = main(["configs", "--bootstrap-server", cluster.bootstrap_servers, *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run


def test_alter_then_describe_a_topic(configs):
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config",
                   "cleanup.policy=compact,retention.ms=3600000") == \
        (0, "Completed updating config for topic orders.\n", "")
    assert configs("--describe", "--entity-type", "topics", "--entity-name", "orders") == (0, (
        "Dynamic configs for topic orders are:\n"
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, "
        "DEFAULT_CONFIG:log.retention.hours=168}\n"), "")
    code, out, _ = configs("--describe", "--topic", "orders", "--all")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "All configs for topic orders are:"
    assert names(lines[1:]) == sorted(names(lines[1:]))
    assert "  segment.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.roll.hours=168}" in lines
    assert "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, " \
           "DEFAULT_CONFIG:log.cleanup.policy=delete}" in lines
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "orders", "--delete-config",
                   "retention.ms") == (0, "Completed updating config for topic orders.\n", "")
    assert configs("--describe", "--entity-type", "topics", "--entity-name", "orders")[1] == (
        "Dynamic configs for topic orders are:\n"
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n")


def test_list_values_in_brackets_and_a_config_file(configs, tmp_path):
    path = tmp_path / "topic.properties"
    path.write_text("segment.ms=600000\nretention.ms=1000\n")
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "plain", "--add-config-file", str(path))[0] == 0
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "plain", "--add-config",
                   "cleanup.policy=[compact,delete]", "--delete-config", "retention.ms")[0] == 0
    out = configs("--describe", "--entity-type", "topics", "--entity-name", "plain")[1]
    assert out == ("Dynamic configs for topic plain are:\n"
                   "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
                   "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
                   "  segment.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=600000, "
                   "DEFAULT_CONFIG:log.roll.hours=168}\n")
    assert configs("--alter", "--entity-type", "topics", "--entity-name", "plain", "--delete-config",
                   "cleanup.policy,segment.ms")[0] == 0


def test_describe_every_topic_and_every_broker(configs):
    code, out, _ = configs("--describe", "--entity-type", "topics")
    headings = [line for line in out.splitlines() if not line.startswith("  ")]
    assert code == 0 and {"Dynamic configs for topic orders are:", "Dynamic configs for topic plain are:"} <= \
        set(headings)
    assert configs("--describe", "--entity-type", "brokers") == (0, (
        "Dynamic configs for broker 0 are:\n"
        "Dynamic configs for broker 1 are:\n"
        "Default configs for brokers in the cluster are:\n"), "")
    assert configs("--describe", "--entity-type", "brokers", "--entity-default") == \
        (0, "Default configs for brokers in the cluster are:\n", "")
    code, out, _ = configs("--describe", "--entity-type", "brokers", "--entity-name", "1", "--all")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "All configs for broker 1 are:"
    assert names(lines[1:]) == sorted(names(lines[1:]))
    assert any(line.startswith("  broker.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=1")
               for line in lines)
    assert "  ssl.keystore.password=null sensitive=true synonyms={}" in lines     # a password is never sent


def test_the_broker_refuses_dynamic_broker_configs(cluster, configs):
    bootstrap = cluster.bootstrap_servers
    code, out, err = configs("--alter", "--entity-type", "brokers", "--entity-name", "0", "--add-config",
                             "log.retention.ms=1000,log.cleaner.threads=2")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"Error while executing config command with args '--bootstrap-server {bootstrap} --alter --entity-type "
        f"brokers --entity-name 0 --add-config log.retention.ms=1000,log.cleaner.threads=2'",
        BROKER_REFUSAL.format("log.cleaner.threads, log.retention.ms")]
    code, out, err = configs("--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
                             "ssl.keystore.password=hunter2")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"Error while executing config command with args '--bootstrap-server {bootstrap} --alter --entity-type "
        f"brokers --entity-default --add-config ssl.keystore.password=[hidden]'",
        BROKER_REFUSAL.format("ssl.keystore.password")]
    # nothing was set dynamically, so there is nothing to delete: the tool's own check, before any change
    assert configs("--alter", "--broker", "1", "--delete-config", "log.retention.ms") == \
        (1, "", "Invalid config(s): log.retention.ms\n")


@pytest.mark.parametrize("args,message", [
    (("--alter", "--entity-type", "topics", "--entity-name", "orders", "--delete-config", "segment.ms"),
     "Invalid config(s): segment.ms"),
    (("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config", "a=b=c"),
     'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'),
    (("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config", "bad key=1"),
     "Invalid character found for config key: bad key"),
    (("--alter", "--entity-type", "topics"), "an entity name must be specified with --alter of topics"),
    (("--alter", "--entity-type", "brokers"),
     "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    (("--alter", "--entity-type", "topics", "--entity-name", "orders"),
     "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
    (("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config", "a=1", "--add-config-file",
      "f"), "Only one of --add-config or --add-config-file must be specified"),
    (("--describe", "--entity-type", "brokers", "--entity-name", "one"),
     "The entity name for brokers must be a valid integer broker id, but it is: one"),
    (("--describe", "--entity-type", "groups"),
     "Invalid entity type groups, the entity type must be one of topics, clients, users, brokers, ips, "
     "broker-loggers, client-metrics with a --bootstrap-server or --bootstrap-controller argument"),
    (("--describe",), "At least one entity type must be specified"),
    (("--describe", "--entity-type", "topics", "--entity-type", "topics"), "Duplicate entity type(s) specified: topics"),
    (("--describe", "--entity-type", "topics", "--entity-type", "brokers"),
     "Only 'users' and 'clients' entity types may be specified together"),
    (("--describe", "--entity-name", "orders", "--topic", "orders"),
     "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
    (("--alter", "--entity-type", "users", "--entity-type", "clients", "--entity-name", "u", "--add-config", "a=1"),
     "kafkalab configs does not implement --entity-type clients: kafkalab's broker has no client quotas "
     "(DescribeClientQuotas, AlterClientQuotas)"),
])
def test_argument_errors(configs, args, message):
    assert configs(*args) == (1, "", message + "\n")


@pytest.mark.parametrize("args,message", [
    (("--describe", "--alter", "--entity-type", "topics"), "Command must include exactly one action: --describe, --alter"),
    (("--entity-type", "topics"), "Command must include exactly one action: --describe, --alter"),
    (("--describe", "--entity-type", "topics", "--add-config", "a=1"),
     "Option \"[describe]\" can't be used with option \"[add-config]\""),
])
def test_usage_errors_print_the_usage(configs, args, message):
    code, out, err = configs(*args)
    assert (code, out) == (1, "") and err.splitlines()[0] == message and "usage: kafkalab configs" in err


def test_no_bootstrap_server(capsys):
    assert main(["configs", "--describe", "--entity-type", "topics"]) == 1
    assert capsys.readouterr().err == ("One of the required --bootstrap-server, --boostrap-controller, or --zookeeper "
                                       "arguments must be specified\n")


def test_a_topic_that_does_not_exist(cluster, configs):
    code, out, err = configs("--describe", "--entity-type", "topics", "--entity-name", "missing")
    assert (code, out) == (1, "Dynamic configs for topic missing are:\n")
    assert err.splitlines()[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                   "UnknownTopicOrPartitionException: This server does not host this topic-partition.")
    code, out, err = configs("--alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config",
                             "segment.bytes=1")
    assert (code, out) == (1, "")
    assert err.splitlines()[1] == (
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidConfigurationException: "
        "Invalid config value for resource ConfigResource(type=TOPIC, name='orders'): Invalid value 1 for "
        "configuration segment.bytes: Value must be at least 14")


@pytest.mark.parametrize("text,expected", [
    ("a=1,b=[x,y],c=3", {"a": "1", "b": "x,y", "c": "3"}),
    ("k = v , k2=[v1,v2,v3]", {"k": "v", "k2": "v1,v2,v3"}),
    ("ssl.endpoint.identification.algorithm=", {"ssl.endpoint.identification.algorithm": ""}),
    ("a=1,", {"a": "1"}),                      # Java's split drops a trailing empty item
    ("a=1,a=2", {"a": "2"}),
    ("SCRAM-SHA-256=[iterations=8192,password=p,w]", {"SCRAM-SHA-256": "iterations=8192,password=p,w"}),
])
def test_parse_configs_to_be_added(text, expected):
    assert parse_configs_to_be_added(text) == expected


@pytest.mark.parametrize("text", [",a=1", "a", "a=1,b"])
def test_parse_configs_to_be_added_refuses_items_without_one_equals(text):
    with pytest.raises(IllegalArgument, match="all configs to be added must be in the format"):
        parse_configs_to_be_added(text)


def test_message_format_version_warns(capsys):
    assert parse_configs_to_be_added("message.format.version=2.8") == {"message.format.version": "2.8"}
    assert capsys.readouterr().out.startswith("WARNING: The configuration message.format.version=2.8 is specified. "
                                              "This configuration will be ignored")


@pytest.mark.parametrize("argv,shown", [
    (["--add-config", "SCRAM-SHA-256=[iterations=8192,password=pw],retention.ms=1"],
     "--add-config SCRAM-SHA-256=[hidden],retention.ms=1"),
    (["--add-config=ssl.key.password=pw,a=1"], "--add-config=ssl.key.password=[hidden],a=1"),
    (["--entity-name", "password=x"], "--entity-name password=x"),
])
def test_the_error_line_hides_secrets_only(argv, shown):
    from kafkalab.tools.configs import _printable_args

    assert _printable_args(argv) == shown


class _StubAdmin:
    """A broker with dynamic configs (kafkalab's has none): what the tool sends with AlterConfigs."""

    def __init__(self, entries):
        self.entries, self.sent = entries, None

    def describe_configs(self, resources, include_synonyms=False):
        return {resources[0]: {e.name: e for e in self.entries}}

    def alter_configs(self, configs):
        self.sent = configs


def _entry(name, value, source=2):
    from types import SimpleNamespace

    return SimpleNamespace(name=name, value=value, config_source=source, is_sensitive=value is None, synonyms=())


def test_a_broker_alter_sends_the_whole_new_set():
    from kafkalab.clients.admin import ConfigResource
    from kafkalab.tools.configs_resources import alter_broker

    admin = _StubAdmin([_entry("log.cleaner.threads", "2"), _entry("num.io.threads", "4"),
                        _entry("log.retention.ms", "5", source=4)])       # static: not part of the dynamic set
    alter_broker(admin, "0", {"log.retention.ms": "1000"}, ["num.io.threads"])
    assert admin.sent == {ConfigResource("broker", "0"): {"log.cleaner.threads": "2", "log.retention.ms": "1000"}}


def test_a_broker_alter_needs_every_sensitive_entry_again():
    from kafkalab.tools.configs_resources import InvalidConfiguration, alter_broker

    admin = _StubAdmin([_entry("ssl.key.password", None), _entry("num.io.threads", "4")])
    with pytest.raises(InvalidConfiguration, match=r"^All sensitive broker config entries must be specified for "
                                                   r"--alter, missing entries: Set\(ssl.key.password\)$"):
        alter_broker(admin, "0", {"num.io.threads": "8"}, [])
    alter_broker(admin, "0", {"ssl.key.password": "secret"}, [])
    assert admin.sent is not None
