"""Reply policies for the scripted listener: what to answer a real client, request by request.

Theory of operation
-------------------
A Kafka client will not say much until somebody answers it. Its first request is always ApiVersions; it sends
Metadata only after an ApiVersions reply, Produce only after a Metadata reply naming a leader, and an
idempotent producer first asks for a producer id (InitProducerId). To *see* those later requests, the
:class:`~kafkalab.trace.capture.ScriptedListener` has to play just enough of a broker's part.

A reply policy is that part, written sans-IO: a plain callable that takes one
:class:`~kafkalab.trace.capture.CapturedRequest` and returns what to send back:

* ``None``: nothing is sent; the request stays unanswered (the client waits, then times out);
* a response *body* (e.g. ``response_class(3)(...)``): wrapped in a response header with the request's
  correlation id and encoded at the request's version -- the normal case;
* a :class:`~kafkalab.protocol.Response`: encoded as given (how to answer at *another* version, see below);
* ``bytes``: sent verbatim as one frame (the size prefix is added);
* :data:`CLOSE`: the connection is closed without an answer, as Kafka does with a request it cannot handle
  (unknown API, unsupported version, undecodable body).

Two policies are built in:

* :func:`first_request_only` answers nothing, so it captures exactly what a client sends first.
* :class:`ScriptedReplies` answers ApiVersions, Metadata, InitProducerId, Produce and FindCoordinator with
  fixed, deterministic facts: one broker (node id 0, also the controller) at the listener's own address,
  partitions led by node 0, producer ids counting up from 1000, offsets counting up per partition.

The fine points it gets right, because real clients depend on them:

* An ApiVersions version above the advertised maximum gets the **v0-format** UNSUPPORTED_VERSION (35) reply:
  response header v0, ``error_code``, an int32-counted array with the single entry ``{18, min, max}``, and no
  ``throttle_time_ms``. A client that sent v3 or v4 cannot know yet which format the broker speaks, so Kafka
  answers in the oldest one (``RequestContext``, ``ApiVersionsRequest.getErrorResponse``). kafka-python parses
  it as v0 and retries at the advertised maximum. librdkafka reads it in the flexible format it asked for,
  finds no usable entry (the int32 count's first byte, 0, reads as a null compact array) and retries at v0
  -- observed with librdkafka 2.0.2 and 2.16.0. Either way the client gets through.
* ApiVersions v3+ names the client software (KIP-511); a name or version outside
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` gets INVALID_REQUEST (42), as ``ApiVersionsRequest.isValid``
  decides.
* No optional tagged field is ever emitted: librdkafka before 2.2.0 (Debian's kcat uses 2.0.2) mis-skips tagged
  fields and fails on a reply carrying more than one.
* Metadata names a *real* controller id (node 0 exists), and gives every topic a non-zero topic id from v10 on.
* A Produce request with ``acks=0`` gets no reply at all -- the client does not read one.
* Anything not advertised is closed, like Kafka's ``UnsupportedVersionException`` path. APIs advertised only
  to unlock client features (librdkafka enables MSGVER2 only if Fetch v4 is advertised, zstd only with Fetch
  v10) but not scripted here are left unanswered.

This is **not a broker**: nothing is stored, Fetch is never answered, no group or transaction exists.
Mirrors (loosely): ``core/src/main/scala/kafka/server/KafkaApis.scala`` -- the per-API ``handle*`` methods.
"""
from __future__ import annotations

import re
import struct
import uuid
from typing import Iterable, Mapping, Optional

from kafkalab.protocol import (ApiKey, ErrorCode, Response, UnsupportedVersionError, make_response,
                               messages_for, response_class)

__all__ = ["CLOSE", "first_request_only", "ScriptedReplies", "DEFAULT_ADVERTISED", "topic_id_for",
           "count_records"]


class _Close:
    """Sentinel: close the connection without answering."""

    def __repr__(self) -> str:
        return "CLOSE"


#: Return this from a reply policy to close the connection instead of answering.
CLOSE = _Close()

#: What :class:`ScriptedReplies` advertises unless told otherwise: (api_key, min_version, max_version).
#: ApiVersions stops at 3, so a client that starts at v4 (kafka-python) shows its fallback; Produce starts at 0
#: because librdkafka <= 2.11 compresses only if Produce v0 is in range; Fetch is advertised (never answered)
#: because librdkafka gates MSGVER2 on Fetch v4 and zstd on Fetch v10.
DEFAULT_ADVERTISED: tuple[tuple[int, int, int], ...] = (
    (ApiKey.PRODUCE, 0, 9),
    (ApiKey.FETCH, 4, 12),
    (ApiKey.METADATA, 0, 12),
    (ApiKey.FIND_COORDINATOR, 0, 4),
    (ApiKey.API_VERSIONS, 0, 3),
    (ApiKey.INIT_PRODUCER_ID, 0, 4),
)

_SOFTWARE_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_TOPIC_NS = uuid.UUID("6b61666b-616c-6162-2d74-6f7069632d69")  # fixed namespace: topic ids are reproducible
_BATCH_HEAD = struct.Struct(">qi")     # BaseOffset, BatchLength
_LAST_OFFSET_DELTA = struct.Struct(">i")


def first_request_only(captured) -> None:
    """Record, never answer: the client's first request is all the listener will ever see per connection."""
    return None


def topic_id_for(name: str) -> uuid.UUID:
    """A deterministic, non-zero topic id for ``name`` (Kafka draws them at random; a lab wants them stable)."""
    return uuid.uuid5(_TOPIC_NS, name)


def count_records(blob: Optional[bytes]) -> int:
    """Records in a Produce ``records`` blob: the sum of ``LastOffsetDelta + 1`` over its v2 batches.

    Only the batch headers are read (offset 0: BaseOffset, 8: BatchLength, 23: LastOffsetDelta), which is all
    a broker needs to assign offsets; a truncated tail is ignored.
    """
    if not blob:
        return 0
    count, pos, end = 0, 0, len(blob)
    while pos + 27 <= end:
        _, length = _BATCH_HEAD.unpack_from(blob, pos)
        if length < 15 or pos + 12 + length > end:
            break
        count += _LAST_OFFSET_DELTA.unpack_from(blob, pos + 23)[0] + 1
        pos += 12 + length
    return count


class ScriptedReplies:
    """A reply policy that gets a producer through bootstrap, metadata, producer id and produce.

    ``advertised``: (api_key, min, max) triples for the ApiVersions reply (default :data:`DEFAULT_ADVERTISED`).
    ``topics``: known topics and their partition counts. With ``auto_create`` (the default) any topic a client
    asks for exists with ``default_partitions`` partitions from then on.
    ``cluster_id``, ``producer_id`` (first one handed out), ``producer_epoch``: the fixed facts replied.
    ``check_software_name``: answer INVALID_REQUEST to an ApiVersions v3+ whose software name/version Kafka
    would reject.

    State (offsets per partition, producer ids, auto-created topics) lives on the object; the listener calls it
    from its one thread, so it needs no lock. Use a fresh object per capture for reproducible replies.
    """

    def __init__(self, advertised: Iterable[tuple[int, int, int]] = DEFAULT_ADVERTISED, *,
                 topics: Optional[Mapping[str, int]] = None, auto_create: bool = True, default_partitions: int = 1,
                 cluster_id: str = "kafkalab-capture", producer_id: int = 1000, producer_epoch: int = 0,
                 check_software_name: bool = True):
        self.advertised = {int(k): (int(lo), int(hi)) for k, lo, hi in advertised}
        self.topics: dict[str, int] = dict(topics or {})
        self.auto_create = auto_create
        self.default_partitions = default_partitions
        self.cluster_id = cluster_id
        self.next_producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.check_software_name = check_software_name
        self.next_offsets: dict[tuple[str, int], int] = {}
        self._handlers = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
        }

    # -- dispatch ----------------------------------------------------------------------------------------------
    def __call__(self, captured):
        if captured.request is None:
            err = captured.error
            if isinstance(err, UnsupportedVersionError) and err.api_key == ApiKey.API_VERSIONS \
                    and err.header is not None:
                return self.unsupported_api_versions(err.header.correlation_id)
            return CLOSE                              # Kafka closes on anything it cannot parse
        request = captured.request
        key, version = request.api_key, request.api_version
        if key == ApiKey.API_VERSIONS:                # answered whatever the version: it is how clients learn
            return self.api_versions(request, captured.listener)
        lo_hi = self.advertised.get(key)
        if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
            return CLOSE
        handler = self._handlers.get(key)
        return None if handler is None else handler(request, captured.listener)

    # -- ApiVersions (18) --------------------------------------------------------------------------------------
    def api_versions_range(self) -> tuple[int, int]:
        """The advertised ApiVersions range (the codec's whole range if ApiVersions is not advertised)."""
        valid = messages_for(ApiKey.API_VERSIONS)[0].valid_versions
        return self.advertised.get(ApiKey.API_VERSIONS, (valid.lo, valid.hi))

    def unsupported_api_versions(self, correlation_id: int) -> Response:
        """The v0-format UNSUPPORTED_VERSION reply: header v0, error 35, [{18, min, max}], no throttle field."""
        cls = response_class(ApiKey.API_VERSIONS)
        lo, hi = self.api_versions_range()
        body = cls(error_code=ErrorCode.UNSUPPORTED_VERSION,
                   api_keys=(cls.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=lo, max_version=hi),))
        return make_response(body, api_version=0, correlation_id=correlation_id)

    def api_versions(self, request, listener=None):
        lo, hi = self.api_versions_range()
        if not lo <= request.api_version <= hi:
            return self.unsupported_api_versions(request.correlation_id)
        cls = response_class(ApiKey.API_VERSIONS)
        if request.api_version >= 3 and self.check_software_name:
            body = request.body
            if not (_SOFTWARE_RE.fullmatch(body.client_software_name or "")
                    and _SOFTWARE_RE.fullmatch(body.client_software_version or "")):
                return cls(error_code=ErrorCode.INVALID_REQUEST, api_keys=(), throttle_time_ms=0)
        keys = tuple(cls.ApiVersion(api_key=k, min_version=v[0], max_version=v[1])
                     for k, v in sorted(self.advertised.items()))
        return cls(error_code=0, api_keys=keys, throttle_time_ms=0)

    # -- Metadata (3) ------------------------------------------------------------------------------------------
    def metadata(self, request, listener):
        cls = response_class(ApiKey.METADATA)
        host, port = listener
        version = request.api_version
        wanted = request.body.topics
        zero = uuid.UUID(int=0)
        answers = []                                          # (name, error code or None, topic id)
        if wanted is None or (version == 0 and not wanted):   # all topics (v0 said so with an empty array)
            answers = [(name, None, None) for name in sorted(self.topics)]
        for t in wanted or ():
            name = t.name
            if name is None and version >= 10:                # asked by topic id
                by_id = {topic_id_for(n): n for n in self.topics}
                name = by_id.get(t.topic_id)
                if name is None:
                    answers.append((None, ErrorCode.UNKNOWN_TOPIC_ID, t.topic_id))
                    continue
            if name not in self.topics:
                if not (self.auto_create and (version < 4 or request.body.allow_auto_topic_creation)):
                    answers.append((name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
                    continue
                self.topics[name] = self.default_partitions
            answers.append((name, None, None))
        topics = []
        for name, error, tid in answers:
            if error is not None:
                topics.append(cls.MetadataResponseTopic(error_code=error, name=name, topic_id=tid or zero,
                                                        partitions=()))
                continue
            parts = tuple(cls.MetadataResponsePartition(
                error_code=0, partition_index=p, leader_id=0, leader_epoch=0, replica_nodes=(0,), isr_nodes=(0,),
                offline_replicas=()) for p in range(self.topics[name]))
            topics.append(cls.MetadataResponseTopic(
                error_code=0, name=name, topic_id=topic_id_for(name) if version >= 10 else zero,
                is_internal=False, partitions=parts))
        return cls(throttle_time_ms=0,
                   brokers=(cls.MetadataResponseBroker(node_id=0, host=host, port=port, rack=None),),
                   cluster_id=self.cluster_id, controller_id=0, topics=tuple(topics), error_code=0)

    # -- InitProducerId (22) -----------------------------------------------------------------------------------
    def init_producer_id(self, request, listener=None):
        cls = response_class(ApiKey.INIT_PRODUCER_ID)
        pid = self.next_producer_id
        self.next_producer_id += 1
        return cls(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=self.producer_epoch)

    # -- Produce (0) -------------------------------------------------------------------------------------------
    def produce(self, request, listener=None):
        body = request.body
        if body.acks == 0:
            return None                                       # acks=0: the client reads no response
        cls = response_class(ApiKey.PRODUCE)
        by_id = {topic_id_for(name): name for name in self.topics}
        responses = []
        for topic in body.topic_data:
            name = topic.name if request.api_version < 13 else by_id.get(topic.topic_id)
            parts = []
            for pd in topic.partition_data:
                if name is None or not 0 <= pd.index < self.topics.get(name, 0):
                    parts.append(cls.PartitionProduceResponse(
                        index=pd.index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, base_offset=-1))
                    continue
                base = self.next_offsets.get((name, pd.index), 0)
                self.next_offsets[(name, pd.index)] = base + count_records(pd.records)
                parts.append(cls.PartitionProduceResponse(
                    index=pd.index, error_code=0, base_offset=base, log_append_time_ms=-1, log_start_offset=0))
            responses.append(cls.TopicProduceResponse(name=topic.name, topic_id=topic.topic_id,
                                                      partition_responses=tuple(parts)))
        return cls(responses=tuple(responses), throttle_time_ms=0)

    # -- FindCoordinator (10) ----------------------------------------------------------------------------------
    def find_coordinator(self, request, listener):
        cls = response_class(ApiKey.FIND_COORDINATOR)
        host, port = listener
        if request.api_version < 4:
            return cls(throttle_time_ms=0, error_code=0, error_message=None, node_id=0, host=host, port=port)
        return cls(throttle_time_ms=0, coordinators=tuple(
            cls.Coordinator(key=k, node_id=0, host=host, port=port, error_code=0, error_message=None)
            for k in request.body.coordinator_keys))
