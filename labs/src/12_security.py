# Source of labs/12_security.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 12
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 12 · Listeners, SASL and ACLs
#
# Until now every broker accepted anyone: a `PLAINTEXT` listener, no login, no permissions. Real clusters
# authenticate (who is this connection?) and authorize (may this principal do that?). This lab switches both
# on and watches them work byte by byte: the listeners a broker opens and who uses which, a SASL login on the
# wire and inside the broker's state machine, SCRAM's arithmetic checked against the RFC, what a wrong
# password costs, how the ACL authorizer decides — and the classic failure where a broker with ACLs refuses
# its own controller.
#
# **By the end of this lab you can**
#
# 1. say which traffic uses which listener, and read Kafka's start-up refusals for listener settings;
# 2. read a SASL/PLAIN and a SCRAM-SHA-256 login frame by frame, with SaslHandshake v0 and v1;
# 3. compute a SCRAM client proof and server signature by hand;
# 4. explain what a failed login looks like, and why it says so little;
# 5. predict an ACL decision (deny beats allow, implied DESCRIBE, super users, no ACL found);
# 6. diagnose CLUSTER_AUTHORIZATION_FAILED on a single broker and fix it two ways;
# 7. tell which principal a TLS client certificate becomes.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C12** listeners, advertised listeners, the inter-broker listener | two listeners per broker; Kafka's refusals | 1 |
# | **C13** even one broker talks to itself | the controller's requests arrive on the inter-broker listener, with a principal | 1, 6 |
# | **C10** authentication: SASL PLAIN and SCRAM | a login on the wire, the authenticator fed by hand, SCRAM by hand, a failed login | 2, 3, 4 |
# | **C14** authorization: ACLs, super users | a decision table; CLUSTER_AUTHORIZATION_FAILED and its two fixes | 5, 6 |
# | **C10** authentication by TLS client certificate | a lab CA, `ssl.principal.mapping.rules` | 7 |
#
# | what you look at | kafkalab module | Kafka source (apache/kafka, 3.x) |
# |---|---|---|
# | listener settings and their checks | `kafkalab/server/config.py`, `kafkalab/server/sasl_listeners.py` | `KafkaConfig.scala` (`validateValues`) |
# | the login state machine | `kafkalab/security/sasl_server.py` | `SaslServerAuthenticator.java` |
# | PLAIN, SCRAM | `kafkalab/security/plain.py`, `scram.py`, `scram_sasl.py` | `PlainSaslServer.java`, `ScramSaslServer.java`, `ScramFormatter.java` |
# | the decision rules | `kafkalab/security/authorizer.py`, `kafkalab/server/acl_authorizer.py` | `AclAuthorizer.scala`, `StandardAuthorizerData.java` |
# | certificates, TLS principals | `kafkalab/security/certs.py`, `ssl_principal.py` | `SslPrincipalMapper.java`, `DefaultKafkaPrincipalBuilder.java` |
# | settings, pictures, wire, checks | `kafkalab/labs/lab12.py` | — |

# %%
import base64
import hashlib
import hmac

import pandas as pd
from IPython.display import display

from kafkalab import Cluster
from kafkalab.clients.admin import Admin
from kafkalab.clients.admin_scram import ScramCredentialInfo, UserScramCredentialUpsertion
from kafkalab.cluster import BrokerLog
from kafkalab.labs import evidence, lab12
from kafkalab.protocol import ApiKey, ErrorCode, request_class
from kafkalab.security.jaas import jaas_line
from kafkalab.security.scram import SCRAM_MECHANISMS, ScramFormatter
from kafkalab.viz import show_frame

pd.set_option("display.max_colwidth", 260)
broker_log = BrokerLog().install()     # the brokers' warnings and errors go to a list we read in section 6


def client_port(cluster, broker_id=0, listener="CLIENT"):
    return next(e.port for e in cluster.broker(broker_id).bound_endpoints if e.listener_name == listener)

# %% [markdown]
# ## 1 · Listeners: who comes in where
#
# A **listener** is a named port with a security protocol: `listeners=CLIENT://host:port,BROKER://host:port`
# and `listener.security.protocol.map=CLIENT:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT`. Clients may use any
# advertised listener; `inter.broker.listener.name` says which one the **brokers** use to reach each other:
# the controller's LeaderAndIsr/UpdateMetadata (lab 09) and the followers' Fetch requests (lab 08). Here are
# the lab's settings (the passwords are in the JAAS lines; PLAIN keeps its users there):

# %%
settings = lab12.listener_overrides()
pd.DataFrame([{"key": k, "value": v} for k, v in settings.items()])

# %% [markdown]
# One broker with these settings, and what arrives on which listener once it has started:

# %% tags=["figure:listeners_one_broker"]
solo = Cluster(brokers=1, overrides=settings).start()
lab12.listeners_diagram(solo, title="One broker, two listeners")

# %%
def arrivals(cluster):
    rows = {}
    for b, s in sorted(cluster.brokers.items()):
        for r in s.channel.request_log.records:
            who = "controller (client id = its broker id)" if r.client_id == str(cluster.controller_id) else r.client_id
            rows.setdefault((b, r.listener_name, r.principal, who), set()).add(r.api_name)
    return pd.DataFrame([{"broker": b, "listener": l, "principal": p, "sender": w, "requests": ", ".join(sorted(a))}
                         for (b, l, p, w), a in sorted(rows.items())])

arrivals(solo)

# %%
solo.stop()

# %% [markdown]
# Even alone, the broker received **UpdateMetadata** from its own controller, on `BROKER`, logged in as
# `User:admin` — the `username` of the BROKER listener's JAAS line for `sasl.mechanism.inter.broker.protocol`
# (PLAIN). Three brokers, and a topic with three replicas:

# %% tags=["figure:listeners_three_brokers"]
trio = Cluster(brokers=3, overrides=settings).start()
trio.create_topic("orders", 1, 3, assignment={0: [1, 2, 0]})
trio.wait_until(lambda: {r.client_id for r in trio.broker(1).channel.request_log.records if r.api_name == "Fetch"}
                >= {"broker-0-fetcher-0", "broker-2-fetcher-0"}, 10, "the followers did not fetch")
lab12.listeners_diagram(trio, title="Three brokers")

# %%
arrivals(trio)[lambda d: d.listener == "BROKER"]

# %%
trio.stop()

# %% [markdown]
# Every inter-broker request — the controller's and the followers' fetches — arrived on `BROKER` as
# `User:admin`. (The follower's client id names its fetcher thread.) Keep that in mind for section 6: the
# inter-broker listener's principal is the one the authorizer must allow to do **ClusterAction**.
#
# A ZooKeeper-era broker can give the controller a listener of its own: `control.plane.listener.name`
# (KIP-291; Kafka 4, with KRaft, has no such setting). The controller then connects there, and the broker
# serves that listener with a request queue and a handler of its own, so LeaderAndIsr and UpdateMetadata never
# wait behind clients' requests. The followers keep fetching on the inter-broker listener. Two brokers with a
# third listener, `CONTROL`, and a topic with two replicas:

# %%
duo = Cluster(brokers=2, overrides=lab12.listener_overrides(control_plane=True)).start()
duo.create_topic("orders", 1, 2, assignment={0: [1, 0]})
duo.wait_until(lambda: any(r.api_name == "Fetch" and r.client_id == "broker-0-fetcher-0"
                           for r in duo.broker(1).channel.request_log.records), 10, "the follower did not fetch")
duo_arrivals = arrivals(duo)[lambda d: d.listener != "CLIENT"]
duo.stop()
display(duo_arrivals)
from_controller = duo_arrivals[duo_arrivals.sender.str.startswith("controller")]
evidence("The controller on a listener of its own", {
    "every request of the controller arrived on CONTROL, on both brokers":
        set(from_controller.listener) == {"CONTROL"} and set(from_controller.broker) == {0, 1},
    "the follower's Fetch arrived on BROKER, the inter-broker listener":
        set(duo_arrivals[duo_arrivals.requests == "Fetch"].listener) == {"BROKER"},
})

# %% [markdown]
# Kafka checks these settings before a broker opens any port. Each broker below is started with something
# wrong; the message is Kafka's (`KafkaConfig.validateValues`; the article this course follows met the first
# and the third):

# %%
sasl_only = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas_line("PLAIN", "admin", "admin-secret",
                                                                               admin="admin-secret")}
no_jaas = {k: v for k, v in settings.items() if k != "listener.name.client.scram-sha-256.sasl.jaas.config"}
wrong = {
    "only a SASL listener, no inter-broker setting": sasl_only,
    "inter-broker listener not advertised": lab12.listener_overrides(**{"advertised.listeners": "CLIENT://127.0.0.1:0"}),
    "inter-broker mechanism not enabled": lab12.listener_overrides(mechanisms=("SCRAM-SHA-256",)),
    "a SASL mechanism without a JAAS line": no_jaas,
    "both inter-broker settings": lab12.listener_overrides(**{"security.inter.broker.protocol": "SASL_PLAINTEXT"}),
    "the control plane on the inter-broker listener": lab12.listener_overrides(**{"control.plane.listener.name": "BROKER"}),
}
pd.DataFrame([{"what is wrong": k, "the broker says": lab12.refusal(v)} for k, v in wrong.items()])

# %% [markdown]
# * With only a SASL listener, the inter-broker protocol is still its default, `PLAINTEXT`, which no listener
#   serves: Kafka wants to know how brokers talk to each other even when there is one broker.
# * Kafka's default `sasl.mechanism.inter.broker.protocol` is `GSSAPI` (Kerberos); it must be one of the
#   listener's `sasl.enabled.mechanisms`.
# * Each mechanism a SASL listener enables needs its JAAS line: a listener that cannot check a login never
#   serves without one.
# * The control-plane listener exists to keep the controller apart from the rest of the inter-broker traffic:
#   naming the inter-broker listener itself is refused.
#
# **Recap 1.** Listeners are named ports with a protocol. Clients use the advertised ones; brokers and the
# controller use the inter-broker listener (or the controller a control-plane listener of its own) — always,
# even a lone broker talking to itself — and arrive there with *that listener's* principal. A broker refuses
# settings it cannot serve.

# %% [markdown]
# ## 2 · A login on the wire
#
# One broker with the same two listeners. We connect to `CLIENT` with a bare TCP socket
# (`kafkalab.trace.RawConnection`, wrapped by `lab12.Wire`, which keeps every frame) and log in as `alice`
# with **PLAIN**, **SaslHandshake v1**: the handshake names the mechanism, then each token travels in a
# **SaslAuthenticate** request (KIP-152), then ordinary requests flow.

# %%
cluster = Cluster(brokers=1, overrides=settings).start()
PORT = client_port(cluster)

wire = lab12.Wire(PORT)
print("login error code:", lab12.login(wire, "PLAIN", "alice", "alice-secret")["error_code"])
metadata = wire.call(request_class(ApiKey.METADATA)(topics=None, allow_auto_topic_creation=False), 12)
print("brokers in the Metadata answer:", [b.node_id for b in metadata.brokers])
wire.close()
pd.DataFrame(lab12.steps_table(wire.steps))

# %% [markdown]
# The token is RFC 4616's `authzid NUL username NUL password` — the password in clear, which is why Kafka's
# documentation says PLAIN belongs on TLS (`SASL_SSL`). Here is the SaslAuthenticate request, byte by byte
# (hover over a byte to find its field):

# %%
show_frame(wire.steps[2].frame, title="SaslAuthenticate v2: the PLAIN token")

# %% [markdown]
# And the broker's answer: error 0, an empty token, `session_lifetime_ms` 0 (no re-authentication:
# `connections.max.reauth.ms` is 0):

# %%
show_frame(wire.steps[3].frame, kind="response", api_key=ApiKey.SASL_AUTHENTICATE, api_version=2)

# %% [markdown]
# From then on the broker knows who sent each request: its request log keeps the principal.

# %%
pd.DataFrame([{"api": r.api_name, "listener": r.listener_name, "principal": r.principal}
              for r in cluster.broker(0).channel.request_log.records if r.client_id == "lab12"])

# %% [markdown]
# **SaslHandshake v0** (before KIP-152) is what old clients do: after the handshake the token is sent
# *raw* — an int32 size and the bytes, no request header — and the answer comes back the same way. There is no
# error code: a failure can only close the connection.

# %%
wire0 = lab12.Wire(PORT)
print("login error code:", lab12.login(wire0, "PLAIN", "alice", "alice-secret", handshake_version=0)["error_code"])
token_frame = wire0.steps[2].frame
print("on the wire:", (len(token_frame).to_bytes(4, "big") + token_frame).hex(" "))
wire0.close()
pd.DataFrame(lab12.steps_table(wire0.steps))

# %% [markdown]
# Now **SCRAM-SHA-256** (RFC 5802/7677). The broker never stores the password: the administrator creates a
# *credential* (salt, iterations, StoredKey, ServerKey) with AlterUserScramCredentials, here through the
# admin client logged in as `admin` (a salt is drawn at random):

# %%
admin = Admin({"bootstrap.servers": f"127.0.0.1:{PORT}", "security.protocol": "SASL_PLAINTEXT",
               "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas_line("PLAIN", *lab12.ADMIN)})
print(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
    "bob", ScramCredentialInfo("SCRAM-SHA-256", 4096), "bob-secret")]))
print(admin.describe_user_scram_credentials(["bob"]))
admin.close()

# %% [markdown]
# Bob logs in. SCRAM takes two round trips: client-first (`n,,n=bob,r=<client nonce>`), server-first (the
# nonce extended by the broker, the salt, the iterations), client-final (the nonce again and a **proof**),
# server-final (the broker's **signature**, proving that it too knows the credential). The broker's half of
# the nonce and the salt are random, and so are the proof and signature that depend on them: the table says
# what they are instead of printing them.

# %%
wire2 = lab12.Wire(PORT)
print("login error code:", lab12.login(wire2, "SCRAM-SHA-256", "bob", "bob-secret", nonce="fyko+d2lbbFgONRv9qkxdawL")["error_code"])
wire2.close()
pd.DataFrame(lab12.steps_table(wire2.steps, client_nonce="fyko+d2lbbFgONRv9qkxdawL"))

# %% [markdown]
# ### The authenticator, fed by hand
#
# Inside the broker each connection of a SASL listener has a `SaslServerAuthenticator`: a state machine
# without sockets or clocks that gets each frame and returns a decision (continue, forward to the ordinary
# handler, authenticated, fail, close). We can feed it ourselves. With fixed nonces and RFC 7677's stored
# credential for user `user` (password `pencil`), every byte is reproducible: first the four SCRAM messages
# in full, then what the authenticator did with each frame:

# %%
RFC = {"user": "user", "password": "pencil", "salt": "W22ZaJ0SNY7soEsUEjb6gQ==", "iterations": 4096,
       "client_nonce": "rOprNGfwEbeRWgbNEkqO", "server_nonce": "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"}
sha256 = ScramFormatter(SCRAM_MECHANISMS["SCRAM-SHA-256"])
rfc_credential = sha256.generate_credential(
    base64.b64decode(RFC["salt"]),
    sha256.salted_password(RFC["password"], base64.b64decode(RFC["salt"]), RFC["iterations"]), RFC["iterations"])

rows, authenticator = lab12.hand_fed_login("SCRAM-SHA-256", RFC["user"], RFC["password"],
                                           credentials={"user": rfc_credential}, client_nonce=RFC["client_nonce"],
                                           server_nonce=RFC["server_nonce"])
print("principal:", authenticator.principal)
print(lab12.conversation(rows))
pd.DataFrame(rows).drop(columns=["token", "answer token"])

# %% tags=["figure:sasl_states"]
lab12.state_diagram(authenticator.history)

# %% [markdown]
# Anything else before the login is over closes the connection **without a response** — a Metadata request
# first, for example (a client that forgot to configure SASL):

# %%
from kafkalab.protocol import encode_request, make_request  # noqa: E402
from kafkalab.security.sasl_server import SaslServerAuthenticator  # noqa: E402

fresh = SaslServerAuthenticator(["PLAIN"], lambda m: None, lab12.SUPPORTED)
decision = fresh.receive(encode_request(make_request(request_class(ApiKey.METADATA)(
    topics=None, allow_auto_topic_creation=False), api_version=12)), now_ms=0)
print(decision.outcome.value, "|", decision.reason, "| state:", fresh.state)

# %% [markdown]
# **Recap 2.** A SASL listener accepts only ApiVersions and SaslHandshake until the login succeeds. Handshake
# v1 carries tokens in SaslAuthenticate (with error codes); v0 sends them raw. PLAIN is one token with the
# password in it; SCRAM is two round trips in which the password never travels. After the login, every request
# on the connection carries the principal `User:<name>`.

# %% [markdown]
# ## 3 · SCRAM by hand
#
# RFC 7677 §3 gives one SCRAM-SHA-256 exchange in full. Recompute it with `hashlib` and `hmac` only:

# %%
salt = base64.b64decode(RFC["salt"])
nonce = RFC["client_nonce"] + RFC["server_nonce"]
client_first_bare = f"n={RFC['user']},r={RFC['client_nonce']}"
server_first = f"r={nonce},s={RFC['salt']},i={RFC['iterations']}"
client_final_without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
auth_message = f"{client_first_bare},{server_first},{client_final_without_proof}".encode()

salted_password = hashlib.pbkdf2_hmac("sha256", RFC["password"].encode(), salt, RFC["iterations"])
client_key = hmac.new(salted_password, b"Client Key", "sha256").digest()
stored_key = hashlib.sha256(client_key).digest()
server_key = hmac.new(salted_password, b"Server Key", "sha256").digest()
client_signature = hmac.new(stored_key, auth_message, "sha256").digest()
proof = bytes(a ^ b for a, b in zip(client_key, client_signature))
server_signature = hmac.new(server_key, auth_message, "sha256").digest()

print("AuthMessage:     ", auth_message.decode())
print("client proof:    ", base64.b64encode(proof).decode())
print("server signature:", base64.b64encode(server_signature).decode())
evidence("RFC 7677's exchange, recomputed", {
    "the client proof is the RFC's p=": base64.b64encode(proof).decode() == "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "the server signature is the RFC's v=":
        base64.b64encode(server_signature).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
})

# %% [markdown]
# The broker stores only `salt`, `iterations`, **StoredKey** and **ServerKey** — the credential we gave the
# authenticator above. It checks a proof by recomputing ClientSignature from StoredKey, XOR-ing it out of the
# proof to get ClientKey, and comparing H(ClientKey) with StoredKey (in constant time). Same numbers in
# kafkalab:

# %%
evidence("The same numbers in kafkalab", {
    "kafkalab's credential has this StoredKey and ServerKey":
        rfc_credential.stored_key == stored_key and rfc_credential.server_key == server_key,
    "kafkalab accepts this proof": sha256.verify_client_proof(stored_key, auth_message, proof),
    "... and refuses it with one bit flipped":
        not sha256.verify_client_proof(stored_key, auth_message, bytes([proof[0] ^ 1]) + proof[1:]),
    "the authenticator's server-final carries this signature":
        rows[-1]["answer token"] == "v=" + base64.b64encode(server_signature).decode(),
})

# %% [markdown]
# **Recap 3.** SaltedPassword = PBKDF2(password, salt, i); ClientKey and ServerKey are HMACs of it;
# StoredKey = H(ClientKey). The proof is ClientKey XOR HMAC(StoredKey, AuthMessage): it proves the client
# knows ClientKey without sending it, and the nonces make each proof good for one login only. Someone who
# steals the stored credential still cannot log in (they lack ClientKey) — but can try passwords offline,
# which is what the iterations (4096 at least) slow down.

# %% [markdown]
# ## 4 · A wrong password
#
# What does a failed login look like? Four attempts: a wrong password and an unknown user, with PLAIN and with
# SCRAM. We time the last exchange and then check whether the broker closed the connection.

# %%
DELAY = cluster.broker(0).config["connection.failed.authentication.delay.ms"]
attempts = [("PLAIN", "alice", "wrong"), ("PLAIN", "mallory", "wrong"),
            ("SCRAM-SHA-256", "bob", "wrong"), ("SCRAM-SHA-256", "mallory", "wrong")]
failures = []
for mechanism, user, password in attempts:
    w = lab12.Wire(PORT)
    result = lab12.login(w, mechanism, user, password, nonce="lab12nonce")
    failures.append({"mechanism": mechanism, "user": user, "error": ErrorCode(result["error_code"]).name,
                     "code": result["error_code"], "message": result["error_message"],
                     "delayed": result["elapsed_ms"] >= DELAY, "closed": w.closed()})
    w.close()
display(pd.DataFrame(failures).drop(columns=["delayed", "closed"]))
evidence("A failed login", {
    f"every attempt was answered after at least {DELAY} ms": all(f["delayed"] for f in failures),
    "then the broker closed every connection": all(f["closed"] for f in failures),
    "PLAIN: the same message for a wrong password and an unknown user": failures[0]["message"] == failures[1]["message"],
    "SCRAM: the same message for a wrong password and an unknown user": failures[2]["message"] == failures[3]["message"],
})

# %% [markdown]
# * **SASL_AUTHENTICATION_FAILED (58)**, then the close: since KIP-152 the client learns *why* the connection
#   ends, instead of just seeing it drop.
# * The message never says whether the user exists or the password was wrong. With SCRAM, Kafka's
#   `ScramSaslServer` refuses an unknown user at once, after client-first, and a wrong password only after
#   client-final: the same error and message, one round trip apart. kafkalab's broker goes further and answers
#   an unknown user with a made-up salt that stays the same at every attempt, so both fail at the proof.
# * The answer waits `connection.failed.authentication.delay.ms` (default 100 ms; `Selector` delays the close
#   of a failed login) — only that connection, the broker keeps serving others — to slow down guessing.
#
# **Recap 4.** A failed login is error 58 with a generic message, delayed, then closed; unknown users and
# wrong passwords look alike.

# %%
cluster.stop()

# %% [markdown]
# ## 5 · ACLs: predict, then run
#
# With `authorizer.class.name=kafka.security.authorizer.AclAuthorizer`, each request is checked: may this
# **principal**, from this **host**, perform this **operation** on this **resource**? The rules, in order:
#
# 1. a principal in `super.users` is allowed;
# 2. any matching **DENY** ACL → denied, however many ALLOWs match;
# 3. a matching **ALLOW** → allowed; ALLOW on READ, WRITE, DELETE or ALTER also grants **DESCRIBE**
#    (ALTER_CONFIGS grants DESCRIBE_CONFIGS) — implied from ALLOW only: a DENY READ does not deny DESCRIBE;
# 4. no ACL at all on the resource → `allow.everyone.if.no.acl.found` (default false);
# 5. otherwise denied.
#
# ### Exercise 1 · Be the authorizer
#
# The ACLs below, `super.users=User:admin`, `allow.everyone.if.no.acl.found=true`. Write `"ALLOWED"` or
# `"DENIED"` for each question **before** running the table after the check.

# %%
ex1_acls = [   # (principal, permission, operation, resource type, name[, pattern type])
    ("User:alice", "ALLOW", "READ", "TOPIC", "orders"),
    ("User:*", "ALLOW", "WRITE", "TOPIC", "orders"),
    ("User:bob", "DENY", "WRITE", "TOPIC", "orders"),
    ("User:bob", "DENY", "READ", "TOPIC", "payments"),
    ("User:bob", "ALLOW", "ALL", "TOPIC", "pay", "PREFIXED"),
]
ex1_questions = {   # label: (principal, operation, resource type, name)
    "a": ("User:alice", "DESCRIBE", "TOPIC", "orders"),
    "b": ("User:bob", "WRITE", "TOPIC", "orders"),
    "c": ("User:carol", "WRITE", "TOPIC", "orders"),
    "d": ("User:carol", "READ", "TOPIC", "orders"),
    "e": ("User:bob", "DESCRIBE", "TOPIC", "payments"),
    "f": ("User:bob", "READ", "TOPIC", "payments"),
    "g": ("User:carol", "READ", "TOPIC", "clicks"),
    "h": ("User:admin", "ALTER", "CLUSTER", "kafka-cluster"),
}
EX1_SETTINGS = {"super_users": ["User:admin"], "allow_everyone_if_no_acl_found": True}

# %% tags=["solution"]
ex1_predictions = {"a": "ALLOWED", "b": "DENIED", "c": "ALLOWED", "d": "DENIED", "e": "ALLOWED", "f": "DENIED",
                   "g": "ALLOWED", "h": "ALLOWED"}

# %%
lab12.check_acl_predictions(ex1_predictions, ex1_acls, ex1_questions, **EX1_SETTINGS)

# %%
pd.DataFrame(lab12.acl_table(ex1_acls, ex1_questions, **EX1_SETTINGS)).set_index("question")

# %% [markdown] tags=["solution"]
# * (d): carol has no READ ACL on `orders`; the topic *has* ACLs, so `allow.everyone.if.no.acl.found` does
#   not apply — it only counts for `clicks` (g), which has none.
# * (e): bob's DESCRIBE on `payments` is granted by the prefixed ALLOW ALL on `pay*`; the DENY READ does not
#   deny DESCRIBE. (f): the same DENY READ beats the ALLOW ALL.

# %% [markdown]
# **Recap 5.** Super users first, then deny beats allow, then allow (with implied DESCRIBE), then the
# no-ACL default. Literal, prefixed and wildcard patterns all apply to a resource.

# %% [markdown]
# ## 6 · The course's story: a broker that refuses its own controller
#
# One broker, the ACL authorizer switched on, nothing else changed: one `PLAINTEXT` listener, no super users.
# Create a topic and wait for its leader:

# %%
broker_log.clear()
# (a Cluster normally starts by waiting until every broker has the controller's metadata: not this one, as you
# will see)
story = Cluster(brokers=1, overrides={"authorizer.class.name": lab12.ACL_AUTHORIZER},
                wait_for_metadata=False).start()
try:
    story.create_topic("story", 1, 1, timeout=1.5)
except TimeoutError as e:   # expected here: print its first words, not the advice for a notebook run out of order
    print("TimeoutError:", str(e).split(" (")[0])
print("the broker's own view of story-0:",
      [(p.partition, p.leader) for p in story.broker(0).metadata_cache.partitions("story")] or "unknown topic")

# %% [markdown]
# No leader, ever. The broker's log says why:

# %%
print(next(m for m in broker_log.messages() if "Error when handling request" in m))
pd.DataFrame(lab12.refused_requests(broker_log.messages()))

# %% [markdown]
# `clientId=0`: the sender is the controller, whose client id is its broker id — broker 0 itself (lab 09).
# It connected to the inter-broker listener, `PLAINTEXT`, where nobody logs in: its principal is
# **`User:ANONYMOUS`**. LeaderAndIsr and UpdateMetadata need **ClusterAction** on the cluster, ANONYMOUS has
# no ACL and no super-user status, so the broker answers **CLUSTER_AUTHORIZATION_FAILED (31)**: the
# broker never learns that it leads `story-0`, and no client can use the topic.
#
# This is the log line as Kafka up to 2.8 wrote it, and as the article this course follows quotes it. Kafka 3.x
# logs the same failure as `Unexpected error handling request RequestHeader(apiKey=UPDATE_METADATA, ...,
# clientId=0, correlationId=0, ...) -- UpdateMetadataRequestData(...) with context RequestContext(...,
# principal=User:ANONYMOUS, listenerName=ListenerName(PLAINTEXT), ...)`, followed by the same
# `ClusterAuthorizationException`: search a 3.x log for that exception's name.

# %%
story.stop()

# %% [markdown]
# **Fix 1: make the inter-broker principal a super user.** `super.users=User:ANONYMOUS` works — but every
# client on that listener is anonymous too, so every client becomes a super user: acceptable only when
# clients cannot reach the listener.

# %%
broker_log.clear()
fix1 = Cluster(brokers=1, overrides={"authorizer.class.name": lab12.ACL_AUTHORIZER,
                                     "super.users": "User:ANONYMOUS"}).start()
fix1.create_topic("story", 1, 1, timeout=10)
print("leader of story-0:", fix1.partition_state("story", 0)["leader"], "| refused requests:",
      len(lab12.refused_requests(broker_log.messages())))
fix1.stop()

# %% [markdown]
# **Fix 2: authenticate the inter-broker listener.** The two listeners of section 1, both SASL_PLAINTEXT;
# the brokers log in on `BROKER` as `admin` (`sasl.mechanism.inter.broker.protocol=PLAIN`), and only
# `User:admin` is a super user:

# %%
broker_log.clear()
fix2 = Cluster(brokers=1, overrides=lab12.listener_overrides(**{"authorizer.class.name": lab12.ACL_AUTHORIZER,
                                                                "super.users": "User:admin"})).start()
fix2.create_topic("story", 1, 1, timeout=10)
print("leader of story-0:", fix2.partition_state("story", 0)["leader"], "| refused requests:",
      len(lab12.refused_requests(broker_log.messages())))
arrivals(fix2)

# %% [markdown]
# And alice, an ordinary user on `CLIENT`, is refused until she gets an ACL (her Metadata request for the
# topic answers TOPIC_AUTHORIZATION_FAILED, 29, then 0):

# %%
from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclOperation, AclPermissionType,  # noqa: E402
                                   ResourcePattern, ResourceType)


def alice_metadata():
    w = lab12.Wire(client_port(fix2))
    lab12.login(w, "PLAIN", "alice", "alice-secret")
    body = w.call(request_class(ApiKey.METADATA)(topics=(request_class(ApiKey.METADATA).MetadataRequestTopic(
        name="story"),), allow_auto_topic_creation=False), 12)
    w.close()
    return ErrorCode(body.topics[0].error_code).name


print("before:", alice_metadata())
fix2.call(fix2.broker(0).authorizer.create_acls, [AclBinding(ResourcePattern(ResourceType.TOPIC, "story"),
          AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))])
print("after an ALLOW READ (which implies DESCRIBE):", alice_metadata())
fix2.stop()

# %% [markdown]
# **Recap 6.** A broker with an authorizer must authorize its own inter-broker traffic: the controller
# (even inside the same broker) and the followers need ClusterAction as the inter-broker listener's
# principal. Unauthenticated, that principal is `User:ANONYMOUS`; either make it a super user (and keep
# clients off that listener) or authenticate the listener and make the brokers' user the super user.

# %% [markdown]
# ## 7 · TLS: a certificate is a principal too
#
# With an `SSL` listener and `ssl.client.auth=required` (mutual TLS), there is no login: the client presents a
# certificate signed by a CA the broker trusts, and the certificate's **subject** becomes the principal —
# unless `ssl.principal.mapping.rules` rewrite it (Kafka's rules: `RULE:<regex>/<replacement>/[LU]`, tried in
# order, `DEFAULT` keeps the whole distinguished name). `kafkalab.security.certs` makes a lab CA and
# certificates in-process (keys and serial numbers are random, so we print only the subjects):

# %%
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from kafkalab.security.certs import CertificateAuthority  # noqa: E402
from kafkalab.security.ssl_principal import SslPrincipalMapper  # noqa: E402

lab_ca = CertificateAuthority.create("kafkalab lab CA")
broker_id_cert = lab_ca.issue("broker", organizational_unit="kafka")              # for localhost, 127.0.0.1
alice_cert = lab_ca.issue("alice", organizational_unit="payments", organization="Example", country="DE", hosts=())
RULES = "RULE:^CN=([^,]+),OU=payments,.*$/$1@payments/L,DEFAULT"
mapper = SslPrincipalMapper(RULES)
pd.DataFrame([{"certificate": who, "subject (RFC 2253)": c.subject, "principal with the rules": f"User:{mapper.name(c.subject)}"}
              for who, c in (("broker", broker_id_cert), ("alice", alice_cert))])

# %% [markdown]
# A broker whose only listener is `SSL` (also the inter-broker one), requiring client certificates; alice
# connects with the admin client:

# %%
tls_dir = tempfile.TemporaryDirectory(prefix="lab12-tls-")
broker_files = broker_id_cert.write(Path(tls_dir.name), "broker")
alice_files = alice_cert.write(Path(tls_dir.name), "alice")
tls = Cluster(brokers=1, overrides={"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
                                    "ssl.principal.mapping.rules": RULES,
                                    **broker_id_cert.broker_configs(broker_files, client_auth="required")}).start()
tls_admin = Admin({"bootstrap.servers": f"localhost:{tls.broker(0).bound_endpoints[0].port}", "client.id": "alice-tls",
                   **alice_cert.client_configs(alice_files)})
print("controller, as alice sees it:", tls_admin.describe_cluster().controller_id)
tls_admin.close()
pd.DataFrame(sorted({(r.listener_name, r.client_id, str(r.principal)) for r in tls.broker(0).channel.request_log.records}),
             columns=["listener", "client id", "principal"])

# %%
tls.stop()
tls_dir.cleanup()

# %% [markdown]
# The controller (client id `0`) presented the broker's own certificate: its principal is
# `User:CN=broker,OU=kafka` (no rule matched, `DEFAULT` kept the name) — the one to put in `super.users` if
# this broker had an authorizer. Alice's subject became `User:alice@payments`.
#
# **Recap 7.** With mutual TLS the principal comes from the certificate subject, shaped by
# `ssl.principal.mapping.rules`; the inter-broker listener's principal is then the brokers' certificate.

# %% [markdown]
# ## Exercises

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 2 · A server signature
#
# Another SCRAM-SHA-256 exchange, given in `ex2`. Compute the broker's **ServerSignature** (base64, the `v=` of
# its server-final message) as section 3 did, and put it, as a string, in `ex2_signature`. The check recomputes
# it from `ex2`.

# %%
ex2 = {"username": "carol", "password": "carol-secret", "salt_b64": "c2FsdHNhbHRzYWx0c2FsdA==", "iterations": 4096,
       "client_nonce": "abc123", "combined_nonce": "abc123XYZ789"}

# %% tags=["solution"]
_salted = hashlib.pbkdf2_hmac("sha256", ex2["password"].encode(), base64.b64decode(ex2["salt_b64"]), ex2["iterations"])
_auth = (f"n={ex2['username']},r={ex2['client_nonce']},r={ex2['combined_nonce']},s={ex2['salt_b64']},"
         f"i={ex2['iterations']},c=biws,r={ex2['combined_nonce']}").encode()
ex2_signature = base64.b64encode(hmac.new(hmac.new(_salted, b"Server Key", "sha256").digest(), _auth,
                                          "sha256").digest()).decode()

# %%
lab12.check_server_signature(ex2_signature, **ex2)

# %% [markdown]
# ### Exercise 3 · Which brokers refuse to start?
#
# Each of the five settings below is `_ibl` (two listeners: `CLIENT` on SASL_PLAINTEXT with PLAIN, `BROKER` on
# PLAINTEXT) plus one or two keys. Which of them does a broker refuse to start with? Put the set of their
# letters in `ex3_refused` (a set of strings; `set()` if none). Use the rules of section 1; the check starts a
# broker with each one.

# %%
_ibl = {"listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,BROKER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": jaas_line("PLAIN", "admin", "pw", alice="a")}
ex3_configs = {
    "p": {**_ibl, "inter.broker.listener.name": "BROKER"},
    "q": {**_ibl, "inter.broker.listener.name": "INTERNAL"},
    "r": {**_ibl, "inter.broker.listener.name": "CLIENT", "sasl.mechanism.inter.broker.protocol": "PLAIN"},
    "s": {**_ibl, "inter.broker.listener.name": "CLIENT"},
    "t": {**_ibl, "inter.broker.listener.name": "BROKER", "advertised.listeners": "CLIENT://kafka-1:9092"},
}

# %% tags=["solution"]
ex3_refused = {"q", "s", "t"}

# %%
lab12.check_refusals(ex3_refused, ex3_configs)

# %% [markdown]
# ## Recap
#
# * A listener is a named port with a security protocol; the inter-broker listener carries the controller's
#   requests and the followers' fetches — even on a single broker — under its own principal (C12, C13).
# * SASL: ApiVersions and SaslHandshake, then tokens (raw with v0, in SaslAuthenticate with v1). PLAIN sends
#   the password; SCRAM proves knowledge of it, and the broker stores only salt, iterations, StoredKey and
#   ServerKey (C10).
# * A failed login: error 58 with a generic message, after `connection.failed.authentication.delay.ms`, then
#   the close.
# * ACLs: super users, then DENY beats ALLOW, ALLOW implies DESCRIBE, and `allow.everyone.if.no.acl.found`
#   only for resources without any ACL (C14).
# * CLUSTER_AUTHORIZATION_FAILED with `clientId=<broker id>` and `User:ANONYMOUS` means the inter-broker
#   listener's principal may not do ClusterAction: authenticate that listener and make its user a super user
#   (or make ANONYMOUS a super user, if no client can reach that listener).
# * With mutual TLS the principal is the client certificate's subject, rewritten by `ssl.principal.mapping.rules`.
