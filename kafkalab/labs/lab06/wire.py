"""Lab 06's requests on a bare connection, and the message formats v0, v1 and v2 side by side (section 11).

Theory of operation
-------------------
The lab sends its own requests, byte for byte, so it knows exactly what the broker received and can put those
bytes next to the ``.log`` file:

* :func:`produce_batches` -- each batch (or, with Produce v0-2, each v0/v1 message set) in its own Produce request
  on a :class:`kafkalab.trace.RawConnection` (acks=all), returning the base offsets the broker assigned;
* :func:`list_offsets` -- ListOffsets for times, earliest, latest or the max timestamp;
* :func:`fetch_records` -- the ``records`` bytes of one Fetch of a chosen version: at v0-3 the broker
  down-converts its v2 batches to the message format that version reads (magic 0 or 1), as Kafka 3 does;
* :func:`message_formats`, :func:`format_table`, :func:`field_bytes` -- the same records as Kafka 0.8's v0 message
  set, 0.10's v1 and 0.11's v2 batch, their sizes and what each can carry, and field by field.

A worked example: three records with no key and a 20-byte value. As v0 each message carries 26 bytes of framing
(offset 8, size 4, CRC 4, magic 1, attributes 1, key and value lengths 4 + 4): 138 bytes. v1 adds an 8-byte
timestamp to each: 162 bytes. v2 shares one 61-byte batch header among the three and gives each record a few
varint bytes: 142 bytes, already less than v1 (and the gap grows with every record).

Mirrors: ``LegacyRecord.java`` / ``DefaultRecordBatch.java`` (the formats) and what a Kafka 0.10 client sends.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

__all__ = ["produce_batches", "list_offsets", "fetch_records", "message_formats", "format_table", "field_bytes"]


# -- requests on a bare connection --------------------------------------------------------------------------------------
def _exchange(bootstrap: str, api_key: int, version: int, bodies: Iterable) -> list:
    """Each request body on one :class:`kafkalab.trace.RawConnection`, in turn; the decoded response bodies."""
    from kafkalab.protocol import decode_response, encode_request, make_request
    from kafkalab.trace import RawConnection

    out = []
    with RawConnection(bootstrap) as conn:
        for i, body in enumerate(bodies):
            conn.send(encode_request(make_request(body, api_version=version, correlation_id=i,
                                                  client_id="kafkalab-lab06")))
            out.append(decode_response(conn.receive(), api_key, version).body)
    return out


def produce_batches(bootstrap: str, topic: str, batches: Iterable[bytes], *, partition: int = 0,
                    version: int = 9) -> list[int]:
    """Send each batch (or v0/v1 message set, with ``version`` 0-2) in its own Produce request (acks=all); return the
    base offsets the broker assigned."""
    from kafkalab.protocol import ApiKey, request_class

    Produce = request_class(ApiKey.PRODUCE)
    data = Produce.TopicProduceData
    bodies = [Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(data(
        name=topic, partition_data=(data.PartitionProduceData(index=partition, records=batch),)),)) for batch in batches]
    offsets = []
    for reply in _exchange(bootstrap, ApiKey.PRODUCE, version, bodies):
        p = reply.responses[0].partition_responses[0]
        if p.error_code:
            raise RuntimeError(f"Produce failed with error code {p.error_code}")
        offsets.append(p.base_offset)
    return offsets


def list_offsets(bootstrap: str, topic: str, timestamps: Sequence[int], *, partition: int = 0,
                 version: int = 9) -> list[tuple[int, int]]:
    """ListOffsets for each of ``timestamps`` (-1 latest, -2 earliest, -3 max timestamp, or a time in ms), one
    request each; returns ``[(timestamp, offset), ...]`` as the broker answered."""
    from kafkalab.protocol import ApiKey, request_class

    ListOffsets = request_class(ApiKey.LIST_OFFSETS)
    t = ListOffsets.ListOffsetsTopic
    bodies = [ListOffsets(replica_id=-1, isolation_level=0, timeout_ms=5000, topics=(t(name=topic, partitions=(
        t.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1, timestamp=ts),)),))
        for ts in timestamps]
    return [(r.topics[0].partitions[0].timestamp, r.topics[0].partitions[0].offset)
            for r in _exchange(bootstrap, ApiKey.LIST_OFFSETS, version, bodies)]


def fetch_records(bootstrap: str, topic: str, offset: int, version: int, *, partition: int = 0) -> bytes:
    """The ``records`` bytes of one Fetch of ``version`` from ``offset`` (what an old consumer receives)."""
    from kafkalab.protocol import ApiKey, request_class

    Fetch = request_class(ApiKey.FETCH)
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=(Fetch.FetchTopic(
        topic=topic, partitions=(Fetch.FetchPartition(partition=partition, fetch_offset=offset,
                                                      partition_max_bytes=1 << 20),)),))
    [reply] = _exchange(bootstrap, ApiKey.FETCH, version, [body])
    p = reply.responses[0].partitions[0]
    if p.error_code:
        raise RuntimeError(f"Fetch failed with error code {p.error_code}")
    return bytes(p.records)


# -- message formats v0, v1 and v2 --------------------------------------------------------------------------------------
def message_formats(records) -> dict[str, bytes]:
    """The same ``SimpleRecord`` s (offsets 0, 1, ...) as Kafka 0.8's v0 message set, 0.10's v1 and 0.11's v2 batch."""
    from kafkalab.records import build_batch
    from kafkalab.records.legacy import build_message_set

    rows = [(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)]
    return {"v0": build_message_set(rows, magic=0), "v1": build_message_set(rows, magic=1),
            "v2": build_batch(list(records))}


def format_table(formats: Mapping[str, bytes], count: int) -> list[dict]:
    """One row per format: size, overhead per record beyond key and value, what it can carry."""
    from kafkalab.records import decode_batch
    from kafkalab.records.legacy import read_message_set

    rows = []
    for name, data in formats.items():
        payload = sum(len(r.key or b"") + len(r.value or b"") for r in
                      (decode_batch(data).records if name == "v2" else read_message_set(data)))
        rows.append({"format": name, "since": {"v0": "Kafka 0.8", "v1": "0.10 (KIP-32)", "v2": "0.11 (KIP-98)"}[name],
                     "bytes": len(data), "overhead per record": round((len(data) - payload) / count, 1),
                     "timestamps": name != "v0", "headers": name == "v2",
                     "checksum": "CRC-32 per message" if name != "v2" else "CRC-32C per batch",
                     "producer id, sequence": name == "v2"})
    return rows


def field_bytes(data: bytes) -> list[dict]:
    """Field by field (the annotated decoder's leaf rows): a message set's first message, or a v2 batch's header
    and first record -- path, byte range, the bytes in hex, the value."""
    from kafkalab.records import annotate_records

    rows = annotate_records(data)
    parents = {r.path.rsplit(".", 1)[0] for r in rows}
    wanted = ("messages[0].", "batches[0].records[0].")
    return [{"field": r.path, "bytes": f"{r.start}-{r.end - 1}" if r.end > r.start else "(none)",
             "hex": data[r.start:r.end].hex(" "),
             "value": r.value.decode("latin-1") if isinstance(r.value, bytes) else r.value}
            for r in rows if r.path not in parents and r.wire_type != "ARRAY"
            and (r.path.startswith(wanted) or (r.path.startswith("batches[0].") and r.path.count("[") == 1))]
