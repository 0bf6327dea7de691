"""Property: whatever mix of appends, rolls, truncations, flushes, clean and unclean restarts and power losses,
offsets stay dense and every acknowledged record that was not explicitly truncated (or lost unflushed in a power
loss) is readable, with its value, at its offset."""
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.common import MockScheduler, MockTime
from kafkalab.storage import LogConfig, UnifiedLog

from .helpers import T0, all_records, batch

CONFIG = LogConfig({"segment.bytes": 300, "index.interval.bytes": 64, "segment.index.bytes": 64})

op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("retry")),
    st.tuples(st.just("roll")),
    st.tuples(st.just("flush")),
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("restart_clean")),
    st.tuples(st.just("restart_unclean")),
    st.tuples(st.just("power_loss")),
)


class Harness:
    def __init__(self, root: str):
        self.dir = os.path.join(root, "prop-0")
        self.time = MockTime(T0)
        self.scheduler = MockScheduler(self.time)
        self.log = self.open(True, 0)
        self.model = []                 # value of every offset, dense from 0
        self.pid, self.seq, self.last_idempotent = 1, 0, None

    def open(self, clean: bool, recovery_point: int) -> UnifiedLog:
        return UnifiedLog(self.dir, CONFIG, time=self.time, scheduler=self.scheduler, had_clean_shutdown=clean,
                          recovery_point=recovery_point)

    def new_producer(self):
        self.pid, self.seq, self.last_idempotent = self.pid + 1, 0, None

    def apply(self, step):
        kind = step[0]
        log = self.log
        if kind == "append":
            _, n, idempotent = step
            values = [f"v{len(self.model) + i}-{self.pid}" for i in range(n)]
            if idempotent:
                data = batch(values, pid=self.pid, epoch=0, seq=self.seq, ts=self.time.milliseconds())
            else:
                data = batch(values, ts=self.time.milliseconds())
            info = log.append_as_leader(data, leader_epoch=0)
            assert not info.duplicate and info.first_offset == len(self.model)
            self.model.extend(v.encode() for v in values)
            if idempotent:
                self.last_idempotent = (data, info.first_offset, info.last_offset)
                self.seq += n
        elif kind == "retry" and self.last_idempotent is not None:
            data, first, last = self.last_idempotent
            info = log.append_as_leader(data, leader_epoch=0)
            assert info.duplicate and (info.first_offset, info.last_offset) == (first, last)
        elif kind == "roll":
            log.roll()
        elif kind == "flush":
            log.flush()
        elif kind == "truncate":
            target = int(step[1] * log.log_end_offset)
            log.truncate_to(target)
            assert log.log_end_offset <= target or target >= len(self.model)
            self.model = self.model[:log.log_end_offset]
            self.new_producer()
        elif kind == "restart_clean":
            log.flush(force_flush_active_segment=True)
            log.close()
            self.log = self.open(True, log.recovery_point)
        elif kind == "restart_unclean":
            recovery_point = log.recovery_point
            log.simulate_crash(lose_unflushed=False)
            self.log = self.open(False, recovery_point)
            assert self.log.log_end_offset == len(self.model)
        elif kind == "power_loss":
            recovery_point = log.recovery_point
            log.simulate_crash(lose_unflushed=True)
            self.log = self.open(False, recovery_point)
            assert recovery_point <= self.log.log_end_offset <= len(self.model)   # fsync'd data survived
            if self.log.log_end_offset < len(self.model):
                self.new_producer()
            self.model = self.model[:self.log.log_end_offset]
        self.time.advance(1)
        self.check()

    def check(self):
        log = self.log
        assert log.log_end_offset == len(self.model)
        records = all_records(log)
        assert [r.offset for r in records] == list(range(log.log_start_offset, len(self.model)))
        assert [r.value for r in records] == self.model[log.log_start_offset:]
        bases = [s.base_offset for s in log.segments]
        assert bases == sorted(bases) and log.recovery_point <= log.log_end_offset


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_offsets_stay_dense_and_acknowledged_records_stay_readable(steps):
    with tempfile.TemporaryDirectory() as root:      # (the autouse fixture has switched the real fsync off)
        harness = Harness(root)
        for step in steps:
            harness.apply(step)
        harness.log.close()
