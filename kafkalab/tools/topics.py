"""``kafkalab topics``: kafka-topics.sh, through the admin protocol.

Theory of operation
-------------------
Kafka's ``kafka-topics.sh`` (``org.apache.kafka.tools.TopicCommand``, 3.9) takes exactly one action and speaks
only the public protocol through the admin client: CreateTopics, Metadata (list and describe), DescribeConfigs
(the ``Configs:`` of a description: every entry whose source is not the default), DescribeTopicPartitions (the
``Elr``/``LastKnownElr`` columns), DescribeCluster (the live brokers of ``--unavailable-partitions``),
CreatePartitions (``--alter --partitions``) and DeleteTopics::

    kafkalab topics --bootstrap-server localhost:9092 --create --topic events --partitions 3 --config retention.ms=1000
    Created topic events.
    kafkalab topics --bootstrap-server localhost:9092 --describe --topic events
    Topic: events	TopicId: ...	PartitionCount: 3	ReplicationFactor: 1	Configs: retention.ms=1000
    	Topic: events	Partition: 0	Leader: 1	Replicas: 1	Isr: 1	Elr: 	LastKnownElr: 
    ...

``--topic`` is a regular expression (a whole-name match, commas meaning "or") except with ``--create``. A
failure prints ``Error while executing topic command : <message>`` on stdout and exits 1, as Kafka's tool does;
a wrong combination of flags prints the reason on stderr and exits 1. Partitions come from Metadata; the eligible
leader replicas only from DescribeTopicPartitions, so against a broker without it ``Elr`` and ``LastKnownElr``
read ``N/A``, as Kafka's tool prints after its admin client fell back to Metadata. ``--command-config`` is a
properties file with the admin client's settings.

Mirrors: ``tools/src/main/java/org/apache/kafka/tools/TopicCommand.java`` (``TopicService``,
``TopicCommandOptions.checkArgs``).
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Optional

from kafkalab.clients import Admin
from kafkalab.clients.admin import AdminError, NewPartitions, NewTopic
from kafkalab.clients.admin_topics import DEFAULT_PARTITION_LIMIT
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException
from kafkalab.protocol.json_converter import uuid_to_string

__all__ = ["add_parser", "run", "main", "check_args", "parse_replica_assignment", "parse_topic_configs",
           "TopicService", "INTERNAL_TOPICS"]

#: Kafka's ``Topic.INTERNAL_TOPICS`` (what ``--exclude-internal`` leaves out)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORTS = ("under_replicated_partitions", "unavailable_partitions", "under_min_isr_partitions",
           "at_min_isr_partitions")
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                     "could collide. To avoid issues it is best to use either, but not both.")
DEFAULT_CONFIG_SOURCE = 5          # DescribeConfigs' ConfigSource.DEFAULT_CONFIG


class UsageError(Exception):
    """A wrong combination of flags (Kafka's ``CommandLineUtils.printUsageAndExit``)."""


class CommandError(Exception):
    """A failure of the command itself (Kafka's IllegalArgumentException / AdminCommandFailedException)."""


def add_parser(sub) -> None:
    p = sub.add_parser("topics", help="kafka-topics.sh: --create/--list/--describe/--alter/--delete topics",
                       description="Create, delete, describe, or change a topic, as kafka-topics.sh does.")
    _add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", help="REQUIRED: The Kafka server to connect to.")
    p.add_argument("--command-config", help="Property file containing configs to be passed to Admin Client.")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topic", help="The topic to create, alter, describe or delete (a regular expression, except "
                                   "for --create).")
    p.add_argument("--topic-id", help="The topic-id to describe.")
    p.add_argument("--config", action="append", default=None, metavar="name=value",
                   help="A topic configuration override for the topic being created.")
    p.add_argument("--delete-config", action="append", default=None, metavar="name")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--replica-assignment", metavar="b1:b2,b3:b4,...")
    for report in REPORTS:
        p.add_argument("--" + report.replace("_", "-"), action="store_true")
    p.add_argument("--topics-with-overrides", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--partition-size-limit-per-response", type=int)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kafka-topics")
    _add_arguments(p)
    return run(p.parse_args(argv))


# -- checkArgs --------------------------------------------------------------------------------------------------
def _given(args, name: str) -> bool:
    value = getattr(args, name)
    return value not in (None, False)


def check_args(args) -> None:
    """Kafka's ``TopicCommandOptions.checkArgs``: one action, the required flags, no flag with the wrong action."""
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = actions[0]
    if not args.bootstrap_server:
        raise CommandError("--bootstrap-server must be specified")
    if action == "describe" and args.if_exists and not args.topic and not args.topic_id:
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if action not in ("list", "describe") and not args.topic:
        raise UsageError('Missing required argument "[topic]"')
    if action == "alter":
        if args.config:
            raise UsageError('Option combination "[bootstrap-server, config]" can\'t be used with option "[alter]" '
                             '(the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)')
        if args.partitions is None:
            raise UsageError('Missing required argument "[partitions]"')
    if args.delete_config:
        raise UsageError('Option "[delete-config]" can\'t be used with option "[bootstrap-server]"')
    allowed = {"config": ("alter", "create"), "partitions": ("alter", "create"),
               "replication_factor": ("create",), "replica_assignment": ("alter", "create"),
               "if_exists": ("alter", "delete", "describe"), "if_not_exists": ("create",),
               "exclude_internal": ("list", "describe"), "topics_with_overrides": ("describe",),
               **{r: ("describe",) for r in REPORTS}}
    for option, actions_allowed in allowed.items():
        if _given(args, option) and action not in actions_allowed:
            raise UsageError(f'Option "[{option.replace("_", "-")}]" can\'t be used with option "[{action}]"')
    if action == "create" and args.replica_assignment and (args.partitions is not None or
                                                           args.replication_factor is not None):
        other = "partitions" if args.partitions is not None else "replication-factor"
        raise UsageError(f'Option "[replica-assignment]" can\'t be used with option "[{other}]"')
    if args.topics_with_overrides and any(getattr(args, r) for r in REPORTS):
        report = next(r for r in REPORTS if getattr(args, r)).replace("_", "-")
        raise UsageError(f'Option "[{report}]" can\'t be used with option "[topics-with-overrides]"')


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``"0:1,1:2"`` -> ``{0: [0, 1], 1: [1, 2]}``, with Kafka's messages for duplicates and uneven lists."""
    out: dict[int, list[int]] = {}
    for i, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise CommandError(f'For input string: "{part}"') from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise CommandError("Partition replica lists may not contain duplicate entries: "
                               + ",".join(map(str, duplicates)))
        out[i] = brokers
        if len(brokers) != len(out[0]):
            raise CommandError(f"Partition {i} has different replication factor: [{', '.join(map(str, brokers))}]")
    return out


def parse_topic_configs(items) -> dict[str, str]:
    pairs = [re.split(r"\s*=\s*", item) for item in items or ()]
    if not all(len(p) == 2 for p in pairs):
        raise CommandError('requirement failed: Invalid topic config: all configs to be added must be in the format '
                           '"key=val".')
    return {k.strip(): v.strip() for k, v in pairs}


# -- running ----------------------------------------------------------------------------------------------------
def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        check_args(args)
    except UsageError as e:
        print(e, file=err)
        print("usage: kafkalab topics --bootstrap-server HOST:PORT (--list|--describe|--create|--alter|--delete) "
              "[--topic T] ...", file=err)
        return 1
    except CommandError as e:
        print(e, file=err)
        return 1
    try:
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        with Admin(config) as admin:
            service = TopicService(admin, out)
            getattr(service, next(a for a in ACTIONS if getattr(args, a)) + "_topic")(args)
        return 0
    except (CommandError, ConfigException, ApiException, OSError) as e:
        print(f"Error while executing topic command : {_message(e)}", file=out)
        return 1


def _message(e: Exception) -> str:
    """The message Kafka's tool prints: the broker's error message of the (single) failed item."""
    if isinstance(e, AdminError):
        return _message(next(iter(e.errors.values())))
    if isinstance(e, ApiException):
        return e.message
    return str(e)


class TopicService:
    """Kafka's ``TopicCommand.TopicService``: one method per action, over an :class:`~kafkalab.clients.Admin`."""

    def __init__(self, admin: Admin, out):
        self.admin, self.out = admin, out

    def _print(self, text: str = "") -> None:
        print(text, file=self.out)

    def get_topics(self, include: Optional[str], exclude_internal: bool) -> list[str]:
        names = sorted(self.admin.list_topics())
        pattern = None
        if include:
            raw = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", include.strip().replace(",", "|")))
            pattern = re.compile(raw)
        return [n for n in names if (pattern is None or pattern.fullmatch(n))
                and not (exclude_internal and n in INTERNAL_TOPICS)]

    @staticmethod
    def _ensure_exists(found, requested: Optional[str], required: bool) -> None:
        if requested and required and not found:
            raise CommandError(f"Topic 'Optional[{requested}]' does not exist as expected")

    # -- actions ------------------------------------------------------------------------------------------------
    def create_topic(self, args) -> None:
        if "." in args.topic or "_" in args.topic:
            self._print(COLLISION_WARNING)
        rf, partitions = args.replication_factor, args.partitions
        if rf is not None and not 1 <= rf <= 0x7FFF:
            raise CommandError("The replication factor must be between 1 and 32767 inclusive")
        if partitions is not None and partitions < 1:
            raise CommandError("The partitions must be greater than 0")
        configs = parse_topic_configs(args.config)
        if args.replica_assignment:
            topic = NewTopic(args.topic, config=configs,
                             replicas_assignments=parse_replica_assignment(args.replica_assignment))
        else:
            topic = NewTopic(args.topic, -1 if partitions is None else partitions, -1 if rf is None else rf, configs)
        try:
            self.admin.create_topics([topic])
        except AdminError as e:
            error = next(iter(e.errors.values()))
            if error.info.name == "TOPIC_ALREADY_EXISTS" and args.if_not_exists:
                return
            raise
        self._print(f"Created topic {args.topic}.")

    def list_topic(self, args) -> None:
        self._print("\n".join(self.get_topics(args.topic, args.exclude_internal)))

    def alter_topic(self, args) -> None:
        topics = self.get_topics(args.topic, args.exclude_internal)
        self._ensure_exists(topics, args.topic, not args.if_exists)
        if not topics:
            return
        if args.replica_assignment:
            raise CommandError("--replica-assignment with --alter is not supported by kafkalab's CreatePartitions "
                               "client; give only --partitions")
        self.admin.create_partitions({t: NewPartitions(args.partitions) for t in topics})

    def delete_topic(self, args) -> None:
        topics = self.get_topics(args.topic, args.exclude_internal)
        self._ensure_exists(topics, args.topic, not args.if_exists)
        if topics:
            self.admin.delete_topics(topics)

    def describe_topic(self, args) -> None:
        if args.topic_id and args.topic_id != "AAAAAAAAAAAAAAAAAAAAAA":
            described = self.admin.describe_topics(self.get_topics(None, args.exclude_internal))
            descriptions = [t for t in described.values() if _topic_id(t) == args.topic_id]
            if not descriptions and not args.if_exists:
                raise CommandError(f"TopicId '{args.topic_id}' does not exist as expected")
        else:
            topics = self.get_topics(args.topic, args.exclude_internal)
            self._ensure_exists(topics, args.topic, not args.if_exists)
            descriptions = list(self.admin.describe_topics(topics).values()) if topics else []
        if not descriptions:
            return
        configs = self.admin.describe_configs([("topic", t.name) for t in descriptions])
        configs = {res.name: entries for res, entries in configs.items()}
        live_brokers = set(self.admin.describe_cluster().brokers)
        elr = self.admin.describe_elr([t.name for t in descriptions],
                                      args.partition_size_limit_per_response or DEFAULT_PARTITION_LIMIT)
        for t in descriptions:
            topic_elr = {} if elr is None or isinstance(elr.get(t.name), Exception) else elr.get(t.name, {})
            self._describe_one(args, t, configs.get(t.name, {}), live_brokers, None if elr is None else topic_elr)

    def _describe_one(self, args, topic, config: dict, live_brokers: set, elr: Optional[dict]) -> None:
        reporting = any(getattr(args, r) for r in REPORTS)
        overridden = [f"{e.name}={e.value}" for e in config.values() if not _is_default(e)]
        partitions = [topic.partitions[p] for p in sorted(topic.partitions)]
        if not reporting and (not args.topics_with_overrides or overridden):
            self._print(f"Topic: {topic.name}" + (f"\tTopicId: {_topic_id(topic)}" if _topic_id(topic) else "")
                        + f"\tPartitionCount: {len(partitions)}\tReplicationFactor: {len(partitions[0].replicas)}"
                        + f"\tConfigs: {','.join(overridden)}")
        if args.topics_with_overrides:
            return
        min_isr = int(config["min.insync.replicas"].value) if "min.insync.replicas" in config else 1
        for p in partitions:
            has_leader = p.leader >= 0
            show = not reporting or any((
                args.under_replicated_partitions and len(p.replicas) > len(p.isr),
                args.unavailable_partitions and (not has_leader or p.leader not in live_brokers),
                args.under_min_isr_partitions and (not has_leader or len(p.isr) < min_isr),
                args.at_min_isr_partitions and len(p.isr) == min_isr))
            if show:
                self._print(f"\tTopic: {topic.name}\tPartition: {p.partition}"
                            f"\tLeader: {p.leader if has_leader else 'none'}"
                            f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
                            + _elr_columns(None if elr is None else elr.get(p.partition, ((), ()))))


def _elr_columns(elr) -> str:
    """``Elr``/``LastKnownElr``: the ids (DescribeTopicPartitions), or ``N/A`` when only Metadata answered."""
    if elr is None:
        return "\tElr: N/A\tLastKnownElr: N/A"
    return f"\tElr: {','.join(map(str, elr[0]))}\tLastKnownElr: {','.join(map(str, elr[1]))}"


def _topic_id(topic) -> str:
    """Kafka's ``Uuid.toString()`` of the topic's id; "" for none (the zero id)."""
    tid = topic.topic_id
    if tid is None or getattr(tid, "int", 1) == 0:
        return ""
    return uuid_to_string(tid) if hasattr(tid, "bytes") else str(tid)


def _is_default(entry) -> bool:
    source = getattr(entry, "config_source", None)
    if source is None or source == -1:
        return bool(getattr(entry, "is_default", False))
    return source == DEFAULT_CONFIG_SOURCE

