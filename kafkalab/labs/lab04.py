"""Lab 04 (``labs/04_metadata_routing.ipynb``): metadata and routing.

Theory of operation
-------------------
A client starts with one address and ends up talking to the right broker for every partition. The lab follows
that path on a three-broker in-process cluster and needs a few helpers that keep its output identical from run
to run (ports, cluster ids and topic ids are random; which broker leads is fixed here by an explicit replica
assignment, so it is not):

* :func:`create_topic` -- a topic with an explicit replica assignment (what ``kafka-topics.sh
  --replica-assignment`` and CreateTopics' ``assignments`` do), created through the broker's admin path;
* :func:`metadata_request` -- one MetadataRequest on a bare socket, the decoded response back;
* :func:`brokers_table`, :func:`partitions_table` -- the response's brokers and partitions as rows (ports are
  compared with the cluster's own listeners, never printed);
* :func:`routing_table` -- the client's cache (:class:`kafkalab.clients.metadata.ClusterView`) as "partition ->
  leader -> connection";
* :func:`cluster_diagram` -- Graphviz: the client, the brokers in id order, and every partition (in order) with
  its leader, in-sync followers and replicas outside the ISR;
* :func:`trace_rows` -- a client trace (:mod:`kafkalab.clients.tracing`) as rows without timings, each Produce
  with its partition's error;
* :func:`coordinator_of` names the broker coordinating a group (the leader of its ``__consumer_offsets``
  partition); :func:`wait_for_request` waits (in real time, bounded) until a client's trace holds a request of one API;
  :func:`requests_rows` says, per API of a trace, where its requests must go and whether they went there;
  :func:`config_rows` shows a DescribeConfigs answer with Kafka's ``ConfigSource`` names;
* :func:`refresh_times` is the model of the periodic refresh (``metadata.max.age.ms``) an exercise checks;
* the checks ``check_*``, which compute the expected answer from the data the learner was given.

Mirrors the routing part of ``clients/.../producer/internals/Sender.java`` and ``clients/.../Metadata.java``.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkalab.clients.metadata import STALE_METADATA_ERRORS
from kafkalab.coordinator.group.group_metadata_manager import OFFSETS_TOPIC, partition_for
from kafkalab.labs import CheckResult, check_equal, check_parts, is_unanswered
from kafkalab.viz.textfit import GRAPHVIZ_FONT
from kafkalab.protocol import ApiKey, ErrorCode, decode_response, encode_request, make_request, request_class
from kafkalab.tools.configs_resources import SOURCE_NAMES
from kafkalab.trace import RawConnection

__all__ = ["TOPIC", "ASSIGNMENT", "OVERRIDES", "create_topic", "cached_leader", "cached_isr_size",
           "metadata_request", "brokers_table", "partitions_table", "routing_table", "cluster_diagram",
           "trace_rows", "error_name", "next_requests", "check_routing", "check_refresh_errors",
           "check_retry_sequence", "coordinator_of", "wait_for_request", "requests_rows", "config_rows", "refresh_times",
           "check_refresh_times"]

TOPIC = "orders"
#: partition -> replicas; the first replica is the preferred leader.
ASSIGNMENT = {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}
OVERRIDES = {
    "zookeeper.session.timeout.ms": 1000,     # a dead broker is noticed quickly
    "replica.lag.time.max.ms": 1000,
    "offsets.topic.replication.factor": 1,
    "num.partitions": 2,                       # for topics created automatically (section 3)
    "default.replication.factor": 3,
}
METADATA_VERSION = 12
Metadata = request_class(ApiKey.METADATA)


def error_name(code: int) -> str:
    return ErrorCode(code).name


# -- cluster side ---------------------------------------------------------------------------------------------------------
def create_topic(cluster, name: str, assignment: Mapping[int, list], timeout: float = 10.0) -> None:
    """Create ``name`` with an explicit replica assignment and wait until every running broker knows its leaders."""
    cluster.create_topic(name, timeout=timeout, assignment=assignment)


def cached_leader(broker, topic: str, partition: int) -> Optional[int]:
    """The leader ``broker``'s own metadata cache names for a partition (None while it knows nothing of it)."""
    state = broker.metadata_cache.partition_state(topic, partition)
    return None if state is None else state.leader


def cached_isr_size(broker, topic: str, partition: int) -> int:
    """How many in-sync replicas ``broker``'s metadata cache lists for a partition (0 while it knows nothing)."""
    state = broker.metadata_cache.partition_state(topic, partition)
    return 0 if state is None else len(state.isr)


def metadata_request(address: str, topics: Optional[Iterable[str]], *, allow_auto_topic_creation: bool = False,
                     correlation_id: int = 1, client_id: str = "kafkalab-lab04"):
    """Send one MetadataRequest (v12) to ``address`` and return the decoded response body.
    ``topics=None`` asks for every topic."""
    topic_list = None if topics is None else tuple(Metadata.MetadataRequestTopic(name=t)
                                                    for t in topics)
    body = Metadata(topics=topic_list, allow_auto_topic_creation=allow_auto_topic_creation,
                    include_topic_authorized_operations=False)
    frame = encode_request(make_request(body, api_version=METADATA_VERSION, correlation_id=correlation_id,
                                        client_id=client_id))
    with RawConnection(address) as conn:
        conn.send(frame)
        return decode_response(conn.receive(), ApiKey.METADATA, METADATA_VERSION).body


def brokers_table(body, cluster) -> list[dict]:
    """One row per broker of a MetadataResponse; the port is compared with that broker's listener, not shown."""
    return [{"node_id": b.node_id, "host": b.host,
             "port = that broker's listener": b.port == cluster.broker(b.node_id).bound_endpoints[0].port,
             "rack": b.rack} for b in sorted(body.brokers, key=lambda b: b.node_id)]


def partitions_table(body, topic: str) -> list[dict]:
    [t] = [t for t in body.topics if t.name == topic]
    return [{"partition": p.partition_index, "error": error_name(p.error_code), "leader": p.leader_id,
             "leader_epoch": p.leader_epoch, "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes)}
            for p in sorted(t.partitions, key=lambda p: p.partition_index)]


# -- client side ----------------------------------------------------------------------------------------------------------
def routing_table(view, topic: str) -> list[dict]:
    """Where the client would send a Produce for each partition of ``topic``, from its cached ClusterView."""
    rows = []
    for p in sorted(view.topics[topic].partitions):
        info = view.topics[topic].partitions[p]
        leader = view.leader_for(topic, p)
        rows.append({"partition": p, "leader": info.leader, "leader_epoch": info.leader_epoch,
                     "send Produce to": "(unknown: refresh first)" if leader is None else f"broker {leader}",
                     "replicas": list(info.replicas), "isr": list(info.isr)})
    return rows


def trace_rows(events) -> list[dict]:
    """A client trace as rows: where each request went and what came back (errors per partition for Produce)."""
    rows = []
    for i, e in enumerate(events, 1):
        outcome = ""
        if e.response is None:
            outcome = e.error or "no response"
        elif e.api_key == ApiKey.PRODUCE:
            parts = [(t.name, p.index, p.error_code, p.base_offset) for t in e.response.body.responses
                     for p in t.partition_responses]
            outcome = "; ".join(f"{t}-{p}: " + (f"{error_name(c)} ({c})" if c else f"NONE, base_offset {o}")
                                for t, p, c, o in parts)
        elif e.api_key == ApiKey.METADATA:
            body = e.response.body
            outcome = "; ".join(f"{t.name}-{p.partition_index} leader {p.leader_id} (epoch {p.leader_epoch})"
                                for t in body.topics for p in sorted(t.partitions, key=lambda p: p.partition_index))
        else:
            outcome = error_name(getattr(e.response.body, "error_code", 0))
        rows.append({"step": i, "to": "bootstrap" if e.node_id < 0 else f"broker {e.node_id}",
                     "corr": e.correlation_id, "request": f"{e.api_name} v{e.api_version}", "outcome": outcome})
    return rows


def cluster_diagram(view, topic: str, *, title: str = "", dead: Iterable[int] = (), client: str = "producer"):
    """Graphviz, left to right: the client, the brokers it knows (in id order), the partitions of ``topic`` (in
    order), each partition with an arrow to every broker holding a replica of it: bold green to its leader,
    solid to in-sync followers, dashed grey to replicas outside the ISR. No edge labels: the caption says it."""
    import graphviz

    from kafkalab.viz import Diagram

    dead = set(dead)
    g = graphviz.Digraph("routing", graph_attr={"rankdir": "LR", "bgcolor": "transparent", "fontname": GRAPHVIZ_FONT,
                                                "nodesep": "0.5", "ranksep": "1.3", "label": title,
                                                "labelloc": "t", "fontsize": "13"},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "11", "shape": "box",
                                    "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#868e96"},
                         edge_attr={"arrowsize": "0.6"})
    g.node("client", f"{client}\n(metadata cache)", fillcolor="#e7f5ff", color="#1971c2")
    brokers = sorted(set(view.brokers) | dead)
    info = view.topics[topic]
    partitions = sorted(info.partitions)
    # one column of brokers, one of partitions; an invisible edge between neighbours keeps each column in order
    with g.subgraph(name="brokers") as s:
        s.attr(rank="same")
        for b in brokers:
            if b in dead:
                s.node(f"b{b}", f"broker {b}\n(dead)", fillcolor="#ffe3e3", color="#e03131", fontcolor="#c92a2a")
            else:
                s.node(f"b{b}", f"broker {b}" + ("\n(controller)" if b == view.controller_id else ""),
                       fillcolor="#f8f9fa")
        for upper, lower in zip(brokers, brokers[1:]):
            s.edge(f"b{upper}", f"b{lower}", style="invis")
    with g.subgraph(name="partitions") as s:
        s.attr(rank="same")
        for p in partitions:
            s.node(f"p{p}", f"{topic}-{p}\nleader epoch {info.partitions[p].leader_epoch}", fillcolor="#fff9db",
                   color="#f08c00")
        for upper, lower in zip(partitions, partitions[1:]):
            s.edge(f"p{upper}", f"p{lower}", style="invis")
    for b in brokers:
        if b not in dead:
            g.edge("client", f"b{b}", color="#74c0fc", style="dotted", arrowhead="none")
    for p in partitions:                       # drawn broker -> partition (the columns), arrow at the broker
        pi = info.partitions[p]
        for r in pi.replicas:
            if r == pi.leader:
                g.edge(f"b{r}", f"p{p}", dir="back", color="#2b8a3e", penwidth="2.5")
            elif r in pi.isr:
                g.edge(f"b{r}", f"p{p}", dir="back", color="#495057")
            else:
                g.edge(f"b{r}", f"p{p}", dir="back", color="#adb5bd", style="dashed")
    return Diagram(g, caption="Dotted: the brokers the client knows. From each partition, an arrow to every broker "
                              "holding a replica: its leader (green, bold), in-sync followers (solid grey), replicas "
                              "outside the ISR (dashed).")


# -- what the client does on an error -------------------------------------------------------------------------------------
def next_requests(cached_leader: int, new_leader: int, bootstrap_known: bool = True) -> list[tuple[str, int]]:
    """The requests a producer sends for one record when its cache names ``cached_leader`` but ``new_leader`` now
    leads: a Produce to the stale leader, a Metadata refresh (from the least loaded node: the one it is
    connected to), a Produce to the new leader. With an up-to-date cache: one Produce."""
    if cached_leader == new_leader:
        return [("Produce", new_leader)]
    return [("Produce", cached_leader), ("Metadata", cached_leader), ("Produce", new_leader)]


def coordinator_of(cluster, group_id: str) -> int:
    """The broker coordinating ``group_id``: the leader of its ``__consumer_offsets`` partition (the group id's
    Java ``hashCode`` modulo ``offsets.topic.num.partitions``)."""
    partitions = cluster.broker(0).config["offsets.topic.num.partitions"]
    return cluster.partition_state(OFFSETS_TOPIC, partition_for(group_id, partitions))["leader"]


def wait_for_request(trace, api_name: str, timeout_s: float = 10.0) -> bool:
    """True once ``trace`` (a client's :class:`~kafkalab.clients.tracing.Trace`) holds a ``api_name`` request;
    False after ``timeout_s`` seconds of real time."""
    deadline = time.monotonic() + timeout_s
    while not any(e.api_name == api_name for e in list(trace.events)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def requests_rows(events, must_reach: Mapping[str, tuple[str, Optional[Iterable[int]]]], brokers: Iterable[int]) -> list[dict]:
    """One row per API a client sent (ApiVersions and Metadata left out), in order of first use: where that
    API must go (``must_reach``: api -> (description, the node ids that qualify, or None for any broker)) and
    whether every request of it went there. No broker ids are printed: leaders and coordinators are placed at
    random, so only the roles repeat from run to run."""
    brokers = set(brokers)
    sent: dict[str, tuple[str, set]] = {}
    for e in events:
        if e.api_name in ("ApiVersions", "Metadata"):
            continue
        version, nodes = sent.get(e.api_name, (f"v{e.api_version}", set()))
        nodes.add(e.node_id)
        sent[e.api_name] = (version, nodes)
    rows = []
    for api, (version, nodes) in sent.items():
        where, allowed = must_reach.get(api, ("any broker", None))
        targets = {n for n in nodes if n >= 0}
        if where == "every broker":
            ok = targets == brokers
        else:
            ok = nodes <= (set(allowed) if allowed is not None else brokers | {n for n in nodes if n < 0})
        rows.append({"request": f"{api} {version}", "must go to": where, "went there": "yes" if ok else "NO"})
    return rows


def config_rows(configs: Mapping[str, Any], names: Iterable[str]) -> list[dict]:
    """Some entries of one resource's DescribeConfigs answer: value and where it comes from."""
    return [{"config": n, "value": configs[n].value, "source": SOURCE_NAMES.get(configs[n].config_source, "?")}
            for n in names]


def refresh_times(max_age_s: float, stale_at_s: Sequence[float], until_s: float) -> list[float]:
    """When a client sends Metadata, from its first refresh at 0 until ``until_s``: ``max_age_s`` after the last
    refresh, and at once when an answer says its cache is stale (``stale_at_s``; retry backoff ignored)."""
    times, last = [0.0], 0.0
    stale = sorted(stale_at_s)
    while True:
        due = last + max_age_s
        early = [t for t in stale if last < t < due]
        nxt = early[0] if early else due
        if nxt > until_s:
            return times
        times.append(float(nxt))
        last = nxt


# -- checks ---------------------------------------------------------------------------------------------------------------
def check_routing(answer: Any, partitions: Mapping[int, Mapping[str, Any]], brokers: Mapping[int, str]) -> CheckResult:
    """``answer``: partition -> "host:port" a Produce for it must go to. ``partitions``: partition -> dict with
    ``leader``, ``replicas``, ``isr``; ``brokers``: node id -> "host:port"."""
    expected = {p: brokers[info["leader"]] for p, info in partitions.items()}

    def diagnose(p, got):
        info = partitions[p]
        if got in (brokers.get(r) for r in info["replicas"] if r != info["leader"]):
            return "that broker holds a replica, but only the leader accepts a Produce"
        if got not in brokers.values():
            return "that address is not one of the brokers in the response"
        return None
    return check_parts("Routing table", answer, expected, label=lambda p: f"partition {p}", diagnose=diagnose,
                       hint="look up each partition's leader_id, then that broker's host and port")


def check_refresh_errors(answer: Any, candidates: Iterable[str]) -> CheckResult:
    """``answer``: the set of error names (from ``candidates``) after which a client refreshes its metadata."""
    candidates = list(candidates)
    expected = {n for n in candidates if ErrorCode[n] in STALE_METADATA_ERRORS}
    if is_unanswered(answer):
        return check_equal("Errors that mean 'refresh your metadata'", answer, None)
    if not isinstance(answer, (set, frozenset, list, tuple)):
        return CheckResult("Errors that mean 'refresh your metadata'", "fail",
                           f"expected a set of error names, got {type(answer).__name__}")
    got = set(answer)
    if got == expected:
        return CheckResult("Errors that mean 'refresh your metadata'", "pass",
                           f"correct: {', '.join(sorted(expected))}")
    missing, extra = expected - got, got - expected
    hint = []
    if missing:
        hint.append(f"{len(missing)} error(s) missing: which answers say 'I am not the broker you want' or "
                    f"'this partition has no leader right now'?")
    if extra:
        hint.append(f"{len(extra)} error(s) too many: would new metadata change the outcome of those?")
    return CheckResult("Errors that mean 'refresh your metadata'", "fail", f"{sorted(got)} is not right",
                       " ".join(hint))


def check_retry_sequence(answer: Any, cached_leader: int, new_leader: int) -> CheckResult:
    """``answer``: the list of (api name, broker id) the producer sends for one record."""
    expected = next_requests(cached_leader, new_leader)

    def diagnose(got):
        if isinstance(got, (list, tuple)) and got and tuple(got[0]) == ("Produce", new_leader) and \
                cached_leader != new_leader:
            return "the client does not know yet that leadership moved: it goes where its cache says"
        if isinstance(got, (list, tuple)) and len(got) == 2:
            return "between the failed Produce and the good one, the client learns something new"
        return None
    normalised = [tuple(x) for x in answer] if isinstance(answer, (list, tuple)) else answer
    return check_equal("Refresh and retry", normalised if not is_unanswered(answer) else answer, expected,
                       hint="follow the trace of section 7", diagnose=diagnose)


def check_refresh_times(answer: Any, max_age_s: float, stale_at_s: Sequence[float], until_s: float) -> CheckResult:
    """``answer``: the times (s) of the client's Metadata requests, first at 0."""
    expected = refresh_times(max_age_s, stale_at_s, until_s)

    def diagnose(got):
        if not isinstance(got, list):
            return None
        if set(stale_at_s) - set(got):
            return "a stale-metadata error asks for a refresh at once"
        if all(t % max_age_s == 0 for t in got if t not in stale_at_s):
            return "the age counts from the last refresh, whatever caused it, not from a fixed schedule"
        return None
    normalised = sorted(float(t) for t in answer) if isinstance(answer, (list, tuple)) and \
        all(isinstance(t, (int, float)) for t in answer) else answer
    return check_equal("Refresh by age", normalised, expected, diagnose=diagnose,
                       hint=f"after each refresh, the next is due {max_age_s:g} s later unless an error comes first")
