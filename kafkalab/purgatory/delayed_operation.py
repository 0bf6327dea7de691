"""A delayed operation: a request that waits for a condition, or for its timeout, and completes exactly once.

Theory of operation
-------------------
Some requests cannot be answered at once: a Produce with ``acks=all`` waits until the in-sync replicas have
the records, a Fetch waits until ``fetch.min.bytes`` have arrived. Kafka does not park a thread on each; it
wraps the request in a ``DelayedOperation`` and puts it in a purgatory
(:mod:`kafkalab.purgatory.purgatory`). The operation is a :class:`~kafkalab.purgatory.timing_wheel.TimerTask`
whose timeout is its maximum wait, and it answers three questions:

* ``try_complete()`` -- "can I finish now?" If yes it calls ``force_complete()`` and returns its result;
  otherwise False. Called when the request arrives and again whenever something it waits on changes.
* ``on_complete()`` -- build and send the response. Runs **exactly once**, whichever path gets there first.
* ``on_expiration()`` -- extra work when the timeout won (Kafka marks ``ExpiresPerSec``). The timeout path
  is ``run()``: ``force_complete()`` and, only if that call did the completing, ``on_expiration()`` --
  so ``on_complete`` runs *before* ``on_expiration``.

"Exactly once" rests on ``force_complete()``: a compare-and-set of the ``completed`` flag. Any number of
threads (a follower fetch advancing the high watermark, the timer, a leadership change) may race into it;
one wins, cancels the timeout and runs ``on_complete``; the others get False.

``safe_try_complete()`` runs ``try_complete`` under the operation's ``lock``, so two checks of one operation
never interleave. ``safe_try_complete_or_else(f)`` is the heart of the purgatory's contract: check; if not
done, run ``f`` (register on the watch keys) and check once more, all under the lock.

Mirrors: ``core/src/main/scala/kafka/server/DelayedOperation.scala`` (class ``DelayedOperation``).
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

from kafkalab.purgatory.timing_wheel import TimerTask

__all__ = ["DelayedOperation"]


class DelayedOperation(TimerTask):
    """Subclass and implement :meth:`try_complete`, :meth:`on_complete` and :meth:`on_expiration`.

    ``lock`` may be shared by several operations (Kafka shares a group's lock among its DelayedJoin and
    DelayedHeartbeat); by default each operation has its own re-entrant lock.
    """

    def __init__(self, delay_ms: int, lock: Optional[threading.RLock] = None):
        super().__init__(delay_ms)
        self._completed = False
        self._completed_lock = threading.Lock()
        self.lock = lock if lock is not None else threading.RLock()
        #: True when the timeout completed this operation (for labs and tests).
        self.expired = False
        self._expiration_listeners: list[Callable[["DelayedOperation"], None]] = []

    # ------------------------------------------------------------------------------------------ contract
    def try_complete(self) -> bool:  # pragma: no cover - abstract
        """Check whether the operation can complete now; if so return ``self.force_complete()``."""
        raise NotImplementedError

    def on_complete(self) -> None:  # pragma: no cover - abstract
        """Finish the operation (send the response). Called exactly once, from :meth:`force_complete`."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after :meth:`on_complete` when the timeout, not a check, completed the operation."""

    def expiration_tags(self) -> list[dict]:
        """Tags of the ``ExpiresPerSec`` meters to mark besides the aggregate one when this operation
        expires (DelayedProduce: one per pending partition; DelayedFetch: its ``fetcherType``)."""
        return []

    # ------------------------------------------------------------------------------------------ completion
    def force_complete(self) -> bool:
        """Complete now unless already completed. True iff *this* call completed it."""
        with self._completed_lock:
            if self._completed:
                return False
            self._completed = True
        self.cancel()  # stop the timeout: the entry leaves its bucket
        self.on_complete()
        return True

    @property
    def is_completed(self) -> bool:
        return self._completed

    def safe_try_complete(self) -> bool:
        """``try_complete`` under the operation's lock."""
        with self.lock:
            return self.try_complete()

    def safe_try_complete_or_else(self, f: Callable[[], None]) -> bool:
        """Under the lock: try; if not complete, run ``f`` and try once more (the last check)."""
        with self.lock:
            if self.try_complete():
                return True
            f()
            return self.try_complete()

    # ------------------------------------------------------------------------------------------ timeout
    def run(self) -> None:
        """The timeout fired: complete if nobody else has, then ``on_expiration``."""
        if self.force_complete():
            self.expired = True
            self.on_expiration()
            for listener in list(self._expiration_listeners):
                listener(self)

    def add_expiration_listener(self, listener: Callable[["DelayedOperation"], None]) -> None:
        """Called with the operation after ``on_expiration`` (a purgatory marks its meters here)."""
        if listener not in self._expiration_listeners:
            self._expiration_listeners.append(listener)

    def __repr__(self) -> str:
        state = "expired" if self.expired else "completed" if self._completed else "pending"
        return f"<{type(self).__name__} delay_ms={self.delay_ms} {state}>"
