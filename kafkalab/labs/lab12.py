"""kafkalab.labs.lab12 -- lab-only helpers for "Listeners, SASL and ACLs": broker settings with two listeners,
a listener picture, a SASL login on the wire and fed by hand, ACL decision tables, the course's story, and the
self-checking exercises.

Theory of operation
-------------------
Nothing here authenticates or authorizes anything itself: the lab drives kafkalab's own pieces and shows what
they do.

* **Settings.** :func:`listener_overrides` writes the broker settings of two listeners, ``CLIENT`` (SASL_PLAINTEXT,
  for clients) and ``BROKER`` (for the controller and the replica fetchers), with Kafka's keys;
  :func:`refusal` starts a one-broker :class:`~kafkalab.Cluster` with some settings and returns the message it
  refuses them with (Kafka's ``KafkaConfig.validateValues`` wording), or ``"started"``.
* **Pictures.** :func:`listeners_diagram` draws a running cluster's listeners and which traffic reaches which
  (from the brokers' bound endpoints and the controller id, never ports); :func:`state_diagram` draws
  :data:`kafkalab.security.sasl_server.TRANSITIONS`.
* **On the wire.** :class:`Wire` is a :class:`~kafkalab.trace.RawConnection` that keeps every frame it sends
  and receives (:class:`Step`), so a notebook can show them with :func:`kafkalab.viz.show_frame`.
  :func:`login` runs a PLAIN or SCRAM login over it, with SaslHandshake v1 (tokens in SaslAuthenticate) or v0
  (raw size-prefixed tokens). :func:`token_text` prints a SCRAM message with the parts a real broker makes up
  at random (its nonce half, the salt, the proof, the signature) replaced by what they are.
* **By hand.** :func:`hand_fed_login` feeds a :class:`~kafkalab.security.sasl_server.SaslServerAuthenticator`
  the same frames without any socket, with a fixed server nonce, and returns one row per frame;
  :func:`conversation` prints the tokens of those rows in full, each named by :func:`message_name`.
* **ACLs.** :func:`acl_table` asks :class:`~kafkalab.security.authorizer.AuthorizerCore` (the broker's decision
  rules) a list of questions.
* **The story.** :func:`refused_requests` picks the broker's "Error when handling request" lines apart.
* **Exercises** (:mod:`kafkalab.labs.checks`): :func:`check_acl_predictions`, :func:`check_server_signature`,
  :func:`check_refusals`. Each computes the right answer from the data the learner was given, with kafkalab.

Mirrors ``clients/.../security/authenticator/SaslServerAuthenticator.java``, ``ScramSaslServer.java``,
``core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`` and ``KafkaConfig.validateValues``.
"""
from __future__ import annotations

import base64
import re
import time
from typing import Any, Iterable, Mapping, NamedTuple, Optional

from kafkalab.common.config import ConfigException
from kafkalab.labs import CheckResult, check_equal, check_parts, is_unanswered
from kafkalab.viz.textfit import GRAPHVIZ_FONT
from kafkalab.protocol import (ApiKey, ErrorCode, decode_request, decode_response, encode_request, make_request,
                               request_class)
from kafkalab.security.acl import (WILDCARD_PRINCIPAL_STRING, AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType,
                                   ResourcePattern, ResourceType)
from kafkalab.security.authorizer import IMPLIED_BY, AuthorizerCore, decision_table
from kafkalab.security.jaas import jaas_line
from kafkalab.security.plain import PlainSaslServer
from kafkalab.security.sasl_server import TRANSITIONS, SaslServerAuthenticator
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter
from kafkalab.security.scram_sasl import ScramSaslClient, ScramSaslServer, new_sasl_client
from kafkalab.trace.raw import RawConnection

__all__ = ["ACL_AUTHORIZER", "ADMIN", "USERS", "listener_overrides", "refusal", "listeners_diagram",
           "state_diagram", "Step", "Wire", "login", "token_text", "hand_fed_login", "message_name", "conversation",
           "acl_table",
           "refused_requests", "steps_table", "SUPPORTED", "check_acl_predictions", "check_server_signature", "check_refusals"]

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
#: What the brokers log in with on a SASL inter-broker listener (and the lab's administrator).
ADMIN = ("admin", "admin-secret")
#: PLAIN users (name -> password) of the lab's CLIENT listener.
USERS = {"alice": "alice-secret"}
CLIENT_ID = "lab12"


# -- settings ------------------------------------------------------------------------------------------------------------
def listener_overrides(*, inter_broker: str = "SASL_PLAINTEXT", mechanisms: tuple = ("PLAIN", "SCRAM-SHA-256"),
                       inter_broker_mechanism: str = "PLAIN", control_plane: bool = False, **extra) -> dict:
    """Two listeners: ``CLIENT`` (SASL_PLAINTEXT, PLAIN users :data:`USERS`) and ``BROKER`` (``inter_broker``:
    SASL_PLAINTEXT or PLAINTEXT), the inter-broker one. ``control_plane`` adds a third, ``CONTROL`` (the same
    protocol as ``BROKER``), named by ``control.plane.listener.name``. ``extra`` adds or replaces keys
    (``super.users`` ...)."""
    user, password = ADMIN
    names = ("CLIENT", "BROKER", "CONTROL") if control_plane else ("CLIENT", "BROKER")
    protocols = {"CLIENT": "SASL_PLAINTEXT", "BROKER": inter_broker, "CONTROL": inter_broker}
    config = {"listeners": ",".join(f"{n}://127.0.0.1:0" for n in names),
              "listener.security.protocol.map": ",".join(f"{n}:{protocols[n]}" for n in names),
              "inter.broker.listener.name": "BROKER",
              "sasl.enabled.mechanisms": ",".join(mechanisms)}
    if control_plane:
        config["control.plane.listener.name"] = "CONTROL"
    for listener in (n.lower() for n in names if protocols[n] == "SASL_PLAINTEXT"):
        for mechanism in mechanisms:
            users = dict(USERS, **{user: password}) if mechanism == "PLAIN" else {}
            config[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = \
                jaas_line(mechanism, user, password, **users)
    if inter_broker == "SASL_PLAINTEXT":
        config["sasl.mechanism.inter.broker.protocol"] = inter_broker_mechanism
    config.update(extra)
    return config


def refusal(overrides: Mapping[str, Any]) -> str:
    """Start a one-broker cluster with ``overrides``: Kafka's refusal message, or ``"started"``."""
    from kafkalab import Cluster

    try:
        Cluster(brokers=1, overrides=dict(overrides)).start().stop()
    except (ConfigException, ValueError) as e:
        return str(e)
    return "started"


# -- pictures ------------------------------------------------------------------------------------------------------------
def listeners_diagram(cluster, *, title: str = "Listeners"):
    """Each broker with its listeners; clients reach the client listeners, the controller the inter-broker
    listener of every broker (its own included), each follower the leader's (as the request logs saw it)."""
    import graphviz

    from kafkalab.viz import Diagram

    g = graphviz.Digraph(graph_attr={"rankdir": "LR", "label": title, "labelloc": "t", "fontsize": "13",
                                     "fontname": GRAPHVIZ_FONT, "nodesep": "0.25"}, node_attr={"fontsize": "11", "fontname": GRAPHVIZ_FONT},
                         edge_attr={"fontsize": "9", "fontname": GRAPHVIZ_FONT})
    controller = cluster.controller_id
    g.node("client", "client\n(User:alice)", shape="box", style="rounded,filled", fillcolor="#e7f5ff")
    inter_broker = {}
    for broker_id, server in sorted(cluster.brokers.items()):
        cfg = server.config
        ibl = cfg.inter_broker_listener_name
        inter_broker[broker_id] = ibl
        with g.subgraph(name=f"cluster_{broker_id}") as s:
            s.attr(label=f"broker {broker_id}" + (" (controller)" if broker_id == controller else ""),
                   style="rounded", color="#fd7e14" if broker_id == controller else "#868e96")
            for ep in server.bound_endpoints:
                name = ep.listener_name
                colour = "#ffe8cc" if name == ibl else "#d3f9d8"
                s.node(f"{broker_id}_{name}", f"{name}\n{cfg.protocol_map.get(name)}", shape="box",
                       style="filled", fillcolor=colour)
        for ep in server.bound_endpoints:
            if ep.listener_name != ibl:
                g.edge("client", f"{broker_id}_{ep.listener_name}", color="#1c7ed6", style="dashed")
    own = sorted({r.api_name for r in list(cluster.brokers[controller].channel.request_log.records)
                  if r.client_id == str(controller) and r.listener_name == inter_broker[controller]})
    for broker_id, ibl in inter_broker.items():   # the self-loop names what the controller sent itself
        g.edge(f"{controller}_{inter_broker[controller]}", f"{broker_id}_{ibl}", color="#fd7e14", penwidth="1.6",
               label=",\n".join(own) if broker_id == controller else "")
    fetches = set()   # (follower, leader) from the leaders' request logs: the fetchers' client ids name them
    for broker_id, server in cluster.brokers.items():
        for r in list(server.channel.request_log.records):
            if r.api_name == "Fetch" and (r.client_id or "").startswith("broker-"):
                fetches.add((int(r.client_id.split("-")[1]), broker_id))
    for follower, leader in sorted(fetches):
        g.edge(f"{follower}_{inter_broker[follower]}", f"{leader}_{inter_broker[leader]}", color="#495057",
               style="dotted", label="Fetch (follower)")
    return Diagram(g, caption="Green: client listeners (dashed blue: a client's connections). Orange: the "
                              "inter-broker listener, where the controller's requests (bold orange) and followers' "
                              "fetches (dotted) arrive: one principal for all of them.")


def state_diagram(history: Iterable = ()):
    """The authenticator's state table; the transitions of ``history`` ((state, event, next) tuples) in bold."""
    import graphviz

    from kafkalab.viz import Diagram

    taken = {(str(a), e, str(b)) for a, e, b in history}
    # top to bottom: drawn left to right, the seven states made a picture too wide to read at a page's width
    g = graphviz.Digraph(graph_attr={"rankdir": "TB", "nodesep": "0.3", "fontname": GRAPHVIZ_FONT},
                         node_attr={"fontsize": "10", "fontname": GRAPHVIZ_FONT, "shape": "box", "style": "rounded"},
                         edge_attr={"fontsize": "9", "fontname": GRAPHVIZ_FONT})
    for (state, event), target in TRANSITIONS.items():
        bold = (str(state), event, str(target)) in taken
        g.edge(str(state), str(target), label=event, color="#2b8a3e" if bold else "#adb5bd",
               penwidth="2" if bold else "1", fontcolor="#2b8a3e" if bold else "#495057")
    g.edge("AUTHENTICATE", "FAILED", label="bad token", color="#e03131", fontcolor="#e03131")
    return Diagram(g, caption="Kafka's SaslState names. Anything not drawn (another request before the login, an "
                              "unknown mechanism, a bad token) ends in FAILED and the connection closes. Green: "
                              "the path of the login fed by hand.")


# -- on the wire ---------------------------------------------------------------------------------------------------------
class Step(NamedTuple):
    """One frame (without its size prefix). ``kind``: request, response or token (a raw SaslHandshake v0 token)."""

    direction: str           # "client -> broker" or "broker -> client"
    kind: str
    frame: bytes
    api_key: Optional[int] = None
    api_version: Optional[int] = None


class Wire:
    """A raw connection that keeps every frame it sends and receives."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.conn = RawConnection(("127.0.0.1", port), timeout=timeout)
        self.steps: list[Step] = []
        self.correlation_id = 0

    def call(self, body, version: int):
        """Send a request, return the decoded response body (None if the broker closed instead)."""
        key = body.API_KEY
        frame = encode_request(make_request(body, api_version=version, correlation_id=self.correlation_id,
                                            client_id=CLIENT_ID))
        self.correlation_id += 1
        self.steps.append(Step("client -> broker", "request", frame, key, version))
        self.conn.send(frame)
        answer = self.conn.receive()
        if answer is None:
            return None
        self.steps.append(Step("broker -> client", "response", answer, key, version))
        return decode_response(answer, key, version).body

    def token(self, data: bytes) -> Optional[bytes]:
        """SaslHandshake v0: send a raw token, return the raw answer (None if the broker closed)."""
        self.steps.append(Step("client -> broker", "token", data))
        self.conn.send(data)
        answer = self.conn.receive()
        if answer is not None:
            self.steps.append(Step("broker -> client", "token", answer))
        return answer

    def closed(self, timeout: float = 2.0) -> bool:
        """True once the broker has closed the connection (waits up to ``timeout`` for it)."""
        return self.conn.receive(timeout) is None

    def close(self) -> None:
        self.conn.close()


def _body(api_key: ApiKey, **fields):
    return request_class(api_key)(**fields)


def login(wire: Wire, mechanism: str, username: str, password: str, *, handshake_version: int = 1,
          nonce: Optional[str] = None) -> dict:
    """Log in over ``wire``: SaslHandshake, then the mechanism's tokens (SaslAuthenticate v2, or raw with v0).
    Returns what happened: ``error_code``, ``error_message``, ``elapsed_ms`` of the last exchange."""
    client = (ScramSaslClient(mechanism, username, password, nonce=nonce) if nonce is not None and
              mechanism in SCRAM_MECHANISMS else new_sasl_client(mechanism, username, password))
    hs = wire.call(_body(ApiKey.SASL_HANDSHAKE, mechanism=mechanism), handshake_version)
    if hs is None or hs.error_code:
        return {"error_code": None if hs is None else hs.error_code, "error_message": None, "elapsed_ms": 0}
    token: Optional[bytes] = client.initial_response()
    result = {"error_code": 0, "error_message": None, "elapsed_ms": 0}
    while token is not None:
        start = time.monotonic()
        if handshake_version == 0:
            answer = wire.token(token)
            result["elapsed_ms"] = (time.monotonic() - start) * 1000
            if answer is None:
                return dict(result, error_code=None, error_message="connection closed")
        else:
            reply = wire.call(_body(ApiKey.SASL_AUTHENTICATE, auth_bytes=token), 2)
            result["elapsed_ms"] = (time.monotonic() - start) * 1000
            if reply is None:
                return dict(result, error_code=None, error_message="connection closed")
            if reply.error_code:
                return dict(result, error_code=reply.error_code, error_message=reply.error_message)
            answer = reply.auth_bytes or b""
        token = client.evaluate_challenge(answer)
    return result


_SERVER_FIRST = re.compile(r"r=(?P<nonce>[^,]+),s=(?P<salt>[^,]+),i=(?P<i>\d+)")


def token_text(token: bytes, client_nonce: Optional[str] = None) -> str:
    """A SASL token as text, NUL bytes (PLAIN) shown as ``\\0``. Given the ``client_nonce`` of a login with a
    real broker, what the broker drew at random (its half of the SCRAM nonce, the salt, and so the proof and
    the server signature) is replaced by a description."""
    text = bytes(token).decode("utf-8", "replace").replace("\0", "\\0")
    if client_nonce is None:
        return text
    if client_nonce:
        text = re.sub(rf"r={re.escape(client_nonce)}[^,]+",
                      lambda m: f"r={client_nonce}<+{len(m.group(0)) - 2 - len(client_nonce)} chars of server nonce>",
                      text)
    text = re.sub(r"s=([A-Za-z0-9+/=]+)", lambda m: f"s=<{len(base64.b64decode(m.group(1)))}-byte salt>", text)
    text = re.sub(r"p=[A-Za-z0-9+/=]+$", "p=<client proof>", text)
    return re.sub(r"^v=[A-Za-z0-9+/=]+$", "v=<server signature>", text)


def steps_table(steps: Iterable[Step], client_nonce: Optional[str] = None) -> list[dict]:
    """One row per frame: direction, what it is, its size, and the SASL token in it (as :func:`token_text`)."""
    rows = []
    for s in steps:
        if s.kind == "token":
            what, token = "raw token (no header)", s.frame
        else:
            what = f"{ApiKey(s.api_key).name} v{s.api_version} {s.kind}"
            token = b""
            if s.api_key == ApiKey.SASL_AUTHENTICATE:
                body = decode_request(s.frame).body if s.kind == "request" else \
                    decode_response(s.frame, s.api_key, s.api_version).body
                token = body.auth_bytes or b""
        rows.append({"direction": s.direction, "frame": what, "bytes": len(s.frame),
                     "SASL token": token_text(token, client_nonce) if token else ""})
    return rows


# -- by hand (sans-IO) ---------------------------------------------------------------------------------------------------
SUPPORTED = {ApiKey.API_VERSIONS: (0, 3), ApiKey.SASL_HANDSHAKE: (0, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}


def hand_fed_login(mechanism: str, username: str, password: str, *, credentials: Mapping[str, Any],
                   client_nonce: str, server_nonce: str, handshake_version: int = 1):
    """Feed an authenticator (PLAIN users = :data:`USERS`; SCRAM ``credentials``: user -> ScramCredential) the
    frames of one login, with fixed nonces. Returns (rows, authenticator): one row per frame fed."""
    def server_factory(m: str):
        if m == "PLAIN":
            return PlainSaslServer(USERS.get)
        return ScramSaslServer(m, credentials.get, nonce=lambda: server_nonce)

    auth = SaslServerAuthenticator(["PLAIN", "SCRAM-SHA-256"], server_factory, SUPPORTED, listener="CLIENT")
    client = (ScramSaslClient(mechanism, username, password, nonce=client_nonce) if mechanism in SCRAM_MECHANISMS
              else new_sasl_client(mechanism, username, password))
    rows, correlation_id = [], 0

    def feed(label: str, frame: bytes, token: Optional[bytes] = None) -> Any:
        before = auth.state
        d = auth.receive(frame, now_ms=0)
        answer = d.token if d.token is not None else None
        if d.response is not None:
            body = d.response.body
            answer = getattr(body, "auth_bytes", None)
            error = ErrorCode(body.error_code).name
        else:
            error = ""
        rows.append({"fed": label + (f" ({message_name(token)})" if token else ""), "state before": str(before),
                     "decision": d.outcome.value, "state after": str(auth.state), "error": error,
                     "answer": message_name(answer) if answer else "",
                     "token": token_text(token) if token else "", "answer token": token_text(answer) if answer else ""})
        return d, answer

    def request(body, version: int) -> bytes:
        nonlocal correlation_id
        correlation_id += 1
        return encode_request(make_request(body, api_version=version, correlation_id=correlation_id,
                                           client_id=CLIENT_ID))

    feed("ApiVersions v3", request(_body(ApiKey.API_VERSIONS, client_software_name="lab12",
                                         client_software_version="1"), 3))
    feed(f"SaslHandshake v{handshake_version} {mechanism}",
         request(_body(ApiKey.SASL_HANDSHAKE, mechanism=mechanism), handshake_version))
    token = client.initial_response()
    while token is not None:
        if handshake_version == 0:
            d, answer = feed("raw token", token, token)
        else:
            d, answer = feed("SaslAuthenticate v2", request(_body(ApiKey.SASL_AUTHENTICATE, auth_bytes=token), 2),
                             token)
        if d.outcome.value in ("fail", "close"):
            break
        token = client.evaluate_challenge(answer or b"")
        if d.outcome.value == "authenticated":
            break
    return rows, auth


def message_name(token) -> str:
    """What a SASL token (bytes, or its :func:`token_text`) is: RFC 5802's name of a SCRAM message
    (client-first ... server-final), or the PLAIN token (RFC 4616)."""
    data = token.encode() if isinstance(token, str) else bytes(token)
    if b"\0" in data or (isinstance(token, str) and "\\0" in token):
        return "PLAIN token"
    for prefix, name in ((b"n,", "client-first"), (b"y,", "client-first"), (b"p=", "client-first"),
                         (b"r=", "server-first"), (b"c=", "client-final"), (b"v=", "server-final"),
                         (b"e=", "server-final")):
        if data.startswith(prefix):
            return name
    return "token"


def conversation(rows: Iterable[Mapping[str, str]]) -> str:
    """The tokens of :func:`hand_fed_login`'s rows in full, one line each, named by :func:`message_name` (the
    table leaves them out: they are too long for its columns)."""
    lines = [f"{side} {message_name(r[key]) + ':':14} {r[key]}"
             for r in rows for side, key in (("client", "token"), ("broker", "answer token")) if r.get(key)]
    return "\n".join(lines)


# -- ACLs ----------------------------------------------------------------------------------------------------------------
def _bindings(acls: Iterable[tuple]) -> list[AclBinding]:
    """(principal, permission, operation, resource type, name[, pattern type]) -> bindings; host ``*``."""
    out = []
    for principal, permission, operation, rtype, name, *pattern in acls:
        pt = PatternType[pattern[0]] if pattern else PatternType.LITERAL
        out.append(AclBinding(ResourcePattern(ResourceType[rtype], name, pt),
                              AccessControlEntry(principal, "*", AclOperation[operation],
                                                 AclPermissionType[permission])))
    return out


def _core(acls: Iterable[tuple], super_users: Iterable[str], allow_everyone_if_no_acl_found: bool) -> AuthorizerCore:
    core = AuthorizerCore(super_users, allow_everyone_if_no_acl_found)
    for b in _bindings(acls):
        core.index.add(b)
    return core


def _questions(questions: Mapping[str, tuple]) -> list[tuple]:
    """label -> (principal, operation, resource type, name): the authorizer's questions, host 127.0.0.1."""
    return [(p, "127.0.0.1", AclOperation[op], ResourceType[rt], name) for p, op, rt, name in questions.values()]


def _short(b: AclBinding) -> str:
    p, e = b.pattern, b.entry
    return f"{e.permission_type.name} {e.principal} {e.operation.name} on {p.pattern_type.name} {p.name}"


def _deciding(core: AuthorizerCore, question: tuple, rule: str) -> str:
    """Every ACL that could have made the decision (an ACL set has no order, so all of them), sorted."""
    principal, host, operation, resource_type, name = question
    matching = [b for b in core.index.applying_bindings(resource_type, name)
                if b.entry.principal in (principal, WILDCARD_PRINCIPAL_STRING) and b.entry.host in (host, "*")]
    if rule == "deny acl":
        hits = [b for b in matching if b.entry.permission_type == AclPermissionType.DENY
                and b.entry.operation in (operation, AclOperation.ALL)]
    elif rule == "allow acl":
        hits = [b for b in matching if b.entry.permission_type == AclPermissionType.ALLOW
                and b.entry.operation in IMPLIED_BY[operation]]
    else:
        hits = []
    return "; ".join(sorted(_short(b) for b in hits))


def acl_table(acls: Iterable[tuple], questions: Mapping[str, tuple], *, super_users: Iterable[str] = (),
              allow_everyone_if_no_acl_found: bool = False) -> list[dict]:
    """The authorizer's answer to each question, with the rule that decided and the ACLs that did."""
    core = _core(acls, super_users, allow_everyone_if_no_acl_found)
    asked = _questions(questions)
    rows = decision_table(core, asked)
    return [{"question": label, "principal": row["principal"], "operation": row["operation"],
             "resource": row["resource"], "result": row["result"], "rule": row["rule"],
             "deciding ACLs": _deciding(core, q, row["rule"])}
            for label, q, row in zip(questions, asked, rows)]


# -- the story -----------------------------------------------------------------------------------------------------------
_REFUSED = re.compile(r"\[KafkaApi-(?P<broker>\d+)\] Error when handling request: clientId=(?P<client>[^,]*), "
                      r"correlationId=(?P<corr>\d+), api=(?P<api>\w+), version=\d+\n(?:[\w$]+\.)*(?P<exc>\w+): .*"
                      r"session=Session\((?P<principal>[^,]+),.*listenerName=ListenerName\((?P<listener>[^)]+)\)",
                      re.S)


def refused_requests(messages: Iterable[str]) -> list[dict]:
    """The broker's "Error when handling request" lines, as rows (one per refused request)."""
    rows = []
    for m in messages:
        hit = _REFUSED.search(m)
        if hit:
            rows.append({"broker": int(hit["broker"]), "clientId": hit["client"], "correlationId": int(hit["corr"]),
                         "api": hit["api"], "exception": hit["exc"], "principal": hit["principal"],
                         "listener": hit["listener"]})
    return rows


# -- exercises -----------------------------------------------------------------------------------------------------------
def check_acl_predictions(answers: Any, acls: Iterable[tuple], questions: Mapping[str, tuple], *,
                          super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False
                          ) -> CheckResult:
    """Exercise: ``answers`` maps each question's label to 'ALLOWED' or 'DENIED'."""
    acls = list(acls)
    core = _core(acls, super_users, allow_everyone_if_no_acl_found)
    expected = {label: row["result"] for label, row in zip(questions, decision_table(core, _questions(questions)))}

    def diagnose(label, answer):
        if answer not in ("ALLOWED", "DENIED"):
            return "answer with the string 'ALLOWED' or 'DENIED'"
        return "go through the rules in order: super user, any matching DENY, a matching ALLOW (or one that " \
               "implies it), then: does any ACL at all exist on this resource?"
    return check_parts("ACL decisions", answers, expected, diagnose=diagnose,
                       hint="deny beats allow; READ/WRITE/DELETE/ALTER imply DESCRIBE (from ALLOW only); "
                            "allow.everyone.if.no.acl.found counts only when the resource has no ACL at all")


def check_server_signature(answer: Any, *, username: str, password: str, salt_b64: str, iterations: int,
                           client_nonce: str, combined_nonce: str, mechanism: str = "SCRAM-SHA-256") -> CheckResult:
    """Exercise: the base64 ServerSignature (the ``v=`` of the server-final message) of this exchange."""
    from kafkalab.security.scram import ClientFinalMessage, ClientFirstMessage, ServerFirstMessage

    f = ScramFormatter(SCRAM_MECHANISMS[mechanism])
    salt = base64.b64decode(salt_b64)
    first = ClientFirstMessage(username, client_nonce)
    server_first = ServerFirstMessage(combined_nonce, salt, iterations)
    final = ClientFinalMessage(first.gs2_header().encode(), combined_nonce)
    auth_message = ScramFormatter.auth_message(first, server_first, final)
    salted = f.salted_password(password, salt, iterations)
    expected = base64.b64encode(f.server_signature(f.server_key(salted), auth_message)).decode()
    proof = base64.b64encode(f.client_proof(salted, auth_message)).decode()

    def diagnose(a):
        if not isinstance(a, str):
            return "give the base64 text (a str), e.g. base64.b64encode(signature).decode()"
        if a == proof:
            return "that is the client proof: the server signature is HMAC(ServerKey, AuthMessage)"
        return None
    return check_equal("ServerSignature", answer, expected, diagnose=diagnose,
                       hint="ServerKey = HMAC(SaltedPassword, 'Server Key'); AuthMessage = client-first-bare + ',' "
                            "+ server-first + ',' + client-final-without-proof")


def check_refusals(answer: Any, configs: Mapping[str, Mapping[str, Any]]) -> CheckResult:
    """Exercise: ``answer`` is the set of config names a broker refuses to start with."""
    from kafkalab.server.config import KafkaConfig

    refused = set()
    for name, overrides in configs.items():
        try:
            KafkaConfig({"log.dirs": "/nonexistent/lab12", **overrides})
        except (ConfigException, ValueError):
            refused.add(name)
    if not is_unanswered(answer) and isinstance(answer, (list, tuple, frozenset)):
        answer = set(answer)

    def diagnose(a):
        if not isinstance(a, set):
            return "give a set of names, e.g. {'a', 'b'}"
        if a - set(configs):
            return "some of those names are not in the task"
        return None
    return check_equal("brokers that refuse to start", answer, refused, diagnose=diagnose,
                       describe=lambda a: repr(sorted(a)) if isinstance(a, set) else repr(a),
                       hint="is the inter-broker listener advertised? Is its SASL mechanism enabled? Does every "
                            "SASL listener have a JAAS line for each mechanism it enables?")
