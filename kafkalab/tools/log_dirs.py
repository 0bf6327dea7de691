"""``kafkalab log-dirs``: Kafka's ``kafka-log-dirs.sh`` (LogDirsCommand): each broker's log directories as JSON.

Theory of operation
-------------------
The tool asks the cluster for its brokers (DescribeCluster), then each chosen broker for its log directories
(DescribeLogDirs, :mod:`kafkalab.clients.admin_log_dirs`) and prints one JSON line::

    kafkalab log-dirs --bootstrap-server localhost:9092 --describe [--broker-list 0,1] [--topic-list orders]
    Querying brokers for log directories information
    Received log directory information from brokers 0
    {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"orders-0","size":140,"offsetLag":0,
    "isFuture":false}],"error":null,"logDir":"/tmp/kafkalab-0"}]}],"version":1}

Kafka builds that JSON from ``java.util.HashMap``s, so its keys, directories and partitions come in hash-table
order, not sorted: :func:`java_hash_map_order` reproduces that order (``String.hashCode``,
``TopicPartition.hashCode``, the table's size) so the line is the same byte for byte. A broker id not in the
cluster prints ``ERROR: The given brokers do not exist from --broker-list: ...`` on stderr and exits with 1.

Mirrors ``tools/src/main/java/org/apache/kafka/tools/LogDirsCommand.java`` (Kafka 3.9).
"""
from __future__ import annotations

import json
import sys
from typing import Callable, Optional

from kafkalab.clients import Admin
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException, java_exception_class

__all__ = ["add_parser", "run", "format_as_json", "java_hash_map_order", "java_string_hash"]

CLIENT_ID = "log-dirs-tool"


class TerseError(Exception):
    """Printed on stderr, exit status 1 (Kafka's ``TerseException``)."""


def add_parser(sub) -> None:
    p = sub.add_parser("log-dirs", help="describe brokers' log directories as JSON (kafka-log-dirs.sh)",
                       description="This tool helps to query log directory usage on the specified brokers.")
    p.add_argument("--bootstrap-server", required=True, metavar="The server(s) to use for bootstrapping",
                   help="REQUIRED: the server(s) to use for bootstrapping")
    p.add_argument("--command-config", metavar="Admin client property file",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--describe", action="store_true", required=True,
                   help="Describe the specified log directories on the specified brokers.")
    p.add_argument("--topic-list", default="", metavar="Topic list",
                   help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics will be '
                        "queried if no topic list is specified")
    p.add_argument("--broker-list", default="", metavar="Broker list",
                   help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster will be '
                        "queried if no broker list is specified")
    p.set_defaults(run=lambda args: run(args))


# -- java.util.HashMap's iteration order --------------------------------------------------------------------
def java_string_hash(text: str) -> int:
    """``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h, data = 0, text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _tp_hash(tp) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode()."""
    h = (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hash_map_order(keys: list, hash_code: Callable) -> list:
    """The order a ``HashMap`` filled with ``keys`` (in this order) iterates them: by bucket, ties in insertion
    order; the table starts at 16 buckets and doubles whenever the size passes three quarters of it."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key) -> int:
        h = hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


def _int_hash(n: int) -> int:
    return n


def format_as_json(by_broker: dict, topics: set) -> str:
    """``formatAsJson``: ``{broker: {log dir: LogDirDescription}}`` -> Kafka's JSON line, in Kafka's order."""
    brokers = []
    for broker in java_hash_map_order(list(by_broker), _int_hash):
        log_dirs = []
        dirs = by_broker[broker]
        for log_dir in java_hash_map_order(list(dirs), java_string_hash):
            description = dirs[log_dir]
            replicas = {tp: info for tp, info in description.replica_infos.items() if not topics or tp[0] in topics}
            partitions = [{"partition": f"{tp[0]}-{tp[1]}", "size": replicas[tp].size,
                           "offsetLag": replicas[tp].offset_lag, "isFuture": replicas[tp].is_future}
                          for tp in java_hash_map_order(list(replicas), _tp_hash)]
            log_dirs.append({"partitions": partitions, "error": _java_class(description.error), "logDir": log_dir})
        brokers.append({"broker": broker, "logDirs": log_dirs})
    return json.dumps({"brokers": brokers, "version": 1}, separators=(",", ":"), ensure_ascii=False)


def _java_class(error) -> Optional[str]:
    """The error's Java class name (``entry.getValue().error().getClass().getName()``)."""
    return None if error is None else java_exception_class(error.error_code)


def run(args, *, out=None, err=None, admin_factory: Optional[Callable[[dict], Admin]] = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        topics = {t for t in args.topic_list.split(",") if t}
        try:
            wanted = [int(b) for b in args.broker_list.split(",") if b]
        except ValueError:
            raise TerseError(f"Invalid broker list: {args.broker_list}") from None
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        config.setdefault("client.id", CLIENT_ID)
        with (admin_factory or Admin)(config) as admin:
            cluster = sorted(admin.describe_cluster().brokers)
            missing = [b for b in dict.fromkeys(wanted) if b not in cluster]
            if missing:
                raise TerseError("ERROR: The given brokers do not exist from --broker-list: "
                                 f"{','.join(map(str, sorted(missing)))}. Current existent brokers: "
                                 f"{','.join(map(str, cluster))}")
            chosen = sorted(set(wanted)) if wanted else cluster
            print("Querying brokers for log directories information", file=out)
            described = admin.describe_log_dirs(chosen)
            print(f"Received log directory information from brokers {','.join(map(str, chosen))}", file=out)
            print(format_as_json(described, topics), file=out)
        return 0
    except TerseError as e:
        print(str(e), file=err)
        return 1
    except (ApiException, OSError, ConfigException) as e:
        print(getattr(e, "message", None) or str(e), file=err)
        return 1
