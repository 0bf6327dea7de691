"""A history checker: record what clients asked and saw during a run, then look for Jepsen's anomalies.

Theory of operation
-------------------
Jepsen judges a system by its *history*: every operation a client began (``invoke``) and how it ended --
``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (unknown: a timeout, a dropped
connection; the write may or may not have taken effect). Nothing inside the brokers is trusted; only what
clients observed counts.

Record sends with :meth:`History.send` (returns an operation you end with ``ok(partition, offset)``,
``fail(error)`` or ``info(error)``), consumer output with :meth:`History.poll` (one call per batch of records a
consumer got: ``(partition, offset, value)``), a consumer's seeks with :meth:`History.seek`, and a read that
went to the end of a partition with :meth:`History.read_to_end`. Values must be unique per send -- that is
what lets the checker tell a record from its duplicate. :meth:`History.check` reports (names as in Jepsen's
Kafka/Redpanda analyses):

================== ==========================================================================================
lost-write         acknowledged (``ok``) but never read, although reads went past its offset or a complete
                   read of its partition was recorded after the acknowledgement
duplicate          one value read at two different offsets (a retried send written twice)
inconsistent-offsets  one offset read with different values (replicas' logs diverged)
aborted-read       a value read whose send certainly failed (``fail``); reading an ``info`` send is fine
unexpected-read    a value read that no send ever wrote
poll-skip          a consumer jumped over offsets known to exist (read by someone, or acknowledged)
nonmonotonic-poll  a consumer's next offset on a partition was not greater than the previous one, without a
                   seek in between
================== ==========================================================================================

An ``info`` send is never a lost write: its outcome is unknown, so not reading it is allowed (and reading it
is too). A check's work grows with the history (one pass over it, a sort of each partition's known offsets and
a binary search per record read), never with its square: fault tests record hundreds of thousands of
operations. Mirrors ``jepsen.tests.kafka`` (the queue workload's checker) in spirit, not in code.
"""
from __future__ import annotations

import bisect
import html
import itertools
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Optional

__all__ = ["History", "SendOp", "CheckResult", "ANOMALIES"]

ANOMALIES = ("lost_write", "duplicate", "inconsistent_offsets", "aborted_read", "unexpected_read", "poll_skip",
             "nonmonotonic_poll")


@dataclass
class SendOp:
    """One send: invoked with ``value``; ``type`` becomes ok / fail / info when it ends."""
    index: int
    process: Hashable
    value: Any
    key: Any = None
    partition: Optional[Hashable] = None
    type: str = "invoke"
    offset: Optional[int] = None
    error: Any = None
    completed: Optional[int] = None    # position in the history when it ended
    _clock: Any = field(default=None, repr=False, compare=False)

    def _end(self) -> None:
        if self._clock is not None:
            self.completed = next(self._clock)

    def ok(self, partition: Hashable, offset: int) -> "SendOp":
        self.type, self.partition, self.offset = "ok", partition, offset
        self._end()
        return self

    def fail(self, error: Any = None) -> "SendOp":
        self.type, self.error = "fail", error
        self._end()
        return self

    def info(self, error: Any = None) -> "SendOp":
        self.type, self.error = "info", error
        self._end()
        return self


@dataclass
class CheckResult:
    """The checker's verdict: ``valid`` and one list per anomaly (each entry a dict describing one case)."""
    lost_write: list = field(default_factory=list)
    duplicate: list = field(default_factory=list)
    inconsistent_offsets: list = field(default_factory=list)
    aborted_read: list = field(default_factory=list)
    unexpected_read: list = field(default_factory=list)
    poll_skip: list = field(default_factory=list)
    nonmonotonic_poll: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not any(getattr(self, name) for name in ANOMALIES)

    @property
    def anomalies(self) -> dict:
        """The anomalies found: ``{"lost-write": [...], ...}`` (Jepsen's spelling), empty when valid."""
        return {name.replace("_", "-"): getattr(self, name) for name in ANOMALIES if getattr(self, name)}

    def __bool__(self) -> bool:
        return self.valid

    def __str__(self) -> str:
        lines = [f"valid: {self.valid}  " + ", ".join(f"{k}={v}" for k, v in self.stats.items())]
        for name, cases in self.anomalies.items():
            lines.append(f"{name}: {len(cases)}")
            for case in cases[:10]:
                lines.append("  " + ", ".join(f"{k}={v!r}" for k, v in case.items()))
            if len(cases) > 10:
                lines.append(f"  ... {len(cases) - 10} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = "#2e7d32" if self.valid else "#c62828"
        out = [f'<div><b style="color:{colour}">{"valid" if self.valid else "INVALID"}</b> '
               f'<span>{html.escape(", ".join(f"{k}={v}" for k, v in self.stats.items()))}</span>',
               "<table><tr><th>anomaly</th><th>count</th><th>examples</th></tr>"]
        for name in ANOMALIES:
            cases = getattr(self, name)
            examples = "<br>".join(html.escape(", ".join(f"{k}={v!r}" for k, v in c.items())) for c in cases[:5])
            out.append(f"<tr><td>{name.replace('_', '-')}</td><td>{len(cases)}</td><td>{examples}</td></tr>")
        out.append("</table></div>")
        return "".join(out)


class History:
    """The recorded run. Not thread-safe by itself: record from one thread (delivery callbacks of
    confluent-kafka run inside ``poll``/``flush`` on the caller's thread)."""

    def __init__(self):
        self.sends: list[SendOp] = []
        self.events: list[tuple] = []     # ("poll", process, [(partition, offset, value)]) / ("seek", ...)
        self.complete_reads: dict[Hashable, list] = {}  # partition -> [(end offset reached, when)]
        self._index = itertools.count()
        self._clock = itertools.count()

    # -- recording -----------------------------------------------------------------------------------------
    def send(self, value: Any, *, process: Hashable = 0, key: Any = None,
             partition: Optional[Hashable] = None) -> SendOp:
        op = SendOp(next(self._index), process, value, key, partition, _clock=self._clock)
        self.sends.append(op)
        return op

    def poll(self, records: Iterable[tuple], *, process: Hashable = 0) -> None:
        """Records one consumer got from one poll, in order: ``(partition, offset, value)`` each."""
        self.events.append(("poll", process, [tuple(r) for r in records]))

    def seek(self, partition: Hashable, offset: int, *, process: Hashable = 0) -> None:
        """The consumer moved its position (seek, a new assignment, a restart from committed offsets)."""
        self.events.append(("seek", process, partition, offset))

    def read_to_end(self, partition: Hashable, end_offset: int) -> None:
        """A reader consumed ``partition`` up to ``end_offset`` (the log end it was shown): every write
        acknowledged before this call must have been read -- if its offset is no longer in the log (a new
        leader's shorter log), it was lost all the same."""
        self.complete_reads.setdefault(partition, []).append((end_offset, next(self._clock)))

    # -- checking ------------------------------------------------------------------------------------------
    def check(self) -> CheckResult:
        r = CheckResult()
        seen_at, values_at, known_offsets, max_read = self._index_reads()
        self._check_acknowledged_writes(r, seen_at, max_read)
        self._check_values_read(r, seen_at, values_at)
        self._check_poll_order(r, known_offsets)
        counts = {t: sum(1 for op in self.sends if op.type == t) for t in ("ok", "fail", "info", "invoke")}
        r.stats = {"sends": len(self.sends), "acknowledged": counts["ok"], "failed": counts["fail"],
                   "indeterminate": counts["info"] + counts["invoke"], "read": len(seen_at)}
        return r

    def _index_reads(self):
        """Where each value was read, what each offset held, which offsets exist and how far each partition was
        read."""
        seen_at: dict[Any, set] = {}                  # value -> {(partition, offset)}
        values_at: dict[tuple, set] = {}              # (partition, offset) -> {values}
        known_offsets: dict[Hashable, set] = {}       # partition -> offsets known to exist
        max_read: dict[Hashable, int] = {}
        for event in self.events:
            if event[0] != "poll":
                continue
            for partition, offset, value in event[2]:
                seen_at.setdefault(value, set()).add((partition, offset))
                values_at.setdefault((partition, offset), set()).add(value)
                known_offsets.setdefault(partition, set()).add(offset)
                max_read[partition] = max(offset, max_read.get(partition, -1))
        for op in self.sends:
            if op.type == "ok" and op.offset is not None:
                known_offsets.setdefault(op.partition, set()).add(op.offset)
        return seen_at, values_at, known_offsets, max_read

    def _check_acknowledged_writes(self, r: CheckResult, seen_at: dict, max_read: dict) -> None:
        """Lost writes: acknowledged, never read, although a reader passed their offset or read to the end."""
        last_complete_read = {partition: max(when for _, when in reads)      # partition -> latest read-to-end
                              for partition, reads in self.complete_reads.items() if reads}
        for op in self.sends:
            if op.type != "ok" or op.value in seen_at:
                continue
            passed = op.offset is not None and op.offset <= max_read.get(op.partition, -1)
            latest = last_complete_read.get(op.partition)
            complete = latest is not None and latest > (op.completed if op.completed is not None else -1)
            if passed or complete:
                r.lost_write.append({"value": op.value, "partition": op.partition, "offset": op.offset})

    def _check_values_read(self, r: CheckResult, seen_at: dict, values_at: dict) -> None:
        """Duplicates, values nobody sent, values whose send failed, and offsets that held two values."""
        by_value = {op.value: op for op in self.sends}
        for value, places in seen_at.items():
            if len(places) > 1:
                r.duplicate.append({"value": value, "at": sorted(places, key=repr)})
            op = by_value.get(value)
            if op is None:
                r.unexpected_read.append({"value": value, "at": sorted(places, key=repr)})
            elif op.type == "fail":
                r.aborted_read.append({"value": value, "at": sorted(places, key=repr), "error": op.error})
        for (partition, offset), values in values_at.items():
            if len(values) > 1:
                r.inconsistent_offsets.append({"partition": partition, "offset": offset,
                                               "values": sorted(values, key=repr)})
        r.inconsistent_offsets.sort(key=lambda c: (repr(c["partition"]), c["offset"]))

    def _check_poll_order(self, r: CheckResult, known_offsets: dict) -> None:
        """Each process's polls per partition: offsets going backwards, or skipping offsets known to exist."""
        ordered = {partition: sorted(offsets) for partition, offsets in known_offsets.items()}
        position: dict[tuple, int] = {}               # (process, partition) -> last offset read
        for event in self.events:
            if event[0] == "seek":
                position.pop((event[1], event[2]), None)
                continue
            process = event[1]
            for partition, offset, _value in event[2]:
                last = position.get((process, partition))
                if last is not None:
                    if offset <= last:
                        r.nonmonotonic_poll.append({"process": process, "partition": partition, "from": last,
                                                    "to": offset})
                    else:
                        known = ordered.get(partition, ())       # the known offsets strictly between the two
                        skipped = known[bisect.bisect_right(known, last):bisect.bisect_left(known, offset)]
                        if skipped:
                            r.poll_skip.append({"process": process, "partition": partition, "from": last,
                                                "to": offset, "skipped": skipped})
                position[(process, partition)] = offset
