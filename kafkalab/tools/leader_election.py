"""``kafkalab leader-election``: Kafka's ``kafka-leader-election.sh`` (LeaderElectionCommand).

Theory of operation
-------------------
One ElectLeaders request through the admin client (:meth:`kafkalab.clients.Admin.elect_leaders`), for one
partition, the partitions of a JSON file, or every partition, then one line per kind of outcome::

    kafkalab leader-election --bootstrap-server localhost:9092 --election-type preferred --all-topic-partitions
    Successfully completed leader election (PREFERRED) for partitions orders-0, orders-2
    kafkalab leader-election --bootstrap-server localhost:9092 --election-type PREFERRED --topic orders --partition 1
    Valid replica already elected for partitions orders-1

``--election-type`` is ``preferred`` or ``unclean`` in any case; exactly one of ``--topic`` (with
``--partition``), ``--path-to-json-file`` (``{"partitions": [{"topic": "orders", "partition": 1}]}``) and
``--all-topic-partitions`` says which partitions. A partition that could not be elected prints ``Error completing
leader election (UNCLEAN) for partition: orders-0: <Java exception>: <message>``, and the tool then fails with
``N replica(s) could not be elected`` on stderr and exit status 1. Wrong options, a bad JSON file, a timeout
("Timeout waiting for election results") or a refusal ("Not authorized to perform leader election") also exit 1
with Kafka's message on stderr (Kafka adds a Java stack trace, which has no equivalent here); no option at all
prints the tool's purpose and its options.

Kafka prints the partitions of each line from a ``java.util.HashSet``, so in hash-table order, not sorted: the
order here is the same (:func:`kafkalab.tools.log_dirs.java_hash_map_order` with ``TopicPartition.hashCode``).

Mirrors ``tools/src/main/java/org/apache/kafka/tools/LeaderElectionCommand.java`` (Kafka 3.9).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Optional

from kafkalab.clients import Admin
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.clients.errors import KafkaTimeoutError
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException, ErrorCode, java_exception_class
from kafkalab.protocol.election_type import ElectionType
from kafkalab.tools.log_dirs import java_hash_map_order, java_string_hash

__all__ = ["add_parser", "run", "parse_replica_election_data", "java_exception", "PURPOSE"]

PURPOSE = ("This tool attempts to elect a new leader for a set of topic partitions. The type of elections "
           "supported are preferred replicas and unclean replicas.")
#: the three ways to name partitions, as Kafka's messages name the options
SELECTIONS = ("topic", "all-topic-partitions", "path-to-json-file")
#: what the tool sets on its admin client unless the --admin.config file does (its 30 s ``timeoutMs``)
ADMIN_DEFAULTS = {"default.api.timeout.ms": 30000, "request.timeout.ms": 15000}


class CommandFailed(Exception):
    """Printed on stderr, exit status 1 (Kafka's ``AdminCommandFailedException``, ``AdminOperationException``)."""


def add_parser(sub) -> None:
    p = sub.add_parser("leader-election", help="elect preferred or unclean leaders (kafka-leader-election.sh)",
                       description=PURPOSE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", metavar="host:port",
                   help="A hostname and port for the broker to connect to, in the form host:port. Multiple comma "
                        "separated URLs can be given. REQUIRED.")
    p.add_argument("--admin.config", dest="admin_config", metavar="config file",
                   help="Configuration properties files to pass to the admin client")
    p.add_argument("--path-to-json-file", metavar="Path to JSON file",
                   help='The JSON file with the list of partitions for which leader elections should be performed, '
                        'e.g. {"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": '
                        '2}]}. Not allowed if --all-topic-partitions or --topic flags are specified.')
    p.add_argument("--topic", metavar="topic name",
                   help="Name of topic for which to perform an election. Not allowed if --path-to-json-file or "
                        "--all-topic-partitions is specified.")
    p.add_argument("--partition", metavar="partition id",
                   help="Partition id for which to perform an election. REQUIRED if --topic is specified.")
    p.add_argument("--all-topic-partitions", action="store_true",
                   help="Perform election on all of the eligible topic partitions based on the type of election "
                        "(see the --election-type flag). Not allowed if --topic or --path-to-json-file is specified.")
    p.add_argument("--election-type", metavar="election type",
                   help='Type of election to attempt. Possible values are "preferred" for preferred leader election '
                        'or "unclean" for unclean leader election. If preferred election is selection, the election '
                        'is only performed if the current leader is not the preferred leader for the topic '
                        'partition. If unclean election is selected, the election is only performed if there are no '
                        'leader for the topic partition. REQUIRED.')
    p.set_defaults(run=lambda args: run(args, usage=p.format_usage))


# -- the options ------------------------------------------------------------------------------------------------
def _validate(args) -> None:
    """``LeaderElectionCommandOptions.validate``: Kafka's checks, in its order and words."""
    missing = [name for name, value in (("bootstrap-server", args.bootstrap_server),
                                        ("election-type", args.election_type)) if value is None]
    if missing:
        raise CommandFailed("Missing required option(s): " + ", ".join(missing))
    given = [args.topic is not None, args.all_topic_partitions, args.path_to_json_file is not None]
    if sum(given) != 1:
        raise CommandFailed("One and only one of the following options is required: " + ", ".join(SELECTIONS))
    if args.topic is not None and args.partition is None:
        raise CommandFailed("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise CommandFailed("Option partition is only allowed if topic is used")


def _converted(value: str, option: str, convert):
    """An option's value as joptsimple converts it, with its message when it cannot."""
    try:
        return convert(value)
    except ValueError:
        raise CommandFailed(f"Cannot parse argument '{value}' of option {option}") from None


# -- the JSON file ----------------------------------------------------------------------------------------------
def _json_text(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _mapping_error(message: str) -> CommandFailed:
    return CommandFailed(f"com.fasterxml.jackson.databind.JsonMappingException: {message}")


def parse_replica_election_data(text: str) -> list[TopicPartition]:
    """``parseReplicaElectionData``: the partitions of the file, each once; CommandFailed with Kafka's message."""
    try:
        js = json.loads(text)
    except ValueError:
        raise CommandFailed("Replica election data is empty") from None
    if not isinstance(js, dict):
        raise _mapping_error(f"Expected JSON object, received {_json_text(js)}")
    if "partitions" not in js:
        raise CommandFailed('Replica election data is missing "partitions" field')
    entries = js["partitions"]
    if not isinstance(entries, list):
        raise _mapping_error(f"Expected JSON array, received {_json_text(entries)}")
    partitions = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise _mapping_error(f"Expected JSON object, received {_json_text(entry)}")
        for field in ("topic", "partition"):
            if field not in entry:
                raise _mapping_error(f"No such field exists: `{field}`")
        topic, partition = entry["topic"], entry["partition"]
        if not isinstance(topic, str):
            raise _mapping_error(f"Expected `String` value, received {_json_text(topic)}")
        if type(partition) is not int or not -2**31 <= partition < 2**31:
            raise _mapping_error(f"Expected `Integer` value, received {_json_text(partition)}")
        partitions.append(TopicPartition(topic, partition))
    duplicates = [tp for tp in dict.fromkeys(partitions) if partitions.count(tp) > 1]
    if duplicates:
        names = ", ".join(_tp(tp) for tp in java_order(duplicates))
        raise CommandFailed(f"Replica election data contains duplicate partitions: [{names}]")
    return list(dict.fromkeys(partitions))


# -- printing like Java -----------------------------------------------------------------------------------------
def _tp(tp) -> str:
    return f"{tp[0]}-{tp[1]}"


def _tp_hash(tp) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode(), as a signed 32-bit int."""
    h = (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_order(partitions) -> list:
    """The order a ``HashSet<TopicPartition>`` filled with ``partitions`` iterates them."""
    return java_hash_map_order(list(partitions), _tp_hash)


def java_exception(error: ApiException) -> str:
    """``Throwable.toString()`` of the exception Kafka's client makes of an error code and message."""
    return f"{java_exception_class(error.error_code)}: {error.message}"


# -- running ----------------------------------------------------------------------------------------------------
def _partitions(args) -> Optional[list]:
    if args.path_to_json_file is not None:
        try:
            with open(args.path_to_json_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise CommandFailed(f"java.nio.file.NoSuchFileException: {e.filename}") from None
        return parse_replica_election_data(text)
    if args.topic is not None:
        return [TopicPartition(args.topic, _converted(args.partition, "partition", int))]
    return None


def _elect(admin, election_type: ElectionType, partitions, out) -> None:
    """``LeaderElectionCommand.electLeaders``: the request, then one line per kind of outcome."""
    try:
        results = admin.elect_leaders(election_type, partitions)
    except KafkaTimeoutError:
        print("Timeout waiting for election results", file=out)
        raise CommandFailed("Timeout waiting for election results") from None
    except ApiException as e:
        if e.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            print("Not authorized to perform leader election", file=out)
            raise CommandFailed("Not authorized to perform leader election") from None
        if e.error_code == ErrorCode.REQUEST_TIMED_OUT:
            print("Timeout waiting for election results", file=out)
            raise CommandFailed("Timeout waiting for election results") from None
        raise CommandFailed(f"java.util.concurrent.ExecutionException: {java_exception(e)}") from None
    ordered = java_order(results)
    succeeded = [tp for tp in ordered if results[tp] is None]
    noop = [tp for tp in ordered if results[tp] is not None and results[tp].error_code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [tp for tp in ordered if results[tp] is not None and tp not in noop]
    kind = election_type.name
    if succeeded:
        print(f"Successfully completed leader election ({kind}) for partitions "
              f"{', '.join(_tp(tp) for tp in java_order(succeeded))}", file=out)
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(_tp(tp) for tp in java_order(noop))}",
              file=out)
    for tp in java_order(failed):
        print(f"Error completing leader election ({kind}) for partition: {_tp(tp)}: {java_exception(results[tp])}",
              file=out)
    if failed:
        raise CommandFailed(f"{len(failed)} replica(s) could not be elected")


def run(args, *, out=None, err=None, usage: Optional[Callable[[], str]] = None,
        admin_factory: Optional[Callable[[dict], Admin]] = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if not any((args.bootstrap_server, args.admin_config, args.path_to_json_file, args.topic, args.partition,
                args.all_topic_partitions, args.election_type)):
        print(PURPOSE, file=err)     # Kafka's printUsageAndExit: the purpose, then how to call it; exit status 1
        if usage is not None:
            print(usage(), file=err, end="")
        return 1
    try:
        _validate(args)
        election_type = _converted(args.election_type, "election-type", ElectionType.parse)
        partitions = _partitions(args)
        config = dict(load_properties(args.admin_config)) if args.admin_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        for key, value in ADMIN_DEFAULTS.items():
            config.setdefault(key, value)
        with (admin_factory or Admin)(config) as admin:
            _elect(admin, election_type, partitions, out)
        return 0
    except (CommandFailed, ConfigException, OSError) as e:
        print(str(e), file=err)
        return 1
    except ApiException as e:
        print(e.message, file=err)
        return 1
