"""Lab 00 (``labs/00_tour.ipynb``): Kafka in one notebook -- the tour before the details.

Theory of operation
-------------------
The opening lab shows what Kafka *does* on a three-broker :class:`~kafkalab.cluster.Cluster` without a byte
of protocol: topics made by the admin client and by a producer's Metadata request, records with keys,
values, headers and timestamps, re-reading from any offset, retention deleting whole segments, partitions
spread over brokers with a leader each, a broker killed and the cluster carrying on, and the metrics that
show it. Later labs take each of these apart; :data:`COURSE_MAP` says which.

This module keeps the notebook short and its stored outputs stable:

* fixed settings (:data:`T0`, :data:`OVERRIDES`, :data:`ORDERS_ASSIGNMENT`, client ids) so that every run
  prints the same bytes;
* :class:`PlacementPicture` -- which broker holds which replica, leaders and followers, read from the
  controller's view (``Cluster.partition_state``); a killed broker is drawn crossed out (deterministic SVG);
* :class:`OffsetStrip` -- one partition as an array of offsets, segments marked, the offsets retention deleted
  greyed out and the log start / end offsets labelled (deterministic SVG);
* :func:`partition_logs`, :func:`segments`, :func:`produce_requests` -- small readers of broker state;
* :func:`course_map` -- the map of the course as a table, labs present in ``labs/`` linked;
* the checks ``check_*``, which compute the right answer from the data the learner was given: what a
  consumer re-reads after a seek (:func:`reread`), where retention by size leaves the log start offset
  (:func:`log_start_after_retention`), who leads each partition after brokers die (:func:`leaders_after`).

The broker side it shows is spread over ``kafkalab/server/`` (``KafkaServer``, ``ReplicaManager``),
``kafkalab/storage/`` (``UnifiedLog``, retention) and ``kafkalab/controller/`` (leader election) -- Kafka's
``core/src/main/scala/kafka/server/``, ``storage/`` and ``kafka/controller/``.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.labs import CheckResult, check_equal, check_parts, is_unanswered
from kafkalab.viz.textfit import SVG_FONT_FAMILY, text_width, wrap_text

__all__ = ["T0", "OVERRIDES", "ORDERS_ASSIGNMENT", "COURSE_MAP", "PlacementPicture", "OffsetStrip", "replicas_settled",
           "partition_logs", "segments", "produce_requests", "produce_requests_since", "course_map", "reread", "log_start_after_retention",
           "leaders_after", "check_reread", "check_log_start", "check_leaders_after"]

#: The records' timestamps: 2023-11-14 22:13:20 UTC, then one second apart.
T0 = 1_700_000_000_000

#: Broker settings for the tour. Auto-created topics get three partitions on all three brokers; nothing is
#: deleted by age (the records carry 2023 timestamps, and section 5 shows retention by size instead); a group
#: starts without waiting for more members.
OVERRIDES = {"num.partitions": 3, "default.replication.factor": 3, "log.retention.ms": -1,
             "group.initial.rebalance.delay.ms": 0}

#: ``orders``: three partitions, each on all three brokers, the first replica (the preferred leader) rotating.
ORDERS_ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}

#: Which lab answers which question: (notebook, question, concepts).
COURSE_MAP = [
    ("00_tour", "What does Kafka do, and what is it for?", "C17, C19, C20, C22-C25, C36"),
    ("01_the_wire", "What bytes does a client actually send?", "C1, C8, C25, C37"),
    ("02_api_versions", "How do a new client and an old broker agree?", "C5, C8, C45"),
    ("03_correlation_ids", "How does a client match answers to requests, and in which order?", "C2-C4, C36, C38"),
    ("04_metadata_routing", "How does a producer know which broker to send to, and what when it dies?",
     "C6, C23, C35, C40, C41"),
    ("05_producing", "What happens between send() and the acknowledgement?", "C9, C25, C26, C28, C30, C39"),
    ("06_the_log", "What is on disk, and how do retention and compaction work?", "C18, C19, C24, C27, C31"),
    ("07_fetching_and_purgatory", "Why does a consumer not see a record at once, and how does it wait?",
     "C9, C39, C42-C44"),
    ("08_replication", "How do followers copy the leader, and what does acks=all wait for?", "C22, C29, C42, C44"),
    ("09_controller", "Who decides the leaders, and how do brokers learn about it?", "C7, C11, C13, C15, C16"),
    ("10_consumer_groups", "How do consumers share partitions and remember where they are?", "C31-C33"),
    ("11_transactions", "How can a write to several partitions be all or nothing?", "C30, C33, C34"),
    ("12_security", "Who may connect, and what may they do?", "C10, C12-C14"),
    ("13_breaking_it", "Which settings lose acknowledged records when brokers fail?", "C29, C42, C44"),
    ("14_real_clients", "What do real clients do differently?", "C2, C21, C36, C45"),
    ("15_spark_streaming", "What does a streaming pipeline on Kafka look like?", "C20, C31"),
]

_MONO = "ui-monospace,Menlo,Consolas,monospace"
_SANS = "system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


# -- reading broker state --------------------------------------------------------------------------------------------
def partition_logs(cluster, topic: str, partition: int) -> dict:
    """``{broker id: (log start offset, log end offset, high watermark)}`` of every running replica."""
    def read():
        out = {}
        for broker_id, broker in sorted(cluster.brokers.items()):
            p = broker.replica_manager.get_partition(topic, partition) if broker.is_running else None
            if p is not None and p.log is not None:
                out[broker_id] = (p.log.log_start_offset, p.log.log_end_offset, p.log.high_watermark)
        return out
    return cluster.call(read)


def segments(cluster, broker_id: int, topic: str, partition: int) -> list[tuple[int, int]]:
    """The ``(base offset, size in bytes)`` of each segment of a replica, oldest first."""
    def read():
        log = cluster.brokers[broker_id].replica_manager.get_partition(topic, partition).log
        return [(s.base_offset, s.size) for s in log.log_segments()]
    return cluster.call(read)


def replicas_settled(cluster, topics: Iterable[str]) -> bool:
    """On the cluster's loop (a ``cluster.wait_until`` condition): every partition of ``topics`` has all its
    running replicas at the same log end offset, and each knows it is committed (high watermark == LEO)."""
    running = [b for b in cluster.brokers.values() if b.is_running]
    if not running:
        return False
    for topic in topics:
        for state in running[0].metadata_cache.partitions(topic):
            logs = [p.log for b in running for p in [b.replica_manager.get_partition(topic, state.partition)]
                    if p is not None and p.log is not None]
            if not logs or len({(log.log_end_offset, log.high_watermark) for log in logs}) > 1 \
                    or logs[0].high_watermark != logs[0].log_end_offset:
                return False
    return True


def produce_requests(cluster) -> dict[int, int]:
    """How many Produce requests each broker has handled so far (its request metrics, API key 0)."""
    return {broker_id: next((r["requests"] for r in broker.channel.metrics.snapshot() if r["api_key"] == 0), 0)
            for broker_id, broker in sorted(cluster.brokers.items())}


def produce_requests_since(cluster, before: Mapping[int, int], sent: int, timeout: float = 10.0) -> dict[int, int]:
    """Produce requests each broker handled since ``before`` (a :func:`produce_requests` snapshot), once all
    ``sent`` of them are counted: a broker counts a request after its response is on the wire, so the client can
    hold the acknowledgement a moment before the broker's metric moves."""
    cluster.wait_until(lambda: sum(produce_requests(cluster).values()) - sum(before.values()) >= sent, timeout,
                       f"the brokers did not count {sent} Produce requests")
    now = produce_requests(cluster)
    return {b: now[b] - before.get(b, 0) for b in now}


# -- pictures --------------------------------------------------------------------------------------------------------
class PlacementPicture:
    """Brokers side by side, each listing the partitions it holds: the leader's replica in green, followers in
    the ISR in grey, replicas outside the ISR dashed. ``states`` is ``{(topic, partition): Cluster.partition_state
    (...)}``; ``dead`` the brokers drawn as killed."""

    def __init__(self, states: Mapping[tuple, Mapping], brokers: Iterable[int], *, dead: Iterable[int] = (),
                 controller: Optional[int] = None, title: str = ""):
        self.states = dict(states)
        self.brokers = sorted(brokers)
        self.dead = set(dead)
        self.controller = controller
        self.title = title

    @classmethod
    def of(cls, cluster, topics: Sequence[str], *, title: str = "") -> "PlacementPicture":
        states = {}
        for topic in topics:
            p = 0
            while True:
                state = cluster.partition_state(topic, p)
                if not state["replicas"]:
                    break
                states[(topic, p)] = state
                p += 1
        running = {b for b, s in cluster.brokers.items() if s.is_running}
        return cls(states, cluster.brokers, dead=set(cluster.brokers) - running, controller=cluster.controller_id,
                   title=title)

    def roles(self) -> dict[int, list[tuple[str, str]]]:
        """``{broker: [(partition name, "leader" | "follower" | "out of sync")]}``: what the picture shows."""
        out = {b: [] for b in self.brokers}
        for (topic, p), state in sorted(self.states.items()):
            for r in state["replicas"]:
                role = "leader" if r == state["leader"] else "follower" if r in state["isr"] else "out of sync"
                out.setdefault(r, []).append((f"{topic}-{p}", role))
        return out

    def _repr_html_(self) -> str:
        """The picture as one ``<svg>`` in a scrolling ``<div>``: the same drawing the lab's deck shows
        (``figure:`` tags, scripts/export_figures.py)."""
        return f'<div style="overflow-x:auto">{self.svg()}</div>'

    def svg(self) -> str:
        """Deterministic SVG text: a box per broker, a row per replica it stores, a key below."""
        look = {"leader": ("#2b8a3e", "#ebfbee", "", "leader"),
                "follower": ("#868e96", "#f8f9fa", "", "follower"),
                "out of sync": ("#adb5bd", "#ffffff", ' stroke-dasharray="4 3"', "not in ISR")}
        dead_look = ("#e03131", "#fff5f5", ' stroke-dasharray="4 3"', "offline")
        roles = self.roles()
        heads = {b: f"broker {b}" + (" · controller" if b == self.controller and b not in self.dead else "")
                 + (" · killed" if b in self.dead else "") for b in roles}
        name_w = max([text_width(n, 12.5, mono=True) for rs in roles.values() for n, _ in rs] + [0])
        word_w = max(text_width(w[3], 12) for w in (*look.values(), dead_look))
        card_w = max(190, name_w + word_w + 40, *(text_width(h, 13, bold=True) + 24 for h in heads.values()))
        rows = max([len(rs) for rs in roles.values()] + [0])
        margin, gap, chip_h, chip_gap = 8, 14, 22, 6
        top = margin + (24 if self.title else 0)
        card_h = 34 + rows * (chip_h + chip_gap) + 4
        width = 2 * margin + len(roles) * card_w + max(len(roles) - 1, 0) * gap
        key = wrap_text("Each box is a broker; each row a replica it stores. Leader: producers and consumers talk "
                        "to this one; follower: copies the leader by fetching from it.", width - 2 * margin, 12)
        height = top + card_h + 10 + len(key) * 16 + margin
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'font-family="{SVG_FONT_FAMILY}" fill="#212529">']
        if self.title:
            out.append(f'<text x="{margin}" y="{margin + 13}" font-size="13" font-weight="bold">{_e(self.title)}'
                       f'</text>')
        for i, (b, replicas) in enumerate(roles.items()):
            x, dead = margin + i * (card_w + gap), b in self.dead
            border = "#e03131" if dead else "#495057"
            out.append(f'<rect x="{x}" y="{top}" width="{card_w}" height="{card_h}" rx="8" '
                       f'fill="{"#fff5f5" if dead else "#ffffff"}" stroke="{border}" stroke-width="2"/>')
            strike = ' text-decoration="line-through"' if dead else ""
            out.append(f'<text x="{x + 10}" y="{top + 20}" font-size="13" font-weight="bold" fill="{border}"'
                       f'{strike}>{_e(heads[b])}</text>')
            for row, (name, role) in enumerate(replicas):
                colour, fill, dash, word = dead_look if dead else look[role]
                y = top + 30 + row * (chip_h + chip_gap)
                out.append(f'<rect x="{x + 8}" y="{y}" width="{card_w - 16}" height="{chip_h}" rx="5" '
                           f'fill="{fill}" stroke="{colour}" stroke-width="1.5"{dash}/>')
                out.append(f'<text x="{x + 16}" y="{y + 15}" font-size="12.5" font-family="{_MONO}">{_e(name)}'
                           f'</text>')
                out.append(f'<text x="{x + card_w - 16}" y="{y + 15}" font-size="12" text-anchor="end" '
                           f'fill="{colour}">{_e(word)}</text>')
        for i, line in enumerate(key):
            out.append(f'<text x="{margin}" y="{top + card_h + 22 + i * 16}" font-size="12" fill="#495057">'
                       f'{_e(line)}</text>')
        out.append("</svg>")
        return "".join(out)

    def __repr__(self) -> str:
        return "\n".join(f"broker {b}: " + ", ".join(f"{n} {r}" for n, r in rs) for b, rs in self.roles().items())


class OffsetStrip:
    """One partition as a row of offsets: the segments it is stored in (a thicker line where one starts), the
    offsets retention deleted greyed out, the log start offset and the log end offset marked below."""

    def __init__(self, segment_bases: Sequence[int], log_start_offset: int, log_end_offset: int, *,
                 deleted_from: int = 0, title: str = ""):
        self.bases = sorted(segment_bases)
        self.start, self.end, self.deleted_from = log_start_offset, log_end_offset, deleted_from
        self.title = title

    def _repr_svg_(self) -> str:
        cell, left, top = 26, 14, 30
        width = left * 2 + cell * (self.end - self.deleted_from) + 40
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="112" font-family="{_SANS}">',
               f'<text x="{left}" y="16" font-size="13" font-weight="bold">{_e(self.title)}</text>']
        for i, offset in enumerate(range(self.deleted_from, self.end)):
            x = left + i * cell
            gone = offset < self.start
            out.append(f'<rect x="{x}" y="{top}" width="{cell}" height="28" fill="{"#e9ecef" if gone else "#e7f5ff"}"'
                       f' stroke="{"#ced4da" if gone else "#1971c2"}" stroke-width="1"/>')
            out.append(f'<text x="{x + cell / 2}" y="{top + 18}" font-size="11.5" text-anchor="middle" '
                       f'font-family="{_MONO}" fill="{"#adb5bd" if gone else "#1864ab"}">{offset}</text>')
        for base in self.bases:
            if base >= self.deleted_from:
                x = left + (base - self.deleted_from) * cell
                out.append(f'<line x1="{x}" y1="{top - 6}" x2="{x}" y2="{top + 34}" stroke="#212529" stroke-width="2.5"/>')
        end_x = left + (self.end - self.deleted_from) * cell
        out.append(f'<text x="{end_x + 4}" y="{top + 18}" font-size="12" fill="#495057">→</text>')
        start_x = left + (self.start - self.deleted_from) * cell
        out.append(f'<text x="{start_x}" y="{top + 52}" font-size="12" fill="#1971c2">▲ log start offset {self.start}'
                   f'</text>')
        out.append(f'<text x="{end_x}" y="{top + 72}" font-size="12" text-anchor="end" fill="#495057">'
                   f'log end offset {self.end} ▲</text>')
        out.append("</svg>")
        return "".join(out)

    def __repr__(self) -> str:
        return f"OffsetStrip(segments at {self.bases}, log start {self.start}, log end {self.end})"


def course_map(labs_dir: Optional[Path] = None) -> "CourseMap":
    """The map of the course; notebooks found in ``labs_dir`` (default: the current directory) are linked."""
    return CourseMap(Path(labs_dir) if labs_dir is not None else Path.cwd())


class CourseMap:
    """The course's labs with the question each answers (:data:`COURSE_MAP`); HTML links the notebooks present."""

    def __init__(self, labs_dir: Path):
        self.present = {name for name, _, _ in COURSE_MAP if (labs_dir / f"{name}.ipynb").exists()}

    def __repr__(self) -> str:
        return "\n".join(f"{name:<27} {question}" for name, question, _ in COURSE_MAP)

    def rows(self) -> list[dict]:
        return [{"lab": name[:2], "notebook": f"{name}.ipynb", "the question it answers": question,
                 "concepts": concepts} for name, question, concepts in COURSE_MAP]

    def _repr_html_(self) -> str:
        body = []
        for name, question, concepts in COURSE_MAP:
            cell = (f'<a href="{_e(name)}.ipynb">{_e(name)}</a>' if name in self.present
                    else f'<span style="color:#868e96">{_e(name)} (not in this copy)</span>')
            body.append(f'<tr><td style="font-family:{_MONO};text-align:left">{cell}</td>'
                        f'<td style="text-align:left">{_e(question)}</td>'
                        f'<td style="text-align:left;color:#495057">{_e(concepts)}</td></tr>')
        return ('<table><thead><tr><th style="text-align:left">lab</th><th style="text-align:left">the question it '
                'answers</th><th style="text-align:left">concepts</th></tr></thead><tbody>' + "".join(body) +
                '</tbody></table>')


# -- the rules the exercises ask about -------------------------------------------------------------------------------
def reread(values: Sequence[Any], log_start_offset: int, seek_offset: int) -> list:
    """What a consumer with ``auto.offset.reset=earliest`` returns after seeking to ``seek_offset`` and reading to
    the end of a partition whose records are ``values`` (offset = position) and whose log starts at
    ``log_start_offset``: below the log start the broker answers OFFSET_OUT_OF_RANGE and the reset policy moves
    the consumer to the log start; past the end it is reset too (to the start, with earliest)."""
    start = seek_offset if log_start_offset <= seek_offset <= len(values) else log_start_offset
    return list(values[start:])


def log_start_after_retention(segment_sizes: Sequence[tuple[int, int]], retention_bytes: int) -> int:
    """The log start offset after one retention check by size: delete the oldest segment while the log without it
    is still at least ``retention.bytes``; never the active (last) segment. ``segment_sizes``: ``(base offset,
    bytes)`` oldest first (Kafka's ``UnifiedLog.deleteRetentionSizeBreachedSegments``)."""
    segs = list(segment_sizes)
    total = sum(size for _, size in segs)
    start = segs[0][0]
    for i, (_, size) in enumerate(segs[:-1]):
        if total - size < retention_bytes:
            break
        total -= size
        start = segs[i + 1][0]
    return start


def leaders_after(assignment: Mapping[int, Sequence[int]], leaders: Mapping[int, int],
                  dead: Iterable[int]) -> dict[int, Optional[int]]:
    """Who leads each partition after the brokers in ``dead`` die (every replica in sync before): a leader that
    is alive stays; otherwise the controller picks the first live replica in assignment order; none left means
    the partition is offline (``None``)."""
    dead = set(dead)
    out = {}
    for p, replicas in sorted(assignment.items()):
        if leaders[p] not in dead:
            out[p] = leaders[p]
        else:
            out[p] = next((r for r in replicas if r not in dead), None)
    return out


# -- checks ----------------------------------------------------------------------------------------------------------
def check_reread(answer: Any, values: Sequence[Any], log_start_offset: int, seek_offset: int) -> CheckResult:
    """Exercise 1: the values a consumer gets after ``seek(seek_offset)``."""
    expected = reread(values, log_start_offset, seek_offset)
    if not is_unanswered(answer) and isinstance(answer, tuple):
        answer = list(answer)

    def diagnose(a):
        if not isinstance(a, list):
            return "give a list of values, in the order the consumer returns them"
        if a == list(values[seek_offset:]) and seek_offset < log_start_offset:
            return f"offsets below the log start offset ({log_start_offset}) were deleted by retention: the " \
                   "broker cannot serve them"
        if a == list(values[log_start_offset:seek_offset]):
            return "reading goes forward from the seek position, to the end of the log"
        if sorted(map(str, a)) == sorted(map(str, expected)) and a != expected:
            return "a partition is read in offset order"
        return None
    return check_equal("re-read after a seek", answer, expected, diagnose=diagnose,
                       hint="a consumer reads from its position to the end; a position below the log start offset is "
                            "out of range, and auto.offset.reset=earliest moves it to the log start")


def check_log_start(answer: Any, segment_sizes: Sequence[tuple[int, int]], retention_bytes: int) -> CheckResult:
    """Exercise 2: the log start offset after a retention check by size."""
    expected = log_start_after_retention(segment_sizes, retention_bytes)
    bases = [b for b, _ in segment_sizes]

    def diagnose(a):
        if not isinstance(a, int) or isinstance(a, bool):
            return "give an offset (an int)"
        if a not in bases:
            return "retention deletes whole segments: the new log start is the base offset of a segment"
        if a > expected:
            return "that deletes too much: a segment goes only if the log without it is still at least " \
                   "retention.bytes"
        if a < expected:
            return "keep deleting while the log without the oldest segment is still at least retention.bytes"
        return None
    return check_equal("log start offset after retention", answer, expected, diagnose=diagnose,
                       hint="oldest segment first: delete it if the bytes left are still >= retention.bytes; never "
                            "the active (last) segment")


def check_leaders_after(answer: Any, assignment: Mapping[int, Sequence[int]], leaders: Mapping[int, int],
                        dead: Iterable[int]) -> CheckResult:
    """Exercise 3: each partition's leader after the brokers in ``dead`` die (``None``: offline)."""
    dead = set(dead)
    expected = leaders_after(assignment, leaders, dead)

    def diagnose(p, a):
        if expected[p] is None:
            return "no replica is left alive: the partition is offline (None)"
        if a is not None and a in dead:
            return f"broker {a} is dead: a leader must be alive"
        if a is not None and a not in assignment[p]:
            return f"broker {a} holds no replica of partition {p}: only a replica can lead"
        if expected[p] == leaders[p] and a != leaders[p]:
            return "its leader is still alive: nothing changes for this partition"
        return "the controller takes the first live replica in the assignment's order"
    return check_parts("leaders after the failure", answer, expected, diagnose=diagnose,
                       hint="a partition whose leader lives keeps it; otherwise the first live replica in the "
                            "assignment's order leads; no live replica: None")
