"""The Spark source's bookkeeping, without Spark and without sockets: options, offsets, rate limits, data loss.

Theory of operation
-------------------
A Structured Streaming source is asked the same few questions every micro-batch -- *where does the query
start?*, *what is there now?*, *how much of it may this batch take?*, *which ranges become tasks?* -- and
every answer is a small piece of arithmetic on offsets. This module holds that arithmetic as plain functions
on dicts, so it can be read and tested with no JVM in sight; :mod:`.source` only adds the network calls
(ListOffsets and Metadata through kafkalab's :class:`~kafkalab.clients.Admin`) and Spark's classes.

**Offsets** are what Spark writes into the checkpoint (``offsets/<batch>``) after each micro-batch, as JSON:
one next-offset-to-read per partition, ``{"events": {"0": 10, "1": 9}}``. The partition keys are strings
because JSON object keys are (Spark hands our dicts back through ``json.loads``), and the JVM decides whether
anything changed by comparing the JSON *text*, so :func:`normalize` always builds the dict in one order
(topics sorted, partitions numerically): an unchanged position serializes to the identical string.

**Options** are the Kafka source's (``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets``,
``endingOffsets``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``, ``includeHeaders``, ``kafka.*``), checked
by :func:`parse_options` with the same rules: exactly one way to subscribe; ``-2`` means earliest and ``-1``
latest in offset JSON; ``latest`` cannot start a batch query nor ``earliest`` end one; consumer settings that
would fight the source (``group.id``, ``auto.offset.reset``, ``enable.auto.commit``, deserializers,
interceptors) are refused, naming the source option to use instead.

**Admission control.** ``maxOffsetsPerTrigger`` caps the rows of one micro-batch. :func:`rate_limit` splits
the cap over the partitions in proportion to their backlog: a partition holding a share ``size/total`` of what
is waiting gets ``limit * size/total`` more offsets, rounded down -- except that a share below one is rounded
*up*, so a small partition is never starved (which is why a batch may exceed the cap by a few rows when many
partitions hold little data). No partition is moved past its latest offset.

**Data loss.** Offsets in the checkpoint can stop existing: retention or ``DeleteRecords`` moved the log start
past them, a topic was deleted and re-created smaller, a partition disappeared. :func:`plan_ranges` (driver)
and :func:`clamp_to_log` (executor) detect it; with ``failOnDataLoss=true`` (the default) the query fails with
:class:`DataLossError`, with ``false`` the source logs a warning and skips to what still exists.

Mirrors Spark's ``KafkaSourceProvider`` (option validation), ``KafkaSourceOffset`` / ``JsonUtils`` (the offset
JSON), ``KafkaMicroBatchStream.rateLimit`` and ``planInputPartitions`` / ``KafkaOffsetRangeCalculator``
(admission control, new and lost partitions) in ``connector/kafka-0-10-sql``.
"""
from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Union

__all__ = ["EARLIEST", "LATEST", "SourceOptionError", "DataLossError", "Subscription", "SourceOptions",
           "parse_options", "parse_sink_options", "normalize", "to_json", "parse_offsets_json", "resolve_offsets",
           "rate_limit", "plan_ranges", "split_ranges", "clamp_to_log", "report_data_loss", "OffsetMap", "flatten", "nest"]

log = logging.getLogger("kafkalab.spark")

EARLIEST, LATEST = -2, -1

#: ``{"topic": {"0": 10, "1": 9}}`` -- the checkpoint's shape (str partition keys).
OffsetMap = dict


class SourceOptionError(ValueError):
    """An option of ``format("kafkalab")`` is missing, malformed, or not allowed (Spark raises
    IllegalArgumentException for the same cases)."""


class DataLossError(RuntimeError):
    """Offsets the query still needed no longer exist in the log (raised with ``failOnDataLoss=true``)."""


# -- offset maps ------------------------------------------------------------------------------------------------
def flatten(offsets: Mapping) -> dict:
    """``{"t": {"0": 5}}`` -> ``{("t", 0): 5}``."""
    return {(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def nest(flat: Mapping) -> OffsetMap:
    """``{("t", 0): 5}`` -> ``{"t": {"0": 5}}`` in the canonical order."""
    out: dict = {}
    for (t, p) in sorted(flat, key=lambda tp: (tp[0], int(tp[1]))):
        out.setdefault(t, {})[str(int(p))] = int(flat[(t, p)])
    return out


def normalize(offsets: Mapping) -> OffsetMap:
    """The canonical form: topics sorted, partition keys as str sorted numerically, values int."""
    return nest(flatten(offsets))


def to_json(offsets: Mapping) -> str:
    """The compact JSON Spark's Kafka source writes: ``{"events":{"0":10,"1":9}}``."""
    return json.dumps(normalize(offsets), separators=(",", ":"))


def parse_offsets_json(option: str, text: str) -> OffsetMap:
    """Parse ``startingOffsets`` / ``endingOffsets`` JSON; a clear error names the option when it is malformed."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceOptionError(f'{option}: expected "earliest", "latest" or JSON like '
                                f'{{"topicA":{{"0":23,"1":-1}}}}, got {text!r} ({e.msg})') from None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise SourceOptionError(f'{option}: the JSON must map topics to {{partition: offset}}, e.g. '
                                f'{{"topicA":{{"0":23,"1":-1}}}}; got {text!r}')
    for topic, parts in raw.items():
        for p, o in parts.items():
            if not str(p).lstrip("-").isdigit() or int(p) < 0:
                raise SourceOptionError(f"{option}: partition {p!r} of topic {topic!r} is not a partition number")
            if isinstance(o, bool) or not isinstance(o, int) or o < EARLIEST:
                raise SourceOptionError(f"{option}: offset {o!r} for {topic}-{p} must be an integer >= 0, "
                                        f"or -2 (earliest) / -1 (latest)")
    return normalize(raw)


# -- options ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Subscription:
    """What the query reads: ``subscribe`` (names), ``subscribePattern`` (a regex over all topic names, matched
    whole as Java's ``Pattern.matches``) or ``assign`` (fixed topic-partitions)."""

    kind: str                                   # "subscribe" | "subscribePattern" | "assign"
    topics: tuple = ()
    pattern: Optional[str] = None
    assigned: tuple = ()                        # ((topic, partition), ...)

    def wanted_topics(self, all_topics: Iterable[str]) -> list[str]:
        """The topics to ask Metadata about, from the cluster's topic names."""
        names = set(all_topics)
        if self.kind == "subscribe":
            return sorted(t for t in self.topics if t in names)
        if self.kind == "subscribePattern":
            rx = re.compile(self.pattern)
            return sorted(t for t in names if rx.fullmatch(t) and not t.startswith("__"))
        return sorted({t for t, _ in self.assigned})

    def select(self, partition_counts: Mapping[str, int]) -> list[tuple]:
        """``[(topic, partition)]`` this subscription reads, given ``{topic: partition count}``."""
        if self.kind == "assign":
            return sorted(self.assigned)
        return sorted((t, p) for t in self.wanted_topics(partition_counts) for p in range(partition_counts[t]))


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    client_config: dict                         # the kafka.* options, prefix stripped (bootstrap included)
    subscription: Subscription
    starting: Union[str, OffsetMap]             # "earliest" | "latest" | {"t": {"0": n}} (-2/-1 allowed)
    ending: Union[str, OffsetMap, None]         # batch only: "latest" | {"t": {"0": n}} (-1 allowed)
    max_offsets_per_trigger: Optional[int] = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    min_partitions: Optional[int] = None        # split offset ranges into at least this many tasks
    ignored: tuple = field(default=())          # options accepted but without effect here


#: kafka.* settings the source owns, and what to use instead (Spark refuses the same ones).
_REFUSED = {
    "group.id": "the source reads by assignment and keeps its progress in the checkpoint, not in a consumer "
                "group (kafkalab's source takes no group id; remove the option)",
    "auto.offset.reset": 'set the source option "startingOffsets" to "earliest" or "latest" (or JSON) instead; '
                         "a restarted query always resumes from its checkpoint",
    "enable.auto.commit": "the source commits nothing to Kafka: its offsets live in the checkpoint",
    "key.deserializer": "keys are always returned as bytes (binary column); cast or parse them with DataFrame "
                        "operations, e.g. col('key').cast('string')",
    "value.deserializer": "values are always returned as bytes (binary column); cast or parse them with DataFrame "
                          "operations, e.g. col('value').cast('string') or from_json",
    "interceptor.classes": "interceptors would see the source's internal reads; they are not supported",
}
_REFUSED_SINK = {
    "key.serializer": "the sink writes the key column as bytes (string columns are UTF-8 encoded)",
    "value.serializer": "the sink writes the value column as bytes (string columns are UTF-8 encoded)",
    "transactional.id": "the sink is at-least-once with an idempotent producer; transactions are not used",
    "interceptor.classes": "interceptors are not supported",
}
#: Source options of Spark's Kafka source that kafkalab's does not implement (an error beats a silent change).
_UNSUPPORTED = {"startingtimestamp", "startingoffsetsbytimestamp", "endingtimestamp", "endingoffsetsbytimestamp",
                "startingoffsetsbytimestampstrategy", "minoffsetspertrigger", "maxtriggerdelay"}
#: Accepted for compatibility, without effect.
_IGNORED = {"maxrecordsperpartition", "groupidprefix", "fetchoffset.numretries",
            "fetchoffset.retryintervalms"}


def _bool(options: Mapping, name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    v = str(raw).strip().lower()
    if v not in ("true", "false"):
        raise SourceOptionError(f'{name} must be "true" or "false", got {raw!r}')
    return v == "true"


def _client_config(options: Mapping, refused: Mapping) -> dict:
    config = {k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.")}
    for name, why in refused.items():
        if name in config:
            raise SourceOptionError(f"Kafka option 'kafka.{name}' is not supported: {why}.")
    if not str(config.get("bootstrap.servers", "")).strip():
        raise SourceOptionError("Option 'kafka.bootstrap.servers' must be specified (host:port of the lab "
                                "broker, e.g. cluster.bootstrap_servers).")
    return config


def _subscription(options: Mapping) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if options.get(k) is not None]
    names = {"subscribe": "subscribe", "subscribepattern": "subscribePattern", "assign": "assign"}
    if len(given) != 1:
        shown = ", ".join(names[k] for k in given) or "none"
        raise SourceOptionError("Exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
                                f"specified (got: {shown}).")
    kind, raw = given[0], str(options[given[0]])
    if kind == "subscribe":
        topics = tuple(sorted({t.strip() for t in raw.split(",") if t.strip()}))
        if not topics:
            raise SourceOptionError(f"No topics to subscribe to in option 'subscribe': {raw!r}")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        if not raw.strip():
            raise SourceOptionError("Pattern to subscribe is empty: option 'subscribePattern'")
        try:
            re.compile(raw)
        except re.error as e:
            raise SourceOptionError(f"Option 'subscribePattern' is not a valid regular expression: {e}") from None
        return Subscription("subscribePattern", pattern=raw)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, list) and all(isinstance(p, int) and p >= 0 for p in v)
                                                for v in parsed.values()):
        raise SourceOptionError(f"Option 'assign' must be JSON like {{\"topicA\":[0,1],\"topicB\":[0]}}, "
                                f"got {raw!r}")
    assigned = tuple(sorted({(t, p) for t, ps in parsed.items() for p in ps}))
    if not assigned:
        raise SourceOptionError(f"No topic-partitions to assign in option 'assign': {raw!r}")
    return Subscription("assign", assigned=assigned)


def _offsets_option(options: Mapping, name: str, default: Optional[str], *, streaming: bool,
                    ending: bool) -> Union[str, OffsetMap, None]:
    raw = options.get(name.lower())
    if raw is None:
        return default
    text = str(raw).strip()
    word = text.lower()
    if word in ("earliest", "latest"):
        if ending and word == "earliest":
            raise SourceOptionError(f'{name}: "earliest" is not allowed as an ending offset for batch queries '
                                    f'(use "latest" or JSON)')
        if not ending and not streaming and word == "latest":
            raise SourceOptionError(f'{name}: "latest" is not allowed as a starting offset for batch queries '
                                    f'(use "earliest" or JSON)')
        return word
    offsets = parse_offsets_json(name, text)
    for (t, p), o in flatten(offsets).items():
        if ending and o == EARLIEST:
            raise SourceOptionError(f"{name}: ending offset for {t}-{p} can't be -2 (earliest) in a batch query")
        if not ending and not streaming and o == LATEST:
            raise SourceOptionError(f"{name}: starting offset for {t}-{p} can't be -1 (latest) in a batch query")
    return offsets


def parse_options(options: Mapping, *, streaming: bool) -> SourceOptions:
    """Check the reader options (``spark.read`` / ``spark.readStream``) and return them parsed."""
    opts = {str(k).lower(): v for k, v in options.items()}
    config = _client_config(opts, _REFUSED)
    subscription = _subscription(opts)
    unsupported = sorted(k for k in _UNSUPPORTED if k in opts)
    if unsupported:
        raise SourceOptionError(f"Option(s) {', '.join(unsupported)} of Spark's Kafka source are not supported by "
                                f"the kafkalab source; use startingOffsets / maxOffsetsPerTrigger instead.")
    if streaming and opts.get("endingoffsets") is not None:
        raise SourceOptionError("Option 'endingOffsets' is not valid in streaming queries (only in spark.read).")
    starting = _offsets_option(opts, "startingOffsets", "latest" if streaming else "earliest",
                               streaming=streaming, ending=False)
    ending = None if streaming else _offsets_option(opts, "endingOffsets", "latest", streaming=False, ending=True)
    max_offsets = None
    raw = opts.get("maxoffsetspertrigger")
    if raw is not None:
        try:
            max_offsets = int(str(raw).strip())
        except ValueError:
            raise SourceOptionError(f"maxOffsetsPerTrigger must be a positive integer, got {raw!r}") from None
        if max_offsets <= 0:
            raise SourceOptionError(f"maxOffsetsPerTrigger must be a positive integer, got {raw!r}")
    min_partitions = None
    raw = opts.get("minpartitions")
    if raw is not None:
        try:
            min_partitions = int(str(raw).strip())
        except ValueError:
            raise SourceOptionError(f"minPartitions must be a positive integer, got {raw!r}") from None
        if min_partitions <= 0:
            raise SourceOptionError(f"minPartitions must be a positive integer, got {raw!r}")
    poll_timeout = opts.get("kafkaconsumer.polltimeoutms")
    try:
        poll_timeout_ms = 120_000 if poll_timeout is None else int(str(poll_timeout).strip())
    except ValueError:
        raise SourceOptionError(f"kafkaConsumer.pollTimeoutMs must be an integer, got {poll_timeout!r}") from None
    return SourceOptions(
        bootstrap_servers=str(config["bootstrap.servers"]), client_config=config, subscription=subscription,
        starting=starting, ending=ending, max_offsets_per_trigger=max_offsets,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True), include_headers=_bool(opts, "includeHeaders", False),
        poll_timeout_ms=poll_timeout_ms, min_partitions=min_partitions,
        ignored=tuple(sorted(k for k in _IGNORED if k in opts)))


def parse_sink_options(options: Mapping) -> tuple[dict, Optional[str]]:
    """The sink's options: ``(producer config from kafka.*, default topic or None)``."""
    opts = {str(k).lower(): v for k, v in options.items()}
    config = _client_config(opts, _REFUSED_SINK)
    topic = opts.get("topic")
    return config, (str(topic).strip() or None) if topic is not None else None


# -- resolving and limiting -------------------------------------------------------------------------------------
def resolve_offsets(option: str, spec: Union[str, OffsetMap], partitions: Iterable[tuple],
                    earliest: Callable[[list], dict], latest: Callable[[list], dict]) -> OffsetMap:
    """Turn ``"earliest"`` / ``"latest"`` / JSON with -2/-1 into real offsets for ``partitions``.
    ``earliest(tps)`` / ``latest(tps)`` answer ``{(topic, partition): offset}`` (ListOffsets).
    JSON must name every partition of the subscription, as in Spark."""
    tps = sorted(partitions)
    if spec == "earliest":
        return nest(earliest(tps))
    if spec == "latest":
        return nest(latest(tps))
    given = flatten(spec)
    if set(given) != set(tps):
        fmt = lambda s: ", ".join(f"{t}-{p}" for t, p in sorted(s)) or "none"  # noqa: E731
        raise SourceOptionError(f"{option} with specific offsets must name every partition of the subscription "
                                f"(-2 = earliest, -1 = latest). Specified: {fmt(given)}; subscribed: {fmt(tps)}")
    want_early = [tp for tp, o in given.items() if o == EARLIEST]
    want_late = [tp for tp, o in given.items() if o == LATEST]
    out = {tp: o for tp, o in given.items() if o >= 0}
    if want_early:
        out.update(earliest(sorted(want_early)))
    if want_late:
        out.update(latest(sorted(want_late)))
    return nest(out)


def rate_limit(start: Mapping, latest: Mapping, max_rows: int, earliest_new: Optional[Mapping] = None) -> OffsetMap:
    """The end offsets of a micro-batch allowed ``max_rows`` rows, from ``start`` toward ``latest``.

    Each partition's backlog ``latest - begin`` (``begin``: its start, or for a partition not in ``start`` its
    earliest offset from ``earliest_new``) gets ``max_rows * backlog / total`` more offsets: floor, or ceil when
    below one; never past ``latest``. Partitions without backlog, and without a known begin, stay at latest."""
    begin_new = flatten(earliest_new or {})
    frm, until = flatten(start), flatten(latest)
    sizes = {}
    for tp, end in until.items():
        begin = frm.get(tp, begin_new.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = sum(sizes.values())
    if total < 1:
        return nest(until)
    out = {}
    for tp, end in until.items():
        if tp not in sizes:
            out[tp] = end
            continue
        begin = frm.get(tp, begin_new.get(tp))
        share = max_rows * sizes[tp] / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + step)
    return nest(out)


def report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    """Raise :class:`DataLossError` (``failOnDataLoss=true``) or log a warning and go on."""
    if fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost: it is no longer in the log (retention, DeleteRecords, or "
            f"the topic was deleted) and was not read by this query. To skip lost data and go on instead of "
            f"failing, set the source option failOnDataLoss to \"false\".")
    log.warning("%s. Some data may have been lost; skipping it (failOnDataLoss=false).", message)


def plan_ranges(start: Mapping, end: Mapping, earliest_new: Mapping, fail_on_data_loss: bool) -> list[tuple]:
    """``[(topic, partition, from, until)]`` for a micro-batch ``start -> end`` (the driver's check).

    A partition in ``end`` but not in ``start`` is new: it starts at its earliest offset (``earliest_new``), and
    if that is not 0 some of it is already gone. A partition in ``start`` but not in ``end`` has disappeared.
    ``end < start`` means the log moved backwards (deleted and re-created): data loss, the range is skipped."""
    frm, until, new = flatten(start), flatten(end), flatten(earliest_new)
    gone = sorted(set(frm) - set(until))
    if gone:
        report_data_loss(f"Partitions {', '.join(f'{t}-{p}' for t, p in gone)} are gone", fail_on_data_loss)
    ranges = []
    for tp in sorted(until):
        hi = until[tp]
        lo = frm.get(tp)
        if lo is None:
            lo = new.get(tp)
            if lo is None:
                report_data_loss(f"New partition {tp[0]}-{tp[1]} has no known earliest offset", fail_on_data_loss)
                continue
            if lo != 0:
                report_data_loss(f"Added partition {tp[0]}-{tp[1]} starts from {lo} instead of 0",
                                 fail_on_data_loss)
        if hi < lo:
            report_data_loss(f"Partition {tp[0]}-{tp[1]}'s offset went back from {lo} to {hi}", fail_on_data_loss)
            continue
        if hi > lo:
            ranges.append((tp[0], tp[1], lo, hi))
    return ranges


def clamp_to_log(topic: str, partition: int, start: int, end: int, log_start: int, log_end: int,
                 fail_on_data_loss: bool) -> Optional[int]:
    """Where an executor should read from, for range ``[start, end)`` of a log holding ``[log_start, log_end)``.

    ``start`` below the log start: the records in between were deleted -> data loss, then read from the log
    start (``None`` if nothing of the range is left). ``start`` past the log end: the offsets no longer exist
    (the topic was re-created) -> data loss, ``None``."""
    if start < log_start:
        report_data_loss(f"Cannot fetch {topic}-{partition} from offset {start}: the log now starts at "
                         f"{log_start}", fail_on_data_loss)
        return log_start if log_start < end else None
    if start > log_end:
        report_data_loss(f"Cannot fetch {topic}-{partition} from offset {start}: the log ends at {log_end}",
                         fail_on_data_loss)
        return None
    return start


def split_ranges(ranges: list, min_partitions: Optional[int]) -> list:
    """Spark's ``KafkaOffsetRangeCalculator``: with ``minPartitions`` larger than the number of ranges, each
    range ``(topic, partition, from, until)`` is cut into about ``minPartitions x size / total`` equal pieces (at
    least one), so a few large partitions still keep every executor core busy. Otherwise one task per partition."""
    if not min_partitions or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(hi - lo for _, _, lo, hi in ranges)
    if total <= 0:
        return list(ranges)
    out = []
    for topic, partition, lo, hi in ranges:
        size = hi - lo
        parts = max(int(size / total * min_partitions + 0.5), 1)
        for i in range(parts):
            a, b = lo + size * i // parts, lo + size * (i + 1) // parts
            if b > a:
                out.append((topic, partition, a, b))
    return out
