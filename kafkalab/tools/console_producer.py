"""``kafkalab console-producer``: kafka-console-producer.sh, through kafkalab's producer.

Theory of operation
-------------------
Kafka's ``ConsoleProducer`` (3.9, ``core/src/main/scala/kafka/tools/ConsoleProducer.scala``) reads standard input
line by line with a record reader (``LineMessageReader`` unless ``--line-reader`` names another) and sends each
record, asynchronously unless ``--sync``; at the end of input it closes the producer (sending what is buffered)
and exits 0. With ``--property parse.key=true`` a line is ``key<TAB>value``, with ``parse.headers=true``
``h1:v1,h2:v2<TAB>[key<TAB>]value``; ``null.marker`` turns a field equal to it into null::

    printf 'k1\\tv1\\nk2\\tv2\\n' | kafkalab console-producer --bootstrap-server localhost:9092 --topic events \\
        --property parse.key=true

The tool's own flags become producer settings unless ``--producer-property``/``--producer.config`` set them
(Kafka's ``maybeMergeOptions``): ``--timeout`` is ``linger.ms`` (1000), ``--request-required-acks`` ``acks``
(-1), ``--request-timeout-ms`` (1500), ``--message-send-max-retries`` ``retries`` (3), ``--batch-size``,
``--compression-codec`` (``gzip`` when given without a value), ... A line the reader cannot parse stops the tool
with the reader's message and exit code 1 (``ignore.error=true`` sends it anyway); a record the broker refuses is
logged with Kafka's ``ErrorLoggingCallback`` line and the tool goes on.

:class:`LineMessageReader` is sans-IO: :meth:`~LineMessageReader.parse` turns one line into (key, value, headers).

Mirrors ``kafka.tools.ConsoleProducer`` (``ProducerConfig``, ``producerProps``, ``LineMessageReader``) and
``org.apache.kafka.clients.producer.internals.ErrorLoggingCallback``.
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Optional

from kafkalab.clients import Producer
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException
from kafkalab.tools.console_consumer import UsageError, parse_key_values

__all__ = ["add_parser", "run", "main", "LineMessageReader", "ReaderError", "producer_props"]

LINE_READER = "kafka.tools.ConsoleProducer$LineMessageReader"
_GZIP = "gzip"
#: (flag dest, producer key, the tool's default): Kafka's ``maybeMergeOptions`` calls in ``producerProps``
MERGED_OPTIONS = (
    ("timeout", "linger.ms", 1000),
    ("request_required_acks", "acks", "-1"),
    ("request_timeout_ms", "request.timeout.ms", 1500),
    ("message_send_max_retries", "retries", 3),
    ("retry_backoff_ms", "retry.backoff.ms", 100),
    ("socket_buffer_size", "send.buffer.bytes", 100 * 1024),
    ("max_memory_bytes", "buffer.memory", 32 * 1024 * 1024),
    ("batch_size", "batch.size", 16 * 1024),
    ("max_partition_memory_bytes", "batch.size", 16 * 1024),
    ("metadata_expiry_ms", "metadata.max.age.ms", 5 * 60 * 1000),
    ("max_block_ms", "max.block.ms", 60 * 1000),
)
_HOST_PORT = re.compile(r".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)")      # Kafka's Utils.HOST_PORT_PATTERN


class ReaderError(Exception):
    """Kafka's ``KafkaException`` from the line reader: a line (or the reader's settings) it cannot accept."""


def add_parser(sub) -> None:
    p = sub.add_parser("console-producer", help="kafka-console-producer.sh: send standard input's lines",
                       description="Read data from standard input and publish it to Kafka, as "
                                   "kafka-console-producer.sh does.")
    _add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", help="REQUIRED: The topic id to produce messages to.")
    p.add_argument("--bootstrap-server", help="REQUIRED unless --broker-list(deprecated) is specified.")
    p.add_argument("--broker-list", help="DEPRECATED, use --bootstrap-server instead.")
    p.add_argument("--sync", action="store_true", help="Send the records synchronously, one at a time.")
    p.add_argument("--compression-codec", nargs="?", const="", default=None,
                   help="none, gzip, snappy, lz4 or zstd ('gzip' when given without a value)")
    for dest, _, _ in MERGED_OPTIONS:
        p.add_argument("--" + dest.replace("_", "-"), default=None)
    p.add_argument("--line-reader", default=LINE_READER)
    p.add_argument("--property", action="append", default=[], metavar="prop",
                   help="parse.key, parse.headers, ignore.error, key.separator, headers.delimiter, "
                        "headers.separator, headers.key.separator, null.marker")
    p.add_argument("--reader-config", help="Config properties file for the message reader.")
    p.add_argument("--producer-property", action="append", default=[], metavar="producer_prop")
    p.add_argument("--producer.config", dest="producer_config", help="Producer config properties file.")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kafka-console-producer")
    _add_arguments(p)
    return run(p.parse_args(argv))


def _validate_host_ports(text: str) -> None:
    """Kafka's ``ToolsUtils.validatePortOrDie``."""
    parts = text.split(",")
    if not all(_HOST_PORT.fullmatch(p) for p in parts):
        raise UsageError("Please provide valid host:port like host1:9091,host2:9092\n ")


def producer_props(args) -> dict:
    """Kafka's ``ConsoleProducer.producerProps``: the file, then ``--producer-property``, then the tool's flags."""
    props = dict(load_properties(args.producer_config)) if args.producer_config else {}
    props.update(parse_key_values(args.producer_property))
    props["bootstrap.servers"] = args.bootstrap_server or args.broker_list
    if args.compression_codec is None:
        props["compression.type"] = "none"
    else:
        props["compression.type"] = args.compression_codec or _GZIP
    props.setdefault("client.id", "console-producer")
    for dest, key, default in MERGED_OPTIONS:
        value = getattr(args, dest)
        if value is not None or key not in props:
            props[key] = str(default if value is None else value)
    return props


class LineMessageReader:
    """Kafka's ``ConsoleProducer.LineMessageReader``: one record per line, optional headers and key columns."""

    def __init__(self, props: Optional[dict] = None):
        props = props or {}
        flag = lambda key: props.get(key, "false").strip().lower() == "true"  # noqa: E731
        self.parse_key, self.parse_headers, self.ignore_error = flag("parse.key"), flag("parse.headers"), \
            flag("ignore.error")
        self.key_separator = props.get("key.separator", "\t")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")
        self.line_number = 0
        pairs = (("headers.delimiter", self.headers_delimiter, "headers.separator", self.headers_separator),
                 ("headers.delimiter", self.headers_delimiter, "headers.key.separator", self.headers_key_separator),
                 ("headers.separator", self.headers_separator, "headers.key.separator", self.headers_key_separator))
        for a, va, b, vb in pairs:
            if va == vb:
                raise ReaderError(f"{a} and {b} may not be equal")
        if self.null_marker is not None:
            for name, value in (("key.separator", self.key_separator), ("headers.separator", self.headers_separator),
                                ("headers.delimiter", self.headers_delimiter),
                                ("headers.key.separator", self.headers_key_separator)):
                if self.null_marker == value:
                    raise ReaderError(f"null.marker and {name} may not be equal")

    def _column(self, enabled: bool, line: str, start: int, demarcation: str, name: str) -> Optional[str]:
        if not enabled:
            return None
        index = line.find(demarcation, start)
        if index == -1:
            if self.ignore_error:
                return None
            raise ReaderError(f"No {name} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _bytes(self, text: Optional[str]) -> Optional[bytes]:
        return None if text is None or text == self.null_marker else text.encode("utf-8")

    def parse(self, line: str):
        """One line (without its end-of-line) -> ``(key, value, headers)``; raises :class:`ReaderError`."""
        self.line_number += 1
        headers = self._column(self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter")
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._column(self.parse_key, line, header_end, self.key_separator, "key separator")
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value = line[header_end + key_end:]
        pairs = []
        if headers is not None and headers != self.null_marker:
            for pair in re.split(self.headers_separator, headers):
                i = pair.find(self.headers_key_separator)
                if i == -1:
                    if not self.ignore_error:
                        raise ReaderError(f"No header key separator found in pair '{pair}' on line number "
                                          f"{self.line_number}")
                    pairs.append((pair, None))
                    continue
                name = pair[:i]
                if name == self.null_marker:
                    raise ReaderError(f"Header keys should not be equal to the null marker '{self.null_marker}' as "
                                      f"they can't be null")
                pairs.append((name, self._bytes(pair[i + len(self.headers_key_separator):])))
        return self._bytes(key), self._bytes(value), pairs


def _error_logger(topic: str, key: Optional[bytes], value: Optional[bytes], err):
    """Kafka's ``ErrorLoggingCallback`` (without the payloads): one ERROR line per record the broker refused."""
    def on_delivery(error, metadata) -> None:
        if error is not None:
            key_text = "null" if key is None else f"{len(key)} bytes"
            value_text = "null" if value is None else f"{len(value)} bytes"
            print(f"ERROR Error when sending message to topic {topic} with key: {key_text}, value: {value_text} "
                  f"with error: {type(error).__name__}: {error}", file=err)
    return on_delivery


def run(args, stdin=None, err=None, producer_factory=Producer) -> int:
    err = err or sys.stderr
    stdin = stdin if stdin is not None else sys.stdin
    try:
        if not args.topic:
            raise UsageError('Missing required argument "[topic]"')
        if not args.bootstrap_server and not args.broker_list:
            raise UsageError("Missing required option(s) [bootstrap-server]")
        _validate_host_ports(args.bootstrap_server or args.broker_list)
        if args.line_reader != LINE_READER:
            raise UsageError(args.line_reader)         # Class.forName's ClassNotFoundException message
        reader_props = dict(load_properties(args.reader_config)) if args.reader_config else {}
        reader_props["topic"] = args.topic
        reader_props.update(parse_key_values(args.property))
        props = producer_props(args)
    except (UsageError, ConfigException, OSError) as e:
        print(e, file=err)
        return 1
    try:
        reader = LineMessageReader(reader_props)
        producer = producer_factory(props)
    except (ReaderError, ConfigException, ApiException) as e:
        print(f"{_java_name(e)}: {e}", file=err)
        return 1
    prompt = getattr(stdin, "isatty", lambda: False)()
    code = 0
    try:
        while True:
            if prompt:
                print(">", end="", flush=True)
            line = stdin.readline()
            if not line:
                break
            key, value, headers = reader.parse(line[:-1] if line.endswith("\n") else line)
            if args.sync:
                producer.send(args.topic, value, key=key, headers=headers or None).result()
            else:
                producer.send(args.topic, value, key=key, headers=headers or None,
                              on_delivery=_error_logger(args.topic, key, value, err))
    except (ReaderError, ApiException, ConfigException) as e:
        print(f"{_java_name(e)}: {e}", file=err)
        code = 1
    except KeyboardInterrupt:
        code = 130
    finally:
        producer.close()
    return code


def _java_name(e: Exception) -> str:
    return "org.apache.kafka.common.KafkaException" if isinstance(e, ReaderError) else type(e).__name__
