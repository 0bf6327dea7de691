"""kafkalab.records -- RecordBatch v2 (magic 2): the bytes producers send, brokers store and consumers read.

Theory of operation
-------------------
Kafka's log is a sequence of *record batches*. A producer groups records for one partition into a batch,
compresses the records as one block, and protects everything after the first 21 bytes with a CRC-32C. The
broker appends the batch to the log *verbatim*: it only rewrites ``base_offset`` and
``partition_leader_epoch``, which sit before the CRC range, so it never re-encodes a record. A consumer
receives the same bytes, checks the CRC, inflates and reads the records. The rooms:

* :mod:`.header` -- the 61-byte header and what a broker does with it alone (scan, patch offsets/epoch).
* :mod:`.crc` -- CRC-32C, and why it starts at byte 21.
* :mod:`.record` -- one record: deltas and zig-zag varints.
* :mod:`.compression` -- gzip, snappy (raw and xerial), lz4 (frame, independent blocks), zstd; bomb guard.
* :mod:`.batch` -- decoding and building whole batches.
* :mod:`.control` -- transaction markers (control records).
* :mod:`.annotate` -- rows with byte ranges for hex dumps.

Public API::

    # decoding (client side)
    decode_batch(buf, pos=0, *, verify=True, max_decompressed_bytes=64 MiB) -> RecordBatch
    decode_batches(buf, start=0, end=None, *, verify=True, allow_partial=False,
                   max_decompressed_bytes=64 MiB) -> list[RecordBatch]
    RecordBatch        13 header fields (base_offset ... records_count) + records; .header, .encode(),
                       .last_offset, .next_offset, .size_in_bytes, .compression_type, .timestamp_type,
                       .is_transactional, .is_control_batch, .has_delete_horizon_ms, .last_sequence ...
    Record             offset, timestamp, key, value, headers, timestamp_type, attributes, offset_delta,
                       timestamp_delta (immutable)
    # building (client side)
    build_batch(records, *, compression=None, compression_level=None, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, transactional=False, control=False, partition_leader_epoch=-1,
                base_offset=0, timestamp_type=CREATE_TIME, log_append_time=None) -> bytes
    SimpleRecord(key=None, value=None, headers=(), timestamp=None)
    encode_batch(batch, *, compression=None, compression_level=None) -> bytes
    # broker side: headers only, never records
    read_batch_header(buf, pos=0) -> BatchHeader
    scan_batches(buf, start=0, end=None) -> BatchScan(batches=(BatchSpan(start, end, header), ...), end,
                                                      partial_start, partial_bytes)
    set_base_offset(buf, pos, base_offset)            set_last_offset(buf, pos, last_offset)
    set_partition_leader_epoch(buf, pos, epoch)       set_max_timestamp(buf, pos, timestamp_type, ts) -> bool
    assign_offsets(buf, first_offset, partition_leader_epoch, start=0, end=None) -> next offset
    scan_records(buf, pos, end, count) -> RecordsSummary(count, min_timestamp_delta, max_timestamp_delta,
                                          null_keys, offsets_in_order)   (checks records, builds none)
    crc32c(data, value=0)   batch_checksum(buf, pos=0)   stored_checksum(buf, pos=0)
    crc_is_valid(buf, pos=0) -> bool   ensure_crc_valid(buf, pos=0)   (DecodeError -> CORRUPT_MESSAGE)
    # compression
    CompressionType (NONE GZIP SNAPPY LZ4 ZSTD), compress(codec, data, *, level=None),
    decompress(codec, data, *, max_decompressed_bytes=64 MiB), snappy_compress_xerial(data),
    DEFAULT_MAX_DECOMPRESSED_BYTES
    # control records
    ControlRecordType, EndTransactionMarker, control_record_key(type), parse_control_record_key(key),
    end_txn_marker_value(coordinator_epoch), parse_end_txn_marker(key, value),
    build_end_txn_marker_batch(type, *, producer_id, producer_epoch, coordinator_epoch, timestamp=None,
                               base_offset=0, partition_leader_epoch=-1) -> bytes
    # annotated decoding (a kafkalab.protocol.annotate.RecordsHook)
    annotate_records(buf, start=0, end=None, path="", depth=0, *, strict=False, verify_crc=True,
                     max_decompressed_bytes=64 MiB) -> list[Row]; DecompressedRecords
    TimestampType, constants (RECORD_BATCH_OVERHEAD, NO_PRODUCER_ID, ...)

Every malformed input raises :class:`kafkalab.protocol.errors.DecodeError` (a ``ValueError``) with a field
path and byte offset; values that cannot be written raise :class:`~kafkalab.protocol.errors.EncodeError`.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/`` (``DefaultRecordBatch``, ``DefaultRecord``,
``MemoryRecordsBuilder``, ``CompressionType``, ``ControlRecordType``, ``EndTransactionMarker``).
"""
from kafkalab.records.annotate import DecompressedRecords, annotate_records
from kafkalab.records.batch import RecordBatch, build_batch, decode_batch, decode_batches, encode_batch
from kafkalab.records.compression import (DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress,
                                          snappy_compress_xerial)
from kafkalab.records.control import (ControlRecordType, EndTransactionMarker, build_end_txn_marker_batch,
                                      control_record_key, end_txn_marker_value, parse_control_record_key,
                                      parse_end_txn_marker)
from kafkalab.records.crc import batch_checksum, crc32c, crc_is_valid, ensure_crc_valid, stored_checksum
from kafkalab.records.header import (LOG_OVERHEAD, MAGIC, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
                                     NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, BatchHeader,
                                     BatchScan, BatchSpan, assign_offsets, read_batch_header, scan_batches,
                                     set_base_offset, set_last_offset, set_max_timestamp,
                                     set_partition_leader_epoch)
from kafkalab.records.record import Record, RecordsSummary, SimpleRecord, TimestampType, scan_records

__all__ = [
    "decode_batch", "decode_batches", "RecordBatch", "Record", "build_batch", "SimpleRecord", "encode_batch",
    "read_batch_header", "BatchHeader", "scan_batches", "BatchScan", "BatchSpan", "set_base_offset",
    "set_last_offset", "set_partition_leader_epoch", "set_max_timestamp", "assign_offsets", "scan_records",
    "RecordsSummary",
    "crc32c", "batch_checksum", "stored_checksum", "crc_is_valid", "ensure_crc_valid",
    "CompressionType", "compress", "decompress", "snappy_compress_xerial", "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "ControlRecordType", "EndTransactionMarker", "control_record_key", "parse_control_record_key",
    "end_txn_marker_value", "parse_end_txn_marker", "build_end_txn_marker_batch",
    "annotate_records", "DecompressedRecords", "TimestampType",
    "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD", "MAGIC", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE",
    "NO_PARTITION_LEADER_EPOCH", "NO_TIMESTAMP",
]
