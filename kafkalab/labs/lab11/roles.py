"""Lab 11 (``labs/11_transactions.ipynb``), the roles of a transaction: cluster, coordinator, checks.

Theory of operation
-------------------
A transaction is a conversation between one producer and several brokers in different roles: the
**transaction coordinator** (the leader of the ``__transaction_state`` partition its ``transactional.id``
hashes to), the **partition leaders** it writes to, and the **group coordinator** whose offsets it commits.
The lab watches that conversation on an in-process cluster, then drives kafkalab's sans-IO
:class:`~kafkalab.coordinator.transaction.TransactionCoordinator` by hand on a clock that moves only when told
to. This module holds what both need:

* :func:`place_internal_topics` -- ``__transaction_state`` and ``__consumer_offsets`` created up front with
  their leaders chosen, so that each role lands on its own broker in every run (a broker would create them on
  first use, with leaders wherever the random placement puts them);
* :class:`WireTap`, :func:`describe_request` and :func:`sequence_diagram` -- every request the brokers'
  processors queued, in one global order, labelled with the fields that matter and drawn as a
  :class:`~kafkalab.viz.SequenceDiagram` (lifelines = roles);
* :class:`LabCoordinator` -- a transaction coordinator on a :class:`~kafkalab.common.time.MockTime` with an
  in-memory ``__transaction_state``, markers answered by hand, every step kept for a table, the records it
  wrote decoded, and :func:`state_machine` drawn from :data:`~kafkalab.coordinator.transaction.state.TRANSITIONS`;
* the partition's log as the lab draws it (``LogStrip``, ``classify``, ``dump_log``, ...) is in :mod:`.log`;
* the checks ``check_*``, which compute the right answer from the data the learner was given (two of them
  replay the task on a :class:`LabCoordinator`).

The broker side it shows is ``kafkalab/coordinator/transaction/`` (Kafka's
``core/src/main/scala/kafka/coordinator/transaction/``) and the log side ``kafkalab/storage/`` (LSO,
``.txnindex``: ``UnifiedLog.scala``, ``TransactionIndex.java``).
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.common.scheduler import MockScheduler
from kafkalab.common.time import MockTime
from kafkalab.coordinator.group.group_metadata_manager import partition_for
from kafkalab.coordinator.transaction import (MemoryTransactionLog, TransactionConfig, TransactionCoordinator,
                                              TransactionMarkerChannelManager, TransactionState)
from kafkalab.coordinator.transaction.state import TRANSITIONS
from kafkalab.coordinator.transaction.transaction_log import read_txn_record_key, read_txn_record_value
from kafkalab.labs import CheckResult, check_equal, check_parts, is_unanswered
from kafkalab.labs.lab11.log import classify, read_committed_view
from kafkalab.viz.state_diagram import state_machine_diagram
from kafkalab.protocol import ApiKey, ErrorCode, api_name, response_class

__all__ = ["T0", "TXN_ID", "GROUP", "OUTPUT", "INPUT", "OVERRIDES", "COORDINATOR_EPOCH", "txn_partition",
           "place_internal_topics", "WireTap", "describe_request", "sequence_diagram", "LabCoordinator", "state_machine",
           "check_txn_partition",
           "check_read_committed", "check_fence_epochs", "check_state_sequence"]

#: The records' timestamps and MockTime's start (2023-11-14 22:13:20 UTC).
T0 = 1_700_000_000_000
TXN_ID = "checkout"
GROUP = "billing"
OUTPUT = "receipts"
INPUT = "payments"
#: Broker settings of the lab's cluster: groups form at once; the internal topics are placed by hand.
OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": False}
#: The coordinator epoch of every ``__transaction_state`` partition of the step-by-step coordinator.
COORDINATOR_EPOCH = 0

S = TransactionState
E = ErrorCode
WriteTxnMarkersResponse = response_class(ApiKey.WRITE_TXN_MARKERS)


def txn_partition(transactional_id: str, num_partitions: int = 50) -> int:
    """``Utils.abs(transactional_id.hashCode()) % transaction.state.log.num.partitions`` (as for groups)."""
    return partition_for(transactional_id, num_partitions)


# -- the cluster ------------------------------------------------------------------------------------------------------
def place_internal_topics(cluster, *, transaction_coordinator: int, group_coordinator: int,
                          transactional_id: str = TXN_ID, group_id: str = GROUP, num_partitions: int = 50) -> dict:
    """Create ``__transaction_state`` and ``__consumer_offsets`` (one replica each, compacted) with partition
    ``p`` led by broker ``p % brokers``, except the partitions of ``transactional_id`` and ``group_id``, which
    are led by the given brokers. Returns ``{topic: partition of our id}``."""
    brokers = sorted(cluster.brokers)
    placed = {}
    for topic, key, leader in [("__transaction_state", transactional_id, transaction_coordinator),
                               ("__consumer_offsets", group_id, group_coordinator)]:
        ours = partition_for(key, num_partitions)
        assignment = {p: [brokers[p % len(brokers)]] for p in range(num_partitions)}
        assignment[ours] = [leader]
        cluster.create_topic(topic, assignment=assignment, config={"cleanup.policy": "compact"})
        placed[topic] = ours
    return placed


class WireTap:
    """Every request the brokers' processors put into their request channels, in the one order the cluster's
    event loop handled them: ``(broker id, client id, api name, api version, body)``. Install on a running cluster; the
    brokers' code is untouched (one attribute of each channel is wrapped)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.requests: list[tuple[int, str, str, int, Any]] = []
        self._originals: dict[int, Any] = {}

    def install(self) -> "WireTap":
        for broker_id, broker in sorted(self.cluster.brokers.items()):
            self.cluster.call(self._wrap, broker_id, broker.channel)
        return self

    def _wrap(self, broker_id: int, channel) -> None:
        original = channel.send_request              # a processor hands each parsed request to the queue here
        self._originals[broker_id] = (channel, original)

        async def send_request(request):
            c = request.context
            self.requests.append((broker_id, c.client_id, api_name(c.api_key), c.api_version, request.body))
            await original(request)
        channel.send_request = send_request

    def remove(self) -> None:
        for channel, original in self._originals.values():
            self.cluster.call(setattr, channel, "send_request", original)
        self._originals.clear()

    def clear(self) -> None:
        self.requests.clear()


_TXN_APIS = ("FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "Produce", "AddOffsetsToTxn",
             "TxnOffsetCommit", "EndTxn", "WriteTxnMarkers")
_API_COLOURS = {"FindCoordinator": "#c2255c", "InitProducerId": "#0c8599", "AddPartitionsToTxn": "#1971c2",
                "Produce": "#e8590c", "AddOffsetsToTxn": "#7048e8", "TxnOffsetCommit": "#2f9e44",
                "EndTxn": "#c92a2a", "WriteTxnMarkers": "#5f3dc4"}


def _partitions_of(topics, name_attr: str, parts_attr: str) -> str:
    out = []
    for t in topics:
        for p in getattr(t, parts_attr):
            out.append(f"{getattr(t, name_attr)}-{p if isinstance(p, int) else getattr(p, 'index', None)}")
    return ", ".join(out)


def describe_request(api: str, body) -> str:
    """A short label for one transactional request: the fields that matter to the lab."""
    if api == "FindCoordinator":
        kind = {0: "group", 1: "transaction"}.get(body.key_type, body.key_type)
        return f"FindCoordinator({kind} {', '.join(body.coordinator_keys)!s})"
    if api == "InitProducerId":
        return f"InitProducerId({body.transactional_id}, timeout {body.transaction_timeout_ms} ms)"
    if api == "AddPartitionsToTxn":
        topics = body.v3_and_below_topics or [t for txn in body.transactions for t in txn.topics]
        return f"AddPartitionsToTxn({_partitions_of(topics, 'name', 'partitions')})"
    if api == "Produce":
        return f"Produce({_partitions_of(body.topic_data, 'name', 'partition_data')}, transactional)"
    if api == "AddOffsetsToTxn":
        return f"AddOffsetsToTxn(group {body.group_id})"
    if api == "TxnOffsetCommit":
        offsets = ", ".join(f"{t.name}-{p.partition_index}: {p.committed_offset}" for t in body.topics
                            for p in t.partitions)
        return f"TxnOffsetCommit({body.group_id}, {offsets})"
    if api == "EndTxn":
        return f"EndTxn({'COMMIT' if body.committed else 'ABORT'})"
    if api == "WriteTxnMarkers":
        m = body.markers[0]
        result = "COMMIT" if m.transaction_result else "ABORT"
        return f"WriteTxnMarkers({result}, {_partitions_of(m.topics, 'name', 'partition_indexes')})"
    return api


def sequence_diagram(tap: WireTap, client_id: str, roles: Mapping[int, str], *, title: str = ""):
    """The producer's transactional requests (and the coordinator's markers) as a sequence diagram.

    FindCoordinator may go to any broker (the client asks the least loaded one, chosen at random): it is drawn
    to an "any broker" lifeline. Markers sent at the same moment to several leaders are drawn by broker id."""
    from kafkalab.viz import SequenceDiagram

    lanes = [("producer", "producer", f"client_id {client_id}"), ("any", "any broker", "answers FindCoordinator")]
    lanes += [(f"b{b}", f"broker {b}", role) for b, role in sorted(roles.items())]
    # labels run from their arrow's start: centred ones would need ~320 px between neighbouring lifelines and
    # a picture too wide to read in a notebook
    diagram = SequenceDiagram(lanes, title=title or None, column=120, label_at="start")
    rows = [r for r in tap.requests if r[2] in _TXN_APIS and (r[1] == client_id or r[2] == "WriteTxnMarkers")]
    ordered, i = [], 0
    while i < len(rows):                          # a burst of markers: by broker id
        j = i
        while j < len(rows) and rows[j][2] == "WriteTxnMarkers":
            j += 1
        if j > i:
            ordered += sorted(rows[i:j], key=lambda r: r[0])
            i = j
        else:
            ordered.append(rows[i])
            i += 1
    previous = None
    for broker_id, _client, api, version, body in ordered:
        label = f"{describe_request(api, body)} v{version}"
        colour = _API_COLOURS.get(api, "#495057")
        if api == "WriteTxnMarkers" and previous == "EndTxn":
            diagram.note("EndTxn is answered once PrepareCommit / PrepareAbort is in __transaction_state; "
                         "then the coordinator sends the markers")
        previous = api
        if api == "FindCoordinator":
            diagram.message("producer", "any", label, colour=colour)
        elif api == "WriteTxnMarkers":
            source = next((b for b, role in roles.items() if "transaction coordinator" in role), broker_id)
            diagram.message(f"b{source}", f"b{broker_id}", label, colour=colour)
        else:
            diagram.message("producer", f"b{broker_id}", label, colour=colour)
    return diagram


# -- the coordinator, step by step --------------------------------------------------------------------------------------
class LabCoordinator:
    """A :class:`TransactionCoordinator` on :class:`MockTime` + :class:`MockScheduler`, with ``__transaction_state``
    in memory and every partition leader answering markers only when :meth:`write_markers` says so.

    Producer ids count up from ``first_producer_id``; every partition of ``__transaction_state`` is led here at
    :data:`COORDINATOR_EPOCH`. Each request is kept in :attr:`steps` (for :meth:`table`)."""

    def __init__(self, *, num_partitions: int = 50, first_producer_id: int = 4000,
                 leaders: Optional[Mapping[tuple, int]] = None, offsets_topic_num_partitions: int = 50):
        self.time = MockTime(start_ms=T0)
        self.scheduler = MockScheduler(self.time)
        self.log = MemoryTransactionLog()
        self.config = TransactionConfig(transaction_state_log_num_partitions=num_partitions)
        ids = itertools.count(first_producer_id)
        self.coordinator = TransactionCoordinator(self.config, self.time, self.scheduler, self.log, lambda: next(ids))
        self.leaders = dict(leaders or {})
        self.markers = TransactionMarkerChannelManager(self.coordinator.state_manager,
                                                       lambda t, p: self.leaders.get((t, p), 1))
        self.coordinator.markers = self.markers
        self.coordinator.startup()
        for p in range(num_partitions):
            self.coordinator.on_election(p, COORDINATOR_EPOCH)
        self.offsets_topic_num_partitions = offsets_topic_num_partitions
        self.steps: list[dict] = []
        self.markers_written: list[dict] = []

    @property
    def now(self) -> float:
        """Seconds since the clock started."""
        return (self.time.milliseconds() - T0) / 1000

    def advance(self, ms: int) -> None:
        self.time.sleep(ms)
        self.scheduler.tick()

    def _record(self, transactional_id: str, request: str, answer: str) -> None:
        m = self.metadata(transactional_id)
        self.steps.append({"t (s)": self.now, "request": request, "answer": answer,
                           "state": str(m.state) if m else "—", "pending": str(m.pending_state or "") if m else "",
                           "producer id": m.producer_id if m else -1, "epoch": m.producer_epoch if m else -1,
                           "partitions": ", ".join(f"{t}-{p}" for t, p in sorted(m.topic_partitions)) if m else ""})

    def metadata(self, transactional_id: str):
        entry = self.coordinator.state_manager.get_transaction_state_or_none(transactional_id)
        return entry.transaction_metadata if entry else None

    def state(self, transactional_id: str) -> str:
        m = self.metadata(transactional_id)
        return str(m.state) if m else "—"

    # requests ------------------------------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int = 60_000):
        out: list = []
        self.coordinator.handle_init_producer_id(transactional_id, timeout_ms, None, out.append)
        r = out[0] if out else None
        answer = "(parked)" if r is None else (f"{E(r.error).name}: producer id {r.producer_id}, "
                                                f"epoch {r.producer_epoch}")
        self._record(transactional_id, "InitProducerId", answer)
        return r

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[tuple],
                       request: str = "AddPartitionsToTxn") -> int:
        out: list = []
        parts = {(t, int(p)) for t, p in partitions}
        self.coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, epoch, parts,
                                                              out.append)
        error = out[0] if out else None
        names = ", ".join(f"{t}-{p}" for t, p in sorted(parts))
        label = f"{request}({names})" if request == "AddPartitionsToTxn" else f"{request}: adds {names}"
        self._record(transactional_id, label, "(parked)" if error is None else E(error).name)
        return error

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn: the broker adds the group's ``__consumer_offsets`` partition to the transaction."""
        p = partition_for(group_id, self.offsets_topic_num_partitions)
        return self.add_partitions(transactional_id, producer_id, epoch, [("__consumer_offsets", p)],
                                   request=f"AddOffsetsToTxn({group_id})")

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool = True) -> int:
        out: list = []
        self.coordinator.handle_end_transaction(transactional_id, producer_id, epoch, commit, out.append)
        error = out[0] if out else None
        self._record(transactional_id, f"EndTxn({'COMMIT' if commit else 'ABORT'})",
                     "(parked)" if error is None else E(error).name)
        return error

    def write_markers(self, transactional_id: Optional[str] = None) -> list[dict]:
        """Every leader with queued markers writes them and answers NONE; returns what was written."""
        written = []
        for broker in sorted(self.markers.queues):
            items = self.markers.drain(broker)
            if not items:
                continue
            R = WriteTxnMarkersResponse
            markers = tuple(R.WritableTxnMarkerResult(producer_id=i.entry.producer_id, topics=tuple(
                R.WritableTxnMarkerTopicResult(name=t, partitions=(R.WritableTxnMarkerPartitionResult(
                    partition_index=p, error_code=0),)) for t, p in i.entry.partitions)) for i in items)
            for i in items:
                for t, p in i.entry.partitions:
                    written.append({"leader": broker, "partition": f"{t}-{p}",
                                    "marker": "COMMIT" if i.entry.committed else "ABORT",
                                    "producer id": i.entry.producer_id, "producer epoch": i.entry.producer_epoch,
                                    "coordinator epoch": i.entry.coordinator_epoch})
            self.markers.on_response(broker, items, R(markers=markers))
        self.markers_written += written
        if transactional_id is not None:
            self._record(transactional_id, "WriteTxnMarkers answered by every leader", "—")
        return written

    # what it wrote -------------------------------------------------------------------------------------------
    def records(self, transactional_id: Optional[str] = None) -> list[dict]:
        """The records of ``__transaction_state`` (the partition of ``transactional_id``, or all), decoded."""
        partitions = [txn_partition(transactional_id, self.config.transaction_state_log_num_partitions)] \
            if transactional_id else sorted(self.log.batches)
        rows = []
        for p in partitions:
            for offset, r in enumerate(self.log.records(p)):
                key = read_txn_record_key(bytes(r.key))
                v = read_txn_record_value(bytes(r.value) if r.value is not None else None)
                row = {"partition": p, "offset": offset, "key": key}
                if v is None:
                    row.update(state="(tombstone)")
                else:
                    row.update({"state": str(S.from_id(v.transaction_status)), "producer id": v.producer_id,
                                "epoch": v.producer_epoch, "timeout (ms)": v.transaction_timeout_ms,
                                "partitions": ", ".join(f"{t}-{p}" for t, ps in (v.transaction_partitions or ())
                                                        for p in ps),
                                "start (s)": (v.transaction_start_timestamp_ms - T0) / 1000
                                if v.transaction_start_timestamp_ms >= 0 else "—",
                                "last update (s)": (v.transaction_last_update_timestamp_ms - T0) / 1000})
                rows.append(row)
        return rows

    def states_written(self, transactional_id: str) -> list[str]:
        return [r["state"] for r in self.records(transactional_id) if r["key"] == transactional_id]

    def taken_transitions(self, transactional_id: str) -> list[tuple[str, str]]:
        states = self.states_written(transactional_id)
        return list(zip(states, states[1:]))

    def state_machine(self, transactional_id: str):
        return state_machine(self.state(transactional_id), taken=self.taken_transitions(transactional_id))


_STATE_COLOURS = {"Empty": "#f1f3f5", "Ongoing": "#fff3bf", "PrepareCommit": "#d0ebff", "PrepareAbort": "#ffe3e3",
                  "CompleteCommit": "#d3f9d8", "CompleteAbort": "#ffc9c9", "Dead": "#e9ecef",
                  "PrepareEpochFence": "#ffd8a8"}


def state_machine(current: Optional[str] = None, taken: Iterable[tuple[str, str]] = ()):
    """The transaction state machine drawn from :data:`TRANSITIONS` (Graphviz): ``current`` outlined, the
    edges in ``taken`` blue. Dead and its edges are left out (the id expiring is not part of this lab), and so
    is the Empty -> Empty edge (InitProducerId again)."""
    caption = ("The transaction state machine, drawn from kafkalab.coordinator.transaction.state.TRANSITIONS "
               "(Dead, reached when an idle id expires, left out)")
    if taken:
        caption += "; blue edges: the transitions this id has taken"
    return state_machine_diagram("txn_states", (state.value for state in S), TRANSITIONS, _STATE_COLOURS,
                                 caption=caption + ".", current=current, taken=taken, leave_out=("Dead",),
                                 label_width=18, nodesep="0.3", ranksep="0.3")      # ~1200 px wide


# -- checks ------------------------------------------------------------------------------------------------------------
def check_txn_partition(answer: Any, transactional_id: str, num_partitions: int = 50) -> CheckResult:
    """Exercise: which partition of ``__transaction_state`` holds ``transactional_id``."""
    expected = txn_partition(transactional_id, num_partitions)
    h = 0
    for ch in transactional_id:
        h = (31 * h + ord(ch)) % (1 << 32)

    def diagnose(a):
        if isinstance(a, int) and a == h % num_partitions and a != expected:
            return "that is the unsigned hash modulo: Java's hashCode is a signed 32-bit int; take abs() first"
        if isinstance(a, int) and not 0 <= a < num_partitions:
            return f"a partition number is between 0 and {num_partitions - 1}"
        return None
    return check_equal("__transaction_state partition", answer, expected, diagnose=diagnose,
                       hint="the same rule as for groups: abs(hashCode(transactional.id)) % "
                            "transaction.state.log.num.partitions, with Java's signed 32-bit hashCode")


def check_read_committed(answer: Any, entries: Sequence[tuple], high_watermark: int) -> CheckResult:
    """Exercise: the offsets a read_committed consumer returns, from the start of the log."""
    expected = read_committed_view(entries, high_watermark)
    if not is_unanswered(answer) and isinstance(answer, tuple):
        answer = list(answer)
    full = [e if len(e) == 3 else (i, *e) for i, e in enumerate(entries)]
    uncommitted = [o for o, _, kind in full if kind == "data" and o < high_watermark]
    _, lso = classify(full, high_watermark)

    def diagnose(a):
        if not isinstance(a, list):
            return "give a list of offsets, e.g. [0, 1, 4]"
        if a == uncommitted:
            return "that is what read_uncommitted returns (up to the high watermark, aborted records too)"
        if any(kind in ("COMMIT", "ABORT") for o, _, kind in full if o in a):
            return "markers are control records: the consumer reads them, but never returns them"
        if any(o >= lso for o in a):
            return "read_committed stops at the last stable offset: the first offset of a transaction still " \
                   "open -- even for records after it that are not transactional"
        return None
    return check_equal("read_committed", answer, expected, diagnose=diagnose,
                       hint="find the LSO first; below it, skip the records of aborted transactions and the markers")


def _replay_fence(events: Sequence[str]) -> dict:
    """Replay ``"<producer>: init" | ": begin + send" | ": commit" | ": abort"`` events on a LabCoordinator;
    returns the epoch each producer holds at the end and the epochs on the ABORT markers."""
    lab = LabCoordinator()
    held: dict[str, tuple[int, int]] = {}
    aborts = []
    for event in events:
        who, _, what = (s.strip() for s in event.partition(":"))
        if what == "init":
            r = lab.init_producer_id(TXN_ID)
            for _ in range(3):                                  # fenced an open transaction: markers, then retry
                if r.error != E.CONCURRENT_TRANSACTIONS:
                    break
                aborts += [w["producer epoch"] for w in lab.write_markers() if w["marker"] == "ABORT"]
                r = lab.init_producer_id(TXN_ID)
            held[who] = (r.producer_id, r.producer_epoch)
        elif what == "begin + send":
            lab.add_partitions(TXN_ID, *held[who], [(OUTPUT, 0)])
        elif what in ("commit", "abort"):
            lab.end_txn(TXN_ID, *held[who], commit=what == "commit")
            for w in lab.write_markers():
                if w["marker"] == "ABORT":
                    aborts.append(w["producer epoch"])
        else:
            raise ValueError(f"unknown event {event!r}")
    out = {who: epoch for who, (_, epoch) in held.items()}
    out["ABORT marker"] = aborts[-1] if aborts else None
    return out


def check_fence_epochs(answer: Any, events: Sequence[str]) -> CheckResult:
    """Exercise: after ``events``, the epoch each producer holds and the epoch written on the ABORT marker."""
    expected = _replay_fence(events)

    def diagnose(key, a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give an int"
        if key != "ABORT marker" and a == expected[key] - 1 and expected.get("ABORT marker") == a:
            return "that is the epoch of the fence (the one the abort marker carries); the new producer's " \
                   "retry of InitProducerId bumps once more"
        return None
    return check_parts("epochs after the fence", answer, expected, diagnose=diagnose,
                       hint="every InitProducerId bumps the epoch; one that finds a transaction Ongoing bumps it "
                            "to fence the old producer, aborts with that epoch, and the retry bumps again")


def _replay_steps(steps: Sequence[str], transactional_id: str = TXN_ID) -> list[str]:
    lab = LabCoordinator()
    pid = epoch = -1
    for step in steps:
        words = step.split()
        if words[0] == "InitProducerId":
            r = lab.init_producer_id(transactional_id)
            pid, epoch = r.producer_id, r.producer_epoch
        elif words[0] == "AddPartitionsToTxn":
            lab.add_partitions(transactional_id, pid, epoch, [tuple(w.rsplit("-", 1)) for w in words[1:]])
        elif words[0] == "AddOffsetsToTxn":
            lab.add_offsets(transactional_id, pid, epoch, words[1])
        elif words[0] == "EndTxn":
            lab.end_txn(transactional_id, pid, epoch, commit=words[1] == "COMMIT")
        elif step == "markers written":
            lab.write_markers()
        else:
            raise ValueError(f"unknown step {step!r}")
    return lab.states_written(transactional_id)


def check_state_sequence(answer: Any, steps: Sequence[str], transactional_id: str = TXN_ID) -> CheckResult:
    """Exercise: the states the coordinator writes to ``__transaction_state``, in order, for these requests
    (replayed on a :class:`LabCoordinator`)."""
    expected = _replay_steps(steps, transactional_id)
    if not is_unanswered(answer) and isinstance(answer, tuple):
        answer = list(answer)
    names = {s.value for s in S}

    def diagnose(a):
        if not isinstance(a, list) or not all(isinstance(s, str) for s in a):
            return "give a list of state names, e.g. ['Empty', 'Ongoing']"
        unknown = [s for s in a if s not in names]
        if unknown:
            return f"not a state: {unknown[0]!r} (the names are Kafka's: {', '.join(sorted(names))})"
        if len(a) > len(expected):
            return "a request that changes nothing is answered at once, without a record: adding partitions " \
                   "that are already in the transaction writes nothing"
        if len(a) < len(expected):
            return "every change is written before it is answered, including each new partition added to an " \
                   "Ongoing transaction, and the Complete* state after the markers"
        return None
    return check_equal("states written", answer, expected, diagnose=diagnose,
                       hint="one record per change of the id's metadata: state, epoch or the set of partitions")
