# Source of labs/02_api_versions.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 02
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 02 · Talking across versions
#
# Kafka brokers and clients are upgraded on their own schedules. A data platform may run brokers from this
# year next to a payment service built with a client from five years ago, and a brand-new client against a
# broker nobody dares to touch. They still understand each other, because since Kafka 0.10 every connection
# starts with a short negotiation: *"which versions of which requests do you speak?"*. In this lab you watch
# that negotiation with real clients and a real (small) broker, and learn to predict its outcome.
#
# **By the end of this lab you can**
#
# 1. say what every client sends first on a new connection, and which version of it each client starts with;
# 2. read a broker's advertisement: API key, name, lowest and highest version;
# 3. apply the rule — per API, the **highest version both sides support** — and name the API when there is none;
# 4. explain why a broker answers an ApiVersions request it cannot read **in the v0 layout**, and what each
#    client does with that answer;
# 5. predict which versions a client uses against an older or a newer broker, and check the prediction;
# 6. compare the same request at two versions, and the broker's answer to each;
# 7. find your way among the ninety-odd request types Kafka defines.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C5** bidirectional compatibility: ApiVersions first, then the highest common version per API, an error when there is none | four real clients against a new and an old broker; the rule as code and as a picture; the v0 fallback | 1-5 |
# | **C8** API key + version select the schema; unsupported versions are rejected; the answer comes in the request's version | a closed connection, the v0-layout reply, one Produce at two versions and the two answers | 4, 6 |
# | **C45** besides Produce, Fetch and Metadata there are dozens of request types | every API key, grouped by what it is for | 7 |
#
# Lab 01 took single frames apart; here the frames start answering each other.
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | the broker's ApiVersions handler and its advertisement | `kafkalab/server/apis/api_versions.py`, `kafkalab/server/apis/base.py` | `core/src/main/scala/kafka/server/KafkaApis.scala` (`handleApiVersionsRequest`), `clients/.../common/requests/ApiVersionsResponse.java` |
# | refusing a version (close, or the v0 reply) | `kafkalab/network/socket_server.py` | `core/src/main/scala/kafka/network/SocketServer.scala`, `clients/.../common/requests/RequestContext.java` |
# | how a client picks a version | `kafkalab/labs/lab02.py` (`negotiate`) | `clients/.../clients/NodeApiVersions.java` (`latestUsableVersion`) |
# | the pictures: version ranges, API families, sequence diagrams | `kafkalab/viz/versions.py`, `kafkalab/viz/sequence.py` | — |
# | the request log the lab reads | `kafkalab/network/request_channel.py` | `core/src/main/scala/kafka/network/RequestChannel.scala` |
# | a listener with a scripted (older) advertisement | `kafkalab/trace/` | — |
#
# > **There is a broker now.** `kafkalab.Cluster` runs a real broker inside this notebook (on a background
# > event loop, listening on a free port of 127.0.0.1). Every request it handles lands in its **request
# > log**, which is how we see what clients sent. To play an *older* broker, we use lab 01's recorder,
# > `ScriptedListener`, with an advertisement of our choosing.

# %%
import struct

import pandas as pd
from IPython.display import display

from kafkalab import Cluster
from kafkalab.cluster import BrokerLog
from kafkalab.labs import evidence, lab02
from kafkalab.protocol import (ApiKey, annotate_request, api_name, decode_request, decode_response, encode_request,
                               error_info, make_request, request_class, request_schema)
from kafkalab.server.apis import enabled_apis
from kafkalab.trace import RawConnection
from kafkalab.viz import API_COLOURS, ApiFamilies, CompatGrid, RangeChart, SequenceDiagram, show_frame

pd.set_option("display.max_colwidth", 90)
API_KEYS = {api_name(k): int(k) for k in ApiKey}      # "Metadata" -> 3
broker_log = BrokerLog().install()            # the broker's warnings: kept in a list, shown when we ask

cluster = Cluster(brokers=1).start()
cluster.create_topic(lab02.TOPIC, partitions=1)
print(f"{len(cluster.brokers)} broker running; topic {lab02.TOPIC!r} created")

# %% [markdown]
# ## 1 · Every connection opens with a question
#
# Let each of four clients produce three records to the lab broker, each in its own process, with the same
# settings as in lab 01 (a fixed `client.id`; librdkafka's self-description fixed too). Then read the
# broker's request log: which requests came from that client, on which connection, at which version?
# (`lab02.run_client` does this. kcat is optional: without it, the lab uses a recorded kcat conversation and
# prints the same thing.)

# %%
conversations = {client: lab02.run_client(client, cluster) for client in lab02.CLIENTS}


def summary(steps):
    """Connections, the first request on each, and the version used per API."""
    connections = sorted({s.connection for s in steps})
    first = [next(s for s in steps if s.connection == c) for c in connections]
    used = lab02.versions_used(steps)              # in the order the client first sent each API
    return {"connections": len(connections),
            "first request on each connection": ", ".join(f"{s.api_name} v{s.api_version}" for s in first),
            "versions used": ", ".join(f"{name} v{version}" for name, version in used.items())}


pd.DataFrame({lab02.CLIENT_LABELS[c]: summary(steps) for c, steps in conversations.items()}).T

# %% [markdown]
# Things to notice:
#
# * **Every connection starts with ApiVersions**, even the second connection of the same client to the same
#   broker. (Why a second connection? The client first talks to the *bootstrap* address you configured, learns
#   from Metadata which broker leads the partition — here the same one — and connects to it by its broker id.
#   Lab 03 looks at connections closely.)
# * **Each client starts at its own version** of ApiVersions: librdkafka v3, kafka-python v4 (the newest),
#   aiokafka v0.
# * **The same API, different versions**: Metadata v12, v4, v12 and v5; Produce v10, v7, v9 and v7. All against
#   the same broker, and all of them worked. How each number comes about is the subject of sections 2 and 3.

# %% [markdown]
# ## 2 · The broker's answer: an advertisement
#
# Ask the broker ourselves. Lab 01 showed the transport: a size-prefixed frame out, a size-prefixed frame back.
# `RawConnection` does exactly that over a plain TCP socket. We send ApiVersions v4 (the newest any Kafka release
# defines) with correlation id 1.

# %%
ApiVersionsRequest = request_class(ApiKey.API_VERSIONS)
question = make_request(ApiVersionsRequest(client_software_name="kafkalab-lab", client_software_version="1.0"),
                        api_version=4, correlation_id=1, client_id=lab02.CLIENT_ID)

with RawConnection(cluster.bootstrap_servers) as conn:
    conn.send(encode_request(question))
    answer = conn.receive()

reply = decode_response(answer, ApiKey.API_VERSIONS, 4)
print(f"correlation id {reply.header.correlation_id}, error_code {reply.body.error_code}, "
      f"{len(reply.body.api_keys)} APIs advertised")

# %% [markdown]
# The body is a list of `(api_key, min_version, max_version)`. Next to it, what Kafka 4.3 itself defines for
# each of those APIs, and from which version on each is *flexible* (lab 01, section 3):

# %%
advertised = {e.api_key: (e.min_version, e.max_version) for e in reply.body.api_keys}
pd.DataFrame([{"api_key": k, "name": api_name(k), "min_version": lo, "max_version": hi,
               "Kafka 4.3 defines": request_schema(k).valid_versions.text,
               "flexible from": request_schema(k).flexible_versions.text}
              for k, (lo, hi) in advertised.items()]).set_index("api_key")

# %% [markdown]
# This broker implements only a handful of Kafka's APIs, and it advertises exactly those: the list is built
# from its handlers (`kafkalab.server.apis.enabled_apis()`), so it can never promise an API it cannot serve.

# %%
print("advertisement == enabled_apis():", advertised == enabled_apis())

# %% [markdown]
# The same answer on the wire. ApiVersions responses always use response header **v0** (no tagged-field
# section after the correlation id, lab 01 section 4), then `error_code`, the compact array of entries, and the
# throttle time.

# %%
show_frame(answer, kind="response", api_key=ApiKey.API_VERSIONS, api_version=4,
           title="the lab broker's advertisement (ApiVersions v4 response)")

# %% [markdown]
# ## 3 · The rule: the highest version both speak
#
# A client knows the versions it can write and read; the broker has just listed the versions it can. For each
# API the client then uses **the highest version inside both ranges**. If the ranges do not overlap, there is
# no version both understand, and the client reports an error naming that API instead of guessing.

# %%
def negotiate(client_range, broker_range):
    """The highest version inside both ranges, or None if they do not overlap."""
    if broker_range is None:                       # the broker does not serve this API at all
        return None
    low = max(client_range[0], broker_range[0])
    high = min(client_range[1], broker_range[1])
    return high if low <= high else None


print(negotiate((0, 13), (0, 11)), negotiate((0, 5), (0, 13)), negotiate((0, 2), (4, 16)))

# %% [markdown]
# Each client library carries its own ranges in its code. `lab02.CLIENT_RANGES` holds them for our four
# clients, for the APIs a producer or a consumer needs (read from the clients' sources). Here is the rule as a picture for
# confluent-kafka against the lab broker: one row per API, one column per version. Orange: only the client can
# send it; blue: only the broker serves it; green: both; dark green: the version the rule picks.

# %%
RangeChart(lab02.CLIENT_RANGES["confluent-kafka"], advertised, client_name=lab02.CLIENT_LABELS["confluent-kafka"],
           broker_name="the lab broker", keys=lab02.CLIENT_RANGES["confluent-kafka"])

# %% [markdown]
# Now predict, for every client and every API it used in section 1, and compare with what the broker's log
# recorded:

# %%
rows = []
for client, steps in conversations.items():
    for name, seen in lab02.versions_used(steps).items():
        key = API_KEYS[name]
        predicted = negotiate(lab02.CLIENT_RANGES[client][key], advertised.get(key))
        rows.append({"client": lab02.CLIENT_LABELS[client], "API": name,
                     "client can send": "v%d-%d" % lab02.CLIENT_RANGES[client][key],
                     "broker serves": "v%d-%d" % advertised[key], "predicted": f"v{predicted}",
                     "observed": f"v{seen}", "": "✓" if predicted == seen else "✗"})
predictions = pd.DataFrame(rows).set_index(["client", "API"])
print(f"{(predictions[''] == '✓').sum()} of {len(predictions)} predictions right")
predictions

# %% [markdown]
# One rule explains all of them. kcat asks for Metadata **v4** because its librdkafka (2.0.2, from 2023) knows
# nothing newer; aiokafka stops at **v5** because it implements no flexible version at all; the broker would
# have served v12 to both. The *client* decided each time, from the broker's list.
#
# ### When there is no common version
#
# Take a client from the Kafka 0.10.0 days (2016): Fetch v0-2, ListOffsets v0 only. The lab broker plays a
# ZooKeeper-era Kafka 3.9 by default, which still serves both (section 5 shows that client at work). Kafka 4.0
# does not: KIP-896 removed the oldest versions. Here is that client against Kafka 4.0's advertisement (the lab
# broker's table with `kafkalab.api.version.floors=4.0`):

# %%
kafka_4_0 = enabled_apis("4.0")
RangeChart(lab02.KAFKA_0_10_CLIENT, kafka_4_0, client_name="a Kafka 0.10.0 Java client (2016)",
           broker_name="a Kafka 4.0 broker", keys=[k for k in lab02.KAFKA_0_10_CLIENT if k in kafka_4_0])

# %% [markdown]
# A client applies the rule before it sends anything, and refuses to continue when an API it needs has no
# common version. `lab02.pick_versions` does the same:

# %%
picked = lab02.pick_versions(lab02.KAFKA_0_10_CLIENT, advertised)
print("against the lab broker (3.9):", {api_name(k): v for k, v in picked.items()})
try:
    lab02.pick_versions(lab02.KAFKA_0_10_CLIENT, kafka_4_0)
except lab02.NoCommonVersion as e:
    print(f"{type(e).__name__}: {e}")

# %% [markdown]
# The message names the API, as real clients do: the Java client throws an `UnsupportedVersionException` that
# names the API and both ranges; librdkafka fails the request with "Required feature not supported by broker".
# An error with a name is far better than sending bytes the broker cannot read — as the next section shows.

# %% [markdown]
# ## 4 · A version the broker does not know
#
# What if a client ignores the advertisement, or never asked? Two cases, answered very differently.
#
# ### Any API except ApiVersions: the connection closes
#
# Take a Produce v3 request and overwrite bytes 2-3 (the version) with 2, and send it to a broker playing Kafka
# 4.0: a version its advertisement includes (it says Produce `0-11`), yet Kafka 4.0 dropped it. A broker cannot
# answer a request it cannot parse — it does not know the layout the client expects — so it closes the
# connection.

# %%
ProduceRequest = request_class(ApiKey.PRODUCE)
produce_v3 = bytearray(encode_request(make_request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=()),
                                                   api_version=3, correlation_id=5, client_id=lab02.CLIENT_ID)))
produce_v3[2:4] = struct.pack(">h", 2)                 # api_version := 2

kafka_4_0_broker = Cluster(brokers=1, overrides={"kafkalab.api.version.floors": "4.0"}).start()
broker_log.clear()
with RawConnection(kafka_4_0_broker.bootstrap_servers) as conn:
    conn.send(bytes(produce_v3))
    print("answer:", conn.receive(), "| connection closed by the broker:", conn.closed)
print("broker log:", *broker_log.messages(), sep="\n  ")
kafka_4_0_broker.stop()

# %% [markdown]
# No error code, no response: the client only sees its connection drop. And the advertisement starts at v0
# although the broker refuses v0-2. Kafka 4.0 does the same: it keeps advertising Produce from v0 because
# librdkafka before 2.11.1 compresses only if Produce v0 is in the range (KAFKA-18659), and clients that new never
# *send* v0-2 anyway. An advertisement is what clients need to hear, not always the whole truth. (The lab broker at its default, Kafka
# 3.9, still serves Produce v0-2 and turns their old message formats into v2 batches: lab 06 shows the bytes.)
#
# ### ApiVersions: an answer in the oldest layout
#
# ApiVersions is the one request a broker must answer whatever its version: it is how a client finds out what
# to use in the first place. Kafka's development branch already has ApiVersions **v5**; a client built from it
# would send v5 to the lab broker, which knows only 0-4. Let's be that client: take our v4 request and patch the
# version to 5.

# %%
probe = bytearray(encode_request(question))
probe[2:4] = struct.pack(">h", 5)                      # api_version := 5
probe[4:8] = struct.pack(">i", 7)                      # correlation_id := 7

with RawConnection(cluster.bootstrap_servers) as conn:
    conn.send(bytes(probe))
    fallback = conn.receive()
show_frame(fallback, kind="response", api_key=ApiKey.API_VERSIONS, api_version=0,
           title="the answer to ApiVersions v5, read as v0")

# %% [markdown]
# Sixteen bytes, every one of them chosen so that *any* client can read them:

# %%
fields = [("0-3", "correlation_id", struct.unpack_from(">i", fallback, 0)[0], "response header v0: ApiVersions always uses it"),
          ("4-5", "error_code", struct.unpack_from(">h", fallback, 4)[0],
           f"{error_info(struct.unpack_from('>h', fallback, 4)[0]).name}: 'I cannot read that version'"),
          ("6-9", "api_keys count", struct.unpack_from(">i", fallback, 6)[0], "a classic INT32 count (v0), not a compact N + 1"),
          ("10-11", "api_keys[0].api_key", struct.unpack_from(">h", fallback, 10)[0], "18 = ApiVersions: the only entry"),
          ("12-13", "api_keys[0].min_version", struct.unpack_from(">h", fallback, 12)[0], ""),
          ("14-15", "api_keys[0].max_version", struct.unpack_from(">h", fallback, 14)[0], "retry with this"),
          ("—", "throttle_time_ms", "absent", "v0 has no throttle field")]
pd.DataFrame(fields, columns=["bytes", "field", "value", "why"]).set_index("bytes")

# %% [markdown]
# Why v0? The broker cannot know which layout a client speaks that is newer than anything the broker knows.
# The one layout every client since 0.10 can read is ApiVersions v0: the response header has no tagged fields
# for ApiVersions at any version (so the correlation id can always be matched), and the v0 body is the oldest.
# The body tells the client two things: *this failed* (35), and *I speak ApiVersions 0-4*.
#
# ### What each client does with it
#
# **kafka-python** reads every error reply to ApiVersions as v0, finds `max_version`, and retries with it.
# **librdkafka** reads the reply in the layout it asked for. For v3 that means a *compact* array, whose
# length is an unsigned varint of N + 1: the first byte of the int32 count, `00`, reads as a null array. With no
# entry to go on, librdkafka retries with v0, which every broker speaks.

# %%
show_frame(fallback, kind="response", api_key=ApiKey.API_VERSIONS, api_version=3,
           title="the same 16 bytes, read as librdkafka reads them (ApiVersions v3)")

# %% [markdown]
# Both ways work, and you can watch them. A broker of the Kafka 2.0 line (2018) serves ApiVersions only up to
# v2. `lab02.KAFKA_2_0` holds its advertisement for a producer's APIs; `ScriptedListener` plays that broker.
# Each client produces the same three records to it as in section 1.

# %%
pd.DataFrame([{"api_key": k, "name": api_name(k), "min_version": lo, "max_version": hi}
              for k, (lo, hi) in sorted(lab02.KAFKA_2_0.items())]).set_index("api_key").T

# %%
old = {client: lab02.capture_conversation(client, lab02.KAFKA_2_0) for client in lab02.CLIENTS}
pd.DataFrame({lab02.CLIENT_LABELS[c]: summary(steps) for c, (steps, _) in old.items()}).T

# %% [markdown]
# kafka-python now needs two tries: **v4, then v2**. Its second connection starts at v2 straight away (it
# remembers). librdkafka (confluent-kafka and kcat) goes **v3, then v0**. aiokafka starts at v0 and never
# notices. Here are the first three exchanges of the first connection, request by request; each response is
# decoded at the version of its request.

# %%
def exchange_diagram(client, count=3):
    _, result = old[client]
    diagram = SequenceDiagram([("client", lab02.CLIENT_LABELS[client], f"client_id {lab02.CLIENT_ID}-{client}"),
                               ("broker", "an old broker", "Kafka 2.0: ApiVersions v0-2")])
    for r in [r for r in result if r.connection == 0][:count]:
        colour = API_COLOURS.get(r.api_name, "#495057")
        diagram.message("client", "broker", f"{r.api_name} v{r.api_version} · corr={r.correlation_id}", colour=colour)
        version = r.api_version
        if r.api_name == "ApiVersions" and r.reply[4:6] == b"\x00\x23":
            version = 0                                   # the error reply is in the v0 layout
        body = decode_response(r.reply, r.request.api_key, version).body
        if r.api_name == "ApiVersions":
            text = (f"{error_info(body.error_code).name}, ApiVersions v{body.api_keys[0].min_version}-"
                    f"{body.api_keys[0].max_version}" if body.error_code else f"ok, {len(body.api_keys)} APIs")
        else:
            # (not the topic count: whether librdkafka's first Metadata already names the topic depends on
            # whether produce() ran before the connection was up -- a race, not a protocol fact)
            text = f"ok, {len(body.brokers)} broker(s)"
        diagram.message("broker", "client", f"corr={r.correlation_id} · {text}", dashed=True)
    return diagram


# %% tags=["figure:kafka_python_fallback"]
exchange_diagram("kafka-python")

# %% tags=["figure:librdkafka_fallback"]
exchange_diagram("confluent-kafka")

# %% [markdown]
# ## 5 · Why clients step down
#
# Section 1 already showed **an old client and a new broker**: kcat and aiokafka asked the lab broker for
# Metadata v4 and v5 although it serves v12. The broker keeps every version it advertises working, so old
# clients need nothing special: they simply never use what they do not know.
#
# The other direction, **a new client and an old broker**, is where downgrading earns its keep. Side by side,
# the versions each client used against the lab broker (section 1) and against the Kafka 2.0 broker (above):

# %%
apis = ["ApiVersions", "Metadata", "InitProducerId", "Produce"]
CompatGrid({c: (lab02.versions_used(conversations[c]), lab02.versions_used(old[c][0])) for c in lab02.CLIENTS},
           apis, names=("lab broker", "Kafka 2.0 broker"), labels=lab02.CLIENT_LABELS)

# %% [markdown]
# The rule predicts every cell of the right-hand side too, except ApiVersions itself, which is settled by the
# fallback of section 4 (librdkafka ends up at v0, not at the v2 both sides could speak):

# %%
checks = []
for client, (steps, _) in old.items():
    for name, seen in lab02.versions_used(steps).items():
        if name == "ApiVersions":
            continue
        key = API_KEYS[name]
        checks.append(negotiate(lab02.CLIENT_RANGES[client][key], lab02.KAFKA_2_0[key]) == seen)
print(f"{sum(checks)} of {len(checks)} versions used against the Kafka 2.0 broker match the rule")

# %% [markdown]
# A newer version of an API is not just a different number: it may carry new fields (Produce v3 added the
# transactional id and record batches with headers, Metadata v10 topic ids), and a client that steps down loses
# them. librdkafka goes further and switches whole *features* on or off from the advertisement: the v2 record
# format only with Produce v3+ and Fetch v4+, idempotence only with InitProducerId, zstd only with Produce v7+.

# %% [markdown]
# ### Kafka 3.9 or Kafka 4.0: one old client, two brokers
#
# Brokers drop old versions too. Kafka 4.0 removed every version older than what Kafka 2.1 clients send
# (KIP-896): ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, Fetch v0-3, Produce v0-2 and more. The lab
# broker can play either release: `kafkalab.api.version.floors=3.9` (the default: a ZooKeeper-mode Kafka 3.9
# broker, old versions included) or `4.0`. Start one of each and ask both what they advertise:

# %%
floors_brokers = {f: Cluster(brokers=1, overrides={"kafkalab.api.version.floors": f}).start() for f in lab02.FLOORS}
said = {}
for floors, c in floors_brokers.items():
    c.create_topic(lab02.TOPIC, partitions=1)
    with RawConnection(c.bootstrap_servers) as conn:
        conn.send(encode_request(question))
        reply = decode_response(conn.receive(), ApiKey.API_VERSIONS, 4).body
    said[floors] = {k.api_key: (k.min_version, k.max_version) for k in reply.api_keys}
changed = [k for k in sorted(said["3.9"]) if said["3.9"][k] != said["4.0"].get(k)]
pd.DataFrame([{"API": api_name(k), "Kafka 3.9 broker": "v%d-%d" % said["3.9"][k],
               "Kafka 4.0 broker": "v%d-%d" % said["4.0"][k]} for k in changed]).set_index("API")

# %% [markdown]
# Two things to notice. Kafka 4.0 serves a few *newer* versions too (here Metadata v13 and DescribeCluster v2;
# the lab broker does not implement the others Kafka 4.0 added, such as Produce v12 and ListOffsets v10, so its
# highest versions are its own, while its lowest are Kafka's). And Produce still reads **v0** at Kafka 4.0:
# librdkafka before 2.11.1 turns compression off unless Produce v0 is in the range, so Kafka 4.0 keeps advertising
# it (KAFKA-18659) while refusing a Produce v0-2 like any version below its floor.
#
# Now the old client: kafka-python pinned to `api_version=(0, 10, 0)`, the versions a Kafka 0.10.0 client
# sends, asks each broker where partition 0 ends. That is ListOffsets **v0**, the pre-timestamp form ("up to
# N offsets before time T"):

# %%
broker_log.clear()
old_client = {f: lab02.old_client_end_offsets(c, lab02.TOPIC) for f, c in floors_brokers.items()}
pd.DataFrame([{"broker": f"Kafka {f}", "requests it answered": ", ".join(f"{a} v{v}" for a, v in r.answered),
               "the client got": r.answer} for f, r in old_client.items()]).set_index("broker")

# %% [markdown]
# The request log lists only what a handler answered; a request refused while it is read never gets there. The
# broker's own log has it:

# %%
refusals = sorted({m for m in broker_log.messages() if "ListOffsets" in m})
print("the brokers' log:", *refusals, sep="\n  ")

# %%
evidence("An old client against two releases", {
    "the Kafka 3.9 broker answered ListOffsets v0 (in its range)": ("ListOffsets", 0) in old_client["3.9"].answered,
    "the client learned the end offset from it": old_client["3.9"].answer == "end offset 0",
    "the Kafka 4.0 broker advertises ListOffsets from v1 only": said["4.0"][ApiKey.LIST_OFFSETS][0] == 1,
    "it refused ListOffsets v0 (closed the connection, and said so in its log)": any(
        "ListOffsets v0 is not supported" in m for m in refusals),
    "it answered no ListOffsets at all; the client gave up": (
        not any(a == "ListOffsets" for a, _ in old_client["4.0"].answered)
        and old_client["4.0"].answer.startswith("gave up")),
})

# %% [markdown]
# The old client never checked the advertisement: pinned to 0.10.0, it sends what 0.10.0 knew. The Kafka 4.0
# broker cannot answer a version it no longer has, so it does what any broker does with a request it cannot
# read (section 4): it closes the connection without a word. The client reconnects, asks again, and finally
# times out. Kafka 4.0's upgrade notes say it plainly: clients older than 2.1 must be upgraded first.

# %%
for c in floors_brokers.values():
    c.stop()

# %% [markdown]
# ## 6 · One request, two versions
#
# The broker picks the schema from the request's API key and version, and **answers in the same version**.
# confluent-kafka sent its three records to the Kafka 2.0 broker as Produce **v6**; to the lab broker it sends
# the very same request as **v10**. Take the v6 frame it sent, decode it, and encode the same body at v10
# (pointed at a fresh topic, so the offsets below do not depend on the earlier sections).

# %%
cluster.create_topic("two-versions", partitions=1)
sent_v6 = next(r for r in old["confluent-kafka"][1] if r.api_name == "Produce")
body = decode_request(sent_v6.frame).body
body = body._replace(topic_data=tuple(t._replace(name="two-versions") for t in body.topic_data))
frames = {v: encode_request(make_request(body, api_version=v, correlation_id=10 + v, client_id=lab02.CLIENT_ID))
          for v in (6, 10)}
print({f"v{v}": f"{len(f)} bytes" for v, f in frames.items()})

# %% [markdown]
# The fields, in order, with their wire type at each version. The records themselves (one record batch,
# the same bytes in both) do not change; everything around them does: classic lengths become compact
# N + 1 lengths, and every struct gains a tagged-field section.

# %%
def layout(frame):
    return {r.path: r.wire_type for r in annotate_request(frame).rows if r.depth > 0}


a, b = layout(frames[6]), layout(frames[10])
pd.DataFrame([{"field": path, "v6": a.get(path, "—"), "v10": b.get(path, "—"),
               "": "" if a.get(path) == b.get(path) else "changed" if path in a and path in b else "new"}
              for path in list(b) + [p for p in a if p not in b]]).set_index("field")

# %% [markdown]
# Now send both to the lab broker, one after the other on one connection, and read the two answers. Each
# comes back in the layout of its own request: v6 with the classic response header v0, v10 flexible (response
# header v1, compact arrays, tagged fields) and with the fields v8 added (`record_errors`, `error_message`).
# v10 added a leader hint too, `current_leader` (KIP-951), as a *tagged* field: Kafka fills it only when it
# answers NOT_LEADER_OR_FOLLOWER, so here each tagged-field section is empty.

# %%
with RawConnection(cluster.bootstrap_servers) as conn:
    conn.send(frames[6], frames[10])
    answers = {6: conn.receive(), 10: conn.receive()}
for v, frame in answers.items():
    r = decode_response(frame, ApiKey.PRODUCE, v)
    p = r.body.responses[0].partition_responses[0]
    print(f"v{v}: {len(frame)} bytes, correlation id {r.header.correlation_id}, "
          f"{error_info(p.error_code).name}, base_offset {p.base_offset}")

# %%
display(show_frame(answers[6], kind="response", api_key=ApiKey.PRODUCE, api_version=6, title="Produce v6 response"))
show_frame(answers[10], kind="response", api_key=ApiKey.PRODUCE, api_version=10, title="Produce v10 response")

# %% [markdown]
# Same question, same answer (`NONE`, offsets 0 and 3), two layouts. A response does not say which version it
# is: the client knows, because it remembers what it sent under each correlation id (lab 03).

# %% [markdown]
# ## 7 · Dozens of request types
#
# Produce, Fetch and Metadata carry the data, but Kafka's protocol has many more requests. How many, and what
# for? Every API key Kafka 4.3 defines, grouped by family (hover over a tile for its versions). Bold tiles are
# served by the lab broker; a dot marks the APIs the clients in this lab sent.

# %%
used = {s.api_name for steps in conversations.values() for s in steps}
families = ApiFamilies(served=advertised, used=used)
print(f"{len(ApiKey)} API keys; the lab broker serves {len(advertised)}; the four clients used {len(used)} of them")
families

# %% [markdown]
# Counted by family:

# %%
pd.Series(families.counts(), name="API keys").to_frame()

# %% [markdown]
# A producer needs four of them. A consumer in a group adds about ten (FindCoordinator, JoinGroup, SyncGroup,
# Heartbeat, OffsetCommit, ...); an admin tool another twenty; brokers and controllers talk to each other with
# their own set (lab 09). That is why every client starts with ApiVersions: across ninety-odd APIs, each with its
# own range of versions, nothing else could keep clients and brokers of different ages compatible.
#
# We are done with the broker:

# %%
cluster.stop()
print("broker stopped")

# %% [markdown]
# ## 8 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: ✓ means right; ✗ comes with a hint. The checks compute the right answer
# from the same data you were given, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# ### Exercise 1 · Which version will confluent-kafka use?
#
# A broker advertises the ranges in `ADVERTISEMENT` (a broker of the Kafka 2.8 line, for these APIs). Which
# version will confluent-kafka use for Metadata, Produce and InitProducerId? Its own ranges are in
# `lab02.CLIENT_RANGES["confluent-kafka"]`. Work it out by hand first.

# %%
ADVERTISEMENT = {ApiKey.PRODUCE: (0, 9), ApiKey.METADATA: (0, 11), ApiKey.API_VERSIONS: (0, 3),
                 ApiKey.INIT_PRODUCER_ID: (0, 4), ApiKey.FETCH: (0, 12)}
print({api_name(k): "v%d-%d" % r for k, r in lab02.CLIENT_RANGES["confluent-kafka"].items() if k in ADVERTISEMENT})

# %% tags=["solution"]
versions = {
    "Metadata": 11,
    "Produce": 9,
    "InitProducerId": 4,
}

# %%
lab02.check_versions_for(versions, "confluent-kafka", ADVERTISEMENT)

# %% [markdown]
# ### Exercise 2 · Write the rule
#
# Write a function of two ranges, `(client_range, broker_range)`, each a `(min, max)` tuple (`broker_range` may
# be None when the broker does not serve the API), that returns the version a client uses, or None when there is
# no common version. Assign it to `my_negotiate`. The check tries it on eleven pairs of ranges. (No peeking at
# `negotiate` above.)

# %% tags=["solution"]
def rule(client_range, broker_range):
    if broker_range is None:
        return None
    highest = min(client_range[1], broker_range[1])
    return highest if highest >= max(client_range[0], broker_range[0]) else None


my_negotiate = rule

# %%
lab02.check_negotiate(my_negotiate)

# %% [markdown]
# ### Exercise 3 · Read the refusal
#
# kafka-python sent ApiVersions v4 to some broker and got back this response frame (size prefix removed). With
# which ApiVersions version will it try again? Read it from the bytes into `retry_version` (by hand, or with
# `struct`), without a decoder.

# %%
REFUSAL = bytes.fromhex("0000000a 0023 00000001 0012 0000 0003")
print(REFUSAL.hex(" "))

# %% tags=["solution"]
count, = struct.unpack_from(">i", REFUSAL, 6)
entries = [struct.unpack_from(">hhh", REFUSAL, 10 + 6 * i) for i in range(count)]
retry_version = next(hi for key, lo, hi in entries if key == ApiKey.API_VERSIONS)

# %%
lab02.check_retry_version(retry_version, REFUSAL)

# %% [markdown]
# ### Exercise 4 · An old client meets Kafka 4.0
#
# `lab02.KAFKA_0_10_CLIENT` is what a Java client of the 0.10.0 line can send; `lab02.KAFKA_4_0` is what a
# Kafka 4.0 broker *accepts* (not what it advertises: section 4 showed it advertising Produce from v0 while
# refusing v0-2). Which APIs have **no** common version? Give a set of API names in `no_common`. Careful: some
# ranges only just touch.

# %%
pd.DataFrame([{"API": api_name(k), "0.10.0 client": "v%d-%d" % lab02.KAFKA_0_10_CLIENT[k],
               "Kafka 4.0 accepts": "v%d-%d" % lab02.KAFKA_4_0[k]} for k in sorted(lab02.KAFKA_0_10_CLIENT)]).set_index("API")

# %% tags=["solution"]
no_common = {api_name(k) for k in lab02.KAFKA_0_10_CLIENT
             if negotiate(lab02.KAFKA_0_10_CLIENT[k], lab02.KAFKA_4_0.get(k)) is None}

# %%
lab02.check_no_common_version(no_common, lab02.KAFKA_0_10_CLIENT, lab02.KAFKA_4_0)

# %% [markdown]
# ## 9 · Recap
#
# * **ApiVersions first (C5).** Every connection starts with it; clients start at different versions (v0, v3,
#   v4). The answer lists every API the broker serves with its lowest and highest version.
# * **The rule.** Per API, the client uses the highest version inside both ranges; with no overlap it reports
#   an error that names the API. Old clients with new brokers, new clients with old brokers: the same rule.
# * **Refusals (C8).** A request at a version the broker cannot parse closes the connection, without a word.
#   ApiVersions is the exception: a too-new version gets error 35 in the **v0 layout**, with the range of
#   ApiVersions itself; kafka-python retries at that maximum, librdkafka (which misreads the reply) at v0.
# * **Answers in the request's version (C8).** The same Produce at v6 and v10: same meaning, different bytes,
#   and the broker's answer matches each.
# * **Advertisements can bend.** Kafka 4.0 advertises Produce from v0 but rejects v0-2; clients new enough
#   never send them.
# * **Ninety-three API keys (C45)**, in families: data, discovery, groups, transactions, security,
#   administration, telemetry, and the brokers' and controllers' own.
#
# **Next:** lab 03, *Correlation ids, pipelining, order*: what happens on one connection when a client has
# several requests in flight.
