"""kafkalab.records -- RecordBatch v2 (magic 2): the bytes producers send, brokers store and consumers read.

Theory of operation
-------------------
Kafka's log is a sequence of *record batches*. A producer groups records for one partition into a batch,
compresses the records as one block, and protects everything after the first 21 bytes with a CRC-32C. The
broker appends the batch to the log *verbatim*: it only rewrites ``base_offset`` and
``partition_leader_epoch``, which sit before the CRC range, so it never re-encodes a record. A consumer
receives the same bytes, checks the CRC, inflates and reads the records. The rooms, by who uses them:

* :mod:`.batch` -- clients: decoding whole batches (``decode_batch``, ``RecordBatch``) and building them
  (``build_batch``, ``encode_batch``).
* :mod:`.record` -- one record: deltas and zig-zag varints (``Record``, ``SimpleRecord``, ``scan_records``).
* :mod:`.header` -- the broker: the 61-byte header and what can be done with it alone (scan, patch
  offsets and leader epoch); it never touches the records.
* :mod:`.crc` -- CRC-32C, and why it starts at byte 21.
* :mod:`.compression` -- gzip, snappy (raw and xerial), lz4 (frame, independent blocks), zstd; bomb guard.
* :mod:`.control` -- transaction markers (control records).
* :mod:`.annotate` -- rows with byte ranges for hex dumps (a ``kafkalab.protocol.annotate`` records hook).
* :mod:`.legacy` -- message formats v0 and v1 (magic 0/1, before Kafka 0.11): reading
  (``read_message_set``, ``deep_records``, ``LegacyRecord``) and building (``build_message_set``).
* :mod:`.annotate_legacy` -- the annotated decoder's rows for v0/v1 message sets (``annotate_legacy_message``).
* :mod:`.conversion` -- the broker's down-conversion of v2 batches for Fetch v0-3 (``down_convert``,
  ``LazyDownConversionRecords``, ``RecordValidationStats``).

Everything public is re-exported here (``__all__``); each function's signature and docstring live in its
module, where ``help()`` finds them.

Every malformed input raises :class:`kafkalab.protocol.errors.DecodeError` (a ``ValueError``) with a field
path and byte offset; values that cannot be written raise :class:`~kafkalab.protocol.errors.EncodeError`.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/record/`` (``DefaultRecordBatch``, ``DefaultRecord``,
``MemoryRecordsBuilder``, ``CompressionType``, ``ControlRecordType``, ``EndTransactionMarker``, ``LegacyRecord``,
``AbstractLegacyRecordBatch``, ``RecordsUtil``, ``LazyDownConversionRecords``).
"""
from kafkalab.records.annotate import DecompressedRecords, annotate_records
from kafkalab.records.annotate_legacy import annotate_legacy_message
from kafkalab.records.batch import RecordBatch, build_batch, decode_batch, decode_batches, encode_batch
from kafkalab.records.conversion import LazyDownConversionRecords, RecordValidationStats, down_convert
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
from kafkalab.records.legacy import LegacyRecord, build_message_set, deep_records, read_message_set
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
    "LegacyRecord", "read_message_set", "annotate_legacy_message", "deep_records", "build_message_set",
    "down_convert", "LazyDownConversionRecords", "RecordValidationStats",
]
