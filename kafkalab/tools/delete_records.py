"""``kafkalab delete-records``: Kafka's ``kafka-delete-records.sh`` (DeleteRecordsCommand) with its JSON file.

Theory of operation
-------------------
Deleting records moves a partition's **log start offset** forward: a DeleteRecords request to the leader,
which answers with the new low watermark once the followers have moved theirs too; segments wholly below it
are then deleted. The offsets come from a JSON file::

    {"partitions": [{"topic": "orders", "partition": 0, "offset": 3}], "version": 1}

    kafkalab delete-records --bootstrap-server localhost:9092 --offset-json-file offsets.json
    Executing records delete operation
    Records delete operation completed:
    partition: orders-0	low_watermark: 3

An offset of -1 means the high watermark (everything). A partition that fails prints ``partition: T-P\\terror:
<Java exception>: <message>``. A file that is not JSON, has no ``partitions``, another ``version`` or a partition
twice prints the reason on stderr and exits with 1, before anything is sent.

Mirrors ``tools/src/main/java/org/apache/kafka/tools/DeleteRecordsCommand.java`` (Kafka 3.9).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Optional

from kafkalab.clients import Admin
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException, java_exception_class

__all__ = ["add_parser", "run", "parse_offset_json"]

EARLIEST_VERSION = 1


class CommandFailed(Exception):
    """Printed on stderr, exit status 1 (Kafka's ``AdminOperationException``/``AdminCommandFailedException``)."""


def add_parser(sub) -> None:
    p = sub.add_parser("delete-records", help="delete records below an offset (kafka-delete-records.sh)",
                       description="This tool helps to delete records of the given partitions down to the "
                                   "specified offset.", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", required=True, metavar="server(s) to use for bootstrapping",
                   help="REQUIRED: The server to connect to.")
    p.add_argument("--offset-json-file", required=True, metavar="Offset json file path",
                   help='REQUIRED: The JSON file with offset per partition. The format to use is: {"partitions": '
                        '[{"topic": "foo", "partition": 1, "offset": 1}], "version":1}')
    p.add_argument("--command-config", metavar="command config property file path",
                   help="A property file containing configs to be passed to Admin Client.")
    p.set_defaults(run=lambda args: run(args))


def parse_offset_json(text: str) -> dict:
    """``{TopicPartition: offset}`` of the file; CommandFailed for anything Kafka's tool refuses."""
    try:
        js = json.loads(text)
    except ValueError:
        raise CommandFailed("The input string is not a valid JSON") from None
    if not isinstance(js, dict):
        raise CommandFailed("The input string is not a valid JSON")
    version = js.get("version", EARLIEST_VERSION)
    if version != 1:
        raise CommandFailed(f"Not supported version field value {version}")
    if "partitions" not in js:
        raise CommandFailed("Missing partitions field")
    seen: dict = {}
    duplicates = []
    for entry in js["partitions"] if isinstance(js["partitions"], list) else ():
        try:
            topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
        except (KeyError, TypeError) as e:
            raise CommandFailed(f"No such field exists: {e}") from None
        if not (isinstance(topic, str) and type(partition) is int and type(offset) is int):
            raise CommandFailed(f"Expected a topic string and integer partition and offset, got {entry}")
        tp = TopicPartition(topic, partition)
        if tp in seen:
            duplicates.append(f"{topic}-{partition}")
        else:
            seen[tp] = offset
    if duplicates:
        raise CommandFailed(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return seen


def run(args, *, out=None, err=None, admin_factory: Optional[Callable[[dict], Admin]] = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        with open(args.offset_json_file, encoding="utf-8") as f:
            wanted = parse_offset_json(f.read())
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        with (admin_factory or Admin)(config) as admin:
            print("Executing records delete operation", file=out)
            try:
                results, errors = admin.delete_records(wanted), {}
            except ApiException as e:
                results, errors = getattr(e, "results", None), getattr(e, "errors", None)
                if results is None:
                    raise
        print("Records delete operation completed:", file=out)
        for tp in sorted(wanted):
            if tp in errors:
                print(f"partition: {tp[0]}-{tp[1]}\terror: {_java(errors[tp])}", file=out)
            elif tp in results:
                print(f"partition: {tp[0]}-{tp[1]}\tlow_watermark: {results[tp]}", file=out)
        return 0
    except (CommandFailed, OSError, ConfigException) as e:
        print(str(e), file=err)
        return 1
    except ApiException as e:
        print(e.message, file=err)
        return 1


def _java(e) -> str:
    """What Java's ``ExecutionException.getMessage()`` says: the cause's class and message."""
    if not isinstance(e, ApiException):
        return str(e)
    return f"{java_exception_class(e.error_code)}: {e.message}"
