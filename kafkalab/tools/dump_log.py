"""``kafkalab dump-log``: print what is inside segment, index and checkpoint files, as ``kafka-dump-log.sh`` does.

Theory of operation
-------------------
Kafka ships ``kafka-dump-log.sh`` (the ``DumpLogSegments`` tool) to look inside a partition directory without
a broker. Because kafkalab writes Kafka's on-disk formats, the same questions get the same answers here, in
the same output shape, so a learner can put the two side by side::

    python -m kafkalab.tools.dump_log --files 00000000000000000000.log --print-data-log
    Dumping 00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 1000 ... isvalid: true
    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: 0 headerKeys: [] key: a payload: hello

By file suffix: ``.log`` (batches, with ``--deep-iteration`` every record, with ``--print-data-log`` keys
and values as UTF-8 text), ``.index`` (``offset: N position: M``), ``.timeindex`` (``timestamp: T offset:
N``), ``.snapshot`` (producer state), ``.txnindex`` (aborted transactions) and -- a kafkalab extension --
``leader-epoch-checkpoint``. A batch whose CRC-32C does not match its bytes prints ``isvalid: false``, as in
Kafka; with ``--deep-iteration`` kafkalab also lists each such batch again on stderr at the end ("Found invalid
batches in :<file>", one line per batch with Kafka's "Record is corrupt (stored crc = ..., computed crc = ...)"),
so that one bad batch in a long dump is not missed. Its records are still printed as they are: a corrupted
byte shows as a wrong key or value, or as "Could not decode the records". ``--verify-index-only`` checks every index entry against the ``.log`` and
reports mismatches on stderr; ``--index-sanity-check`` runs the check a broker runs at startup.
``--offsets-decoder`` prints ``__consumer_offsets`` keys and values as the JSON of Kafka's record schemas
(``key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}``, ``<DELETE>`` for a tombstone) and
``--transaction-log-decoder`` ``__transaction_state`` records as ``transaction_metadata::transactionalId=...``
with ``producerId:...,state=...,partitions=[...]``; both imply ``--print-data-log`` and are described in
:mod:`.record_decoders`. ``--cluster-metadata-decoder`` is accepted but not supported (kafkalab has no
``__cluster_metadata``): the records are printed as text. A record a decoder cannot read where Kafka's tool
would stop with an exception (a ``__consumer_offsets`` record without a key, a transaction value of an unknown
version) is printed with its metadata only, the reason goes to stderr, and the dump goes on.

Mirrors: ``core/src/main/scala/kafka/tools/DumpLogSegments.scala``.
"""
from __future__ import annotations

import argparse
import os
import struct
import sys
from typing import Optional, Sequence, TextIO

from kafkalab.protocol.errors import DecodeError
from kafkalab.records import batch_checksum, crc_is_valid, decode_batch, parse_end_txn_marker, stored_checksum
from kafkalab.records.control import ControlRecordType
from kafkalab.storage import log_file_utils as names
from kafkalab.storage.checkpoints import LeaderEpochCheckpointFile
from kafkalab.storage.errors import StorageError
from kafkalab.storage.file_records import FileRecords
from kafkalab.storage.offset_index import OffsetIndex
from kafkalab.storage.producer_state import read_snapshot
from kafkalab.storage.time_index import TimeIndex

from .record_decoders import OffsetsMessageParser, RecordDecoderError, TransactionLogMessageParser

__all__ = ["main", "add_parser", "run"]

INT_MAX = 2147483647
_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
_ABORTED_TXN = struct.Struct(">hqqqq")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: Optional[int]) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _sequence(base_sequence: int, delta: int) -> int:
    if base_sequence < 0:
        return -1
    return base_sequence + delta if base_sequence <= INT_MAX - delta else delta - (INT_MAX - base_sequence) - 1


class _Errors:
    """What Kafka's tool collects while dumping and prints on stderr at the end."""

    def __init__(self):
        self.index_mismatches: dict = {}
        self.non_consecutive: dict = {}
        self.time_mismatches: dict = {}
        self.time_out_of_order: dict = {}
        self.shallow_not_found: dict = {}
        self.invalid_batches: dict = {}          # a kafkalab extension: path -> [(base, last, position, stored, computed)]

    def print(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{name}", file=err)
            for index_offset, log_offset in pairs:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)
        for name, pairs in self.time_mismatches.items():
            print(f"Found timestamp mismatch in :{name}", file=err)
            for index_ts, log_ts in pairs:
                print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=err)
        for name, pairs in self.time_out_of_order.items():
            print(f"Found out of order timestamp in :{name}", file=err)
            for index_ts, prev in pairs:
                print(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}", file=err)
        for pairs in self.shallow_not_found.values():
            print("The following indexed offsets are not found in the log.", file=err)
            for index_offset, log_offset in pairs:
                print(f"Indexed offset: {index_offset}, found log offset: {log_offset}", file=err)
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {name}", file=err)
            for first, second in pairs:
                print(f"  {first} is followed by {second}", file=err)
        for name, batches in self.invalid_batches.items():
            print(f"Found invalid batches in :{name}", file=err)
            for base, last, position, stored, computed in batches:
                print(f"  baseOffset: {base} lastOffset: {last} position: {position}: Record is corrupt "
                      f"(stored crc = {stored}, computed crc = {computed})", file=err)


class StringMessageParser:
    """Kafka's default parser (``StringDecoder`` for keys and values): the bytes as UTF-8 text."""

    def parse(self, record) -> tuple[Optional[str], Optional[str]]:
        key = None if record.key is None else bytes(record.key).decode("utf-8", "replace")
        return key, None if record.value is None else bytes(record.value).decode("utf-8", "replace")


def _record_line(batch, record, args, err: TextIO) -> str:
    parts = []
    prefix = "| "
    if not args.skip_record_metadata:
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (f"{prefix}offset: {record.offset} {_TIMESTAMP_TYPES[batch.timestamp_type]}: {record.timestamp} "
                f"keySize: {key_size} valueSize: {value_size} sequence: "
                f"{_sequence(batch.base_sequence, record.offset_delta)} headerKeys: "
                f"[{','.join(k for k, _ in record.headers)}]")
        parts.append(line)
        prefix = " "
        if batch.is_control_batch:
            try:
                marker = parse_end_txn_marker(record.key, record.value)
                if marker.control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                    parts.append(f" endTxnMarker: {marker.control_type.name} "
                                 f"coordinatorEpoch: {marker.coordinator_epoch}")
                else:
                    parts.append(f" controlType: {marker.control_type.name}({int(marker.control_type)})")
            except (DecodeError, ValueError):
                parts.append(" controlType: UNKNOWN(-1)")
    if args.print_data_log and not batch.is_control_batch:
        try:
            key, payload = args.message_parser.parse(record)
        except RecordDecoderError as e:
            print(f"Could not decode the record at offset {record.offset}: {e}", file=err)
            key = payload = None
        if key is not None:
            parts.append(f"{prefix}key: {key}")
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


def dump_log(path: str, args, out: TextIO, err: TextIO, errors: _Errors) -> None:
    print(f"Log starting offset: {names.offset_from_file_name(path)}", file=out)
    records = FileRecords(path, read_only=True)
    limit = min(records.size, args.max_bytes)
    valid_bytes = 0
    last_offset = -1
    try:
        for batch in records.batches(0, limit):
            h = batch.header
            data = records.read(batch.position, batch.size)
            valid = crc_is_valid(data)
            print(f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} baseSequence: "
                  f"{h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} producerEpoch: "
                  f"{h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} isTransactional: "
                  f"{_bool(h.is_transactional)} isControl: {_bool(h.is_control_batch)} deleteHorizonMs: "
                  f"{_optional_long(h.delete_horizon_ms if h.has_delete_horizon_ms else None)} position: {valid_bytes} "
                  f"{_TIMESTAMP_TYPES[h.timestamp_type]}: {h.max_timestamp} size: {batch.size} magic: {h.magic} "
                  f"compresscodec: {_CODEC_NAMES.get(h.attributes & 7, 'unknown')} crc: {h.crc} isvalid: "
                  f"{_bool(valid)}", file=out)
            if args.deep_iteration:
                if not valid:
                    errors.invalid_batches.setdefault(os.path.abspath(path), []).append(
                        (h.base_offset, h.last_offset, valid_bytes, stored_checksum(data), batch_checksum(data)))
                try:
                    decoded = decode_batch(data, verify=False)
                except DecodeError as e:
                    print(f"Could not decode the records of the batch at position {valid_bytes}: {e}", file=err)
                    decoded = None
                for record in (decoded.records if decoded else ()):
                    if last_offset != -1 and record.offset != last_offset + 1:
                        pairs = errors.non_consecutive.setdefault(os.path.abspath(path), [])
                        pairs.insert(0, (last_offset, record.offset))
                    last_offset = record.offset
                    print(_record_line(decoded, record, args, err), file=out)
            valid_bytes += batch.size
    except StorageError as e:
        print(f"Stopped at position {valid_bytes}: {e}", file=err)
    finally:
        records.close()
    trailing = records.size - valid_bytes
    if trailing > 0 and args.max_bytes == INT_MAX:
        print(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}", file=out)


def _companion(path: str, suffix: str) -> str:
    base = os.path.basename(path)
    return os.path.join(os.path.dirname(os.path.abspath(path)), base.split(".")[0] + suffix)


def dump_index(path: str, args, out: TextIO, err: TextIO, errors: _Errors) -> None:
    base = names.offset_from_file_name(path)
    index = OffsetIndex(path, base, writable=False)
    log_path = _companion(path, names.LOG_FILE_SUFFIX)
    records = FileRecords(log_path, read_only=True) if os.path.exists(log_path) else None
    try:
        if index.entries == 0:
            print(f"{path} is empty.", file=out)
            return
        if args.index_sanity_check:
            index.sanity_check(strict=False)
            print(f"{path} passed sanity check.", file=out)
            return
        for i in range(index.entries):
            entry = index.entry(i)
            if entry.offset == index.base_offset and i > 0:
                return
            first = records.batch_at(entry.position) if records is not None else None
            if first is None or first.last_offset != entry.offset:
                errors.index_mismatches.setdefault(os.path.abspath(path), []).insert(
                    0, (entry.offset, first.last_offset if first is not None else -1))
            if not args.verify_index_only:
                print(f"offset: {entry.offset} position: {entry.position}", file=out)
    finally:
        index.close()
        if records is not None:
            records.close()


def dump_time_index(path: str, args, out: TextIO, err: TextIO, errors: _Errors) -> None:
    base = names.offset_from_file_name(path)
    time_index = TimeIndex(path, base, writable=False)
    index_path = _companion(path, names.INDEX_FILE_SUFFIX)
    index = OffsetIndex(index_path, base, writable=False) if os.path.exists(index_path) else None
    log_path = _companion(path, names.LOG_FILE_SUFFIX)
    records = FileRecords(log_path, read_only=True) if os.path.exists(log_path) else None
    key = os.path.abspath(path)
    try:
        if args.index_sanity_check:
            time_index.sanity_check(strict=False)
            print(f"{path} passed sanity check.", file=out)
            return
        previous = -1
        for i in range(time_index.entries):
            entry = time_index.entry(i)
            if entry.offset == time_index.base_offset and i > 0:
                return
            position = index.lookup(entry.offset).position if index is not None else 0
            found = None
            if records is not None:
                found = next((b for b in records.batches(position) if b.last_offset >= entry.offset), None)
            if found is None:
                errors.shallow_not_found.setdefault(key, []).append((entry.offset, -1))
            elif found.last_offset != entry.offset:
                errors.shallow_not_found.setdefault(key, []).append((entry.offset, found.last_offset))
            else:
                decoded = decode_batch(records.read(found.position, found.size), verify=False)
                max_ts = max((r.timestamp for r in decoded.records), default=-1)
                if max_ts != entry.timestamp:
                    errors.time_mismatches.setdefault(key, []).append((entry.timestamp, max_ts))
                if previous >= entry.timestamp:
                    errors.time_out_of_order.setdefault(key, []).append((entry.timestamp, previous))
            if not args.verify_index_only:
                print(f"timestamp: {entry.timestamp} offset: {entry.offset}", file=out)
            previous = entry.timestamp
    finally:
        time_index.close()
        if index is not None:
            index.close()
        if records is not None:
            records.close()


def dump_producer_snapshot(path: str, out: TextIO, err: TextIO) -> None:
    try:
        entries = read_snapshot(path)
    except StorageError as e:
        print(str(e), file=err)
        return
    for e in entries:
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: "
                f"{_optional_long(e.current_txn_first_offset)} lastTimestamp: {e.last_timestamp} ")
        if e.batch_metadata:
            m = e.batch_metadata[0]
            line += (f"firstSequence: {m.first_seq} lastSequence: {m.last_seq} lastOffset: {m.last_offset} "
                     f"offsetDelta: {m.offset_delta} timestamp: {m.timestamp}")
        print(line, file=out)


def dump_txn_index(path: str, out: TextIO) -> None:
    with open(path, "rb") as f:
        data = f.read()
    for pos in range(0, len(data) - _ABORTED_TXN.size + 1, _ABORTED_TXN.size):
        version, pid, first, last, lso = _ABORTED_TXN.unpack_from(data, pos)
        print(f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
              f"lastStableOffset: {lso}", file=out)


def dump_leader_epoch_checkpoint(path: str, out: TextIO) -> None:
    for epoch, start in LeaderEpochCheckpointFile(path).read():
        print(f"epoch: {epoch} startOffset: {start}", file=out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--files", required=True, metavar="file1, file2, ...",
                   help="REQUIRED: The comma separated list of data and index log files to be dumped.")
    p.add_argument("--print-data-log", action="store_true",
                   help="If set, printing the messages content when dumping data logs. Automatically set if any "
                        "decoder option is specified.")
    p.add_argument("--deep-iteration", action="store_true",
                   help="If set, uses deep instead of shallow iteration. Automatically set if print-data-log is "
                        "enabled.")
    p.add_argument("--verify-index-only", action="store_true",
                   help="If set, just verify the index log without printing its content.")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="If set, just checks the index sanity without printing its content. This is the same check "
                        "that is executed on broker startup to determine if an index needs rebuilding or not.")
    p.add_argument("--max-bytes", type=int, default=INT_MAX, metavar="size",
                   help="Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
    p.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, metavar="size",
                   help="Size of largest message.")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="Whether to skip printing metadata for each record.")
    p.add_argument("--offsets-decoder", action="store_true",
                   help="If set, log data will be parsed as offset data from the __consumer_offsets topic.")
    p.add_argument("--transaction-log-decoder", action="store_true",
                   help="If set, log data will be parsed as transaction metadata from the __transaction_state "
                        "topic.")
    p.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="If set, log data will be parsed as cluster metadata records (not supported by kafkalab "
                        "yet: the records are printed as text).")


def add_parser(sub) -> None:
    """Mount as ``kafkalab dump-log`` on an argparse sub-parsers object."""
    p = sub.add_parser("dump-log", help="dump segment, index and checkpoint files (kafka-dump-log.sh)",
                       description="Parse a log file and dump its contents to the console, useful for debugging a "
                                   "seemingly corrupt log segment.")
    add_arguments(p)
    p.set_defaults(run=lambda args: run(args))


def run(args, out: TextIO = None, err: TextIO = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if args.offsets_decoder:
        args.message_parser = OffsetsMessageParser()
    elif args.transaction_log_decoder:
        args.message_parser = TransactionLogMessageParser()
    else:
        args.message_parser = StringMessageParser()
    if args.cluster_metadata_decoder and not (args.offsets_decoder or args.transaction_log_decoder):
        print("kafkalab dump-log: --cluster-metadata-decoder is not supported yet (kafkalab has no "
              "__cluster_metadata); keys and values are printed as text", file=err)
    decoding = args.offsets_decoder or args.transaction_log_decoder or args.cluster_metadata_decoder
    args.print_data_log = args.print_data_log or decoding
    args.deep_iteration = args.deep_iteration or args.print_data_log
    errors = _Errors()
    for path in args.files.split(","):
        print(f"Dumping {path}", file=out)
        name = os.path.basename(path)
        try:
            if name.endswith(names.LOG_FILE_SUFFIX):
                dump_log(path, args, out, err, errors)
            elif name.endswith(names.INDEX_FILE_SUFFIX):
                dump_index(path, args, out, err, errors)
            elif name.endswith(names.TIME_INDEX_FILE_SUFFIX):
                dump_time_index(path, args, out, err, errors)
            elif name.endswith(names.PRODUCER_SNAPSHOT_FILE_SUFFIX):
                dump_producer_snapshot(path, out, err)
            elif name.endswith(names.TXN_INDEX_FILE_SUFFIX):
                dump_txn_index(path, out)
            elif name == names.LEADER_EPOCH_CHECKPOINT_FILENAME:
                dump_leader_epoch_checkpoint(path, out)
            else:
                print(f"Ignoring unknown file {path}", file=err)
        except (OSError, StorageError, DecodeError, ValueError) as e:
            print(f"Error dumping {path}: {e}", file=err)
    errors.print(err)
    return 0


def main(argv: Optional[Sequence[str]] = None, out: TextIO = None, err: TextIO = None) -> int:
    p = argparse.ArgumentParser(prog="kafkalab dump-log",
                                description="Parse a log file and dump its contents to the console, useful for "
                                            "debugging a seemingly corrupt log segment.")
    add_arguments(p)
    return run(p.parse_args(argv), out, err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
