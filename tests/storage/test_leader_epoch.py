"""The leader epoch cache and end_offset_for_epoch (KIP-101, KIP-279)."""
import os

from kafkalab.storage.checkpoints import LeaderEpochCheckpointFile
from kafkalab.storage.leader_epoch_cache import LeaderEpochFileCache

from .helpers import batch


def cache(tmp_path, entries=()):
    c = LeaderEpochFileCache("t-0", LeaderEpochCheckpointFile(str(tmp_path / "leader-epoch-checkpoint")))
    for epoch, start in entries:
        c.assign(epoch, start)
    return c


def test_checkpoint_file_format(tmp_path):
    cache(tmp_path, [(0, 0), (2, 120), (5, 4096)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 120\n5 4096\n"
    assert cache(tmp_path).epoch_entries() == [(0, 0), (2, 120), (5, 4096)]      # read back


def test_assign_is_idempotent_and_monotonic(tmp_path):
    c = cache(tmp_path, [(2, 10)])
    c.assign(2, 15)                     # same epoch, later offset: ignored
    assert c.epoch_entries() == [(2, 10)]
    c.assign(3, 20)
    c.assign(4, 20)                     # same start offset: epoch 3 never wrote anything, it goes
    assert c.epoch_entries() == [(2, 10), (4, 20)]
    c.assign(3, 18)                     # an older epoch at a lower offset: a diverged history is dropped
    assert c.epoch_entries() == [(2, 10), (3, 18)]


def test_end_offset_for(tmp_path):
    c = cache(tmp_path, [(0, 10), (2, 13), (4, 17)])
    leo = 20
    assert c.end_offset_for(4, leo) == (4, 20)              # latest epoch: the log end offset
    assert c.end_offset_for(2, leo) == (2, 17)              # ended where epoch 4 began
    assert c.end_offset_for(1, leo) == (0, 13)              # KIP-279: the largest epoch <= 1 is 0
    assert c.end_offset_for(3, leo) == (2, 17)
    assert c.end_offset_for(-1, leo) == (-1, -1)            # undefined epoch
    assert c.end_offset_for(5, leo) == (-1, -1)             # newer than anything known
    (tmp_path / "other").mkdir()
    c2 = cache(tmp_path / "other", [(5, 11), (6, 12)])
    assert c2.end_offset_for(4, 20) == (4, 11)              # older than the first epoch: its start offset


def test_truncation(tmp_path):
    c = cache(tmp_path, [(0, 0), (1, 10), (2, 20)])
    c.truncate_from_end(15)
    assert c.epoch_entries() == [(0, 0), (1, 10)]
    c.truncate_from_start(12)
    assert c.epoch_entries() == [(1, 12)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n1\n1 12\n"
    assert c.epoch_for_offset(30) == 1 and c.epoch_for_offset(11) is None


def test_log_stamps_epochs_and_answers_offset_for_leader_epoch(make_log):
    log = make_log()
    log.append_as_leader(batch(["a", "b"]), leader_epoch=1)
    log.append_as_leader(batch(["c"]), leader_epoch=3)
    log.append_as_leader(batch(["d"]), leader_epoch=3)
    assert log.leader_epoch_cache.epoch_entries() == [(1, 0), (3, 2)]
    assert log.end_offset_for_epoch(3) == (3, 4)
    assert log.end_offset_for_epoch(2) == (1, 2)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert log.latest_epoch == 3
    with open(os.path.join(log.dir, "leader-epoch-checkpoint")) as f:
        assert f.read() == "0\n2\n1 0\n3 2\n"


def test_follower_truncates_by_epoch_after_a_double_failover(make_log):
    """KIP-279: A (epoch 1) wrote 0-5; B took over at 3 in epoch 2 and wrote 3-4; A came back as follower."""
    a = make_log(name="t-0")
    for v in "abc":
        a.append_as_leader(batch([v]), leader_epoch=1)
    b = make_log(name="t-1")
    b.append_as_follower(a.read(0, 10**6, isolation="log_end").records)
    for v in "def":
        a.append_as_leader(batch([v]), leader_epoch=1)          # never replicated to B
    b.maybe_assign_epoch_start_offset(2, b.log_end_offset)
    b.append_as_leader(batch(["x"]), leader_epoch=2)
    b.append_as_leader(batch(["y"]), leader_epoch=2)
    # A asks B where its latest epoch (1) ended, and truncates there (not to its high watermark)
    epoch, end = b.end_offset_for_epoch(a.latest_epoch)
    assert (epoch, end) == (1, 3)
    a.truncate_to(min(end, a.end_offset_for_epoch(epoch)[1]))
    a.append_as_follower(b.read(a.log_end_offset, 10**6, isolation="log_end").records)
    assert a.read(0, 10**6, isolation="log_end").records == b.read(0, 10**6, isolation="log_end").records
    assert a.leader_epoch_cache.epoch_entries() == [(1, 0), (2, 3)]


def test_truncate_to_truncates_the_cache(make_log):
    log = make_log()
    for epoch in (0, 1, 2):
        log.append_as_leader(batch(["a", "b"]), leader_epoch=epoch)
    log.truncate_to(3)
    assert log.log_end_offset == 2                       # offset 3 sat inside batch 2-3: the whole batch goes
    assert log.leader_epoch_cache.epoch_entries() == [(0, 0), (1, 2)]
    log.truncate_to(2)
    assert log.leader_epoch_cache.epoch_entries() == [(0, 0)]
