"""Lab 09 (``labs/09_controller.ipynb``): the controller and inter-broker traffic.

Theory of operation
-------------------
The lab watches the ZooKeeper-era controller of an in-process cluster: the znodes it is elected through, the
requests it sends every broker (itself included), and what it does when a broker or the controller itself
dies. Its output must be identical from run to run, so these helpers print only stable fields:

* :func:`zk_tree` -- a filtered view of the coordination store (:meth:`kafkalab.zk.store.ZkStore.dump`):
  ``/brokers/ids``, ``/controller``, ``/controller_epoch``, the topic's assignment and partition states. Ports,
  session ids, timestamps, topic ids and the cluster id are random and left out; an ephemeral node's owner is
  named by the broker whose session it is;
* :func:`controller_requests` -- the LeaderAndIsr / UpdateMetadata / StopReplica entries of each broker's
  request log (:class:`kafkalab.network.request_channel.RequestLog`) as rows;
* :class:`ControllerTap` -- wraps ``send`` of the connections of every broker's
  :class:`kafkalab.controller.channel_manager.ControllerChannelManager` (the existing ones and those made
  later) and keeps each request body it sends; :func:`body_rows` turns them into rows of stable fields;
* :func:`channels_diagram` -- Graphviz: the controller, one channel per broker (its own included), the store;
* the checks ``check_*``, which compute the expected answer from the data the learner was given (the leader
  election rule is :func:`kafkalab.controller.election.offline_partition_leader`).

Mirrors ``core/src/main/scala/kafka/controller/KafkaController.scala`` and ``ControllerChannelManager.scala``,
``core/src/main/scala/kafka/zk/ZkData.scala`` (the paths).
"""
from __future__ import annotations

import json
import time
from typing import Any, Iterable, Mapping, Optional

from kafkalab.controller.election import offline_partition_leader
from kafkalab.labs import CheckResult, check_equal, check_parts, is_unanswered
from kafkalab.viz.textfit import GRAPHVIZ_FONT
from kafkalab.protocol import ApiKey, api_name

__all__ = ["TOPIC", "ASSIGNMENT", "OVERRIDES", "CONTROLLER_APIS", "create_topic", "session_owners", "zk_tree",
           "zk_events", "cache_rows", "wait_until_quiet", "controller_requests", "ControllerTap", "body_rows", "controller_epoch", "channels_diagram",
           "read_zk", "expected_failover", "check_zk_reading", "check_failover", "check_stale_requests"]

TOPIC = "orders"
#: partition -> replicas; the first replica is the preferred leader.
ASSIGNMENT = {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}
OVERRIDES = {
    "zookeeper.session.timeout.ms": 1000,
    "replica.lag.time.max.ms": 10_000,         # no ISR changes of its own while the lab runs
    "offsets.topic.replication.factor": 1,
    "auto.create.topics.enable": False,
}
CONTROLLER_APIS = {ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA}


def create_topic(cluster, name: str, assignment: Mapping[int, list], timeout: float = 10.0) -> None:
    """Create ``name`` with an explicit replica assignment; wait until every running broker knows its leaders."""
    cluster.create_topic(name, timeout=timeout, assignment=assignment)


# -- the coordination store ----------------------------------------------------------------------------------------------
def session_owners(cluster) -> dict[int, int]:
    """Coordination-store session id -> broker id, for every broker (running or not: a dead broker's id stays)."""
    return {b.zk.session.session_id: broker_id for broker_id, b in cluster.brokers.items()
            if b.zk is not None and b.zk.session is not None}


def _stable(path: str, text: str, topic: str) -> str:
    if not text:
        return ""
    if path.startswith("/brokers/ids/"):
        data = json.loads(text)
        listeners = ", ".join(e.split("://")[0] for e in data.get("endpoints", []))
        return f"host {data.get('host')}, listeners [{listeners}]"
    if path == "/controller":
        return f"brokerid {json.loads(text)['brokerid']}"
    if path == f"/brokers/topics/{topic}":
        return "partitions " + json.dumps(json.loads(text)["partitions"], separators=(",", ":"))
    if path.endswith("/state"):
        d = json.loads(text)
        return (f"leader {d['leader']}, leader_epoch {d['leader_epoch']}, isr {d['isr']}, "
                f"controller_epoch {d['controller_epoch']}")
    return text


def zk_tree(cluster, topic: str = TOPIC, *, versions: bool = True) -> str:
    """The znodes a controller lives on, as an indented tree of stable fields."""
    owners = session_owners(cluster)
    keep = ("/brokers", "/brokers/ids", "/controller", "/controller_epoch", "/brokers/topics",
            f"/brokers/topics/{topic}")
    lines = []
    for node in cluster.call(cluster.zk_store.dump):
        p = node["path"]
        if not (p in keep or p.startswith("/brokers/ids/") or
                (p.startswith(f"/brokers/topics/{topic}/partitions/") and p.endswith("/state"))):
            continue
        depth = p.count("/") - 1
        name = p if depth == 0 else p.rsplit("/", 1)[1]
        if p.endswith("/state"):
            name, depth = "/".join(p.split("/")[-3:]), 3
        meta = []
        if versions and node["data"]:
            meta.append(f"v{node['version']}")
        if node["ephemeral_owner"]:
            who = owners.get(node["ephemeral_owner"])
            meta.append(f"ephemeral, session of broker {who}" if who is not None else "ephemeral")
        data = _stable(p, node["data"], topic)
        lines.append("    " * depth + name + (f"  {data}" if data else "") + (f"  ({', '.join(meta)})" if meta else ""))
    return "\n".join(lines)


def zk_events(cluster, since_zxid: int) -> list[dict]:
    """The store's event log since ``since_zxid``: what happened, to which path, on whose behalf (a broker,
    named through its session), without times or session ids."""
    owners = session_owners(cluster)
    rows = []
    for e in cluster.call(cluster.zk_store.event_log, since_zxid):
        sid = e.get("session")
        who = owners.get(int(sid, 16)) if isinstance(sid, str) and sid.startswith("0x") else owners.get(sid)
        detail = e["detail"] if e["event"] == "watch" else ""
        rows.append({"event": e["event"], "path": e["path"] or "",
                     "on behalf of": "" if who is None else f"broker {who}", "detail": detail})
    return rows


def cache_rows(cluster, topic: str = TOPIC) -> list[dict]:
    """What each running broker's metadata cache (filled only by UpdateMetadata) says."""
    def read():
        rows = []
        for broker_id, b in sorted(cluster.brokers.items()):
            if not b.is_running:
                continue
            cache = b.metadata_cache
            rows.append({"broker": broker_id, "controller": cache.controller_id,
                         "live brokers": cache.alive_broker_ids(),
                         "leaders": {p.partition: p.leader for p in cache.partitions(topic)} if
                         cache.contains_topic(topic) else {}})
        return rows
    return cluster.call(read)


def wait_until_quiet(cluster, timeout: float = 10.0) -> None:
    """Wait until every running broker's cache lists all running brokers and every request the controller has
    queued has been answered (its channels put requests on a queue and count the answered ones in ``sent``;
    the queue's count of unfinished items is the number ever queued, since nobody calls ``task_done``)."""
    def quiet() -> bool:
        cid = cluster.controller_id
        if cid < 0:
            return False
        running = sorted(b for b, s in cluster.brokers.items() if s.is_running)
        if any(cluster.broker(b).metadata_cache.alive_broker_ids() != running for b in running):
            return False
        channels = cluster.broker(cid).controller.channel.brokers.values()
        return all(ch.queue.empty() and ch.queue._unfinished_tasks == ch.sent for ch in channels)
    cluster.wait_until(quiet, timeout, "the controller did not finish its requests")
    # A broker logs a request just after its response is on the wire, so the controller may hold the answer a
    # moment before the receiver's request log has the entry: give the receivers that moment.
    time.sleep(0.1)


def controller_epoch(cluster) -> int:
    """The value of ``/controller_epoch`` (0 when it does not exist yet)."""
    found = [n for n in cluster.call(cluster.zk_store.dump) if n["path"] == "/controller_epoch"]
    return int(found[0]["data"]) if found and found[0]["data"] else 0


# -- the wire --------------------------------------------------------------------------------------------------------------
def controller_requests(cluster, *, brokers: Optional[Iterable[int]] = None, correlation_ids: bool = True) -> list[dict]:
    """One row per controller request in each broker's request log (the receiving side)."""
    rows = []
    for broker_id in sorted(brokers if brokers is not None else cluster.brokers):
        b = cluster.broker(broker_id)
        if b.channel is None:
            continue
        for r in b.channel.request_log.records:
            if r.api_key in CONTROLLER_APIS:
                row = {"received by": f"broker {broker_id}", "listener": r.listener_name, "client_id": r.client_id}
                if correlation_ids:
                    row["correlation_id"] = r.correlation_id
                row["api"] = f"{r.api_name} v{r.api_version}"
                rows.append(row)
    return rows


class ControllerTap:
    """Keeps every request body the controllers send: ``(controller id, to broker, api key, version, body)``."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.sent: list[tuple[int, int, int, int, Any]] = []
        cluster.call(self._install_all)

    def _wrap(self, manager, broker_id: int, connection) -> None:
        if getattr(connection, "_lab09_tapped", False):
            return
        original = connection.send

        async def send(api_key, version, body, _orig=original):
            self.sent.append((manager.controller_id, broker_id, api_key, version, body))
            return await _orig(api_key, version, body)
        connection.send = send
        connection._lab09_tapped = True

    def _install_all(self) -> None:
        for b in self.cluster.brokers.values():
            if b.controller is not None:
                self._install(b.controller.channel)

    def _install(self, manager) -> None:
        for broker_id, channel in manager.brokers.items():
            self._wrap(manager, broker_id, channel.connection)
        if getattr(manager, "_lab09_tapped", False):
            return
        original_add = manager.add_broker

        def add_broker(broker_id, host, port, _orig=original_add):
            _orig(broker_id, host, port)
            channel = manager.brokers.get(broker_id)
            if channel is not None:
                self._wrap(manager, broker_id, channel.connection)
        manager.add_broker = add_broker
        manager._lab09_tapped = True

    def refresh(self) -> None:
        """Tap the channel managers of brokers started since (a restarted broker has a new one)."""
        self.cluster.call(self._install_all)

    def clear(self) -> None:
        self.sent.clear()


def body_rows(sent, topic: str = TOPIC) -> list[dict]:
    """The partition states inside tapped LeaderAndIsr / UpdateMetadata bodies, one row per partition per
    request, sorted (the channels to different brokers run concurrently)."""
    rows = []
    for _controller, to, api_key, version, body in sent:
        if api_key not in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA):
            continue
        live = ""
        if api_key == ApiKey.UPDATE_METADATA:
            live = str(sorted(b.id for b in body.live_brokers))
        for t in body.topic_states:
            if t.topic_name != topic:
                continue
            for ps in t.partition_states:
                rows.append({"to": f"broker {to}", "request": f"{api_name(api_key)} v{version}",
                             "partition": f"{t.topic_name}-{ps.partition_index}", "leader": ps.leader,
                             "leader_epoch": ps.leader_epoch, "isr": list(ps.isr),
                             "controller_epoch": ps.controller_epoch, "live_brokers": live})
    return sorted(rows, key=lambda r: (r["to"], r["request"], r["partition"], r["leader_epoch"]))


def channels_diagram(cluster, *, title: str = "", dead: Iterable[int] = ()):
    """Graphviz: the controller inside its broker, one channel (queue + sender, own connection and correlation
    ids) to each live broker's inter-broker listener -- its own included -- and every broker's session with
    the coordination store."""
    import graphviz

    from kafkalab.viz import Diagram

    dead = set(dead)
    cid = cluster.controller_id
    g = graphviz.Digraph("controller", graph_attr={"rankdir": "LR", "bgcolor": "transparent", "fontname": GRAPHVIZ_FONT,
                                                   "label": title, "labelloc": "t", "fontsize": "13",
                                                   "nodesep": "0.4", "ranksep": "1.1"},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "shape": "box",
                                    "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#868e96"},
                         edge_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "9", "arrowsize": "0.6"})
    g.node("zk", "coordination store\n/brokers/ids, /controller,\n/controller_epoch, .../state", shape="cylinder",
           fillcolor="#f3f0ff", color="#7048e8")
    channels = sorted(cluster.call(lambda: list(cluster.broker(cid).controller.channel.brokers))) if cid >= 0 else []
    for b in sorted(cluster.brokers):
        with g.subgraph(name=f"cluster_b{b}") as s:
            if b in dead:
                s.attr(label=f"broker {b} (dead)", color="#e03131", fontcolor="#c92a2a", fontname=GRAPHVIZ_FONT)
                s.node(f"l{b}", "listener\n(gone)", fillcolor="#ffe3e3", color="#e03131")
                continue
            s.attr(label=f"broker {b}", color="#ced4da", fontname=GRAPHVIZ_FONT, fontsize="11")
            s.node(f"l{b}", "PLAINTEXT listener\n(inter-broker)", fillcolor="#f8f9fa")
            if b == cid:
                s.node("ctrl", f"controller\n(active, epoch {controller_epoch(cluster)})", fillcolor="#fff4e6",
                       color="#e8590c")
            else:
                s.node(f"c{b}", "controller\n(standing by)", fillcolor="#f8f9fa", color="#adb5bd", fontcolor="#868e96")
        g.edge(f"l{b}", "zk", style="dashed", color="#b197fc", arrowhead="none",
               label="" if b in dead else "session")
    for b in channels:
        g.edge("ctrl", f"l{b}", label=f"Controller-{cid}-to-broker-{b}\nclientId={cid}", color="#e8590c",
               penwidth="2", fontcolor="#d9480f")
    return Diagram(g, caption="Orange: the controller's channels, one connection each, to every live broker's "
                              "inter-broker listener — its own broker's included. Dashed: sessions with the store.")


# -- exercises -------------------------------------------------------------------------------------------------------------
def read_zk(znodes: Mapping[str, Any]) -> dict:
    """What a dump of znodes (path -> data: dict, int or None) says: controller id, controller epoch, live brokers."""
    controller = znodes.get("/controller")
    return {"controller": controller["brokerid"] if isinstance(controller, Mapping) else -1,
            "controller_epoch": int(znodes.get("/controller_epoch") or 0),
            "live_brokers": sorted(int(p.rsplit("/", 1)[1]) for p in znodes if p.startswith("/brokers/ids/"))}


def expected_failover(states: Mapping[int, Mapping[str, Any]], dead: int) -> dict:
    """partition -> (leader, isr) after broker ``dead`` fails: partitions it led get the first live ISR member
    in assignment order (clean election); the others keep their leader; ``dead`` leaves every ISR."""
    live = {b for s in states.values() for b in s["replicas"]} - {dead}
    out = {}
    for p, s in states.items():
        if s["leader"] == dead:
            e = offline_partition_leader(s["replicas"], s["isr"], live, False)
            out[p] = (e.leader, list(e.isr))
        else:
            out[p] = (s["leader"], [b for b in s["isr"] if b != dead])
    return out


def check_zk_reading(answer: Any, znodes: Mapping[str, Any]) -> CheckResult:
    """``answer``: dict with ``controller``, ``controller_epoch``, ``live_brokers`` (a sorted list)."""
    expected = read_zk(znodes)
    if isinstance(answer, Mapping) and isinstance(answer.get("live_brokers"), (list, tuple, set)):
        answer = {**answer, "live_brokers": sorted(answer["live_brokers"])}

    def diagnose(key, got):
        if key == "live_brokers":
            return "a broker is live while its ephemeral /brokers/ids/<id> node exists — look only there"
        if key == "controller_epoch":
            return "the epoch is the data of /controller_epoch, not a version or a broker id"
        return "the controller is named in the data of /controller"
    return check_parts("Reading the coordination store", answer, expected, diagnose=diagnose,
                       hint="three znodes answer the three questions")


def check_failover(answer: Any, states: Mapping[int, Mapping[str, Any]], dead: int) -> CheckResult:
    """``answer``: partition -> (leader, isr list) after broker ``dead`` fails."""
    expected = {p: (leader, list(isr)) for p, (leader, isr) in expected_failover(states, dead).items()}
    if isinstance(answer, Mapping):
        answer = {p: (v[0], list(v[1])) if isinstance(v, (list, tuple)) and len(v) == 2 else v
                  for p, v in answer.items()}

    def diagnose(p, got):
        s = states[p]
        if isinstance(got, tuple) and got[0] == dead:
            return "the dead broker cannot lead"
        if isinstance(got, tuple) and dead in got[1]:
            return "the controller removes a dead broker from every ISR it was in"
        if isinstance(got, tuple) and s["leader"] != dead and got[0] != s["leader"]:
            return "this partition's leader is alive: the controller does not move it"
        if isinstance(got, tuple) and got[0] not in s["isr"]:
            return "a clean election picks from the ISR only"
        return "among the live ISR members, which comes first in the replica list?"
    return check_parts("Leaders and ISRs after the failure", answer, expected, label=lambda p: f"partition {p}",
                       diagnose=diagnose, hint="leader: first live ISR member in assignment order")


def check_stale_requests(answer: Any, requests: Mapping[str, int], highest_seen: int) -> CheckResult:
    """``answer``: the set of request names (keys of ``requests``: name -> controller epoch) a broker that has
    seen controller epoch ``highest_seen`` refuses with STALE_CONTROLLER_EPOCH."""
    expected = {name for name, epoch in requests.items() if epoch < highest_seen}
    if is_unanswered(answer):
        return check_equal("Fencing a zombie controller", answer, None)
    if not isinstance(answer, (set, frozenset, list, tuple)):
        return CheckResult("Fencing a zombie controller", "fail", f"expected a set of names, got {type(answer).__name__}")
    got = set(answer)
    if got == expected:
        return CheckResult("Fencing a zombie controller", "pass", f"correct: {', '.join(sorted(expected)) or 'none'}")
    hint = []
    if expected - got:
        hint.append("some refused requests are missing: compare each epoch with the highest one seen")
    if got - expected:
        hint.append("a request from the current epoch (or a newer one) is accepted")
    return CheckResult("Fencing a zombie controller", "fail", f"{sorted(got)} is not right", "; ".join(hint))
