"""The hierarchical timing wheel and SystemTimer, on a MockTime."""
import asyncio
import time as real_time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.common.time import MockTime, SystemTime
from kafkalab.purgatory import FunctionTask, SystemTimer, TimerTask, TimerTaskEntry, TimingWheel
from kafkalab.purgatory.timing_wheel import DelayQueue, TaskCounter


class Recorder:
    def __init__(self, timer):
        self.timer = timer
        self.fired = []  # (name, timer time)

    def task(self, delay_ms, name=None):
        name = name if name is not None else f"t{delay_ms}"
        return FunctionTask(delay_ms, lambda: self.fired.append((name, self.timer.now_ms())), name)


def make(tick_ms=1, wheel_size=20):
    time = MockTime()
    timer = SystemTimer("test", time=time, tick_ms=tick_ms, wheel_size=wheel_size)
    return time, timer, Recorder(timer)


def step(time, timer, ms=1):
    for _ in range(ms):
        time.advance(1)
        timer.poll()


# ---------------------------------------------------------------------------------------------- the wheel itself
def wheel(tick=1, size=3, start=100):
    return TimingWheel(tick, size, start, TaskCounter(), DelayQueue())


def entry(expiration):
    return TimerTaskEntry(FunctionTask(0, lambda: None), expiration)


def test_current_time_is_rounded_down_to_a_tick():
    assert wheel(tick=10, size=4, start=1234).current_time_ms == 1230
    w = wheel(tick=10, size=4, start=1230)
    assert w.interval == 40
    w.advance_clock(1239)          # less than a tick: no move
    assert w.current_time_ms == 1230
    w.advance_clock(1257)
    assert w.current_time_ms == 1250


def test_add_refuses_expired_and_cancelled_entries():
    w = wheel(tick=1, size=3, start=100)
    assert not w.add(entry(99))
    assert not w.add(entry(100))   # the current bucket is already expired
    assert w.add(entry(101))
    e = entry(102)
    e.timer_task.cancel()
    assert not w.add(e)


def test_kafka_example_levels_and_bucket_expirations():
    # TimingWheel.java's example: u=1, n=3, start c. Level 1 holds c+1..c+2, level 2 c+3..c+8, level 3 c+9..c+26.
    c = 108  # a multiple of every level's tick, as the example assumes (slots are aligned to multiples)
    w = wheel(tick=1, size=3, start=c)
    assert w.overflow_wheel is None
    for t in (c + 1, c + 2):
        assert w.add(entry(t))
    assert w.overflow_wheel is None           # created lazily
    assert w.add(entry(c + 4))
    assert w.overflow_wheel is not None and w.overflow_wheel.tick_ms == 3
    assert w.overflow_wheel.overflow_wheel is None
    assert w.add(entry(c + 10))
    top = w.overflow_wheel.overflow_wheel
    assert (top.tick_ms, top.interval, top.level) == (9, 27, 2)
    # Bucket expirations are the slot starts: c+4 is in level-2 slot [c+3, c+5], c+10 in level-3 [c+9, c+17].
    mid = w.overflow_wheel
    assert mid.buckets[mid.bucket_index(c + 4)].expiration == c + 3
    assert top.buckets[top.bucket_index(c + 10)].expiration == c + 9


def test_describe_draws_kafkas_table():
    time, timer, rec = make(tick_ms=1, wheel_size=3)
    for d in (1, 2, 4, 10):
        timer.add(rec.task(d))
    text = timer.describe()
    assert "1      1        [0]:0 [1]:1 [2]:1" in text
    assert "2      3        [0,2]:0 [3,5]:1 [6,8]:0" in text
    assert "3      9        [0,8]:0 [9,17]:1 [18,26]:0" in text
    views = timer.wheels()
    assert [w.tick_ms for w in views] == [1, 3, 9]
    assert sum(b.task_count for w in views for b in w.buckets) == timer.size() == 4


# ---------------------------------------------------------------------------------------------- SystemTimer
def test_tasks_fire_at_their_tick():
    time, timer, rec = make()
    start = timer.now_ms()
    delays = [1, 2, 5, 19, 20, 21, 399, 400, 401, 1000, 8000, 8001]
    for d in delays:
        timer.add(rec.task(d))
    assert timer.size() == len(delays)
    step(time, timer, 8001)
    assert sorted(rec.fired, key=lambda x: x[1]) == [(f"t{d}", start + d) for d in delays]
    assert timer.size() == 0


def test_task_already_due_runs_at_once():
    time, timer, rec = make()
    timer.add(rec.task(0))
    timer.add(rec.task(-5))
    assert [n for n, _ in rec.fired] == ["t0", "t-5"]
    assert timer.size() == 0


def test_overflow_buckets_cascade_into_finer_wheels():
    time, timer, rec = make(tick_ms=1, wheel_size=20)
    start = timer.now_ms() - timer.now_ms() % 400   # MockTime's monotonic clock starts at 0
    assert start == timer.now_ms()
    timer.add(rec.task(450, "late"))

    def level_of_task():
        for w in timer.wheels():
            for b in w.buckets:
                if b.task_count:
                    return w.level, b.expiration_ms - start
    assert level_of_task() == (2, 400)      # 450 is beyond 20 and 400 ms: level 3 (tick 400), slot [400, 800)
    step(time, timer, 400)
    assert level_of_task() == (1, 440)      # reinserted: level 2 (tick 20), slot [440, 460)
    step(time, timer, 40)
    assert level_of_task() == (0, 450)      # reinserted: level 1 (tick 1)
    assert rec.fired == []
    step(time, timer, 10)
    assert rec.fired == [("late", start + 450)]


def test_cancel_removes_the_entry():
    time, timer, rec = make()
    a, b = rec.task(10, "a"), rec.task(5000, "b")
    timer.add(a)
    timer.add(b)
    assert timer.size() == 2
    a.cancel()
    assert a.is_cancelled and timer.size() == 1
    b.cancel()
    assert timer.size() == 0
    step(time, timer, 5001)
    assert rec.fired == []


def test_adding_a_task_again_moves_it():
    time, timer, rec = make()
    t = rec.task(10, "x")
    timer.add(t)
    t.delay_ms = 30
    timer.add(t)
    assert timer.size() == 1
    step(time, timer, 30)
    assert [n for n, _ in rec.fired] == ["x"]
    assert rec.fired[0][1] == 30


def test_coarse_tick_rounds_down_to_the_slot_start():
    # With tick_ms > 1 a bucket expires at the start of its slot: up to one tick early (Kafka always uses 1).
    time, timer, rec = make(tick_ms=10, wheel_size=5)
    timer.add(rec.task(25))
    step(time, timer, 30)
    assert rec.fired == [("t25", 20)]


def test_advance_clock_waits_through_the_injected_clock():
    time, timer, rec = make()
    timer.add(rec.task(50))
    assert timer.next_expiration_ms() == 40       # level 2 (tick 20), slot [40, 60)
    assert timer.advance_clock(200) is True       # MockTime.sleep advances: to the bucket, not 200 ms
    assert rec.fired == [] and timer.now_ms() == 40   # flushed: the task dropped to level 1, bucket 50
    assert timer.next_expiration_ms() == 50
    assert timer.advance_clock(200) is True
    assert rec.fired == [("t50", 50)] and timer.now_ms() == 50
    assert timer.advance_clock(0) is False
    assert timer.advance_clock(200) is False and timer.now_ms() == 250


def test_mock_time_listener_drives_the_timer():
    time, timer, rec = make()
    time.on_advance(timer.poll)
    timer.add(rec.task(100))
    time.advance(99)
    assert rec.fired == []
    time.advance(1)
    assert rec.fired == [("t100", 100)]


def test_a_failing_task_does_not_stop_the_others():
    time, timer, rec = make()

    class Boom(TimerTask):
        def run(self):
            raise RuntimeError("boom")

    timer.add(Boom(5))
    timer.add(rec.task(5))
    step(time, timer, 5)
    assert rec.fired == [("t5", 5)]


# ---------------------------------------------------------------------------------------------- properties
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wheel_size=st.integers(2, 8),
       ops=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 40), st.booleans()), min_size=1, max_size=60))
def test_every_task_fires_once_never_early_at_most_one_tick_late(wheel_size, ops):
    """Tick 1 ms, polled every ms: each task fires exactly once, at its deadline (within one tick);
    cancelled tasks never fire."""
    time = MockTime()
    timer = SystemTimer("prop", time=time, tick_ms=1, wheel_size=wheel_size)
    fired: dict[int, list] = {}
    deadlines, cancelled = {}, set()
    tasks = []
    for i, (delay, gap, cancel) in enumerate(ops):
        for _ in range(gap):
            time.advance(1)
            timer.poll()
        t = FunctionTask(delay, lambda i=i: fired.setdefault(i, []).append(timer.now_ms()))
        deadlines[i] = timer.now_ms() + delay
        timer.add(t)
        tasks.append(t)
        if cancel and i % 3 == 0 and i not in fired:
            t.cancel()
            cancelled.add(i)
    horizon = max(deadlines.values()) + 1
    while timer.now_ms() < horizon:
        time.advance(1)
        timer.poll()
    assert timer.size() == 0
    for i, deadline in deadlines.items():
        if i in cancelled:
            assert i not in fired
            continue
        assert len(fired.get(i, [])) == 1, f"task {i} fired {fired.get(i)}"
        assert deadline <= fired[i][0] < deadline + 1


@settings(max_examples=40, deadline=None)
@given(tick=st.integers(1, 7), wheel_size=st.integers(2, 6),
       delays=st.lists(st.integers(0, 2000), min_size=1, max_size=40),
       steps=st.lists(st.integers(1, 300), min_size=1, max_size=40))
def test_jumpy_clock_fires_each_task_once_at_the_first_poll_after_its_slot(tick, wheel_size, delays, steps):
    """Polled at irregular times, a task fires at the first poll at or after its slot start (never before
    its deadline's slot, never skipped)."""
    time = MockTime()
    timer = SystemTimer("jumpy", time=time, tick_ms=tick, wheel_size=wheel_size)
    start = timer.now_ms()
    fired = {}
    for i, d in enumerate(delays):
        timer.add(FunctionTask(d, lambda i=i: fired.setdefault(i, []).append(timer.now_ms())))
    polls = [start]
    while timer.size() or len(fired) < len(delays):
        time.advance(steps[len(polls) % len(steps)])
        timer.poll()
        polls.append(timer.now_ms())
    for i, d in enumerate(delays):
        assert len(fired[i]) == 1
        slot = (start + d) - (start + d) % tick   # the finest wheel's slot start (start is tick-aligned)
        first_poll = min(p for p in polls if p >= slot)
        assert fired[i][0] == first_poll


# ---------------------------------------------------------------------------------------------- asyncio driver
def test_asyncio_driver_fires_tasks_on_real_time_and_wakes_for_earlier_buckets():
    timer = SystemTimer("async", time=SystemTime())
    fired = []

    async def main():
        driver = asyncio.create_task(timer.run(max_idle_ms=5_000))
        await asyncio.sleep(0.01)           # the driver is asleep for up to 5 s
        t0 = real_time.monotonic()
        timer.add(FunctionTask(30, lambda: fired.append(real_time.monotonic() - t0)))
        for _ in range(200):
            if fired:
                break
            await asyncio.sleep(0.01)
        timer.shutdown()
        await asyncio.wait_for(driver, 2)

    asyncio.run(main())
    assert len(fired) == 1
    assert 0.025 <= fired[0] < 1.5
