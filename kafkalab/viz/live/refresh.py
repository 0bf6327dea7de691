"""The one refresh mechanism of the live widgets: a background thread that repaints a widget several times a second.

Theory of operation
-------------------
Brokers run on their own event-loop thread; the kernel runs cells on the main thread. A live widget must keep
moving while a cell blocks (``time.sleep``, a Spark query, a replay), so its painting cannot live on the
kernel's loop, which runs nothing while a cell blocks. A :class:`Refresher` is a daemon thread that calls one
``callback`` every ``interval_s`` seconds: the callback reads state (copies it, never holds a broker lock for
long) and assigns the widget's value; ipykernel queues the resulting comm message on its IOPub thread, which is
safe from any thread.

Rules every user keeps, because widget objects are not thread-safe:

* the refresher's thread is the **only writer** of the widgets it paints (controls post commands, never paint);
* the callback never prints (a thread's output lands in whatever cell runs at the time): an exception it
  raises is kept in :attr:`Refresher.error` and counted, and the thread keeps going;
* it stops cleanly: :meth:`stop` wakes the thread at once (it waits on an :class:`threading.Event`, not
  ``time.sleep``) and joins it; ``stop_when()`` -- e.g. "the widget was closed" or "the cluster stopped" -- is
  asked before each call and ends the thread by itself. A kernel restart ends the process and so the thread.

There is no Kafka class for this: it is the notebook's side of the brokers' metrics reporters, which sample
their registries on a period (Kafka's ``JmxReporter`` is read on demand instead).
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable, Optional

#: the thread name every refresher's thread starts with (tests check none is left behind)
THREAD_NAME_PREFIX = "kafkalab-refresh"
MIN_INTERVAL_S = 0.05      # 20 Hz at most: more only costs the kernel and the browser
_ids = itertools.count(1)


class Refresher:
    """Call ``callback()`` every ``interval_s`` seconds on a daemon thread until :meth:`stop` or ``stop_when()``."""

    def __init__(self, callback: Callable[[], None], interval_s: float, *,
                 stop_when: Optional[Callable[[], bool]] = None, name: str = ""):
        if interval_s < MIN_INTERVAL_S:
            raise ValueError(f"interval_s must be at least {MIN_INTERVAL_S} s, not {interval_s!r}")
        self.callback = callback
        self.interval_s = float(interval_s)
        self.stop_when = stop_when
        self.name = f"{THREAD_NAME_PREFIX}-{next(_ids)}" + (f"-{name}" if name else "")
        self.error: Optional[BaseException] = None     # the callback's last exception, if any
        self.errors = 0
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> "Refresher":
        if self._thread is not None:
            raise RuntimeError("a Refresher starts once; make a new one")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and wait for it (unless called from the callback itself)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self.stop_when is not None and self.stop_when():
                    break
                self.callback()
            except Exception as e:   # never print from here: it would land in whichever cell is running
                self.error = e
                self.errors += 1
            self._stopping.wait(self.interval_s)
        self._stopping.set()
