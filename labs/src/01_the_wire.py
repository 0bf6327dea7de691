# Source of labs/01_the_wire.ipynb ("percent" format). Edit this file, then rebuild and re-execute:
#     .venv/bin/python scripts/build_labs.py 01
# Review the prose and code here; the .ipynb keeps the outputs that nbval compares.

# %% [markdown]
# # Lab 01 · The wire: frames, headers, types
#
# A Kafka client and a broker talk in a compact binary protocol over TCP. When something breaks in a real
# cluster, the useful questions are often about bytes: *which version of the request did this client send?
# Did the broker answer in the layout the client expects? Why does the client log "Read underflow"?* In this
# lab you capture what real clients send, and learn to read it yourself.
#
# **By the end of this lab you can**
#
# 1. cut a TCP byte stream into Kafka frames, and take a request apart by hand: size, API key, API version,
#    correlation id, client id, body;
# 2. read the primitive types: big-endian integers, unsigned and zig-zag varints, classic and *compact*
#    strings and arrays (the **N + 1** rule), nullable values, UUIDs;
# 3. spot the **tagged-field section** (`TAG_BUFFER`) that ends every struct of a flexible version;
# 4. say which request and response **header version** any API version uses, including the ApiVersions exception;
# 5. explain how the API key and version select the schema, and what a broker does with a version it does not know;
# 6. find the key, value, headers and timestamp of each record inside a Produce request;
# 7. recognise a malformed frame, and know what Kafka does with one.

# %% [markdown]
# ### Where this lab sits
#
# | course concept | what you will see | section |
# |---|---|---|
# | **C1** a binary protocol over TCP: dozens of versioned request/response APIs, size-delimited frames, primitive types | real frames, the primitive types, the API count, a byte stream cut into frames | 1, 2, 5 |
# | **C8** API key + API version select the schema; unsupported versions are rejected | one request at two versions; a broker's answer to a version it does not know | 5 |
# | **C25** a record is key, value, headers and a timestamp | the records inside a real Produce request | 6 |
# | **C37** every request header carries API key, API version, correlation id and client id | the header, byte by byte, from four clients | 1, 4 |
#
# Lab 02 builds on this one to show how clients and brokers agree on versions.
#
# | what you look at | kafkalab module | Kafka source (apache/kafka) |
# |---|---|---|
# | size-delimited frames | `kafkalab/protocol/framing.py` | `clients/src/main/java/org/apache/kafka/common/network/NetworkReceive.java` |
# | primitive types | `kafkalab/protocol/primitives.py` | `clients/.../common/protocol/types/Type.java`, `common/utils/ByteUtils.java` |
# | one schema per API and version | `kafkalab/protocol/messages/*.py` (generated) | `clients/src/main/resources/common/message/*.json` |
# | header versions | `kafkalab/protocol/headers.py` | `generator/.../message/ApiMessageTypeGenerator.java` |
# | the annotated decoder and its views | `kafkalab/protocol/annotate.py`, `kafkalab/viz/` | — |
# | record batches | `kafkalab/records/` | `clients/.../common/record/DefaultRecordBatch.java`, `DefaultRecord.java` |
# | listening to real clients | `kafkalab/trace/` | the receiving half of `core/src/main/scala/kafka/network/SocketServer.scala` |
#
# > **There is no broker in this lab,** on purpose: kafkalab has one (lab 02 starts it inside the notebook;
# > `kafkalab broker` runs one on 127.0.0.1:9092), but here we only listen. The far end of each client's
# > socket is a *recorder*: `kafkalab.trace.ScriptedListener` listens on 127.0.0.1, keeps every request it
# > receives, and answers from a fixed script (nothing is stored). That is enough to see exactly what real
# > clients put on the wire. Nothing here needs the network beyond your own machine.

# %%
import base64
import socket
import struct
import uuid

import pandas as pd

from kafkalab.labs import lab01
from kafkalab.protocol import (ApiKey, DecodeError, FrameReader, InvalidReceiveError, annotate_request,
                               annotate_response, api_name, decode_request, encode_request, encode_response,
                               header_version_table, make_request, make_response, request_class,
                               request_header_version, request_schema, response_class, size_prefixed)
from kafkalab.protocol import primitives as P
from kafkalab.records import annotate_records, decode_batches
from kafkalab.trace import ClientNotAvailable, ScriptedListener, ScriptedReplies, capture, first_request_only
from kafkalab.viz import frame_layout_diagram, show_frame

pd.set_option("display.max_colwidth", 80)


def hexlines(data: bytes, width: int = 16) -> None:
    """Print bytes as hex, `width` per line, each line starting with its offset."""
    for i in range(0, len(data), width):
        print(f"{i:4}  {data[i:i + width].hex(' ')}")

# %% [markdown]
# ## 1 · The first request a real client sends
#
# Every modern Kafka client opens a connection with the same question: **ApiVersions**, "which versions of
# which APIs do you speak?". We start a listener, point confluent-kafka (the Python wrapper of librdkafka) at
# it, and never answer. The client's first request is all we get, and all we need.
#
# Two settings make the bytes the same on every machine: `client.id` (otherwise librdkafka says `rdkafka`),
# and `client.software.name` / `client.software.version`, which librdkafka otherwise fills with its own
# version number. (`lab01` holds these fixed settings so every capture of the lab uses the same ones.)

# %%
CLIENT_ID = lab01.CLIENT_ID                  # "kafkalab-lab01"
SOFTWARE = lab01.LIBRDKAFKA_SOFTWARE         # {"client.software.name": "kafkalab-lab", ...version": "1.0"}

try:
    result = capture("confluent-kafka", "metadata", reply=first_request_only,
                     client_id=CLIENT_ID, config=SOFTWARE)
    frame = result[0].frame                  # the request, without its 4-byte size prefix
except ClientNotAvailable:                   # confluent-kafka is not installed: use the recorded frame
    frame = lab01.recorded("confluent-kafka-ApiVersions-v3.bin")

wire = size_prefixed(frame)                  # exactly as it travelled: int32 size, then the frame
print(f"{len(wire)} bytes arrived:")
hexlines(wire)

# %% [markdown]
# ### Take it apart by hand
#
# Forget any library for a moment. A request is `size | header | body`, and the header starts with fields
# whose positions never change: `api_key` (int16), `api_version` (int16), `correlation_id` (int32) and
# `client_id` (an int16 length, then that many UTF-8 bytes). All integers are **big-endian** (`>` in `struct`).

# %%
size, = struct.unpack(">i", wire[0:4])                  # how many bytes follow the size field
api_key, api_version = struct.unpack(">hh", wire[4:8])
correlation_id, = struct.unpack(">i", wire[8:12])       # the response will echo it
client_id_len, = struct.unpack(">h", wire[12:14])
client_id = wire[14:14 + client_id_len].decode("utf-8")
rest = 14 + client_id_len

fields = [("0-3", "size", f"{size}   ({size} bytes follow: 4 + {size} = {len(wire)})"),
          ("4-5", "api_key", f"{api_key}   ({api_name(api_key)})"),
          ("6-7", "api_version", api_version),
          ("8-11", "correlation_id", correlation_id),
          ("12-13", "client_id length", client_id_len),
          (f"14-{rest - 1}", "client_id", repr(client_id)),
          (f"{rest}-{len(wire) - 1}", "the rest", wire[rest:].hex(" "))]
for where, name, value in fields:
    print(f"bytes {where:<6} {name:<17} = {value}")

# %% [markdown]
# What is "the rest"? ApiVersions v3 is a *flexible* version (section 3), so the header ends with an empty
# tagged-field section: one `00` byte. Then comes the body: two **compact** strings, whose length byte holds
# **N + 1**, and the body's own empty tagged-field section.

# %%
body = wire[rest + 1:]                       # skip the header's TAG_BUFFER (00 = no tagged fields)
n = body[0] - 1                              # compact string: the length byte is N + 1
software_name = body[1:1 + n].decode()
m = body[1 + n] - 1
software_version = body[2 + n:2 + n + m].decode()
print(f"header TAG_BUFFER = {wire[rest]:#04x}")
print(f"software name     = {software_name!r} (length byte {body[0]:#04x} = {n} + 1)")
print(f"software version  = {software_version!r} (length byte {body[1 + n]:#04x} = {m} + 1)")
print(f"body TAG_BUFFER   = {body[2 + n + m]:#04x}, and that was the last byte: {2 + n + m + 1 == len(body)}")

# %% [markdown]
# ### The same with the decoder
#
# `decode_request` does all of that from the schema: it reads the API key and version, derives the header
# version, and decodes the body with the reader generated for that exact API and version.

# %%
request = decode_request(frame)
print(request.header)
print(request.body)

# %% [markdown]
# ### The annotated view
#
# `show_frame` draws the same decode as a hex dump and a field tree. **Hover over a byte** to find its field,
# or over a field to find its bytes; a click pins the highlight. Length prefixes are darker; the dashed grey
# cells are `TAG_BUFFER`s. Notice that `client_id` has a two-byte length (`00 0e`) while the body's strings
# have a one-byte compact length (`0d`): the header keeps the classic form even in a flexible request.

# %%
view = show_frame(wire, size_prefix=True)
view

# %% [markdown]
# The same frame as boxes, left to right in byte order:

# %% tags=["figure:frame_layout"]
frame_layout_diagram(view)

# %% [markdown]
# ### Four clients, four first requests
#
# Now the same experiment with every client this lab knows. `lab01.first_request(client)` runs the capture
# above for one client; if that client is not installed (kcat often is not), it returns a frame recorded with
# the same settings (`kafkalab/labs/frames/`) instead. The table does not change either way, because the bytes do
# not; `lab01.SOURCES` tells you which one you got.

# %%
print(f"{'client':<16} {'API':<12} {'ver':>3}  {'header':<6} {'corr':>4}  {'client_id':<15} "
      f"{'same bytes':<10}  software (KIP-511 name + version)")
for client in ["confluent-kafka", "kcat", "kafka-python", "aiokafka"]:
    f = lab01.first_request(client)
    r = decode_request(f)
    name = getattr(r.body, "client_software_name", None)
    software = f"{name} {r.body.client_software_version}" if name else "(none: only v3+ carries it)"
    same = "yes" if f == frame else "no"
    print(f"{client:<16} {r.api_name:<12} {r.api_version:>3}  v{request_header_version(r.api_key, r.api_version):<5} "
          f"{r.correlation_id:>4}  {r.client_id:<15} {same:<10}  {software}")

# %% [markdown]
# Things to notice:
#
# * **kcat** (librdkafka 2.0.2 on Debian) and **confluent-kafka** (librdkafka 2.16) put *identical* bytes on
#   the wire once they are given the same names: the first request is fixed by the protocol version, not the
#   library's age.
# * **kafka-python** starts at ApiVersions **v4**, the newest, and names itself with its own version number
#   (that number changes with every release, so `labs/sanitize.cfg` tells nbval to ignore just it).
# * **aiokafka** sends **v0**: header v1 and an empty body. It uses no flexible version at all.
#
# A broker must answer each of them in the layout of the version it was asked in. That negotiation is lab 02.

# %% [markdown]
# ## 2 · Primitive types
#
# Every field of every message is built from a handful of types (`kafkalab/protocol/primitives.py` has one
# small reader and writer for each). The bytes below are produced by those writers; check a few by hand.
#
# ### Fixed-width integers are big-endian
#
# `int8`, `int16`, `int32`, `int64` (and `uint16`, `uint32`, `float64`, `bool`) take 1 to 8 bytes, most
# significant byte first. Negative numbers are two's complement, so -1 is all `ff`.

# %%
for kind, value in [("int8", -1), ("int16", 18), ("int32", 299), ("int64", 1700000000000)]:
    be = P.write_fixed(kind, value)
    print(f"{kind:<6} {value:>14}   big-endian: {be.hex(' '):<24} little-endian would be: {be[::-1].hex(' ')}")

# %% [markdown]
# ### Varints: unsigned, and zig-zag
#
# A varint spends 7 bits per byte, **lowest 7 bits first**; a set high bit (`0x80`) means "another byte
# follows". Small numbers take one byte. Two flavours appear on Kafka's wire, and mixing them up is a
# classic bug:
#
# * **unsigned varint**: lengths and counts of flexible versions (the N + 1 values), tag numbers, tag sizes;
# * **zig-zag varint**: signed numbers inside records (lengths, offset and timestamp deltas). Zig-zag first
#   maps signed to unsigned, `0→0, -1→1, 1→2, -2→3, …`, so that small *negative* numbers stay short too.

# %%
pd.DataFrame([{"value": n, "binary": f"{n:b}", "unsigned varint": P.write_unsigned_varint(n).hex(" ")}
              for n in [0, 1, 63, 127, 128, 300, 16383, 16384]])

# %%
pd.DataFrame([{"value": n, "zig-zag mapped": P.zigzag_encode(n, 32), "zig-zag varint": P.write_varint(n).hex(" "),
               "as int32 instead": P.write_fixed("int32", n).hex(" ")}
              for n in [0, -1, 1, -2, 2, -64, 64, 250, -65]])

# %% [markdown]
# Check one by hand: 300 is `1 0010 1100` in binary. The low 7 bits `010 1100` (0x2c) go first, with the
# high bit set because more follows: `0xac`. The remaining bits `10` make `0x02`. So 300 is `ac 02`.

# %%
n = 300
low7, high = n & 0x7F, n >> 7
print(f"{n} = 0b{n:b}: first byte {low7 | 0x80:#04x} (low 7 bits + 'more follows'), then {high:#04x}")
print("write_unsigned_varint(300) =", P.write_unsigned_varint(300).hex(" "))
print("read back:", P.read_unsigned_varint(bytes.fromhex("ac 02"), 0)[0])

# %% [markdown]
# ### Strings and byte arrays: classic and compact
#
# A **classic** string has an int16 length (an int32 for bytes); a **compact** string, used by flexible
# versions, has an unsigned varint holding **N + 1**. The `+ 1` frees the value 0 to mean null: a compact
# length byte `01` is an *empty* string, `00` is null. In the classic form, null is length -1 (`ff ff`).

# %%
rows = []
for kind, value in [("string", "kafka"), ("string", ""), ("string", None), ("bytes", b"\x01\x02")]:
    write = P.write_string if kind == "string" else P.write_bytes
    rows.append({"type": kind, "value": repr(value),
                 "classic": write(value, nullable=True).hex(" "),
                 "compact (N + 1)": write(value, compact=True, nullable=True).hex(" ")})
pd.DataFrame(rows)

# %% [markdown]
# ### Arrays
#
# Arrays follow the same pattern: a classic int32 element count (-1 = null), or a compact unsigned varint of
# N + 1 (0 = null), then the elements one after the other, with no separators.

# %%
partitions = [0, 1, 2]
elements = b"".join(P.write_fixed("int32", p) for p in partitions)
print("classic ARRAY          ", (P.write_array_length(len(partitions)) + elements).hex(" "))
print("COMPACT_ARRAY          ", (P.write_array_length(len(partitions), compact=True) + elements).hex(" "))
print("null: classic / compact", P.write_array_length(None).hex(" "), "/", P.write_array_length(None, compact=True).hex(" "))

# %% [markdown]
# ### Nullable: null is not empty
#
# Some fields may be null, and null can mean something different from empty. A Metadata request (v1 and
# later) with `topics = null` asks for **every topic** in the cluster; with an empty list it asks for **none**
# (brokers only). One byte apart, and a client that mixes them up asks a 10,000-topic cluster for all its metadata.

# %%
Metadata = request_class(ApiKey.METADATA)
for topics, meaning in [(None, "null  -> every topic in the cluster"), ((), "empty -> no topics, brokers only")]:
    f = encode_request(make_request(Metadata(topics=topics), api_version=12, client_id=CLIENT_ID))
    field = annotate_request(f).find("body.topics")
    print(f"topics {meaning:<36} byte {field.start}: {f[field.start:field.end].hex(' ')}")

# %% [markdown]
# ### UUIDs
#
# A UUID is 16 raw bytes. Kafka uses them for topic ids; all zeros means "no id" (a request that names topics
# by name sends zeros). Kafka's tools print topic ids in URL-safe base64, not in the usual hex-with-dashes
# form, so keep both in mind when you compare logs with bytes.

# %%
topic_id = uuid.uuid5(uuid.NAMESPACE_URL, "kafkalab/sensor-readings")     # any fixed UUID will do
print("uuid          ", topic_id)
print("on the wire   ", P.write_uuid(topic_id).hex(" "))
print("as Kafka shows", base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode())
print("no topic id   ", P.write_uuid(uuid.UUID(int=0)).hex(" "))

# %% [markdown]
# ## 3 · Tagged fields and the TAG_BUFFER
#
# Kafka 2.4 (KIP-482) introduced **flexible versions**, and today nearly every API has them. From its first
# flexible version on, an API uses compact strings, bytes and arrays, and **every struct ends with a
# tagged-field section**: an unsigned varint count, then for each field its tag number, its size and its
# bytes. Tagged fields are optional, and a reader skips tags it does not know by their size, so new optional
# fields can be added without a new version.
#
# The section is there even when it is empty, as a single `00` byte: at the end of the request header (v2),
# at the end of the body, and **at the end of every array element**. Forgetting one of those bytes is the most
# common bug in hand-written Kafka codecs.

# %%
for key in [ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.API_VERSIONS]:
    s = request_schema(key)
    print(f"{api_name(key):<16} versions {s.valid_versions.text:<5}  flexible versions {s.flexible_versions.text}")

# %% [markdown]
# ### One `00` per struct, including each array element
#
# A Metadata v12 request for two topics. Count the dashed `TAG_BUFFER` cells: one in the header, one after
# each topic, one at the end of the body.

# %%
two_topics = Metadata(topics=(Metadata.MetadataRequestTopic(name="orders"),
                              Metadata.MetadataRequestTopic(name="payments")),
                      allow_auto_topic_creation=False)
metadata_v12 = encode_request(make_request(two_topics, api_version=12, correlation_id=2, client_id=CLIENT_ID))
show_frame(metadata_v12)

# %% [markdown]
# ### A message that carries a tagged field
#
# ApiVersions v3 responses define optional tagged fields; tag 0 is `SupportedFeatures`, the feature versions
# the broker supports. Here is a response carrying it. In the tree, the body's `_tagged_fields` is no longer a
# lone `00`: it holds one field.

# %%
AV = response_class(ApiKey.API_VERSIONS)
av_keys = (AV.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=4),)
features = (AV.SupportedFeatureKey(name="transaction.version", min_version=0, max_version=2),)
with_tag = encode_response(make_response(AV(error_code=0, api_keys=av_keys, throttle_time_ms=0,
                                            supported_features=features), api_version=3, correlation_id=1))
show_frame(with_tag, kind="response", api_key=ApiKey.API_VERSIONS, api_version=3)

# %% [markdown]
# The section by hand: a count, then (tag, size, value) per field, all unsigned varints except the value.

# %%
start = annotate_response(with_tag, ApiKey.API_VERSIONS, 3).find("body._tagged_fields").start
count, p = P.read_unsigned_varint(with_tag, start)
tag, p = P.read_unsigned_varint(with_tag, p)
size, p = P.read_unsigned_varint(with_tag, p)
print(f"byte {start}: count = {count}; tag = {tag} (SupportedFeatures); size = {size} bytes; "
      f"value = bytes {p}-{p + size - 1}, which end the frame: {p + size == len(with_tag)}")

# %% [markdown]
# ### Why kafkalab emits no tagged fields by default
#
# librdkafka before 2.2.0 (the 2.0.2 inside Debian's kcat, for one) had a bug in the loop that skips unknown
# tags: it skipped **size − 1** bytes per tag instead of size, as if the size were a compact N + 1 length.
# With one tag the reader ends one byte early and nobody notices. With more, it reads the next tag from the
# middle of a value and loses its place. Below, the same skipping loop in Python, correct and buggy, on a
# reply with one tag and a reply with three (tags 0, 1, 2, as a real Kafka broker may send).

# %%
three_tags = encode_response(make_response(AV(
    error_code=0, api_keys=av_keys, throttle_time_ms=0, supported_features=features, finalized_features_epoch=7,
    finalized_features=(AV.FinalizedFeatureKey(name="transaction.version", max_version_level=2, min_version_level=2),)),
    api_version=3, correlation_id=1))


def skip_tags(buf, pos, *, buggy):
    """Skip a tagged-field section; return what was seen and how it ended."""
    seen = []
    try:
        count, pos = P.read_unsigned_varint(buf, pos)
        for _ in range(count):
            tag, pos = P.read_unsigned_varint(buf, pos)
            size, pos = P.read_unsigned_varint(buf, pos)
            seen.append(f"tag {tag} ({size} B)")
            skip = size - 1 if buggy else size          # the bug: size - 1
            if skip < 0 or pos + skip > len(buf):
                return seen, "Read underflow"
            pos += skip
    except DecodeError:
        return seen, "Read underflow"
    left = len(buf) - pos
    return seen, "ok" + (f", but {left} byte(s) left unread" if left else "")


for label, reply in [("1 tag ", with_tag), ("3 tags", three_tags)]:
    start = annotate_response(reply, ApiKey.API_VERSIONS, 3).find("body._tagged_fields").start
    for buggy in (False, True):
        seen, outcome = skip_tags(reply, start, buggy=buggy)
        print(f"{label} {'librdkafka < 2.2' if buggy else 'correct reader  '}  saw {', '.join(seen):<42} -> {outcome}")

# %% [markdown]
# That is the failure kcat 1.7.1 reports against a broker that sends those three tags: "ApiVersionRequest
# failed: Local: Read underflow" (librdkafka issue #4253, fixed in 2.2.0). So kafkalab never *emits* optional
# tagged fields unless you ask for them; its decoder reads them all. When you write a Kafka codec, test it
# with several tags in one section, not just zero or one.

# %% [markdown]
# ## 4 · The header-version rule
#
# Nothing on the wire says which header version a frame uses: both sides work it out from the API key and
# version. The rule (Kafka's `ApiMessageTypeGenerator`):
#
# * **request header v2** when the request's version is flexible, **v1** otherwise (header v0, without a
#   client id, was used only by ControlledShutdown v0, a ZooKeeper-era API);
# * **response header v1** (correlation id + `TAG_BUFFER`) when the version is flexible, **v0** (correlation id
#   only) otherwise;
# * **except ApiVersions: its responses always use header v0**, whatever the version (KIP-511). A client sends
#   ApiVersions before it knows what the broker speaks, so it must be able to read the answer without knowing;
# * `client_id` stays a **classic** nullable string (int16 length) even in header v2, as you saw in section 1.

# %%
common = [ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
          ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS,
          ApiKey.INIT_PRODUCER_ID]
pd.DataFrame(header_version_table(common))

# %% [markdown]
# The same rule as a picture: one row per API, one column per version. Hover over a cell for its reading.
# The orange cells are the exception.

# %%
lab01.header_version_grid(common)

# %% [markdown]
# ### The same bytes, two readings
#
# Here is what our listener would answer to confluent-kafka's ApiVersions v3 request. Read with the right
# header (v0), it decodes. Read by a client that applied the general rule ("v3 is flexible, so header v1"),
# the first byte of `error_code` is taken for an empty `TAG_BUFFER`, and everything after it shifts by one.

# %%
reply = encode_response(make_response(ScriptedReplies().api_versions(request), api_version=3,
                                      correlation_id=request.correlation_id))
show_frame(reply, kind="response", api_key=ApiKey.API_VERSIONS, api_version=3,
           title="ApiVersions v3 response, read with response header v0 (right)")

# %% tags=["figure:response_layout"]
frame_layout_diagram(show_frame(reply, kind="response", api_key=ApiKey.API_VERSIONS, api_version=3),
                     title="ApiVersions v3 response: header v0 (only the correlation id), then the body")

# %%
wrong = lab01.annotate_response_as(reply, ApiKey.API_VERSIONS, 3, header_version=1)
show_frame(wrong, kind="response", title="the same bytes, read with response header v1 (wrong)")

# %% [markdown]
# The wrong reading finds `error_code = 7` (REQUEST_TIMED_OUT) before it fails: a client with this bug may
# report a timeout, not a parse error. When a client and a broker disagree about a response, check the header
# version first. The opposite mistake (forgetting the `TAG_BUFFER` of a flexible response) shifts the body
# the other way; exercise 4 asks you to apply the rule.

# %% [markdown]
# ## 5 · API key and version select the schema
#
# The first four bytes of every request, `api_key` and `api_version`, decide how the remaining bytes are read.
# How many APIs are there? Count them (Kafka's request definitions also say which listeners serve each one):

# %%
groups = {"served by brokers (what clients send)": [], "KRaft controllers only": [],
          "ZooKeeper era (removed in Kafka 4.0)": []}
for key in ApiKey:
    listeners = request_schema(key).listeners
    group = ("served by brokers (what clients send)" if "broker" in listeners
             else "ZooKeeper era (removed in Kafka 4.0)" if "zkBroker" in listeners else "KRaft controllers only")
    groups[group].append(api_name(key))
print(f"{len(ApiKey)} API keys, 0 to {int(max(ApiKey))}:")
for group, names in groups.items():
    shown = ", ".join(names) if len(names) <= 12 else ", ".join(names[:8]) + ", ..."
    print(f"  {len(names):>2} {group}: {shown}")

# %% [markdown]
# So "about 70 APIs" (a figure from the Kafka 2.x days) has grown to 77 that a broker answers today, each
# with its own range of versions.
#
# ### One question, two versions
#
# The same Metadata question ("tell me about `sensor-readings`") as kcat asks it (v4) and as confluent-kafka
# asks it (v12). Same meaning, different bytes: v12 is flexible (compact lengths, `TAG_BUFFER`s) and has
# fields v4 does not have (a topic id, `include_topic_authorized_operations`).

# %%
question = Metadata(topics=(Metadata.MetadataRequestTopic(name="sensor-readings"),), allow_auto_topic_creation=True)
by_version = {v: encode_request(make_request(question, api_version=v, correlation_id=2, client_id=CLIENT_ID))
              for v in (4, 12)}


def layout(frame):
    """{field path: (wire type, its own bytes)}: a container shows only its length/count prefix."""
    rows = annotate_request(frame).rows
    out = {}
    for i, r in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        inner = nxt is not None and nxt.depth > r.depth and r.start <= nxt.start < r.end
        end = nxt.start if inner else r.end
        if r.depth > 0 and end > r.start:
            out[r.path] = (r.wire_type, frame[r.start:end].hex(" "))
    return out


v4, v12 = layout(by_version[4]), layout(by_version[12])
pd.DataFrame([{"field": path, "v4 type": v4.get(path, ("—", ""))[0], "v4 bytes": v4.get(path, ("", "—"))[1],
               "v12 type": v12.get(path, ("—", ""))[0], "v12 bytes": v12.get(path, ("", "—"))[1]}
              for path in list(v12) + [p for p in v4 if p not in v12]])

# %% [markdown]
# In kafkalab each (API, version) pair gets its own generated reader; print one with
# `kafkalab.protocol.codec.source(request_schema(3), 4)` and compare it with version 12.
#
# ### A version the broker does not know
#
# What happens when a client sends a version the broker does not support? We play the client this time: open
# a TCP socket to a listener, write a size-prefixed frame, read the 4-byte size of the answer and then exactly
# that many bytes. That is the whole transport (C1).

# %%
def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:                  # the other side closed the connection
            return None
        data += chunk
    return data


def round_trip(listener, frame):
    """Send one request on a fresh connection; return the response frame, or None if the connection closed."""
    with socket.create_connection(listener.address, timeout=5) as sock:
        sock.sendall(size_prefixed(frame))
        head = recv_exactly(sock, 4)
        return None if head is None else recv_exactly(sock, struct.unpack(">i", head)[0])

# %% [markdown]
# First an ApiVersions request at version 9, which does not exist: take a valid v4 request and overwrite
# bytes 2-3, the version. For ApiVersions, Kafka answers anyway, in the oldest layout (v0) every client can
# read: error 35 UNSUPPORTED_VERSION and the one range that matters, ApiVersions' own. (Our listener's script
# advertises ApiVersions 0-3.)

# %%
probe = bytearray(encode_request(make_request(request_class(ApiKey.API_VERSIONS)(
    client_software_name="kafkalab-lab", client_software_version="1.0"), api_version=4, correlation_id=7,
    client_id=CLIENT_ID)))
probe[2:4] = struct.pack(">h", 9)                     # api_version := 9

with ScriptedListener(ScriptedReplies()) as listener:
    answer = round_trip(listener, bytes(probe))
show_frame(answer, kind="response", api_key=ApiKey.API_VERSIONS, api_version=0,
           title="the answer to ApiVersions v9: v0 layout, UNSUPPORTED_VERSION")

# %% [markdown]
# For every other API there is no such courtesy. A Metadata request at version 14 (one past the newest):

# %%
too_new = bytearray(by_version[12])
too_new[2:4] = struct.pack(">h", 14)
with ScriptedListener(ScriptedReplies()) as listener:
    answer = round_trip(listener, bytes(too_new))
    listener.wait_idle()                              # until the listener has recorded the close
    conn = listener.connections[0]
print("answer:", answer)
print(f"the listener closed the connection: {conn.closed_by == 'listener'}")

# %% [markdown]
# No error code, no response: Kafka closes the connection. (Its `SocketServer` checks the version as soon as
# it has read the header, and throws an `InvalidRequestException`, "Received request api key METADATA with
# version 14 which is not enabled"; the broker logs it and closes the socket.) A client that sees its
# connection drop right after a request should suspect a version it was never offered. That is why clients
# ask ApiVersions first, and it is the subject of lab 02.
#
# ### A byte stream, cut into frames
#
# TCP delivers bytes, not messages: one `recv` may return half a request, or one and a half. The size prefix
# is the only thing that marks where a frame ends. `FrameReader` is the receiving side of that rule (Kafka's
# `NetworkReceive`): feed it whatever arrived, it returns the frames that are complete and keeps the rest.

# %%
stream = size_prefixed(frame) + size_prefixed(metadata_v12)      # two requests, back to back
reader = FrameReader()
for i in range(0, len(stream), 20):
    chunk = stream[i:i + 20]
    done = reader.feed(chunk)
    names = ", ".join(f"{decode_request(f).api_name} ({len(f)} bytes)" for f in done)
    print(f"fed bytes {i:>3}-{i + len(chunk) - 1:<3} -> {len(done)} complete"
          + (f": {names}" if done else "") + f"; {reader.buffered} bytes waiting")

# %% [markdown]
# ## 6 · Records: key, value, headers, timestamp
#
# A record is a key, a value, a list of headers (name → bytes), and a timestamp; when a broker stores it, it
# also gets an offset. Let confluent-kafka produce two records, each with all four parts, and a **fixed
# timestamp**: a producer stamps the current time otherwise, and the batch's CRC changes with it.
#
# This time the listener answers (ApiVersions, Metadata, Produce) from its script, so the client gets far
# enough to send its Produce request. `lab01.produce_conversation()` runs
# `capture("confluent-kafka", "produce", records=lab01.RECORDS, reply=lab01.HoldFirstReply(), ...)`.
# `HoldFirstReply` waits a second before the first answer, so that the client has queued its records before it
# learns about the cluster; without that, librdkafka's threads race and the number of requests before the
# Produce (and so its correlation id) changes from run to run.

# %%
pd.DataFrame(lab01.RECORDS)

# %%
conversation = lab01.produce_conversation()
role = {0: "bootstrap", 1: "partition leader"}
for connection in sorted({fr.connection for fr in conversation}):
    seen = {}                  # first request of each API on this connection (librdkafka may repeat a Metadata)
    for fr in conversation:
        if fr.connection == connection:
            seen.setdefault((fr.api_name, fr.api_version), decode_request(fr.frame).correlation_id)
    steps = ", then ".join(f"{api} v{version} (correlation id {corr})" for (api, version), corr in seen.items())
    print(f"connection {connection} ({role.get(connection, 'another broker')}): {steps}")

# %% [markdown]
# Two connections: the *bootstrap* connection (ApiVersions, Metadata) and a new one to the broker that leads
# the partition, as Metadata named it. Each starts with ApiVersions, and correlation ids count per connection.
# (On a busy machine librdkafka sometimes repeats its Metadata request; the cell above shows each API once.) Here is the Produce
# request, record batch included (`records_hook=annotate_records` expands it). Look for the zig-zag varints
# inside each record: `timestamp_delta` 250 is `f4 03`.

# %%
produce = next(fr.frame for fr in conversation if fr.api_name == "Produce")
show_frame(size_prefixed(produce), size_prefix=True, records_hook=annotate_records)

# %% [markdown]
# The batch decoded into records. The batch stores one base timestamp and base offset; each record keeps only
# its deltas, which is why the records are so short. The offsets here are the ones the *producer* wrote,
# starting at 0: the broker assigns the real ones when it appends the batch, without touching the records.

# %%
body = decode_request(produce).body
blob = body.topic_data[0].partition_data[0].records
batch, = decode_batches(blob)
pd.DataFrame([{"offset": rec.offset, "timestamp": rec.timestamp,
               "time (UTC)": pd.Timestamp(rec.timestamp, unit="ms", tz="UTC").isoformat(),
               "key": rec.key.decode(), "value": rec.value.decode(),
               "headers": {k: v.decode() for k, v in rec.headers}}
              for rec in batch.records])

# %% [markdown]
# ## 7 · Bad input
#
# A decoder on a network must assume the bytes can be wrong: a buggy client, a truncated read, an attacker.
# Kafka's rule is blunt: **if a request cannot be parsed, close the connection without a response.** A
# decoder's job is to notice early, before trusting any length.
#
# ### A size prefix that lies
#
# Here the size prefix claims 100 bytes more than follow:

# %%
lying = struct.pack(">i", len(frame) + 100) + frame
show_frame(lying, size_prefix=True)

# %% [markdown]
# On a live connection a too-large size cannot be told apart from a slow client: the reader just waits for
# the rest (until the broker's idle timeout closes the connection). A size that is negative, or larger than
# `socket.request.max.bytes` (100 MiB by default), is rejected the moment its 4 bytes arrive.

# %%
reader = FrameReader()
print("too large, but plausible:", reader.feed(lying), f"(still waiting, {reader.buffered} bytes buffered)")
for bad_size in (-1, 200 * 1024 * 1024):
    try:
        FrameReader().feed(struct.pack(">i", bad_size))
    except InvalidReceiveError as e:
        print("rejected at once:        ", e.reason)

# %% [markdown]
# ### A truncated frame
#
# The same request cut after 40 bytes, in the middle of the software version. The caret points at the
# first byte of the field that could not be read; the red bytes are what the decoder read of it before it
# ran out.

# %%
show_frame(frame[:40])

# %% [markdown]
# ### A count that does not fit
#
# A Metadata v4 request whose topic array claims 2,147,483,647 elements, followed by just 8 bytes. A naive
# decoder would try to allocate two billion slots. Each element needs at least one byte, so kafkalab (like
# Kafka since CVE-2022-34917) compares the count with the bytes that remain, and fails at once, with Kafka's
# own wording:

# %%
header = struct.pack(">hhih", ApiKey.METADATA, 4, 3, len(CLIENT_ID)) + CLIENT_ID.encode()
huge = header + struct.pack(">i", 2147483647) + b"\x00" * 8
try:
    decode_request(huge)
except DecodeError as e:
    print(e)
show_frame(huge)

# %% [markdown]
# And what a broker does with it: close the connection, say nothing.

# %%
with ScriptedListener(ScriptedReplies()) as listener:
    answer = round_trip(listener, huge)
    listener.wait_idle()
    conn = listener.connections[0]
print("answer:", answer, "| closed by the listener:", conn.closed_by == "listener")

# %% [markdown]
# ## 8 · Exercises
#
# Each exercise has a task, an answer cell and a check cell. Write your answer in the answer cell (replace the
# `...`), run it, then run the check: a green ✓ means right; a red ✗ comes with a hint. The checks compute the
# right answer from the same data you were given, so you can change the data and try again.

# %% [markdown] tags=["solution"]
# *Instructors:* the answer cells of this notebook hold the solutions (tagged `solution`, collapsed in
# JupyterLab); the participant versions (`make student`, `scripts/build_labs.py --participant`) replace them by
# `...` and leave this note out.

# %% [markdown]
# Exercises 1 and 5 use these bytes, a request as it came off a socket (size prefix included):

# %%
MYSTERY = bytes.fromhex("000000340003000c0000012b000b62696c6c696e672d7376630002000000000000000000000000000000"
                        "00097061796d656e747300000000")
hexlines(MYSTERY)

# %% [markdown]
# ### Exercise 1 · The correlation id, by hand
#
# Without `decode_request` or `show_frame`: what is the correlation id of `MYSTERY`? Use slicing and
# `struct.unpack` (or `int.from_bytes`). Store it in `corr_id`.

# %% tags=["solution"]
corr_id, = struct.unpack(">i", MYSTERY[8:12])

# %%
lab01.check_correlation_id(corr_id, MYSTERY)

# %% [markdown]
# ### Exercise 2 · A compact length byte
#
# A flexible request names the topic `payments.eu-west-1`. What is the value of the length byte in front of it
# (a `COMPACT_STRING`)? Compute it, as an int, into `length_byte`.

# %% tags=["solution"]
length_byte = len("payments.eu-west-1".encode("utf-8")) + 1

# %%
lab01.check_compact_length(length_byte, "payments.eu-west-1")

# %% [markdown]
# ### Exercise 3 · A zig-zag varint
#
# Inside a record you find the bytes `83 01` where a zig-zag varint belongs (say, an offset delta gone
# wrong). What signed value do they hold? Decode them by hand into `value`: first the unsigned varint, then
# undo the zig-zag mapping.

# %%
VARINT = bytes([0x83, 0x01])

# %% tags=["solution"]
unsigned = (VARINT[0] & 0x7F) | (VARINT[1] << 7)      # 7 bits per byte, lowest group first
value = (unsigned >> 1) ^ -(unsigned & 1)              # zig-zag back to signed

# %%
lab01.check_zigzag(value, VARINT)

# %% [markdown]
# ### Exercise 4 · Which response header?
#
# For each API and version below, which **response** header version does the broker use: 0 or 1? Apart from
# ApiVersions, these APIs are not in the table of section 4: apply the rule. Fill in the dict
# `header_versions`; you may look up which versions are flexible
# (`request_schema(ApiKey.OFFSET_FETCH).flexible_versions`, and so on), but not use `response_header_version`.

# %%
QUESTIONS = [("OffsetFetch", 5), ("OffsetFetch", 6), ("Heartbeat", 4), ("SaslHandshake", 1), ("DescribeGroups", 4),
             ("ApiVersions", 4)]

# %% tags=["solution"]
header_versions = {
    ("OffsetFetch", 5): 0,
    ("OffsetFetch", 6): 1,
    ("Heartbeat", 4): 1,
    ("SaslHandshake", 1): 0,
    ("DescribeGroups", 4): 0,
    ("ApiVersions", 4): 0,
}

# %%
lab01.check_response_header_versions(header_versions, QUESTIONS)

# %% [markdown]
# ### Exercise 5 · Where is the client id?
#
# Which bytes of `MYSTERY` hold the `client_id` field, its length prefix included? Give `(start, end)` with
# `end` exclusive, like a Python slice, so that `MYSTERY[start:end]` is exactly the field. Count offsets from
# the first byte of `MYSTERY`. Then print the client id it contains.
#
# Done with all five? Check them against the annotated view: `show_frame(MYSTERY, size_prefix=True)`.

# %% tags=["solution"]
client_id_len, = struct.unpack(">h", MYSTERY[12:14])
client_id_range = (12, 14 + client_id_len)
print(MYSTERY[14:14 + client_id_len].decode())

# %%
lab01.check_client_id_range(client_id_range, MYSTERY)

# %% [markdown]
# ## 9 · Recap
#
# * **Frames (C1).** On TCP a request is `int32 size | header | body`; the size is the only frame boundary.
#   A reader checks it before trusting it: negative or above `socket.request.max.bytes` means close now.
# * **The header (C37).** `api_key` (int16), `api_version` (int16), `correlation_id` (int32), `client_id`
#   (classic nullable string), then in v2 a `TAG_BUFFER`. The response echoes only the correlation id, so a
#   client must remember what it asked.
# * **Types.** Integers are big-endian. Flexible versions use unsigned varints of **N + 1** for lengths and
#   counts (0 = null); records use **zig-zag** varints. Null is not empty.
# * **Tagged fields.** In flexible versions every struct, each array element included, ends with a tagged-field
#   section: `00` when empty. Readers skip unknown tags by size; test codecs with several tags.
# * **Header versions.** Request v2 / response v1 for flexible versions, v1 / v0 otherwise, and ApiVersions
#   responses always v0. Nothing on the wire says which: get it wrong and every field after it shifts.
# * **Schemas (C8).** API key + version select the layout; 77 APIs a broker answers, each with its versions. An
#   unsupported version closes the connection, except ApiVersions, which answers in v0 layout.
# * **Records (C25).** Key, value, headers and a timestamp, stored as deltas inside a batch that the broker keeps
#   as the producer built it.
# * **Bad input.** Check every length and count against the bytes that remain; on failure Kafka closes the
#   connection without answering.
#
# **Next:** lab 02, *Talking across versions*: how a client and a broker pick the versions they both speak,
# and how real clients recover when they guess wrong.
