"""Lab 11's helpers and exercise checks: the right answer passes, wrong answers fail with a useful hint, ``...``
is "not answered yet". No broker: the step-by-step coordinator is sans-IO (the notebook runs the rest under
nbval)."""
from __future__ import annotations

from kafkalab.coordinator.group.group_metadata_manager import java_string_hash
from kafkalab.labs import lab11

LOG = [(7, "data"), (None, "data"), (7, "data"), (8, "data"), (7, "COMMIT"), (9, "data"), (None, "data"),
       (8, "ABORT"), (9, "data"), (None, "data"), (10, "data"), (9, "COMMIT")]
EVENTS = ["A: init", "A: begin + send", "A: commit", "B: init", "B: begin + send", "C: init"]
STEPS = ["InitProducerId", "AddPartitionsToTxn orders-0", "AddPartitionsToTxn orders-0 orders-1",
         "AddPartitionsToTxn orders-1", "AddOffsetsToTxn billing", "EndTxn ABORT", "markers written",
         "InitProducerId"]


def test_txn_partition_uses_javas_signed_hash():
    assert java_string_hash("refund-writer") < 0           # the case where abs() matters
    assert lab11.check_txn_partition(20, "refund-writer").passed
    unsigned = (java_string_hash("refund-writer") % (1 << 32)) % 50
    wrong = lab11.check_txn_partition(unsigned, "refund-writer")
    assert not wrong.passed and "signed" in wrong.text()
    assert "between 0 and 49" in lab11.check_txn_partition(50, "refund-writer").text()
    assert lab11.check_txn_partition(..., "refund-writer").status == "todo"


def test_classify_and_lso():
    status, lso = lab11.classify(LOG, 12)                       # the COMMIT at 11 is below the HW: decided
    assert lso == 10 and status[5] == status[8] == "committed" and status[3] == "aborted" and status[10] == "open"
    status, lso = lab11.classify(LOG, 11)                       # ... and not yet: 9's transaction is unstable
    assert lso == 5 and status[4] == "COMMIT"
    assert lab11.classify([(None, "data"), (None, "data")], 2) == (["plain", "plain"], 2)


def test_read_committed():
    assert lab11.read_committed_view(LOG, 12) == [0, 1, 2, 5, 6, 8, 9]
    assert lab11.check_read_committed([0, 1, 2], LOG, 11).passed
    assert lab11.check_read_committed((0, 1, 2), LOG, 11).passed
    uncommitted = lab11.check_read_committed([0, 1, 2, 3, 5, 6, 8, 9, 10], LOG, 11)
    assert not uncommitted.passed and "read_uncommitted" in uncommitted.text()
    assert "last stable offset" in lab11.check_read_committed([0, 1, 2, 5, 6, 8, 9], LOG, 11).text()
    assert "control records" in lab11.check_read_committed([0, 1, 2, 4], LOG, 11).text()
    assert "list of offsets" in lab11.check_read_committed({0, 1, 2}, LOG, 11).text()
    assert lab11.check_read_committed(..., LOG, 11).status == "todo"


def test_fence_epochs_replayed_on_the_coordinator():
    right = {"A": 0, "B": 1, "C": 3, "ABORT marker": 2}
    assert lab11.check_fence_epochs(right, EVENTS).passed
    fence = lab11.check_fence_epochs(dict(right, C=2), EVENTS)
    assert not fence.passed and "retry" in fence.text()
    # no open transaction when C arrives: no fence, one bump, no abort marker
    quiet = EVENTS[:4] + ["C: init"]
    assert lab11.check_fence_epochs({"A": 0, "B": 1, "C": 2, "ABORT marker": None}, quiet).passed
    assert "an int" in lab11.check_fence_epochs(dict(right, A="0"), EVENTS).text()
    assert lab11.check_fence_epochs(..., EVENTS).status == "todo"


def test_state_sequence_replayed_on_the_coordinator():
    right = ["Empty", "Ongoing", "Ongoing", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]
    assert lab11.check_state_sequence(right, STEPS).passed
    too_many = lab11.check_state_sequence(right[:3] + ["Ongoing"] + right[3:], STEPS)
    assert not too_many.passed and "already in the transaction" in too_many.text()
    too_few = lab11.check_state_sequence(["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"], STEPS)
    assert not too_few.passed and "written before it is answered" in too_few.text()
    assert "not a state" in lab11.check_state_sequence(["Empty", "Commit"], STEPS).text()
    assert lab11.check_state_sequence(..., STEPS).status == "todo"


def test_lab_coordinator_answers_concurrent_transactions_until_the_markers_are_written():
    lab = lab11.LabCoordinator(leaders={("receipts", 0): 1, ("receipts", 1): 2})
    r = lab.init_producer_id("checkout")
    assert (r.producer_id, r.producer_epoch) == (4000, 0)
    lab.add_partitions("checkout", 4000, 0, [("receipts", 0), ("receipts", 1)])
    lab.end_txn("checkout", 4000, 0, commit=True)
    assert lab.init_producer_id("checkout").error == 51                 # CONCURRENT_TRANSACTIONS
    written = lab.write_markers("checkout")
    assert [(w["leader"], w["partition"], w["marker"]) for w in written] == [(1, "receipts-0", "COMMIT"),
                                                                           (2, "receipts-1", "COMMIT")]
    assert lab.init_producer_id("checkout").producer_epoch == 1
    assert lab.states_written("checkout") == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Empty"]
    assert ("Ongoing", "PrepareCommit") in lab.taken_transitions("checkout")
    assert [s["request"] for s in lab.steps][-1] == "InitProducerId"


def test_log_strip_and_masking_are_deterministic():
    svg = lab11.LogStrip(LOG, 11).svg()
    assert svg == lab11.LogStrip(LOG, 11).svg() and "LSO = 5" in svg and "HW = 11" in svg
    line = ("baseOffset: 1 lastOffset: 1 isTransactional: true isControl: true position: 77 "
            "CreateTime: 1795657857995 size: 78 crc: 4191643578 isvalid: true\n"
            "| offset: 1 CreateTime: 1795657857995 keySize: 4 endTxnMarker: COMMIT coordinatorEpoch: 0\n"
            "baseOffset: 0 isControl: false CreateTime: 1700000000000 crc: 941730830")
    masked = lab11.mask_control_batches(line)
    assert masked.count("<broker time>") == 2 and "crc: <crc>" in masked
    assert "CreateTime: 1700000000000 crc: 941730830" in masked     # data batches keep theirs
