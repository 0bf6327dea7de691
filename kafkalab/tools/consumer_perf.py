"""``kafkalab consumer-perf-test``: Kafka's ``kafka-consumer-perf-test.sh``, with kafkalab's consumer.

Theory of operation
-------------------
Mirrors ``org.apache.kafka.tools.ConsumerPerformance`` and its ``ConsumerPerfOptions`` (Kafka 3.9). One
consumer joins ``--group`` (default ``perf-consumer-N``), subscribes to ``--topic`` and polls (100 ms) until it
has read ``--messages`` records or no record came for ``--timeout`` ms (then it prints Kafka's WARNING line).
Bytes are key plus value lengths. Time spent in rebalances (revoked -> assigned, seen by a rebalance listener)
is ``rebalance.time.ms``; the rest of the run is ``fetch.time.ms``. The header and the one summary line::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-11-26 03:30:01:123, 2026-11-26 03:30:02:456, 0.9537, 0.7155, 10000, 7501.8755, 312, 1021, 0.9341, 9794.3193

With ``--show-detailed-stats`` the header starts ``time, threadId`` and a line is printed every
``--reporting-interval`` ms instead of the summary. Consumer properties: ``--consumer.config`` then
``bootstrap.servers``, ``group.id``, ``receive.buffer.bytes`` (``--socket-buffer-size``),
``max.partition.fetch.bytes`` (``--fetch-size``), ``auto.offset.reset`` (``earliest``, ``latest`` with
``--from-latest``), ``check.crcs=false`` and ``client.id`` ``perf-consumer-client`` unless set. Dates use
``--date-format``, a ``java.text.SimpleDateFormat`` pattern (letters ``yMdHhmsSa`` supported).
``--print-metrics`` is refused: kafkalab's clients keep no metrics registry.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import random
import re
import sys
import time as _time
from typing import Callable, Optional, Sequence

from kafkalab.clients import ConfigException, Consumer, KafkaProtocolError
from kafkalab.common.config import load_properties

__all__ = ["HEADER", "DETAILED_HEADER", "add_parser", "main", "run", "java_date_format"]

PROG = "consumer-performance"
_NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + _NEW_FIELDS
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + _NEW_FIELDS
DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"
MB = 1024 * 1024


def _now_ms() -> int:
    return int(_time.time() * 1000)


_PATTERN_LETTERS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "hh": "%I", "mm": "%M",
                    "ss": "%S", "a": "%p"}


def java_date_format(pattern: str) -> Callable[[int], str]:
    """A formatter of epoch milliseconds (local time) for a ``SimpleDateFormat`` pattern; ``ValueError`` for a
    letter it does not know."""
    parts: list = []
    for m in re.finditer(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+", pattern):
        text = m.group(0)
        if m.group(1) is not None or text == "''":
            parts.append(("lit", m.group(1) or "'"))
        elif text[0].isalpha():
            if text == "SSS":
                parts.append(("ms", None))
            elif text in _PATTERN_LETTERS:
                parts.append(("fmt", _PATTERN_LETTERS[text]))
            else:
                raise ValueError(f"Unsupported date-format pattern {text!r} in {pattern!r}")
        else:
            parts.append(("lit", text))

    def fmt(ms: int) -> str:
        t = _dt.datetime.fromtimestamp(ms / 1000.0)
        return "".join(t.strftime(v) if k == "fmt" else f"{ms % 1000:03d}" if k == "ms" else v for k, v in parts)
    return fmt


class _RebalanceTimer:
    """``ConsumerPerfRebListener``: time from a revocation (or the start) to the next assignment."""

    def __init__(self, start_ms: int, now_ms) -> None:
        self.join_start_ms, self.now_ms = start_ms, now_ms
        self.join_time_ms = self.join_time_ms_in_round = 0

    def on_partitions_revoked(self, partitions) -> None:
        self.join_start_ms = self.now_ms()

    def on_partitions_assigned(self, partitions) -> None:
        elapsed = self.now_ms() - self.join_start_ms
        self.join_time_ms += elapsed
        self.join_time_ms_in_round += elapsed


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--broker-list", metavar="broker-list",
                   help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
    p.add_argument("--bootstrap-server", metavar="server to connect to",
                   help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to.")
    p.add_argument("--topic", metavar="topic", help="REQUIRED: The topic to consume from.")
    p.add_argument("--group", metavar="gid", default=None, help="The group id to consume on. "
                                                                "(default: perf-consumer-N)")
    p.add_argument("--fetch-size", type=int, metavar="size", default=1024 * 1024,
                   help="The amount of data to fetch in a single request. (default: 1048576)")
    p.add_argument("--from-latest", action="store_true",
                   help="If the consumer does not already have an established offset to consume from, start with "
                        "the latest message present in the log rather than the earliest message.")
    p.add_argument("--socket-buffer-size", type=int, metavar="size", default=2 * 1024 * 1024,
                   help="The size of the tcp RECV size. (default: 2097152)")
    p.add_argument("--threads", type=int, metavar="count", help="DEPRECATED AND IGNORED: Number of processing "
                                                                "threads.")
    p.add_argument("--num-fetch-threads", type=int, metavar="count",
                   help="DEPRECATED AND IGNORED: Number of fetcher threads.")
    p.add_argument("--consumer.config", metavar="config file", dest="consumer_config",
                   help="Consumer config properties file.")
    p.add_argument("--print-metrics", action="store_true",
                   help="Print out the metrics (not available: kafkalab's clients keep no metrics registry).")
    p.add_argument("--show-detailed-stats", action="store_true",
                   help="If set, stats are reported for each reporting interval as configured by reporting-interval")
    p.add_argument("--timeout", type=int, metavar="milliseconds", nargs="?", const=10_000, default=10_000,
                   help="The maximum allowed time in milliseconds between returned records. (default: 10000)")
    p.add_argument("--messages", type=int, metavar="count", help="REQUIRED: The number of messages to send or "
                                                                 "consume")
    p.add_argument("--reporting-interval", type=int, metavar="interval_ms", default=5000,
                   help="Interval in milliseconds at which to print progress info. (default: 5000)")
    p.add_argument("--date-format", metavar="date format", default=DEFAULT_DATE_FORMAT,
                   help="The date format to use for formatting the time field. See java.text.SimpleDateFormat for "
                        "options. (default: yyyy-MM-dd HH:mm:ss:SSS)")
    p.add_argument("--hide-header", action="store_true", help="If set, skips printing the header for the stats")


def add_parser(sub) -> None:
    """Mount as ``kafkalab consumer-perf-test``."""
    p = sub.add_parser("consumer-perf-test", help="measure consumer throughput (kafka-consumer-perf-test.sh)",
                       description="This tool is used to verify the consumer performance.")
    add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def consumer_props(args) -> dict:
    props = load_properties(args.consumer_config) if args.consumer_config else {}
    props["bootstrap.servers"] = args.bootstrap_server or args.broker_list
    props["group.id"] = args.group or f"perf-consumer-{random.randrange(100_000)}"
    props["receive.buffer.bytes"] = str(args.socket_buffer_size)
    props["max.partition.fetch.bytes"] = str(args.fetch_size)
    props["auto.offset.reset"] = "latest" if args.from_latest else "earliest"
    props["check.crcs"] = "false"
    for serde in ("key.deserializer", "value.deserializer"):   # Kafka's tool forces the byte-array ones
        props.pop(serde, None)
    props.setdefault("client.id", "perf-consumer-client")
    return props


def run(args, out=None, err=None, now_ms: Callable[[], int] = _now_ms) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    for flag, value in (("bootstrap-server", args.bootstrap_server or args.broker_list), ("topic", args.topic),
                        ("messages", args.messages)):
        if value is None:
            print(f'Missing required argument "[{flag}]"', file=err)
            return 1
    if args.threads is not None or args.num_fetch_threads is not None:
        print("WARNING: option [threads] and [num-fetch-threads] have been deprecated and will be ignored by the "
              "test", file=out)
    if args.print_metrics:
        print(f"{PROG}: --print-metrics is not available: kafkalab's consumer keeps no metrics registry.", file=err)
        return 1
    if args.reporting_interval <= 0:
        print("Reporting interval must be greater than 0.", file=err)
        return 1
    try:
        date_format = java_date_format(args.date_format)
        props = consumer_props(args)
        if not args.hide_header:
            print(DETAILED_HEADER if args.show_detailed_stats else HEADER, file=out)
        with Consumer(props) as consumer:
            start_ms = now_ms()
            timer = _RebalanceTimer(start_ms, now_ms)
            messages, nbytes = _consume(consumer, args, timer, date_format, out, now_ms)
            end_ms = now_ms()
    except (OSError, ValueError, ConfigException, KafkaProtocolError) as e:
        print(f"{PROG}: {type(e).__name__}: {e}", file=err)
        return 1
    if not args.show_detailed_stats:
        elapsed_sec = max(1, end_ms - start_ms) / 1000.0
        fetch_ms = end_ms - start_ms - timer.join_time_ms
        fetch_sec = fetch_ms / 1000.0
        mb = nbytes / MB
        print("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %s, %s" % (
            date_format(start_ms), date_format(end_ms), mb, mb / elapsed_sec, messages, messages / elapsed_sec,
            timer.join_time_ms, fetch_ms, _ratio(mb, fetch_sec), _ratio(messages, fetch_sec)), file=out)
    return 0


def _ratio(amount: float, seconds: float) -> str:
    """Java prints a double division by zero as ``Infinity`` / ``NaN``; so does this."""
    if seconds > 0:
        return "%.4f" % (amount / seconds)
    return "NaN" if amount == 0 else "Infinity"


def _consume(consumer, args, timer: _RebalanceTimer, date_format, out, now_ms):
    messages = nbytes = last_messages = last_bytes = 0
    consumer.subscribe([args.topic], listener=timer)
    current = last_report = last_consumed = now_ms()
    while messages < args.messages and current - last_consumed <= args.timeout:
        records = consumer.poll(0.1)
        current = now_ms()
        if records:
            last_consumed = current
        for record in records:
            messages += 1
            nbytes += len(record.key or b"") + len(record.value or b"")
            if current - last_report >= args.reporting_interval:
                if args.show_detailed_stats:
                    _print_progress(out, date_format, nbytes, last_bytes, messages, last_messages, last_report,
                                    current, timer.join_time_ms_in_round)
                timer.join_time_ms_in_round = 0
                last_report, last_messages, last_bytes = current, messages, nbytes
    if messages < args.messages:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({args.timeout} ms) "
              f"exceeded. You can use the --timeout option to increase the timeout.", file=out)
    return messages, nbytes


def _print_progress(out, date_format, nbytes, last_bytes, messages, last_messages, start_ms, end_ms,
                    join_ms) -> None:
    elapsed = max(1, end_ms - start_ms)
    interval_mb = (nbytes - last_bytes) / MB
    fetch_ms = end_ms - start_ms - join_ms
    fetch_mb_sec = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    fetch_msg_sec = 0.0 if fetch_ms <= 0 else 1000.0 * (messages - last_messages) / fetch_ms
    print("%s, %d, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f" % (
        date_format(end_ms), 0, nbytes / MB, 1000.0 * interval_mb / elapsed, messages,
        (messages - last_messages) / elapsed * 1000.0, join_ms, fetch_ms, fetch_mb_sec, fetch_msg_sec), file=out)


def main(argv: Optional[Sequence[str]] = None, out=None, err=None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="This tool is used to verify the consumer performance.")
    add_arguments(p)
    return run(p.parse_args(argv), out, err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
