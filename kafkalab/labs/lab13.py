"""Lab 13 (``labs/13_breaking_it.ipynb``): breaking it -- durability under failure, judged like Jepsen.

Theory of operation
-------------------
The lab repeats Jepsen's 2013 Kafka experiment in miniature on brokers running in the notebook, and lets the
history checker (:mod:`kafkalab.cluster.history`) say what went wrong. Nothing here trusts the brokers: a run is
judged only by what a client was told (``ok`` with an offset, ``fail``, or ``info`` = unknown) and what a reader
found afterwards. This module holds the pieces the notebook would otherwise repeat:

* :class:`JepsenRun` -- one run on a fresh two-broker cluster, step by step: write, cut the leader off from its
  follower (``Cluster.partition``), a probe write that makes the follower fall behind, wait for the ISR to
  shrink, write more, kill the leader, wait for (or the absence of) a new leader, read everything back. Sends
  are *synchronous* (one record, then ``flush``), so how many records each phase writes is fixed and the
  outcome does not depend on timing;
* :class:`RunTimeline` -- the run as a picture (SVG): one square per send (green ok, red refused, grey
  unknown), the faults as dashed lines, the partition's leader as a band, and a cross on each acknowledged
  write the checker found lost. The x axis is the *order* of events, not wall time, so the picture is the same
  on every run;
* :func:`recorder` -- a confluent-kafka delivery callback that ends a :class:`~kafkalab.cluster.History` send
  as ok / fail / info (:func:`classify` is the rule: only errors returned *before* the append are definite);
* :func:`setting_outcome` -- what a configuration (acks, min.insync.replicas, unclean election, RF) buys under
  the experiment's faults, as a rule; :meth:`JepsenRun.controller_metrics` -- the controller's metrics that
  tell an operator what the election did (:data:`CONTROLLER_METRICS`); :func:`lost_after_unclean_election` -- which acknowledged writes a
  shorter log loses; and the checks ``check_*``, which compute the expected answer from the learner's data.

Mirrors no Kafka class: the faults are Jepsen's nemeses, the rules come from ``Partition.scala``
(``appendRecordsToLeader``: NOT_ENOUGH_REPLICAS before the append) and the ZooKeeper-era controller's leader
election (``PartitionLeaderElectionAlgorithms``: an ISR member, else -- only with
``unclean.leader.election.enable`` -- any live replica).
"""
from __future__ import annotations

import html
import logging
import time
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.labs import CheckResult, Part, check, check_equal, is_unanswered
from kafkalab.viz.textfit import SVG_FONT_FAMILY, stack_rows, text_width

__all__ = ["TOPIC", "OVERRIDES", "CONTROLLER_METRICS", "DEFINITE_ERRORS", "classify", "recorder", "RunTimeline", "JepsenRun",
           "read_everything", "replica_rows", "setting_outcome", "lost_after_unclean_election", "check_lost_values",
           "check_setting_outcomes", "check_classification"]

TOPIC = "jepsen"
OVERRIDES = {"replica.lag.time.max.ms": 800, "replica.fetch.wait.max.ms": 200, "replica.fetch.backoff.ms": 100,
             "zookeeper.session.timeout.ms": 2000, "controller.socket.timeout.ms": 3000,
             "auto.create.topics.enable": False, "offsets.topic.replication.factor": 1}
#: what the lab reads of each broker's controller metrics: Kafka's ``kafka.controller:type=KafkaController``
#: gauges ``ActiveControllerCount`` and ``OfflinePartitionsCount`` and ``type=ControllerStats`` meter
#: ``UncleanLeaderElectionsPerSec`` (its count)
CONTROLLER_METRICS = ("ActiveControllerCount", "UncleanLeaderElectionsPerSec", "OfflinePartitionsCount")
CLIENT_LOG = logging.getLogger("kafkalab.lab13.librdkafka")   # librdkafka's log lines: kept off stderr
CLIENT_LOG.propagate = False
CLIENT_LOG.addHandler(logging.NullHandler())

#: Errors a broker returns *before* it appends: the write certainly did not happen (``fail``). Every other
#: error -- a timeout, a dropped connection, NOT_ENOUGH_REPLICAS_AFTER_APPEND (appended, then the ISR shrank)
#: -- leaves the outcome unknown (``info``).
DEFINITE_ERRORS = ("NOT_ENOUGH_REPLICAS", "MSG_SIZE_TOO_LARGE", "INVALID_REQUIRED_ACKS", "TOPIC_AUTHORIZATION_FAILED",
                   "INVALID_RECORD")


def classify(outcome: Any) -> str:
    """``"ok"`` for an offset (an int), ``"fail"`` for an error in :data:`DEFINITE_ERRORS`, else ``"info"``."""
    if isinstance(outcome, int) and not isinstance(outcome, bool):
        return "ok"
    return "fail" if str(outcome) in DEFINITE_ERRORS else "info"


def recorder(history, value: bytes, timeline: Optional["RunTimeline"] = None, phase: str = ""):
    """A confluent-kafka ``on_delivery`` callback that ends the send of ``value`` in ``history`` (and draws it)."""
    op = history.send(value)

    def on_delivery(err, msg):
        if err is None:
            op.ok(msg.partition(), msg.offset())
        elif classify(err.name()) == "fail":
            op.fail(err.name())
        else:
            op.info(err.name())
        if timeline is not None:
            timeline.send(op, phase)
    return on_delivery


# -- the picture --------------------------------------------------------------------------------------------------------
class RunTimeline:
    """The events of one run in order: sends, faults, leader changes; ``svg()`` draws them."""

    COLOURS = {"ok": "#2f9e44", "fail": "#e03131", "info": "#adb5bd", "invoke": "#adb5bd"}
    LEADER_COLOURS = ("#1c7ed6", "#e8590c", "#7048e8")

    def __init__(self, title: str):
        self.title = title
        self.events: list[tuple] = []   # ("send", op, phase) / ("fault", text) / ("leader", broker, epoch)
        self.lost: set = set()

    def send(self, op, phase: str = "") -> None:
        self.events.append(("send", op, phase))

    def fault(self, text: str) -> None:
        self.events.append(("fault", text))

    def leader(self, broker: int, epoch: int) -> None:
        if not any(e[0] == "leader" for e in self.events) or self._last_leader() != (broker, epoch):
            self.events.append(("leader", broker, epoch))

    def _last_leader(self):
        for e in reversed(self.events):
            if e[0] == "leader":
                return e[1], e[2]
        return None

    def mark_lost(self, values: Iterable) -> None:
        self.lost = set(values)

    def rows(self) -> list[dict]:
        """The sends grouped by phase: how many ended ok / fail / info, and how many of them were lost."""
        out: dict[str, dict] = {}
        for e in self.events:
            if e[0] != "send":
                continue
            op, phase = e[1], e[2]
            row = out.setdefault(phase, {"phase": phase, "sends": 0, "ok": 0, "fail": 0, "info": 0, "lost": 0})
            row["sends"] += 1
            row["info" if op.type in ("info", "invoke") else op.type] += 1
            row["lost"] += op.value in self.lost
        return list(out.values())

    LEGEND = (("acknowledged (ok)", "#2f9e44"), ("refused (fail)", "#e03131"), ("unknown (info)", "#adb5bd"))
    LOST_LABEL = "✕ acknowledged, then lost"

    def svg(self) -> str:
        """Sends as coloured cells left to right, fault and leader labels stacked in rows so that none overlaps
        another, and a legend; the picture is as wide as its longest text (measured in its own font)."""
        e = html.escape
        size, step, left, line = 11, 14, 70, 14
        xs, x = [], left                        # x of every event; leader changes take no column
        for ev in self.events:
            xs.append(x)
            x += 0 if ev[0] == "leader" else step
        end_x = x
        faults = [(xs[i] + step / 2 + 3, ev[1]) for i, ev in enumerate(self.events) if ev[0] == "fault"]
        fault_rows = stack_rows([(fx, fx + text_width(t, size)) for fx, t in faults])
        top = 22 + line * (max(fault_rows, default=-1) + 1)       # the fault labels sit above the lanes
        lane_send = top + 22
        lane_leader = lane_send + 36
        leaders = [(xs[i], ev[1], ev[2]) for i, ev in enumerate(self.events) if ev[0] == "leader"]
        labels = [("no leader" if b < 0 else f"broker {b} (epoch {ep})") for _, b, ep in leaders]
        leader_rows = stack_rows([(x0 + 3, x0 + 3 + text_width(t, size)) for (x0, _, _), t in zip(leaders, labels)])
        label_top = lane_leader + 10                                # leader labels sit under their band
        legend_y = label_top + line * (max(leader_rows, default=-1) + 1) + 22
        height = legend_y + 8
        legend = [(name, colour, text_width(name, size)) for name, colour in self.LEGEND]
        legend_end = left + sum(14 + w + 16 for _, _, w in legend) + text_width(self.LOST_LABEL, size)
        right = max([end_x + 130, legend_end, left + text_width(self.title, size, bold=True)]
                    + [fx + text_width(t, size) for fx, t in faults]
                    + [x0 + 3 + text_width(t, size) for (x0, _, _), t in zip(leaders, labels)])
        width = int(right + 12.999)
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                 f'font-family="{SVG_FONT_FAMILY}" font-size="{size}">',
                 f'<text x="{left}" y="14" font-weight="bold">{e(self.title)}</text>',
                 f'<text x="6" y="{lane_send + 4}" fill="#555">sends</text>',
                 f'<text x="6" y="{lane_leader + 4}" fill="#555">leader</text>']
        for (fx, text), row in zip(faults, fault_rows):
            ty = 22 + line * row + 10
            parts.append(f'<line x1="{fx - 3}" y1="{ty - 10}" x2="{fx - 3}" y2="{lane_leader + 8}" '
                         f'stroke="#343a40" stroke-dasharray="3,2"/>'
                         f'<text x="{fx}" y="{ty}" fill="#343a40">{e(text)}</text>')
        for ev, x in zip(self.events, xs):
            if ev[0] != "send":
                continue
            op = ev[1]
            colour = self.COLOURS.get(op.type, "#adb5bd")
            tip = f"{op.value!r}: {op.type}" + (f" offset {op.offset}" if op.offset is not None else "") + \
                  (f" {op.error}" if op.type == "fail" else "")    # an info's error is the client's guess
            parts.append(f'<rect x="{x + 2}" y="{lane_send - 7}" width="{step - 4}" height="14" fill="{colour}">'
                         f'<title>{e(tip)}</title></rect>')
            if op.value in self.lost:
                parts.append(f'<text x="{x + step / 2}" y="{lane_send + 22}" text-anchor="middle" '
                             f'font-size="13" fill="#c92a2a">✕</text>')
        for i, ((x0, broker, _), label, row) in enumerate(zip(leaders, labels, leader_rows)):
            x1 = leaders[i + 1][0] if i + 1 < len(leaders) else end_x + 130   # the last band runs on
            colour = "#dee2e6" if broker < 0 else self.LEADER_COLOURS[broker % len(self.LEADER_COLOURS)]
            ty = label_top + line * row + 10
            parts.append(f'<rect x="{x0}" y="{lane_leader - 8}" width="{max(x1 - x0, 2)}" height="16" '
                         f'fill="{colour}" fill-opacity="0.35" stroke="{colour}"/>'
                         f'<line x1="{x0 + 1}" y1="{lane_leader + 8}" x2="{x0 + 1}" y2="{ty + 2}" stroke="{colour}"/>'
                         f'<text x="{x0 + 3}" y="{ty}">{e(label)}</text>')
        lx, ly = left, legend_y
        for name, colour, w in legend:
            parts.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
                         f'<text x="{lx + 14}" y="{ly}">{e(name)}</text>')
            lx += 14 + w + 16
        parts.append(f'<text x="{lx}" y="{ly}" fill="#c92a2a">{e(self.LOST_LABEL)}</text></svg>')
        return "".join(parts)

    def _repr_html_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"RunTimeline({self.title!r}, {len(self.events)} events)"


def replica_rows(state: Mapping) -> list[dict]:
    """One row per replica of a ``Cluster.partition_state``: role, ISR membership, LEO and HW."""
    rows = []
    for b in state["replicas"]:
        log = state["logs"].get(b)
        rows.append({"broker": b, "role": "leader" if b == state["leader"] else "follower", "in ISR": b in state["isr"],
                     "log_end_offset": log["log_end_offset"] if log else "(down)",
                     "high_watermark": log["high_watermark"] if log else "(down)"})
    return rows


# -- one run of the experiment ------------------------------------------------------------------------------------------
def read_everything(cluster, history, topic: str = TOPIC, timeout: float = 20.0) -> list:
    """Read partition 0 from offset 0 to its high watermark with a confluent-kafka consumer, record each poll,
    then record that the read was complete. Returns ``[(offset, value)]``."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "lab13-reader",
                  "client.id": "lab13-reader", "enable.auto.commit": False, "logger": CLIENT_LOG})
    try:
        _, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        history.seek(0, 0, process="reader")
        got, position = [], 0
        deadline = time.monotonic() + timeout
        while position < end and time.monotonic() < deadline:
            batch = [m for m in c.consume(100, 0.5) if not m.error()]
            if batch:
                history.poll([(m.partition(), m.offset(), m.value()) for m in batch], process="reader")
                got += [(m.offset(), m.value()) for m in batch]
                position = batch[-1].offset() + 1
        if position < end:
            raise RuntimeError(f"the read stopped at {position} of {end}")
        history.read_to_end(0, end)
        return got
    finally:
        c.close()


class JepsenRun:
    """Jepsen's 2013 experiment on a fresh two-broker cluster (replicas ``[0, 1]``: broker 0 leads)."""

    def __init__(self, *, acks: Any, min_insync_replicas: int, unclean: bool, title: str = ""):
        from kafkalab import Cluster
        from kafkalab.cluster import History
        self.acks, self.min_isr, self.unclean = acks, min_insync_replicas, unclean
        self.history = History()
        self.timeline = RunTimeline(title or f"acks={acks}, min.insync.replicas={min_insync_replicas}, "
                                              f"unclean.leader.election.enable={str(unclean).lower()}")
        self.cluster = Cluster(brokers=2, overrides=OVERRIDES, zk_tick_time_ms=500).start()
        admin = self.cluster.broker(self.cluster.controller_id).admin
        self.cluster.call(admin.create_topic, TOPIC, -1, -1, {0: [0, 1]},
                          {"min.insync.replicas": str(min_insync_replicas),
                           "unclean.leader.election.enable": str(unclean).lower()})
        self.cluster.wait_until(lambda: all(b.metadata_cache.partition_count(TOPIC) == 1 and
                                            b.metadata_cache.partitions(TOPIC)[0].leader >= 0
                                            for b in self.cluster.brokers.values()))
        self.note_leader()

    # -- state --------------------------------------------------------------------------------------------
    def state(self) -> dict:
        return self.cluster.partition_state(TOPIC, 0)

    def note_leader(self) -> dict:
        s = self.state()
        self.timeline.leader(s["leader"], s["leader_epoch"])
        return s

    def leader_isr(self) -> tuple:
        """The ISR as broker 0 (the first leader) holds it."""
        def read():
            p = self.cluster.brokers[0].replica_manager.get_partition(TOPIC, 0)
            return tuple(p.isr) if p is not None else ()
        return self.cluster.call(read)

    def controller_metrics(self) -> dict:
        """``{broker: {metric: value}}`` of :data:`CONTROLLER_METRICS`, for each running broker (read on the
        cluster's loop, so between two controller events)."""
        def read():
            return {b: {name: s.metrics()[name] for name in CONTROLLER_METRICS}
                    for b, s in sorted(self.cluster.brokers.items()) if s.is_running}
        return self.cluster.call(read)

    # -- steps --------------------------------------------------------------------------------------------
    def write(self, values: Sequence[bytes], phase: str, message_timeout_ms: int = 8000) -> list:
        """Send each value with its own Produce and wait for its answer (``retries=0``). Returns the outcomes:
        an offset, or an error name."""
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "client.id": "lab13-producer",
                      "acks": str(self.acks), "retries": 0, "linger.ms": 0, "message.timeout.ms": message_timeout_ms,
                      "request.timeout.ms": min(2000, message_timeout_ms), "logger": CLIENT_LOG})
        start = len(self.history.sends)
        for v in values:
            p.produce(TOPIC, value=v, partition=0, on_delivery=recorder(self.history, v, self.timeline, phase))
            if p.flush(15) != 0:
                raise RuntimeError("a send did not end")
        return [op.offset if op.type == "ok" else op.error for op in self.history.sends[start:]]

    def caught_up(self, leo: int, timeout: float = 10) -> None:
        """Wait until the follower has ``leo`` records and knows they are committed (HW = LEO)."""
        self.cluster.wait_until(lambda: self.state()["logs"].get(1) == {"log_end_offset": leo,
                                                                        "high_watermark": leo},
                                timeout, "the follower did not catch up")

    def cut(self) -> None:
        self.cluster.partition(0, 1)
        self.timeline.fault("cut 0 | 1")

    def wait_shrink(self, timeout: float = 10) -> None:
        self.cluster.wait_until(lambda: self.leader_isr() == (0,), timeout, "the leader did not shrink the ISR")
        self.timeline.fault("ISR = {0}")

    def kill_leader(self, timeout: float = 15) -> dict:
        """Kill broker 0; wait until the controller has decided: broker 1 leads (unclean election), or no one."""
        self.cluster.kill(0)
        self.timeline.fault("kill 0")
        self.cluster.wait_until(lambda: self.state()["leader"] != 0, timeout, "the controller did not react")
        return self.note_leader()

    def restart_old_leader(self, timeout: float = 15) -> dict:
        self.cluster.restart(0)
        self.cluster.heal()
        self.timeline.fault("restart 0")
        def serving():
            s = self.state()
            log = s["logs"].get(s["leader"])
            return s["leader"] >= 0 and log is not None and log["high_watermark"] == log["log_end_offset"] and \
                all(p.leader == s["leader"] for b in self.cluster.brokers.values() if b.is_running
                    for p in b.metadata_cache.partitions(TOPIC))
        self.cluster.wait_until(serving, timeout, "no leader serving after the restart")
        return self.note_leader()

    def read(self) -> list:
        self.cluster.heal()
        return read_everything(self.cluster, self.history)

    def check(self):
        result = self.history.check()
        self.timeline.mark_lost(c["value"] for c in result.lost_write)
        return result

    def stop(self) -> None:
        self.cluster.stop()

    # -- everything at once -----------------------------------------------------------------------------------
    def run(self, before: int = 10, during: int = 10):
        """The whole experiment: ``before`` writes, cut, probe, shrink, ``during`` writes, kill, read, check."""
        try:
            self.write([b"before-%d" % i for i in range(before)], "before the cut")
            self.caught_up(before)
            self.cut()
            self.write([b"probe"], "probe")
            self.wait_shrink()
            self.write([b"during-%d" % i for i in range(during)], "leader cut off")
            self.kill_leader()
            self.read()
            return self.check()
        finally:
            self.stop()


# -- the rules as functions ---------------------------------------------------------------------------------------------
def setting_outcome(acks: Any, min_insync_replicas: int, unclean: bool, replication_factor: int) -> dict:
    """What a configuration buys when the leader is cut off from every follower while writes go on, and then
    dies (the experiment of this lab). Keys: ``"acknowledged writes lost"`` (bool), ``"writes refused while cut
    off"`` (bool) and ``"after the leader dies"``: ``"a follower leads, writes go on"``, ``"a follower leads,
    writes refused"`` (its ISR is below the minimum) or ``"offline until the old leader returns"``."""
    all_acks = acks in ("all", -1, "-1")
    effective_min = min(min_insync_replicas, replication_factor)
    refused = all_acks and effective_min > 1               # ISR = {leader} < minimum: error 19 before the append
    if not unclean:
        return {"acknowledged writes lost": False, "writes refused while cut off": refused,
                "after the leader dies": "offline until the old leader returns"}
    # Unclean: a follower without the cut-off writes leads; every write acknowledged in the window is gone.
    survivors = replication_factor - 1                     # the remaining followers rejoin the new leader's ISR
    blocked = all_acks and survivors < effective_min
    return {"acknowledged writes lost": not refused and acks not in (0, "0"),
            "writes refused while cut off": refused,
            "after the leader dies": "a follower leads, writes refused" if blocked
            else "a follower leads, writes go on"}


def lost_after_unclean_election(old_log: Sequence, acknowledged: Iterable, follower_leo: int,
                                written_after: Sequence = ()) -> list:
    """The acknowledged values missing from the new leader's log: it kept ``old_log[:follower_leo]`` and then
    appended ``written_after`` (the old leader's suffix is truncated away when it comes back as a follower)."""
    new_log = list(old_log[:follower_leo]) + list(written_after)
    return sorted((v for v in acknowledged if v not in new_log), key=repr)


# -- checks -------------------------------------------------------------------------------------------------------------
def check_lost_values(answer: Any, old_log: Sequence, acknowledged: Iterable, follower_leo: int,
                      written_after: Sequence = ()) -> CheckResult:
    acknowledged = list(acknowledged)
    expected = lost_after_unclean_election(old_log, acknowledged, follower_leo, written_after)

    def diagnose(a):
        if not isinstance(a, (list, tuple, set)):
            return "give a list of values"
        a = set(a)
        if a == set(old_log[follower_leo:]) and a != set(expected):
            return "only acknowledged writes count: a write nobody was told about cannot be 'lost'"
        if a - set(acknowledged):
            return "a value that was never acknowledged is not a lost write"
        if a < set(expected):
            return "every acknowledged write the new leader's log lacks is lost, whatever its offset"
        if a > set(expected):
            return "the new leader kept everything below the follower's log end offset"
        return None
    got = sorted(answer, key=repr) if isinstance(answer, (list, tuple, set)) else answer
    return check_equal("Exercise 1 · which acknowledged writes are lost", got, expected, diagnose=diagnose,
                       hint="the new leader's log is the follower's log (up to its LEO) plus what it wrote since")


def check_setting_outcomes(answer: Any, cases: Sequence[Mapping]) -> CheckResult:
    """``answer``: one dict per case with the three keys of :func:`setting_outcome`."""
    title = "Exercise 2 · what each setting buys"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple)) or len(answer) != len(cases):
        return check(title, False, f"give a list of {len(cases)} dicts, one per case")
    parts, right = [], 0
    for i, (case, got) in enumerate(zip(cases, answer)):
        want = setting_outcome(case["acks"], case["min_insync_replicas"], case["unclean"],
                               case["replication_factor"])
        label = (f"case {i + 1} (acks={case['acks']}, min ISR {case['min_insync_replicas']}, "
                 f"unclean={case['unclean']}, RF {case['replication_factor']})")
        if is_unanswered(got):
            parts.append(Part(label, "todo", "not answered yet"))
            continue
        if not isinstance(got, Mapping):
            parts.append(Part(label, "fail", "give a dict with the three keys"))
            continue
        wrong = [k for k in want if got.get(k) != want[k]]
        if not wrong:
            right += 1
            parts.append(Part(label, "pass"))
            continue
        note = "look again at: " + ", ".join(wrong)
        if "acknowledged writes lost" in wrong and case["acks"] in ("all", -1) and \
                min(case["min_insync_replicas"], case["replication_factor"]) <= 1:
            note = "acks=all with an effective minimum of 1 waits for an ISR that may be the leader alone"
        elif "after the leader dies" in wrong and not case["unclean"]:
            note = "with unclean election off, only an ISR member may lead, and the ISR was the dead leader"
        parts.append(Part(label, "fail", note))
    ok = right == len(cases)
    return check(title, ok, f"{right} of {len(cases)} right", parts=parts,
                 hint="" if ok else "while cut off the ISR is the leader alone; compare it with min(min ISR, RF) "
                                    "for acks=all; then ask who may lead once the leader is dead")


def check_classification(answer: Any, outcomes: Sequence) -> CheckResult:
    """``answer``: ``"ok"``, ``"fail"`` or ``"info"`` per outcome (an offset or an error name)."""
    title = "Exercise 3 · ok, fail or info"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple)) or len(answer) != len(outcomes):
        return check(title, False, f"give a list of {len(outcomes)} of 'ok' / 'fail' / 'info'")
    parts, right = [], 0
    for outcome, got in zip(outcomes, answer):
        want = classify(outcome)
        label = f"{outcome!r}"
        if got == want:
            right += 1
            parts.append(Part(label, "pass", want))
        else:
            note = f"{got!r} is not right"
            if want == "info" and got == "fail":
                note = ("the broker may have appended it: an error that comes after the append (or instead of "
                        "any answer) proves nothing")
            elif want == "fail" and got == "info":
                note = "this error is returned before anything is written"
            parts.append(Part(label, "fail", note))
    ok = right == len(outcomes)
    return check(title, ok, f"{right} of {len(outcomes)} right", parts=parts,
                 hint="" if ok else "fail only when the write certainly did not happen")
