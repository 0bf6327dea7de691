"""``kafkalab get-offsets``: Kafka's ``kafka-get-offsets.sh`` (GetOffsetShell), ``topic:partition:offset`` lines.

Theory of operation
-------------------
An offset question is a ListOffsets request to each partition's leader with one timestamp: -1 (latest: the
high watermark), -2 (earliest: the log start offset), -3 (max-timestamp: the record with the largest
timestamp), or a time in ms (the first offset whose timestamp is at least that). The tool picks the partitions
from the cluster's metadata with its filters and prints one ``topic:partition:offset`` line per answer, sorted
as Kafka sorts them (by the text ``topic-partition``)::

    kafkalab get-offsets --bootstrap-server localhost:9092 --topic 'orders.*' --time earliest
    kafkalab get-offsets --bootstrap-server localhost:9092 --topic-partitions 'orders:0-2,events:5-,:-1'
    orders:0:0
    orders:1:0

``--topic`` is a regular expression matched against the whole name, ``--partitions`` a comma-separated list
of ids; ``--topic-partitions`` (not with them) is a list of ``TOPIC_REGEX:PARTITIONS`` rules, the partitions
being a number, ``A-B`` (A inclusive, B exclusive), ``A-``, ``-B`` or nothing (all). A partition whose leader
answers with an error is skipped with a line on stderr; no partition at all, or a bad argument, prints
``Error occurred: ...`` on stderr and exits with 1.

Mirrors ``tools/src/main/java/org/apache/kafka/tools/GetOffsetShell.java`` (Kafka 3.9, KIP-815).
"""
from __future__ import annotations

import re
import sys
from typing import Callable, Optional

from kafkalab.clients import Admin
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException

__all__ = ["add_parser", "run", "parse_time", "partition_filter"]

CLIENT_ID = "GetOffsetShell"
TOPIC_PARTITION_PATTERN = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
_NAMED_TIMES = {"earliest": -2, "latest": -1, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5}
UNKNOWN_OFFSET = -1


class TerseError(Exception):
    """Printed as ``Error occurred: <message>`` on stderr, exit status 1 (Kafka's ``TerseException``)."""


def add_parser(sub) -> None:
    p = sub.add_parser("get-offsets", help="print partitions' offsets for a time (kafka-get-offsets.sh)",
                       description="An interactive shell for getting topic-partition offsets.")
    p.add_argument("--bootstrap-server", metavar="HOST1:PORT1,...,HOST3:PORT3",
                   help="REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
    p.add_argument("--broker-list", metavar="HOST1:PORT1,...,HOST3:PORT3",
                   help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
    p.add_argument("--topic-partitions", metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
                   help="comma-separated TOPIC_REGEX:PARTITIONS rules (cannot be used with --topic or --partitions)")
    p.add_argument("--topic", metavar="topic", help="the topic (a regular expression); all topics if absent")
    p.add_argument("--partitions", metavar="partition ids", help="comma-separated partition ids; all if absent")
    p.add_argument("--time", default="latest",
                   metavar="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or "
                           "earliest-local / -5 or latest-tiered",
                   help="timestamp of the offsets before that (default latest)")
    p.add_argument("--command-config", metavar="config file",
                   help="property file containing configs to be passed to the admin client")
    p.add_argument("--exclude-internal-topics", action="store_true",
                   help="by default, internal topics are included; if specified, they are excluded")
    p.set_defaults(run=lambda args: run(args))


def parse_time(text: str) -> int:
    """``parseOffsetSpec``: a name or a number -> the ListOffsets timestamp."""
    if text in _NAMED_TIMES:
        return _NAMED_TIMES[text]
    try:
        return int(text)
    except ValueError:
        raise TerseError(f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
                         "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long format "
                         "timestamp") from None


def _partition_rule(lower: Optional[str], upper: Optional[str]) -> Callable[[int], bool]:
    lo = int(lower) if lower else None
    hi = int(upper) if upper else None
    return lambda p: (lo is None or p >= lo) and (hi is None or p < hi)


def _topic_rule(pattern: str) -> Callable[[str], bool]:
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise TerseError(f"Invalid topic regex {pattern!r}: {e}") from None
    return lambda name: regex.fullmatch(name) is not None


def partition_filter(topic_partitions: Optional[str], topic: Optional[str], partitions: Optional[str]
                     ) -> Callable[[str, int], bool]:
    """The predicate ``(topic, partition) -> wanted?`` of the three filter flags."""
    if topic_partitions is not None:
        if topic is not None or partitions is not None:
            raise TerseError("--topic-partitions cannot be used with --topic or --partitions")
        rules = []
        for spec in topic_partitions.split(","):
            m = TOPIC_PARTITION_PATTERN.fullmatch(spec)
            if m is None:
                raise TerseError(f"Invalid rule specification: {spec}")
            name, single, lower, upper = m.groups()
            topic_ok = _topic_rule(name) if name else (lambda _name: True)
            if single:
                part_ok = _partition_rule(single, str(int(single) + 1))
            else:
                part_ok = _partition_rule(lower, upper)
            rules.append((topic_ok, part_ok))
        return lambda t, p: any(tr(t) and pr(p) for tr, pr in rules)
    topic_ok = _topic_rule(topic) if topic else (lambda _name: True)
    if partitions:
        try:
            wanted = {int(p) for p in partitions.split(",")}
        except ValueError:
            raise TerseError(f"Invalid partition list: {partitions}") from None
        return lambda t, p: topic_ok(t) and p in wanted
    return lambda t, p: topic_ok(t)


def run(args, *, out=None, err=None, admin_factory: Optional[Callable[[dict], Admin]] = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        for line in _offsets(args, err, admin_factory or Admin):
            print(line, file=out)
        return 0
    except TerseError as e:
        print(f"Error occurred: {e}", file=err)
        return 1
    except (ApiException, OSError, ConfigException) as e:
        print(f"Error occurred: {getattr(e, 'message', None) or e}", file=err)
        return 1


def _offsets(args, err, factory) -> list:
    servers = args.bootstrap_server or args.broker_list
    if not servers:
        raise TerseError("Missing required argument \"[bootstrap-server]\"")
    wanted = partition_filter(args.topic_partitions, args.topic, args.partitions)
    timestamp = parse_time(args.time)
    config = dict(load_properties(args.command_config)) if args.command_config else {}
    config.update({"bootstrap.servers": servers, "client.id": CLIENT_ID})
    with factory(config) as admin:
        topics = admin.describe_topics(admin.list_topics())
        tps = [TopicPartition(name, p) for name, info in topics.items()
               if not (args.exclude_internal_topics and info.is_internal)
               for p in sorted(info.partitions) if wanted(name, p)]
        if not tps:
            raise TerseError("Could not match any topic-partitions with the specified filters")
        try:
            answers = admin.list_offsets({tp: timestamp for tp in tps})
        except ApiException as e:
            answers = getattr(e, "results", None)
            if answers is None:
                raise
            for tp, failure in getattr(e, "errors", {}).items():
                print(f"Skip getting offsets for topic-partition {tp[0]}-{tp[1]} due to error: "
                      f"{getattr(failure, 'message', failure)}", file=err)
    found = {TopicPartition(*tp): r.offset for tp, r in answers.items() if r.offset != UNKNOWN_OFFSET}
    return [f"{tp[0]}:{tp[1]}:{offset}" for tp, offset in sorted(found.items(), key=lambda kv: f"{kv[0][0]}-{kv[0][1]}")]
