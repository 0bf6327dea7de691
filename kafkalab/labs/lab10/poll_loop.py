"""Lab 10, the consumer's side of offsets (sections 10-12): ``auto.offset.reset``, ``max.poll.interval.ms``,
auto-commit.

Theory of operation
-------------------
Sections 1-9 of the lab watch the group from the coordinator; these watch one consumer's poll loop, run as
kafkalab's :class:`~kafkalab.clients.Consumer` (it mirrors Java's ``KafkaConsumer`` with its
``ConsumerCoordinator`` and ``SubscriptionState``) against the lab's in-process broker:

* :func:`start_offset` -- where a consumer starts reading a partition, as Java's consumer decides it: the
  group's committed offset if there is one, else ``auto.offset.reset`` (``earliest``: the log start offset,
  ``latest``: the log end offset, ``none``: ``NoOffsetForPartitionException``); a committed offset the log no
  longer has (below the log start, after retention, or past the end) is out of range, and is reset by the same
  policy (``none``: ``OffsetOutOfRangeException``). The checker of exercise 5.
* :class:`PollLoop` -- one member's poll loop on a thread of its own, as an application runs it: ``poll()``,
  handle each record (the handler may take its time), commit; every rebalance-listener call, record handled and
  commit outcome goes into the member's event list, so a lab can print what each member lived through, in its
  own order.
* :func:`poll_one`, :func:`wait_for_commits`, :func:`crash` -- a consumer on a ``MockTime`` driven one record
  per (mock) second, so that auto-commit's interval is seen to the millisecond; ``crash`` is what ``kill -9``
  does to a consumer: it stops, commits nothing more, sends nothing more.
* :func:`auto_commit_plan` -- the auto-commit rule of Java's ``ConsumerCoordinator.maybeAutoCommitOffsetsAsync``
  (at the start of a ``poll()``, when ``auto.commit.interval.ms`` has passed since the last one, commit the
  positions: everything the *earlier* polls returned) and the records a crash hands out twice. The checker of
  exercise 6.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping, Optional, Sequence

from kafkalab.clients import CommitFailedError, Consumer
from kafkalab.labs.checks import CheckResult, Part, check, is_unanswered
from kafkalab.protocol import ApiException

__all__ = ["NO_OFFSET", "OUT_OF_RANGE", "start_offset", "PollLoop", "poll_one", "wait_for_commits", "crash",
           "auto_commit_plan", "check_start_offsets", "check_auto_commit_duplicates"]

#: what ``start_offset`` answers where Java's consumer throws instead of starting
NO_OFFSET = "NoOffsetForPartitionException"
OUT_OF_RANGE = "OffsetOutOfRangeException"
_POLICIES = ("earliest", "latest", "none")


def start_offset(policy: str, log_start: int, log_end: int, committed: Optional[int] = None):
    """The offset a consumer of a group reads first in a partition whose log holds ``[log_start, log_end)``, or
    the name of the exception Java's consumer throws (:data:`NO_OFFSET`, :data:`OUT_OF_RANGE`)."""
    if policy not in _POLICIES:
        raise ValueError(f"auto.offset.reset is one of {', '.join(_POLICIES)}, not {policy!r}")
    if committed is not None and log_start <= committed <= log_end:
        return committed                         # the group's committed offset wins; the policy is not asked
    if policy == "none":
        return NO_OFFSET if committed is None else OUT_OF_RANGE
    return log_start if policy == "earliest" else log_end


class PollLoop:
    """``member = PollLoop(consumer, name, handle)``: ``consumer`` subscribed (with this object as its rebalance
    listener) and polled on a thread of its own until :meth:`stop`. ``handle(loop, record)`` processes one record;
    :meth:`commit` commits synchronously and records the outcome. ``events`` is the member's story, in order."""

    def __init__(self, consumer: Consumer, name: str, topics: Sequence[str],
                 handle: Callable[["PollLoop", Any], None], poll_timeout_s: float = 0.1):
        self.consumer, self.name, self.handle = consumer, name, handle
        self.events: list[str] = []
        self.owned: list[tuple[str, int]] = []
        self.assignments = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._poll_timeout_s = poll_timeout_s
        consumer.subscribe(list(topics), listener=self)
        self._thread = threading.Thread(target=self._run, name=f"poll-loop-{name}", daemon=True)
        self._thread.start()

    # the rebalance listener (called on this loop's thread, inside poll())
    def on_partitions_revoked(self, partitions) -> None:
        self._lose(partitions, "revoked")

    def on_partitions_lost(self, partitions) -> None:
        self._lose(partitions, "lost")

    def on_partitions_assigned(self, partitions) -> None:
        self.owned = sorted({*self.owned, *((tp.topic, tp.partition) for tp in partitions)})
        self.assignments += 1
        self.events.append(f"assigned {_names(partitions)}")

    def _lose(self, partitions, how: str) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.owned = sorted(set(self.owned) - gone)
        if partitions:
            self.events.append(f"{how} {_names(partitions)}")

    def commit(self, record) -> None:
        """Commit ``record.offset + 1`` for its partition, synchronously; note whether it worked."""
        where = f"{record.topic}-{record.partition}"
        try:
            self.consumer.commit({(record.topic, record.partition): record.offset + 1})
            self.events.append(f"committed {where} offset {record.offset + 1}")
        except CommitFailedError as e:
            # Java's CommitFailedException carries a message, no error code
            self.events.append(f"commit of {where} offset {record.offset + 1} FAILED: CommitFailedException: "
                               f"{e.message}")
        except ApiException as e:
            self.events.append(f"commit of {where} offset {record.offset + 1} failed: {e.error_code.name}")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for record in self.consumer.poll(self._poll_timeout_s):
                    self.handle(self, record)
        except BaseException as e:  # noqa: BLE001 -- kept for the notebook to show, never lost on a thread
            self.errors.append(e)
        finally:
            try:
                self.consumer.close()
            except Exception as e:  # noqa: BLE001
                self.errors.append(e)

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
        if self.errors:
            raise self.errors[0]

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


def _names(partitions) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)) + "]"


def poll_one(consumer: Consumer, timeout_s: float = 20.0) -> list:
    """``poll(0)`` until it returns records, without moving the consumer's (mock) clock: the fetch answers
    arrive in real time, every auto-commit decision stays where the clock is."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        records = consumer.poll(0)
        if records:
            return records
        time.sleep(0.01)
    raise TimeoutError("no record arrived: run the notebook from the top")


def wait_for_commits(consumer: Consumer, timeout_s: float = 10.0) -> None:
    """Wait (real time) until the consumer's asynchronous commits -- auto-commit's -- have been answered."""
    consumer._run(consumer.client.waits.wait_for(consumer.coordinator.flush_commits(), timeout_s * 1000))


def crash(consumer: Consumer) -> None:
    """What ``kill -9`` does to a consumer: its connections drop and it stops. Unlike ``close()`` it commits
    nothing (even with ``enable.auto.commit``) and sends no LeaveGroup."""
    try:
        consumer._run(consumer.client.close(), 10)
    finally:
        consumer._closed = True
        consumer._io.stop()


def auto_commit_plan(poll_times_ms: Sequence[int], interval_ms: int, crash_after: int,
                     created_ms: int = 0) -> dict:
    """Poll ``k`` (at ``poll_times_ms[k]``) returns record ``k``, which is processed before the next poll. At the
    start of each poll, if ``interval_ms`` has passed since the consumer was created or last auto-committed, the
    position -- the number of records returned so far -- is committed. The process dies right after processing
    record ``crash_after``; its successor starts at the last committed offset.
    Returns ``{"commits": [(time_ms, offset)], "committed": offset, "redelivered": [records]}``."""
    next_commit, committed, commits = created_ms + interval_ms, None, []
    for k, t in enumerate(poll_times_ms[:crash_after + 1]):
        if t >= next_commit:
            next_commit = t + interval_ms
            if k > 0:
                committed = k
                commits.append((t, k))
    start = 0 if committed is None else committed
    return {"commits": commits, "committed": committed, "redelivered": list(range(start, crash_after + 1))}


# -- checks -----------------------------------------------------------------------------------------------------------
def check_start_offsets(answer: Any, log_start: int, log_end: int, cases: Mapping[str, tuple]) -> CheckResult:
    """Exercise 5: ``{consumer: first offset or exception name}`` for ``cases = {consumer: (policy, committed)}``."""
    title = "Exercise 5 · where does each consumer start?"
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, Mapping):
        return check(title, False, "give a dict {consumer: offset, or the exception's name}")
    parts, right = [], 0
    for name, (policy, committed) in cases.items():
        want, got = start_offset(policy, log_start, log_end, committed), answer.get(name, ...)
        if is_unanswered(got):
            parts.append(Part(name, "todo", "not answered yet"))
        elif got == want and isinstance(got, bool) is False:
            right += 1
            parts.append(Part(name, "pass", f"{want}"))
        else:
            why = f"{got!r} is not right"
            if committed is not None and log_start <= committed <= log_end and got != committed:
                why = "the group has a committed offset the log still holds: auto.offset.reset is not asked"
            elif committed is not None and got == committed:
                why = (f"the log holds offsets {log_start} to {log_end - 1} now: the fetch at {committed} answers "
                       f"OFFSET_OUT_OF_RANGE, and auto.offset.reset decides")
            elif policy == "none" and isinstance(got, int):
                why = "auto.offset.reset=none never picks an offset: the consumer throws"
            elif policy == "latest" and got == log_end - 1:
                why = "latest is the log end offset: the offset the *next* record will get"
            parts.append(Part(name, "fail", why))
    ok = right == len(cases)
    if all(p.status == "todo" for p in parts):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    return check(title, ok, f"{right} of {len(cases)} right", parts=parts,
                 hint="" if ok else "a committed offset inside the log wins; otherwise earliest = log start, "
                                    "latest = log end, none = an exception")


def check_auto_commit_duplicates(answer: Any, poll_times_ms: Sequence[int], interval_ms: int,
                                 crash_after: int) -> CheckResult:
    """Exercise 6: the records the successor of a crashed auto-committing consumer hands out a second time."""
    title = "Exercise 6 · auto-commit and a crash"
    plan = auto_commit_plan(poll_times_ms, interval_ms, crash_after)
    want = plan["redelivered"]
    if is_unanswered(answer):
        return CheckResult(title, "todo", "not answered yet: replace the ... in the answer cell")
    if not isinstance(answer, (list, tuple, set, range)) or not all(isinstance(x, int) for x in answer):
        return check(title, False, "give the list of record offsets processed twice")
    got = sorted(answer)
    if got == want:
        return check(title, True, f"records {want[0]} to {want[-1]}: the last auto-commit said "
                                  f"{plan['committed']}" if want else "nothing")
    hint = ("an auto-commit happens at the start of a poll(), when auto.commit.interval.ms has passed since the "
            "last one, and commits what the earlier polls returned")
    if got and want and got[0] == want[0] + 1:
        hint = ("the commit made at the start of a poll() does not cover the record that poll returns: that "
                "record is the first one handed out again")
    return check(title, False, f"{got!r} is not right", hint=hint)
