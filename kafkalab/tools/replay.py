"""Replay a JSON-lines event file into a topic, at a chosen rate, keys and event times preserved.

Theory of operation
-------------------
**What replay means.** A recorded stream (``data/clickstream/events.jsonl``: one JSON event per line, in the
order the shop's collector *received* them) is sent again, line by line, to a Kafka topic, as if the shop were
live. Each line becomes one record: its **value** is the line's bytes exactly as stored (no re-encoding, so what a
consumer reads is byte for byte what the file holds), its **key** the UTF-8 bytes of one field (``user_id`` by
default), and it carries an ``event_time`` header with the event's ISO-8601 time. Replaying is how the labs get a
realistic, repeatable stream: the same file gives the same records in the same order every time.

**Event time vs processing time.** An event has the time it *happened* (``event_time``, stamped by the browser)
and the times it is *seen*: when it reached the collector, when it is appended to the log, when a stream job
processes it. Kafka records carry one timestamp; with ``timestamp="event-time"`` (the default) the producer
sets it to the event time (``CreateTime``: the broker keeps the producer's value), so a consumer, or Spark's
``timestamp`` column, sees when the click happened even though it is replayed hours or years later. With
``timestamp="now"`` the record is stamped with the replay's clock instead -- processing time -- which is what
you get from a producer that never sets a timestamp; the ``event_time`` header and the JSON field still hold the
real time. A job that groups by *event* time gets the same windows however fast, slowly or late the replay runs;
one that groups by processing time does not. The file's few out-of-order and late events (their event time is
behind events sent before them) are what watermarks exist for.

**Why keys keep per-user order.** The default partitioner hashes the key (murmur2) to pick the partition, so
every event of a user goes to the same partition, and a partition is an ordered log: a consumer reads one user's
events in the order they were sent, whatever the number of partitions. Without keys the events of one user are
spread over all partitions and their relative order is lost. The producer is **idempotent** (``acks=all``,
``enable.idempotence=true``): a batch retried after a lost answer is not written twice and batches are not
reordered by retries, so each line is in the topic exactly once, in file order within its partition.

**Pacing.** ``rate`` is events per second: line *i* is sent no earlier than ``i / rate`` seconds after the
first, measured on an injectable clock (:class:`kafkalab.common.Time`). The replay sleeps through
``time.sleep``; a :class:`~kafkalab.common.MockTime` makes pacing instant and deterministic in tests.
``rate=None`` sends as fast as the producer takes them. ``on_sent(index, metadata)`` sees each acknowledged
record: the command feeds it a :class:`TerminalProgress` line on a terminal, a notebook a
:func:`kafkalab.viz.progress` bar (``on_sent=bar.step``).

Mirrors, loosely, ``kafka-verifiable-producer.sh`` / ``kafka-producer-perf-test.sh`` (``--throughput``) and
``kafka-console-producer.sh`` (``--property parse.key``), fed from a file.
"""
from __future__ import annotations

import argparse
import collections
import datetime as _dt
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from kafkalab.clients import KafkaProtocolError, Producer
from kafkalab.common.time import SYSTEM, Time

__all__ = ["replay", "ReplaySummary", "parse_event_time", "add_parser", "main"]

TIMESTAMPS = ("event-time", "now")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def parse_event_time(value: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 time (``2026-03-14T19:00:01.015Z``; no zone = UTC)."""
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    t = _dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    delta = t - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@dataclass
class ReplaySummary:
    """What a replay sent: ``count`` records, ``bytes`` of keys and values, per partition the first and last
    offset written, ``elapsed`` seconds on the replay's clock (first send to the last acknowledgement)."""

    topic: str
    count: int = 0
    bytes: int = 0
    partitions: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def rate(self) -> float:
        """Achieved events per second."""
        return self.count / self.elapsed if self.elapsed > 0 else float("inf")

    def __str__(self) -> str:
        parts = ", ".join(f"p{p}: {lo}..{hi}" for p, (lo, hi) in sorted(self.partitions.items()))
        rate = f"{self.rate:,.0f} events/s" if self.elapsed > 0 else "-"
        return (f"replayed {self.count} events ({self.bytes:,} bytes) to {self.topic} in {self.elapsed:.2f} s "
                f"({rate})\noffsets {parts or '(none)'}")


def replay(path, topic: str, bootstrap_servers: str, *, rate: Optional[float] = None,
           key_field: Optional[str] = "user_id", timestamp: str = "event-time", limit: Optional[int] = None,
           skip: int = 0, producer_config: Optional[Mapping[str, Any]] = None, time: Optional[Time] = None,
           on_sent: Optional[Callable[[int, Any], None]] = None,
           event_time_field: str = "event_time") -> ReplaySummary:
    """Send the JSON lines of ``path`` to ``topic``; returns a :class:`ReplaySummary`.

    With ``timestamp="event-time"`` the records carry the events' own (possibly old) times, and time-based
    retention counts from them: a topic with the default ``retention.ms`` (7 days) deletes a replay of older
    events at its next retention check. Replay old data into a topic with ``retention.ms=-1``, or use ``"now"``.

    ``rate`` events/s (None = as fast as possible); ``key_field`` the field whose value (as UTF-8) is the key
    (None = no key); ``timestamp`` ``"event-time"`` (record timestamp = the event's time) or ``"now"`` (the
    clock's time at sending); ``skip`` events to pass over first (to replay a file in parts);
    ``limit`` at most N events (after ``skip``); ``producer_config`` extra producer settings
    (Kafka's names; ``bootstrap.servers``, ``acks=all`` and ``enable.idempotence=true`` are the defaults);
    ``time`` the clock pacing uses (default: the real one); ``on_sent(index, metadata)`` is called on the
    caller's thread for each record once acknowledged, in file order (``index`` counts from 0).
    """
    _check_arguments(timestamp, rate, limit, skip)
    clock = time or SYSTEM
    config = {"bootstrap.servers": bootstrap_servers, "acks": "all", "enable.idempotence": True,
              "client.id": "kafkalab-replay", **dict(producer_config or {})}
    summary = ReplaySummary(topic)
    pending: collections.deque = collections.deque()     # (index, future) in file order

    def settle(block: bool) -> None:
        while pending and (block or pending[0][1].done()):
            index, future = pending.popleft()
            md = future.result()                          # raises the send's error, if any
            seen = summary.partitions.get(md.partition)
            summary.partitions[md.partition] = ((md.offset, md.offset) if seen is None else
                                                (min(seen[0], md.offset), max(seen[1], md.offset)))
            if on_sent is not None:
                on_sent(index, md)

    start_ns = clock.nanoseconds()
    with open(path, "rb") as f, Producer(config) as producer:
        index = 0
        skipped = 0
        for lineno, raw in enumerate(f, 1):
            if limit is not None and index >= limit:
                break
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            if skipped < skip:
                skipped += 1
                continue
            key, headers, event_ms = _parse_event(f"{path}:{lineno}", line, key_field, event_time_field, timestamp)
            if rate is not None:
                due_ns = start_ns + int(index * 1e9 / rate)
                now_ns = clock.nanoseconds()
                if due_ns > now_ns:
                    settle(False)
                    clock.sleep((due_ns - now_ns) / 1e6)
            ts = event_ms if timestamp == "event-time" else clock.milliseconds()
            pending.append((index, producer.send(topic, line, key=key, headers=headers, timestamp=ts)))
            summary.count += 1
            summary.bytes += len(line) + (len(key) if key else 0)
            index += 1
            settle(False)
        producer.flush()
        settle(True)
    summary.elapsed = (clock.nanoseconds() - start_ns) / 1e9
    return summary


def _check_arguments(timestamp: str, rate: Optional[float], limit: Optional[int], skip: int) -> None:
    if timestamp not in TIMESTAMPS:
        raise ValueError(f"timestamp must be one of {TIMESTAMPS}, not {timestamp!r}")
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be positive events per second (or None), not {rate!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit!r}")
    if skip < 0:
        raise ValueError(f"skip must be >= 0, not {skip!r}")


def _parse_event(where: str, line: bytes, key_field: Optional[str], event_time_field: str, timestamp: str):
    """One JSON line -> (key, headers, event time in ms or None); ``where`` is ``path:lineno`` for errors."""
    try:
        event = json.loads(line)
    except ValueError as e:
        raise ValueError(f"{where}: not a JSON object: {e}") from None
    if not isinstance(event, dict):
        raise ValueError(f"{where}: not a JSON object")
    key = None
    if key_field is not None:
        if event.get(key_field) is None:
            raise ValueError(f"{where}: no key field {key_field!r}")
        v = event[key_field]
        key = (v if isinstance(v, str) else json.dumps(v)).encode("utf-8")
    headers = []
    event_ms = None
    if isinstance(event.get(event_time_field), str):
        headers.append(("event_time", event[event_time_field].encode("utf-8")))
        event_ms = parse_event_time(event[event_time_field])
    if timestamp == "event-time" and event_ms is None:
        raise ValueError(f"{where}: no {event_time_field!r} field for timestamp=event-time")
    return key, headers, event_ms


class TerminalProgress:
    """The command's sign of life on a terminal: ``sent 1,200/5,000 events (2,400 events/s)``, rewritten in
    place (``\\r``) for the first event and then at most every ``interval_s``, and erased at the end (the
    summary follows). Kafka's ``kafka-producer-perf-test.sh`` prints such a line every few seconds. Pass it as
    ``on_sent``; notebooks use :func:`kafkalab.viz.progress` instead."""

    def __init__(self, stream, clock: Time = SYSTEM, total: Optional[int] = None, interval_s: float = 0.5):
        self.stream, self.clock, self.total, self.interval_s = stream, clock, total, interval_s
        self.count = 0
        self._start_ns = clock.nanoseconds()
        self._last_ns: Optional[int] = None
        self._width = 0

    def __call__(self, index: int, _metadata: Any = None) -> None:
        self.count = index + 1
        now = self.clock.nanoseconds()
        if self._last_ns is not None and now - self._last_ns < self.interval_s * 1e9:
            return
        self._last_ns = now
        elapsed = (now - self._start_ns) / 1e9
        rate = f"{self.count / elapsed:,.0f} events/s" if elapsed > 0 else "- events/s"
        of = f"/{self.total:,}" if self.total is not None else ""
        line = f"sent {self.count:,}{of} events ({rate})"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(line))

    def close(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


# -- the command line ---------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a JSON-lines file, one event per line (e.g. data/clickstream/events.jsonl)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT",
                   help="REQUIRED: the server(s) to connect to (comma separated)")
    p.add_argument("--topic", required=True, help="REQUIRED: the topic to produce to")
    p.add_argument("--rate", type=float, default=None, metavar="EVENTS/S",
                   help="events per second (default: as fast as possible)")
    p.add_argument("--key-field", default="user_id",
                   help="the field whose value is the record key (default user_id; '' for no key)")
    p.add_argument("--timestamp", choices=TIMESTAMPS, default="event-time",
                   help="record timestamp: the event's time (default) or the time of sending; old event times "
                        "fall under the topic's retention.ms (use a topic with retention.ms=-1)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="send at most N events")
    p.add_argument("--skip", type=int, default=0, metavar="N", help="pass over the first N events")
    p.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                   help="a producer config (Kafka's names), repeatable")


def add_parser(sub) -> None:
    """Mount as ``kafkalab replay`` on an argparse sub-parsers object."""
    p = sub.add_parser("replay", help="replay a JSON-lines event file into a topic (keys and event times kept)",
                       description="Replay a JSON-lines event file into a topic at a chosen rate, keys and "
                                   "event times preserved.")
    add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def run(args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    config = {}
    for prop in args.producer_property:
        k, sep, v = prop.partition("=")
        if not sep:
            print(f"kafkalab replay: --producer-property needs KEY=VALUE, not {prop!r}", file=err)
            return 2
        config[k.strip()] = v.strip()
    progress = TerminalProgress(err, total=args.limit) if err.isatty() else None
    try:
        summary = replay(args.file, args.topic, args.bootstrap_server, rate=args.rate,
                         key_field=args.key_field or None, timestamp=args.timestamp, limit=args.limit,
                         skip=args.skip,
                         producer_config=config, on_sent=progress)
    except (OSError, ValueError, KafkaProtocolError) as e:
        if progress is not None:
            progress.close()
        print(f"kafkalab replay: {e}", file=err)
        return 1
    if progress is not None:
        progress.close()
    print(summary, file=out)
    return 0


def main(argv: Optional[Sequence[str]] = None, out=None, err=None) -> int:
    p = argparse.ArgumentParser(prog="kafkalab replay",
                                description="Replay a JSON-lines event file into a topic at a chosen rate.")
    add_arguments(p)
    return run(p.parse_args(argv), out, err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
