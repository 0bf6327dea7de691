"""``kafkalab producer-perf-test``: Kafka's ``kafka-producer-perf-test.sh``, with kafkalab's producer.

Theory of operation
-------------------
Mirrors ``org.apache.kafka.tools.ProducerPerformance`` (Kafka 3.9): the same flags (``--topic``,
``--num-records``, exactly one of ``--record-size`` / ``--payload-file`` / ``--payload-monotonic``,
``--payload-delimiter``, ``--throughput``, ``--producer-props``, ``--producer.config``, ``--transactional-id``,
``--transaction-duration-ms``) and the same lines. Records are sent without a key as fast as the producer takes
them, paced by :class:`~kafkalab.tools.throughput_throttler.ThroughputThrottler`; each acknowledgement's latency
(send call to callback, ms) goes into :class:`Stats`, which prints a window line every 5 s::

    12345 records sent, 2468.5 records/sec (2.35 MB/sec), 4.1 ms avg latency, 31.0 ms max latency.

and, after the producer has flushed and closed, the total with percentiles of a sample of at most 500,000
latencies (every ``num_records // min(num_records, 500000)``-th)::

    50000 records sent, 9990.009990 records/sec (9.53 MB/sec), 3.21 ms avg latency, 50.00 ms max latency, 2 ms 50th, 8 ms 95th, 20 ms 99th, 45 ms 99.9th.

(``%f`` records/sec, two decimals for latencies: Kafka's format string.) A random payload is upper-case ASCII
letters from a seeded generator, refilled per record, as Kafka does. A failed send is printed on stderr as it
happens and not counted; the run goes on and exits 0, as Kafka's. ``--print-metrics`` is refused: kafkalab's
clients keep no metrics registry to print.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
import threading
import time as _time
from typing import Callable, List, Optional, Sequence

from kafkalab.clients import ConfigException, KafkaProtocolError, Producer
from kafkalab.common.config import load_properties
from kafkalab.tools.throughput_throttler import ThroughputThrottler

__all__ = ["Stats", "add_parser", "main", "run", "read_payload_file", "read_props"]

PROG = "producer-performance"
DEFAULT_CLIENT_ID = "perf-producer-client"
DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
REPORTING_INTERVAL_MS = 5000
MAX_LATENCY_SAMPLES = 500_000


def _now_ms() -> int:
    return int(_time.time() * 1000)


class Stats:
    """Counts, latencies and the window/total lines of ``ProducerPerformance.Stats``."""

    def __init__(self, num_records: int, reporting_interval_ms: int, out=None,
                 now_ms: Callable[[], int] = _now_ms) -> None:
        self._now_ms = now_ms
        self.out = out or sys.stdout
        self.start = self.window_start = now_ms()
        self.sampling = max(1, num_records // max(1, min(num_records, MAX_LATENCY_SAMPLES)))
        self.latencies: List[int] = []
        self.capacity = num_records // self.sampling + 1
        self.reporting_interval = reporting_interval_ms
        self.iteration = self.count = self.bytes = self.max_latency = self.total_latency = 0
        self._new_window_counts()
        self._lock = threading.Lock()

    def _new_window_counts(self) -> None:
        self.window_count = self.window_max_latency = self.window_total_latency = self.window_bytes = 0

    def record(self, latency: int, size: int, time_ms: int) -> None:
        """One acknowledged record: ``latency`` ms, ``size`` payload bytes, acknowledged at ``time_ms``."""
        with self._lock:
            self.count += 1
            self.bytes += size
            self.total_latency += latency
            self.max_latency = max(self.max_latency, latency)
            self.window_count += 1
            self.window_bytes += size
            self.window_total_latency += latency
            self.window_max_latency = max(self.window_max_latency, latency)
            if self.iteration % self.sampling == 0 and len(self.latencies) < self.capacity:
                self.latencies.append(latency)
            self.iteration += 1
            if time_ms - self.window_start >= self.reporting_interval:
                self.print_window()
                self.window_start = self._now_ms()
                self._new_window_counts()

    def print_window(self) -> None:
        elapsed = max(1, self._now_ms() - self.window_start)
        recs_per_sec = 1000.0 * self.window_count / elapsed
        mb_per_sec = 1000.0 * self.window_bytes / elapsed / (1024.0 * 1024.0)
        avg = self.window_total_latency / self.window_count if self.window_count else float("nan")
        print("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency."
              % (self.window_count, recs_per_sec, mb_per_sec, avg, float(self.window_max_latency)), file=self.out)

    def percentiles(self, *fractions: float) -> List[int]:
        ordered = sorted(self.latencies)
        if not ordered:
            return [0 for _ in fractions]
        return [ordered[int(f * len(ordered))] for f in fractions]

    def print_total(self) -> None:
        elapsed = max(1, self._now_ms() - self.start)
        recs_per_sec = 1000.0 * self.count / elapsed
        mb_per_sec = 1000.0 * self.bytes / elapsed / (1024.0 * 1024.0)
        avg = self.total_latency / self.count if self.count else float("nan")
        p50, p95, p99, p999 = self.percentiles(0.5, 0.95, 0.99, 0.999)
        print("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "
              "%d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th."
              % (self.count, recs_per_sec, mb_per_sec, avg, float(self.max_latency), p50, p95, p99, p999),
              file=self.out)


def read_payload_file(path: Optional[str], delimiter: str, out=None) -> List[bytes]:
    """Payloads of ``--payload-file``: the UTF-8 text split on ``delimiter`` (a regular expression, as Java's
    ``String.split``: trailing empty pieces dropped)."""
    if path is None:
        return []
    out = out or sys.stdout
    print(f"Reading payloads from: {os.path.abspath(path)}", file=out)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise ValueError("File does not exist or empty file provided.")
    with open(path, encoding="utf-8") as f:
        pieces = re.split(delimiter, f.read())
    while len(pieces) > 1 and pieces[-1] == "":
        pieces.pop()
    print(f"Number of messages read: {len(pieces)}", file=out)
    return [p.encode("utf-8") for p in pieces]


def read_props(producer_props: Optional[Sequence[str]], config_file: Optional[str], transactional_id: str,
               transactions_enabled: bool) -> dict:
    """``--producer.config`` first, ``--producer-props`` over it; ``client.id`` defaults to
    ``perf-producer-client``."""
    props: dict = {}
    if config_file is not None:
        props.update(load_properties(config_file))
    for prop in producer_props or ():
        pieces = prop.split("=")
        if len(pieces) != 2:
            raise ValueError(f"Invalid property: {prop}")
        props[pieces[0]] = pieces[1]
    for serde in ("key.serializer", "value.serializer"):     # Kafka's tool forces the byte-array serializers
        props.pop(serde, None)
    if transactions_enabled:
        props["transactional.id"] = transactional_id
    props.setdefault("client.id", DEFAULT_CLIENT_ID)
    return props


#: Random bytes become letters by ``translate``: byte b is ``A + b % 26``. Bytes from 234 (26 * 9) up are
#: dropped and drawn again, so that every letter is equally likely, as Kafka's ``nextInt(26)``.
_LETTER_OF_BYTE = bytes(65 + b % 26 for b in range(256))
_UNEVEN_BYTES = bytes(range(26 * (256 // 26), 256))


def random_letters(rng: random.Random, n: int) -> bytes:
    """``n`` upper-case ASCII letters, each uniformly random, from ``rng`` (a few C calls per payload, not a
    Python call per byte: this runs once per record)."""
    out = rng.randbytes(n + n // 8 + 8).translate(_LETTER_OF_BYTE, _UNEVEN_BYTES)
    while len(out) < n:
        out += rng.randbytes(n - len(out) + 8).translate(_LETTER_OF_BYTE, _UNEVEN_BYTES)
    return out[:n]


class _Payloads:
    """Kafka's ``generateRandomPayload``: a random line of the payload file, fresh random letters, or the
    record's number."""

    def __init__(self, record_size: Optional[int], payload_list: List[bytes], monotonic: bool) -> None:
        self.record_size, self.payload_list, self.monotonic = record_size, payload_list, monotonic
        self.random = random.Random(0)

    def next(self, i: int) -> bytes:
        if self.payload_list:
            return self.payload_list[self.random.randrange(len(self.payload_list))]
        if self.record_size is not None:
            return random_letters(self.random, self.record_size)
        return str(i).encode()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", required=True, metavar="TOPIC", help="produce messages to this topic")
    p.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS", dest="num_records",
                   help="number of messages to produce")
    payload = p.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE", dest="record_size",
                         help="message size in bytes. Note that you must provide exactly one of --record-size or "
                              "--payload-file or --payload-monotonic.")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE", dest="payload_file",
                         help="file to read the message payloads from. This works only for UTF-8 encoded text "
                              "files. Payloads will be read from this file and a payload will be randomly selected "
                              "when sending messages.")
    payload.add_argument("--payload-monotonic", action="store_true", dest="payload_monotonic",
                         help="payload is monotonically increasing integer.")
    p.add_argument("--payload-delimiter", metavar="PAYLOAD-DELIMITER", dest="payload_delimiter", default="\\n",
                   help="provides delimiter to be used when --payload-file is provided. Defaults to new line. "
                        "(default: \\n)")
    p.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                   help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this "
                        "to -1 to disable throttling.")
    p.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE", dest="producer_props",
                   help="kafka producer related configuration properties like bootstrap.servers,client.id etc. "
                        "These configs take precedence over those passed via --producer.config.")
    p.add_argument("--producer.config", metavar="CONFIG-FILE", dest="producer_config_file",
                   help="producer config properties file.")
    p.add_argument("--print-metrics", action="store_true", dest="print_metrics",
                   help="print out metrics at the end of the test (not available: kafkalab's clients keep no "
                        "metrics registry).")
    p.add_argument("--transactional-id", metavar="TRANSACTIONAL-ID", dest="transactional_id",
                   default=DEFAULT_TRANSACTIONAL_ID,
                   help="The transactionalId to use if transaction-duration-ms is > 0.")
    p.add_argument("--transaction-duration-ms", type=int, metavar="TRANSACTION-DURATION",
                   dest="transaction_duration_ms", default=0,
                   help="The max age of each transaction. The commitTransaction will be called after this time "
                        "has elapsed. Transactions are only enabled if this value is positive.")


def add_parser(sub) -> None:
    """Mount as ``kafkalab producer-perf-test``."""
    p = sub.add_parser("producer-perf-test", help="measure producer throughput and latency "
                                                  "(kafka-producer-perf-test.sh)",
                       description="This tool is used to verify the producer performance.")
    add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def run(args, out=None, err=None, now_ms: Callable[[], int] = _now_ms, sleep=_time.sleep) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if args.producer_props is None and args.producer_config_file is None:
        print(f"{PROG}: error: Either --producer-props or --producer.config must be specified.", file=err)
        return 1
    if args.print_metrics:
        print(f"{PROG}: error: --print-metrics is not available: kafkalab's producer keeps no metrics registry.",
              file=err)
        return 1
    if args.record_size is not None and args.record_size < 0:
        print(f"{PROG}: error: --record-size must not be negative.", file=err)
        return 1
    delimiter = "\n" if args.payload_delimiter == "\\n" else args.payload_delimiter
    transactions = args.transaction_duration_ms > 0
    try:
        payloads = _Payloads(args.record_size, read_payload_file(args.payload_file, delimiter, out),
                             args.payload_monotonic)
        props = read_props(args.producer_props, args.producer_config_file, args.transactional_id, transactions)
        return _produce(args, props, payloads, transactions, out, err, now_ms, sleep)
    except (OSError, ValueError, re.error, ConfigException, KafkaProtocolError) as e:
        print(f"{PROG}: {type(e).__name__}: {e}", file=err)
        return 1


def _produce(args, props, payloads: _Payloads, transactions: bool, out, err, now_ms, sleep) -> int:
    with Producer(props) as producer:
        if transactions:
            producer.init_transactions()
        stats = Stats(args.num_records, REPORTING_INTERVAL_MS, out, now_ms)
        throttler = ThroughputThrottler(args.throughput, now_ms(), sleep)
        in_transaction = 0
        transaction_start = 0
        for i in range(args.num_records):
            payload = payloads.next(i)
            if transactions and in_transaction == 0:
                producer.begin_transaction()
                transaction_start = now_ms()
            send_start = now_ms()
            producer.send(args.topic, payload, on_delivery=_callback(stats, send_start, len(payload), err, now_ms))
            in_transaction += 1
            if transactions and args.transaction_duration_ms <= send_start - transaction_start:
                producer.commit_transaction()
                in_transaction = 0
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
        if transactions and in_transaction:
            producer.commit_transaction()
        producer.flush()
    stats.print_total()
    return 0


def _callback(stats: Stats, start_ms: int, size: int, err, now_ms):
    def on_delivery(error, metadata) -> None:
        now = now_ms()
        if error is None:                      # only acknowledged records count, as in Kafka's PerfCallback
            stats.record(now - start_ms, size, now)
        else:                                  # Kafka prints the exception and goes on; the exit status stays 0
            print(f"{type(error).__name__}: {error}", file=err)
    return on_delivery


def main(argv: Optional[Sequence[str]] = None, out=None, err=None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="This tool is used to verify the producer performance.")
    add_arguments(p)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        p.print_help(out or sys.stdout)
        return 0
    return run(p.parse_args(argv), out, err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
