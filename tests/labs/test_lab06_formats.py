"""Lab 06's message-format helpers: the same records in v0, v1 and v2, compared field by field."""
from __future__ import annotations

from kafkalab.labs import lab06
from kafkalab.records import SimpleRecord, decode_batch
from kafkalab.records.legacy import iter_records


def _records(n):
    return [SimpleRecord(b"k%d" % i, b"value-%d" % i, (), lab06.T0 + i) for i in range(n)]


def test_the_three_formats_hold_the_same_records():
    formats = lab06.message_formats(_records(3))
    assert [f[16] for f in formats.values()] == [0, 1, 2]
    v2 = [(r.offset, r.key, r.value) for r in decode_batch(formats["v2"]).records]
    for name in ("v0", "v1"):
        assert [(r.offset, r.key, r.value) for r in iter_records(formats[name])] == v2
    assert [r.timestamp for r in iter_records(formats["v0"])] == [-1] * 3


def test_format_table_sizes_and_overheads():
    formats = lab06.message_formats(_records(4))
    rows = {r["format"]: r for r in lab06.format_table(formats, 4)}
    assert {k: r["bytes"] for k, r in rows.items()} == {k: len(v) for k, v in formats.items()}
    assert (rows["v0"]["overhead per record"], rows["v1"]["overhead per record"]) == (26.0, 34.0)
    assert rows["v2"]["bytes"] < rows["v0"]["bytes"]          # from four records on, v2 is the smallest


def test_field_bytes_lists_the_first_message_or_the_header_and_first_record():
    formats = lab06.message_formats(_records(2))
    v1 = lab06.field_bytes(formats["v1"])
    assert [r["field"] for r in v1] == [f"messages[0].{f}" for f in (
        "offset", "message_size", "crc", "magic", "attributes", "timestamp", "key_length", "key", "value_length",
        "value")]
    assert {r["field"]: r["hex"] for r in v1}["messages[0].magic"] == "01"
    v2 = [r["field"] for r in lab06.field_bytes(formats["v2"])]
    assert v2[0] == "batches[0].base_offset" and v2[-1] == "batches[0].records[0].headers_count"
    assert not any("records[1]" in f for f in v2)
