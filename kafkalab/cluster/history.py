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

**Transactions.** :meth:`History.transaction` opens one (``txn.send(value, source=...)`` records its sends,
acknowledged with ``ok`` as usual; ``txn.commit()``, ``txn.abort()`` or ``txn.info(error)`` when the outcome is
unknown, e.g. the producer crashed mid-commit). Polls say whether the consumer reads ``read_committed``. A
transaction's sends are judged by its outcome: those of an aborted or undecided transaction are never lost
writes, and a ``read_committed`` consumer may skip their offsets. Three more anomalies concern them:

================== ==========================================================================================
aborted-read       (also) a value of a transaction that certainly aborted, read by a ``read_committed``
                   consumer (Jepsen's G1a)
partial-transaction  a ``read_committed`` consumer saw some values of a transaction but not others, although
                   reads went past their offsets or a complete read of their partition came after the commit
duplicate-output   in consume-process-produce, two different outputs of the same input (``source``) visible
                   to ``read_committed`` consumers: the input was processed twice and both results committed
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

__all__ = ["History", "SendOp", "TxnOp", "CheckResult", "ANOMALIES"]

ANOMALIES = ("lost_write", "duplicate", "inconsistent_offsets", "aborted_read", "unexpected_read", "poll_skip",
             "nonmonotonic_poll", "partial_transaction", "duplicate_output")


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
    transaction: Optional["TxnOp"] = field(default=None, repr=False, compare=False)
    source: Any = None                 # consume-process-produce: the input value this output was made from
    _clock: Any = field(default=None, repr=False, compare=False)

    @property
    def visible_when_committed_only(self) -> bool:
        """A send of a transaction that did not (certainly) commit: read_committed consumers must not see it
        if it aborted, and may not if its outcome is unknown."""
        return self.transaction is not None and self.transaction.type != "commit"

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
class TxnOp:
    """One transaction of one producer: its sends, and its outcome (``commit``, ``abort``, or ``info`` when
    unknown; ``invoke`` while open)."""
    index: int
    process: Hashable
    sends: list = field(default_factory=list)
    type: str = "invoke"
    error: Any = None
    completed: Optional[int] = None
    _history: Any = field(default=None, repr=False, compare=False)

    def send(self, value: Any, *, key: Any = None, partition: Optional[Hashable] = None,
             source: Any = None) -> SendOp:
        """A send inside this transaction (``source``: the input value it was made from, if any)."""
        op = self._history.send(value, process=self.process, key=key, partition=partition)
        op.transaction, op.source = self, source
        self.sends.append(op)
        return op

    def _end(self, outcome: str, error: Any = None) -> "TxnOp":
        self.type, self.error = outcome, error
        self.completed = next(self._history._clock)
        return self

    def commit(self) -> "TxnOp":
        return self._end("commit")

    def abort(self) -> "TxnOp":
        return self._end("abort")

    def info(self, error: Any = None) -> "TxnOp":
        return self._end("info", error)


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
    partial_transaction: list = field(default_factory=list)
    duplicate_output: list = field(default_factory=list)
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
        self.transactions: list[TxnOp] = []
        #: ("poll", process, [(partition, offset, value)], read_committed) / ("seek", process, partition, offset)
        self.events: list[tuple] = []
        self.complete_reads: dict[Hashable, list] = {}  # partition -> [(end offset reached, when)]
        self._index = itertools.count()
        self._clock = itertools.count()

    # -- recording -----------------------------------------------------------------------------------------
    def send(self, value: Any, *, process: Hashable = 0, key: Any = None,
             partition: Optional[Hashable] = None) -> SendOp:
        op = SendOp(next(self._index), process, value, key, partition, _clock=self._clock)
        self.sends.append(op)
        return op

    def transaction(self, *, process: Hashable = 0) -> TxnOp:
        """Begin a transaction of ``process``: record its sends with ``txn.send``, end it with ``commit``,
        ``abort`` or ``info``."""
        txn = TxnOp(len(self.transactions), process, _history=self)
        self.transactions.append(txn)
        return txn

    def poll(self, records: Iterable[tuple], *, process: Hashable = 0, read_committed: bool = False) -> None:
        """Records one consumer got from one poll, in order: ``(partition, offset, value)`` each;
        ``read_committed`` for a consumer with ``isolation.level=read_committed``."""
        self.events.append(("poll", process, [tuple(r) for r in records], read_committed))

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
        self._check_transactions(r)
        counts = {t: sum(1 for op in self.sends if op.type == t) for t in ("ok", "fail", "info", "invoke")}
        r.stats = {"sends": len(self.sends), "acknowledged": counts["ok"], "failed": counts["fail"],
                   "indeterminate": counts["info"] + counts["invoke"], "read": len(seen_at)}
        if self.transactions:
            r.stats["transactions"] = len(self.transactions)
            r.stats["committed"] = sum(1 for t in self.transactions if t.type == "commit")
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
            if op.type != "ok" or op.value in seen_at or op.visible_when_committed_only:
                continue
            passed = op.offset is not None and op.offset <= max_read.get(op.partition, -1)
            latest = last_complete_read.get(op.partition)
            visible_since = op.transaction.completed if op.transaction is not None else op.completed
            complete = latest is not None and latest > (visible_since if visible_since is not None else -1)
            if passed or complete:
                r.lost_write.append({"value": op.value, "partition": op.partition, "offset": op.offset})

    def _check_values_read(self, r: CheckResult, seen_at: dict, values_at: dict) -> None:
        """Duplicates, values nobody sent, values whose send failed (or whose transaction aborted, read by a
        read_committed consumer), and offsets that held two values."""
        by_value = {op.value: op for op in self.sends}
        committed_seen = self._committed_reads() if self.transactions else {}
        for value, places in seen_at.items():
            if len(places) > 1:
                r.duplicate.append({"value": value, "at": sorted(places, key=repr)})
            op = by_value.get(value)
            if op is None:
                r.unexpected_read.append({"value": value, "at": sorted(places, key=repr)})
            elif op.type == "fail":
                r.aborted_read.append({"value": value, "at": sorted(places, key=repr), "error": op.error})
            elif op.transaction is not None and op.transaction.type == "abort" and value in committed_seen:
                r.aborted_read.append({"value": value, "at": sorted(committed_seen[value], key=repr),
                                       "transaction": op.transaction.index})
        for (partition, offset), values in values_at.items():
            if len(values) > 1:
                r.inconsistent_offsets.append({"partition": partition, "offset": offset,
                                               "values": sorted(values, key=repr)})
        r.inconsistent_offsets.sort(key=lambda c: (repr(c["partition"]), c["offset"]))

    def _check_poll_order(self, r: CheckResult, known_offsets: dict) -> None:
        """Each process's polls per partition: offsets going backwards, or skipping offsets known to exist."""
        ordered = {partition: sorted(offsets) for partition, offsets in known_offsets.items()}
        # offsets a read_committed consumer may skip: the sends of transactions that did not certainly commit
        hidden = self._hidden_from_read_committed() if self.transactions else set()
        position: dict[tuple, int] = {}               # (process, partition) -> last offset read
        for event in self.events:
            if event[0] == "seek":
                position.pop((event[1], event[2]), None)
                continue
            process, read_committed = event[1], event[3]
            for partition, offset, _value in event[2]:
                last = position.get((process, partition))
                if last is not None:
                    if offset <= last:
                        r.nonmonotonic_poll.append({"process": process, "partition": partition, "from": last,
                                                    "to": offset})
                    else:
                        known = ordered.get(partition, ())       # the known offsets strictly between the two
                        skipped = known[bisect.bisect_right(known, last):bisect.bisect_left(known, offset)]
                        if read_committed and hidden:
                            skipped = [o for o in skipped if (partition, o) not in hidden]
                        if skipped:
                            r.poll_skip.append({"process": process, "partition": partition, "from": last,
                                                "to": offset, "skipped": skipped})
                position[(process, partition)] = offset

    # -- transactions --------------------------------------------------------------------------------------
    def _hidden_from_read_committed(self) -> set:
        """(partition, offset) of the sends of transactions that did not certainly commit: where they were
        acknowledged, and where any consumer read them."""
        hidden_values = {op.value for op in self.sends if op.visible_when_committed_only}
        hidden = {(op.partition, op.offset) for op in self.sends
                  if op.visible_when_committed_only and op.type == "ok"}
        for event in self.events:
            if event[0] == "poll":
                hidden.update((partition, offset) for partition, offset, value in event[2] if value in hidden_values)
        return hidden

    def _committed_reads(self) -> dict:
        """value -> {(partition, offset)} read by read_committed consumers."""
        seen: dict[Any, set] = {}
        for event in self.events:
            if event[0] == "poll" and event[3]:
                for partition, offset, value in event[2]:
                    seen.setdefault(value, set()).add((partition, offset))
        return seen

    def _check_transactions(self, r: CheckResult) -> None:
        """Partially visible transactions and inputs whose output became visible twice (read_committed only)."""
        if not self.transactions:
            return
        seen = self._committed_reads()
        max_committed_read: dict[Hashable, int] = {}
        for places in seen.values():
            for partition, offset in places:
                max_committed_read[partition] = max(offset, max_committed_read.get(partition, -1))
        last_complete_read = {partition: max(when for _, when in reads)
                              for partition, reads in self.complete_reads.items() if reads}
        for txn in self.transactions:
            if txn.type == "abort":
                continue                                  # reading any of it is an aborted-read
            read = [op for op in txn.sends if op.value in seen]
            if not read:
                continue                                  # all of it unseen: a lost write if committed
            missing = []
            for op in txn.sends:
                if op.value in seen or op.type != "ok" or op.offset is None:
                    continue
                latest = last_complete_read.get(op.partition)
                passed = op.offset < max_committed_read.get(op.partition, -1)
                complete = latest is not None and txn.completed is not None and latest > txn.completed
                if passed or complete:
                    missing.append({"value": op.value, "partition": op.partition, "offset": op.offset})
            if missing:
                r.partial_transaction.append({"transaction": txn.index, "process": txn.process,
                                              "read": sorted((op.value for op in read), key=repr),
                                              "missing": missing})
        outputs: dict[Any, set] = {}
        for op in self.sends:
            if op.source is not None and op.value in seen:
                outputs.setdefault(op.source, set()).add(op.value)
        for source, values in outputs.items():
            if len(values) > 1:
                r.duplicate_output.append({"input": source, "outputs": sorted(values, key=repr)})
