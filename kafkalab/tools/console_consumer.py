"""``kafkalab console-consumer``: kafka-console-consumer.sh, through kafkalab's consumer.

Theory of operation
-------------------
Kafka's ``ConsoleConsumer`` (3.9, ``org.apache.kafka.tools.consumer``) builds a consumer from its options
(``ConsoleConsumerOptions``), then reads one record at a time and hands it to a formatter that writes bytes to
standard output, until ``--max-messages`` records were written, no record came for ``--timeout-ms``, or it is
interrupted; it always ends with ``Processed a total of N messages`` on standard error::

    kafkalab console-consumer --bootstrap-server localhost:9092 --topic events --from-beginning \\
        --property print.key=true --property print.offset=true --max-messages 2
    Offset:0	k1	v1
    Offset:1	k2	v2
    Processed a total of 2 messages

Without ``--group`` the consumer joins a fresh group ``console-consumer-<0..99999>`` with
``enable.auto.commit=false``; ``--partition`` (with ``--offset earliest|latest|N``) assigns one partition instead
of joining a group. ``--from-beginning`` means ``auto.offset.reset=earliest`` (``latest`` otherwise); a
conflicting ``auto.offset.reset`` from ``--consumer-property`` is refused. A wrong combination of flags prints
the reason on stderr and exits 1, as Kafka's ``CommandLineUtils.printUsageAndExit``.

:class:`DefaultMessageFormatter` is Kafka's default formatter with its ``--property`` keys (``print.timestamp``,
``print.key``, ``print.offset``, ``print.partition``, ``print.headers``, ``print.value``, ``key.separator``,
``line.separator``, ``headers.separator``, ``null.literal``, ``key.deserializer``, ``value.deserializer``,
``headers.deserializer``); it is sans-IO: :meth:`~DefaultMessageFormatter.format` returns the bytes of a record.

Mirrors ``tools/src/main/java/org/apache/kafka/tools/consumer/ConsoleConsumer.java``,
``ConsoleConsumerOptions.java`` and ``DefaultMessageFormatter.java``.
"""
from __future__ import annotations

import argparse
import random
import re
import struct
import sys
import time
import uuid
from typing import Callable, Optional

from kafkalab.clients import Consumer, TopicPartition
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException

__all__ = ["add_parser", "run", "main", "ConsoleConsumerOptions", "DefaultMessageFormatter", "UsageError"]

DEFAULT_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"
DEPRECATED_FORMATTER = "kafka.tools.DefaultMessageFormatter"
EARLIEST, LATEST = -2, -1          # ListOffsetsRequest.EARLIEST_TIMESTAMP / LATEST_TIMESTAMP
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


class UsageError(Exception):
    """Kafka's ``CommandLineUtils.printUsageAndExit``: the reason goes to stderr, the exit code is 1."""


def add_parser(sub) -> None:
    p = sub.add_parser("console-consumer", help="kafka-console-consumer.sh: print a topic's records",
                       description="Read data from Kafka topics and output it to standard output, as "
                                   "kafka-console-consumer.sh does.")
    _add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--topic", help="The topic to consume on.")
    p.add_argument("--include", help="Regular expression specifying list of topics to include for consumption.")
    p.add_argument("--whitelist", help="DEPRECATED, use --include instead; ignored if --include specified.")
    p.add_argument("--partition", type=int, help="The partition to consume from.")
    p.add_argument("--offset", help="The offset to consume from (a non-negative number), or 'earliest' or 'latest'.")
    p.add_argument("--consumer-property", action="append", default=[], metavar="key=value")
    p.add_argument("--consumer.config", dest="consumer_config", help="Consumer config properties file.")
    p.add_argument("--formatter", default=DEFAULT_FORMATTER)
    p.add_argument("--property", action="append", default=[], metavar="prop",
                   help="print.timestamp, print.key, print.offset, print.partition, print.headers, print.value, "
                        "key.separator, line.separator, headers.separator, null.literal, key.deserializer, ...")
    p.add_argument("--formatter-config", help="Config properties file to initialize the message formatter.")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--max-messages", type=int, default=-1)
    p.add_argument("--timeout-ms", type=int)
    p.add_argument("--skip-message-on-error", action="store_true")
    p.add_argument("--key-deserializer")
    p.add_argument("--value-deserializer")
    p.add_argument("--enable-systest-events", action="store_true")
    p.add_argument("--isolation-level")
    p.add_argument("--group", help="The consumer group id of the consumer.")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kafka-console-consumer")
    _add_arguments(p)
    return run(p.parse_args(argv))


def parse_key_values(items) -> dict[str, str]:
    """Kafka's ``CommandLineUtils.parseKeyValueArgs``: ``key=value`` (the first ``=`` splits), ``key=`` is empty."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"Invalid command line properties: {item}")
        out[key] = value
    return out


# -- deserializers of the formatter (Kafka's serialization classes, by their class names) -----------------------
def _fixed(fmt: str, name: str) -> Callable[[bytes], str]:
    size = struct.calcsize(fmt)

    def decode(data: bytes) -> str:
        if len(data) != size:
            raise ValueError(f"Size of data received by {name} is not {size}")
        value = struct.unpack(fmt, data)[0]
        return repr(float(value)) if isinstance(value, float) else str(value)
    return decode


DESERIALIZERS: dict[str, Callable[[bytes], str]] = {
    "org.apache.kafka.common.serialization.StringDeserializer": lambda b: b.decode("utf-8", "replace"),
    "org.apache.kafka.common.serialization.ShortDeserializer": _fixed(">h", "ShortDeserializer"),
    "org.apache.kafka.common.serialization.IntegerDeserializer": _fixed(">i", "IntegerDeserializer"),
    "org.apache.kafka.common.serialization.LongDeserializer": _fixed(">q", "LongDeserializer"),
    "org.apache.kafka.common.serialization.FloatDeserializer": _fixed(">f", "FloatDeserializer"),
    "org.apache.kafka.common.serialization.DoubleDeserializer": _fixed(">d", "DoubleDeserializer"),
    "org.apache.kafka.common.serialization.UUIDDeserializer": lambda b: str(uuid.UUID(b.decode("utf-8"))),
}


class DefaultMessageFormatter:
    """Kafka's ``DefaultMessageFormatter``: the selected columns of a record, separated, as bytes."""

    def __init__(self, configs: Optional[dict] = None, err=None):
        configs = configs or {}
        flag = lambda key, default: configs[key].strip().lower() == "true" if key in configs else default  # noqa: E731
        self.print_timestamp = flag("print.timestamp", False)
        self.print_key = flag("print.key", False)
        self.print_offset = flag("print.offset", False)
        self.print_partition = flag("print.partition", False)
        self.print_headers = flag("print.headers", False)
        self.print_value = flag("print.value", True)
        text = lambda key, default: configs.get(key, default).encode("utf-8")  # noqa: E731
        self.key_separator = text("key.separator", "\t")
        self.line_separator = text("line.separator", "\n")
        self.headers_separator = text("headers.separator", ",")
        self.null_literal = text("null.literal", "null")
        self.key_deserializer = self._deserializer(configs, "key.deserializer", err)
        self.value_deserializer = self._deserializer(configs, "value.deserializer", err)
        self.headers_deserializer = self._deserializer(configs, "headers.deserializer", err)

    @staticmethod
    def _deserializer(configs: dict, key: str, err):
        name = configs.get(key)
        if name is None:
            return None
        if name not in DESERIALIZERS:
            print(f"ERROR Unable to instantiate a deserializer from {name}", file=err or sys.stderr)
            return None
        return DESERIALIZERS[name]

    def _bytes(self, data: Optional[bytes], deserializer) -> bytes:
        data = self.null_literal if data is None else data
        return data if deserializer is None else deserializer(data).encode("utf-8")

    def format(self, record) -> bytes:
        parts: list[bytes] = []
        if self.print_timestamp:
            kind = TIMESTAMP_TYPES.get(record.timestamp_type)
            parts.append(f"{kind}:{record.timestamp}".encode() if kind else b"NO_TIMESTAMP")
        if self.print_partition:
            parts.append(f"Partition:{record.partition}".encode())
        if self.print_offset:
            parts.append(f"Offset:{record.offset}".encode())
        if self.print_headers:
            parts.append(self.headers_separator.join(
                name.encode("utf-8") + b":" + self._bytes(value, self.headers_deserializer)
                for name, value in record.headers) if record.headers else b"NO_HEADERS")
        if self.print_key:
            parts.append(self._bytes(record.key, self.key_deserializer))
        if self.print_value:
            parts.append(self._bytes(record.value, self.value_deserializer))
        text = self.key_separator.join(parts)
        return text + self.line_separator if parts else b""


class ConsoleConsumerOptions:
    """Kafka's ``ConsoleConsumerOptions``: the checks (in Kafka's order), the consumer's properties, the offset."""

    def __init__(self, args, err=None):
        self.args = a = args
        topic_or_filter = [x for x in (a.topic, a.include or a.whitelist) if x]
        if len(topic_or_filter) != 1:
            raise UsageError("Exactly one of --include/--topic is required. " +
                             ("--whitelist is DEPRECATED use --include instead; ignored if --include specified."
                              if a.whitelist else ""))
        if a.partition is not None:
            if not a.topic:
                raise UsageError("The topic is required when partition is specified.")
            if a.from_beginning and a.offset is not None:
                raise UsageError("Options from-beginning and offset cannot be specified together.")
        elif a.offset is not None:
            raise UsageError("The partition is required when offset is specified.")
        if not a.bootstrap_server:
            raise UsageError('Missing required argument "[bootstrap-server]"')
        from_file = dict(load_properties(a.consumer_config)) if a.consumer_config else {}
        extra = parse_key_values(a.consumer_property)
        groups = list(dict.fromkeys(g for g in (a.group, from_file.get("group.id"), extra.get("group.id")) if g))
        if len(groups) > 1:
            raise UsageError("The group ids provided in different places (directly using '--group', via "
                             "'--consumer-property', or via '--consumer.config') do not match. Detected group ids: "
                             + ", ".join(f"'{g}'" for g in groups))
        if groups and a.partition is not None:
            raise UsageError("Options group and partition cannot be specified together.")
        props = {**from_file, **extra}
        if "auto.offset.reset" in props:
            if a.from_beginning and props["auto.offset.reset"] != "earliest":
                raise UsageError(f"Can't simultaneously specify --from-beginning and "
                                 f"'auto.offset.reset={props['auto.offset.reset']}', please remove one option")
        else:
            props["auto.offset.reset"] = "earliest" if a.from_beginning else "latest"
        props["bootstrap.servers"] = a.bootstrap_server
        props.setdefault("client.id", "console-consumer")
        if a.isolation_level and "isolation.level" not in props:
            props["isolation.level"] = a.isolation_level
        if not groups:
            props["group.id"] = f"console-consumer-{random.randrange(100000)}"
            props.setdefault("enable.auto.commit", "false")
        else:
            props["group.id"] = groups[0]
        self.consumer_props = props
        self.offset = self._parse_offset()
        self.timeout_ms = a.timeout_ms if a.timeout_ms is not None and a.timeout_ms >= 0 else None
        self.formatter = self._formatter(err)

    def _parse_offset(self) -> int:
        text = self.args.offset
        if text is None:
            return EARLIEST if self.args.from_beginning else LATEST
        if text.lower() in ("earliest", "latest"):
            return EARLIEST if text.lower() == "earliest" else LATEST
        if re.fullmatch(r"[+-]?[0-9]+", text) and int(text) >= 0:
            return int(text)
        raise UsageError(f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', "
                         f"or a non-negative long.")

    def _formatter(self, err) -> DefaultMessageFormatter:
        a = self.args
        if a.formatter == DEPRECATED_FORMATTER:
            print(f"WARNING: {DEPRECATED_FORMATTER} is deprecated and will be removed in the next major release. "
                  f"Please use {DEFAULT_FORMATTER} instead", file=err or sys.stderr)
        elif a.formatter != DEFAULT_FORMATTER:
            raise UsageError(a.formatter)          # Class.forName's ClassNotFoundException message
        configs = dict(load_properties(a.formatter_config)) if a.formatter_config else {}
        if a.key_deserializer:
            configs["key.deserializer"] = a.key_deserializer
        if a.value_deserializer:
            configs["value.deserializer"] = a.value_deserializer
        configs.update(parse_key_values(a.property))
        return DefaultMessageFormatter(configs, err)


class ConsumerWrapper:
    """Kafka's ``ConsoleConsumer.ConsumerWrapper``: subscribe or assign-and-seek, one record at a time."""

    def __init__(self, opts: ConsoleConsumerOptions, consumer: Consumer):
        self.consumer, self.timeout_ms = consumer, opts.timeout_ms
        self.pending: list = []
        a = opts.args
        if a.topic and a.partition is not None:
            tp = TopicPartition(a.topic, a.partition)
            consumer.assign([tp])
            if opts.offset == EARLIEST:
                consumer.seek_to_beginning([tp])
            elif opts.offset == LATEST:
                consumer.seek_to_end([tp])
            else:
                consumer.seek(tp, opts.offset)
        elif a.topic:
            consumer.subscribe([a.topic])
        else:
            consumer.subscribe(re.compile(a.include or a.whitelist))

    def receive(self):
        start = time.monotonic()
        while not self.pending:
            timeout = None if self.timeout_ms is None else self.timeout_ms / 1000
            self.pending = list(self.consumer.poll(timeout))
            if not self.pending and timeout is not None and time.monotonic() - start > timeout:
                raise TimeoutError()
        return self.pending.pop(0)

    def cleanup(self) -> None:
        """Seek back to the first record not written out (so that it is not committed), then close."""
        smallest = {}
        for r in self.pending:
            smallest.setdefault(TopicPartition(r.topic, r.partition), r.offset)
        for tp, offset in smallest.items():
            self.consumer.seek(tp, offset)
        self.consumer.close()


def run(args, out=None, err=None, consumer_factory=Consumer) -> int:
    out = out or sys.stdout.buffer
    err = err or sys.stderr
    try:
        opts = ConsoleConsumerOptions(args, err)
    except (UsageError, ConfigException, OSError) as e:
        print(e, file=err)
        return 1
    count, code = 0, 0
    try:
        wrapper = ConsumerWrapper(opts, consumer_factory(opts.consumer_props))
    except (ConfigException, ApiException) as e:
        print(f"ERROR Unknown error when running consumer: {type(e).__name__}: {e}", file=err)
        return 1
    try:
        while args.max_messages == -1 or count < args.max_messages:
            try:
                record = wrapper.receive()
            except TimeoutError:
                print("ERROR Error processing message, terminating consumer process: "
                      "org.apache.kafka.common.errors.TimeoutException", file=err)
                break
            except (ApiException, ConfigException) as e:
                print(f"ERROR Error processing message, terminating consumer process: {type(e).__name__}: {e}",
                      file=err)
                break
            count += 1
            try:
                out.write(opts.formatter.format(record))
                out.flush()
            except (ValueError, UnicodeError) as e:
                if not args.skip_message_on_error:
                    print(f"ERROR Unknown error when running consumer: {type(e).__name__}: {e}", file=err)
                    code = 1
                    break
                print(f"ERROR Error processing message, skipping this message: {type(e).__name__}: {e}", file=err)
            except BrokenPipeError:
                print("Unable to write to standard out, closing consumer.", file=err)
                break
    except KeyboardInterrupt:
        code = 130
    finally:
        wrapper.cleanup()
        print(f"Processed a total of {count} messages", file=err)
        if args.enable_systest_events and code == 130:
            print("shutdown_complete", file=sys.stdout)
    return code
