"""kafkalab dump-log: Kafka's DumpLogSegments output shape on a small known log (golden text)."""
import io
import os
import struct
import subprocess
import sys

import pytest

from kafkalab.records import SimpleRecord, batch_checksum, build_batch, build_end_txn_marker_batch
from kafkalab.tools.dump_log import main

from .helpers import T0

GOLDEN = """\
Dumping 00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 1000 producerEpoch: 0 \
partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 \
CreateTime: 1700000000002 size: 104 magic: 2 compresscodec: none crc: 3484026977 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: 0 headerKeys: [h1,h2] key: a payload: hello
| offset: 1 CreateTime: 1700000000001 keySize: 1 valueSize: 5 sequence: 1 headerKeys: [] key: b payload: kafka
| offset: 2 CreateTime: 1700000000002 keySize: 1 valueSize: -1 sequence: 2 headerKeys: [] key: c
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 \
partitionLeaderEpoch: 1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 104 \
CreateTime: 1700000000005 size: 73 magic: 2 compresscodec: none crc: 989962056 isvalid: true
| offset: 3 CreateTime: 1700000000005 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: world
baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 \
partitionLeaderEpoch: 1 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 177 \
CreateTime: 1700000000006 size: 78 magic: 2 compresscodec: none crc: 270895055 isvalid: true
| offset: 4 CreateTime: 1700000000006 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT \
coordinatorEpoch: 5
Dumping 00000000000000000000.index
offset: 3 position: 104
offset: 4 position: 177
Dumping 00000000000000000000.timeindex
timestamp: 1700000000005 offset: 3
timestamp: 1700000000006 offset: 4
Dumping 00000000000000000005.snapshot
producerId: 1000 producerEpoch: 0 coordinatorEpoch: 5 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: \
1700000000006 firstSequence: 0 lastSequence: 2 lastOffset: 2 offsetDelta: 2 timestamp: 1700000000006
Dumping leader-epoch-checkpoint
epoch: 0 startOffset: 0
epoch: 1 startOffset: 3
"""

ALL = "00000000000000000000.log,00000000000000000000.index,00000000000000000000.timeindex," \
      "00000000000000000005.snapshot,leader-epoch-checkpoint"


@pytest.fixture
def lab_log(make_log, monkeypatch):
    log = make_log({"index.interval.bytes": 1}, name="lab-0")
    log.append_as_leader(build_batch([SimpleRecord(b"a", b"hello", (("h1", b"x"), ("h2", None)), T0),
                                      SimpleRecord(b"b", b"kafka", (), T0 + 1), SimpleRecord(b"c", None, (), T0 + 2)],
                                     producer_id=1000, producer_epoch=0, base_sequence=0), leader_epoch=0)
    log.append_as_leader(build_batch([SimpleRecord(None, b"world", (), T0 + 5)]), leader_epoch=1)
    log.append_as_leader(build_end_txn_marker_batch(1, producer_id=1000, producer_epoch=0, coordinator_epoch=5,
                                                    timestamp=T0 + 6), leader_epoch=1, origin="coordinator")
    log.close()
    monkeypatch.chdir(log.dir)
    return log


def dump(*argv):
    out, err = io.StringIO(), io.StringIO()
    assert main(list(argv), out, err) == 0
    return out.getvalue(), err.getvalue()


def test_golden_output(lab_log):
    out, err = dump("--files", ALL, "--print-data-log")
    assert out == GOLDEN and err == ""


def test_shallow_iteration_and_max_bytes(lab_log):
    out, _ = dump("--files", "00000000000000000000.log", "--max-bytes", "200")
    lines = out.splitlines()
    assert len(lines) == 4 and lines[2].startswith("baseOffset: 0 ") and lines[3].startswith("baseOffset: 3 ")


def test_skip_record_metadata(lab_log):
    out, _ = dump("--files", "00000000000000000000.log", "--print-data-log", "--skip-record-metadata")
    lines = out.splitlines()
    assert lines[3:6] == ["| key: a payload: hello", "| key: b payload: kafka", "| key: c"]
    assert lines[7] == " payload: world" and lines[9] == ""           # Kafka's quirks, kept


def test_trailing_garbage_and_index_verification(lab_log):
    with open("00000000000000000000.log", "ab") as f:
        f.write(b"\x00" * 10)
    out, _ = dump("--files", "00000000000000000000.log")
    assert out.splitlines()[-1] == "Found 10 invalid bytes at the end of 00000000000000000000.log"
    raw = bytearray(open("00000000000000000000.index", "rb").read())
    struct.pack_into(">i", raw, 0, 2)                                    # entry 0 now claims offset 2 at 104
    open("00000000000000000000.index", "wb").write(bytes(raw))
    out, err = dump("--files", "00000000000000000000.index", "--verify-index-only")
    assert out == "Dumping 00000000000000000000.index\n"
    assert err == f"Mismatches in :{os.path.abspath('00000000000000000000.index')}\n  Index offset: 2, log offset: 3\n"


def test_deep_iteration_reports_a_corrupted_batch(lab_log):
    data = bytearray(open("00000000000000000000.log", "rb").read())
    data[data.index(b"world")] ^= 0x01                                  # one bit of batch 3's value, after a clean close
    open("00000000000000000000.log", "wb").write(bytes(data))
    bad = bytes(data[104:177])
    out, err = dump("--files", "00000000000000000000.log", "--deep-iteration")
    lines = out.splitlines()
    assert lines[2].endswith("isvalid: true") and lines[6].endswith("crc: 989962056 isvalid: false")
    assert lines[7] == "| offset: 3 CreateTime: 1700000000005 keySize: -1 valueSize: 5 sequence: -1 headerKeys: []"
    assert err == (f"Found invalid batches in :{os.path.abspath('00000000000000000000.log')}\n"
                   f"  baseOffset: 3 lastOffset: 3 position: 104: Record is corrupt (stored crc = 989962056, "
                   f"computed crc = {batch_checksum(bad)})\n")
    _, shallow_err = dump("--files", "00000000000000000000.log")             # without it: only isvalid: false
    assert shallow_err == ""


def test_index_sanity_check(lab_log):
    out, _ = dump("--files", "00000000000000000000.index,00000000000000000000.timeindex", "--index-sanity-check")
    assert "00000000000000000000.index passed sanity check." in out
    assert "00000000000000000000.timeindex passed sanity check." in out


def test_unsupported_decoder_and_unknown_files(lab_log):
    out, err = dump("--files", "00000000000000000000.log,partition.metadata", "--cluster-metadata-decoder")
    assert "--cluster-metadata-decoder is not supported yet" in err and "Ignoring unknown file partition.metadata" in err
    assert "payload: hello" in out                                       # falls back to printing the data


def test_runs_as_a_module(lab_log):
    done = subprocess.run([sys.executable, "-m", "kafkalab.tools.dump_log", "--files", "leader-epoch-checkpoint"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == "Dumping leader-epoch-checkpoint\nepoch: 0 startOffset: 0\nepoch: 1 startOffset: 3\n"
