"""The one refresh mechanism of kafkalab's live widgets: a background thread that calls a function a few times a
second and stops cleanly.

Theory of operation
-------------------
A live widget must move while a notebook cell blocks (``time.sleep``, a producer's ``flush()``), so it cannot
be a task on the kernel's own event loop: that loop runs nothing until the cell returns. A :class:`Refresher`
is a daemon thread of its own. Every ``interval_s`` seconds it calls ``callback()``; a widget's callback reads
the brokers' state (on the cluster's loop, through ``Cluster.call``) and assigns one string to one display-only
widget -- sending a widget's state from any thread is safe (ipykernel queues every IOPub message into its IOPub
thread), and the refresher is the only writer of the widgets it updates.

It stops, and its thread ends, when

* ``stop()`` is called (a widget's ``close()`` calls it) -- at once: the thread waits on an ``Event``, not in
  ``time.sleep``;
* ``stop_when()`` returns true (the cluster stopped, the widget was closed: ``comm is None``);
* the callback raises and ``stop_on_error`` is true (the default): ``on_error(exc)`` is told (a widget shows it
  in its panel) and the thread ends. With ``stop_on_error=False`` the error is kept (``error``, counted in
  ``errors``) and the next tick tries again. Nothing is printed either way: output from a background thread
  lands in whatever cell is running and breaks nbval;
* the interpreter exits (a kernel restart): the thread is a daemon, and :func:`stop_all` runs at exit.

``active_refreshers()`` lists the running ones, and every refresher thread's name starts with
:data:`THREAD_NAME_PREFIX` (tests check that none is left behind).

Mirrors no Kafka class: it is the notebook-side counterpart of a JMX console's polling interval.
"""
from __future__ import annotations

import atexit
import itertools
import threading
import weakref
from typing import Callable, Optional

__all__ = ["Refresher", "active_refreshers", "stop_all", "MIN_INTERVAL_S", "THREAD_NAME_PREFIX"]

#: every refresher thread is named ``kafkalab-refresh-<n>[-<name>]``
THREAD_NAME_PREFIX = "kafkalab-refresh"

#: the fastest refresh allowed (10 Hz): more only costs the kernel and the browser and shows nothing new
MIN_INTERVAL_S = 0.1

_active: "weakref.WeakSet[Refresher]" = weakref.WeakSet()
_active_lock = threading.Lock()
_ids = itertools.count(1)


class Refresher:
    """Call ``callback()`` every ``interval_s`` seconds on a daemon thread until stopped (see the module doc)."""

    def __init__(self, callback: Callable[[], None], interval_s: float = 0.25, *,
                 stop_when: Optional[Callable[[], bool]] = None,
                 on_error: Optional[Callable[[BaseException], None]] = None, stop_on_error: bool = True,
                 name: str = ""):
        if not callable(callback):
            raise TypeError("callback must be callable")
        if not isinstance(interval_s, (int, float)) or interval_s != interval_s or interval_s <= 0:
            raise ValueError(f"interval_s must be a positive number of seconds, got {interval_s!r}")
        self.callback = callback
        self.interval_s = max(float(interval_s), MIN_INTERVAL_S)
        self.stop_when = stop_when
        self.on_error = on_error
        self.stop_on_error = stop_on_error
        self.name = f"{THREAD_NAME_PREFIX}-{next(_ids)}" + (f"-{name}" if name else "")
        self.ticks = 0                   # callbacks completed
        self.errors = 0                  # callbacks that raised
        self.error: Optional[BaseException] = None
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> "Refresher":
        """Start the thread (a second call while running does nothing); returns ``self``."""
        if self.running:
            return self
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        with _active_lock:
            _active.add(self)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop and wait (up to ``timeout`` s) for the thread to end; safe to call twice, or from the callback."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with _active_lock:
            _active.discard(self)

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------------------------------------ the thread
    def _should_stop(self) -> bool:
        if self._stopping.is_set():
            return True
        try:
            return bool(self.stop_when is not None and self.stop_when())
        except Exception:            # a condition that cannot be evaluated means what it watches is gone
            return True

    def _run(self) -> None:
        try:
            while not self._should_stop():
                try:
                    self.callback()
                    self.ticks += 1
                except Exception as exc:      # never print from here: tell the owner
                    self.error = exc
                    self.errors += 1
                    if self.on_error is not None and not self._should_stop():
                        try:
                            self.on_error(exc)
                        except Exception:
                            pass
                    if self.stop_on_error:
                        break
                if self._stopping.wait(self.interval_s):
                    break
        finally:
            self._stopping.set()
            with _active_lock:
                _active.discard(self)

    def __repr__(self) -> str:
        return f"Refresher({self.name!r}, interval_s={self.interval_s}, running={self.running})"


def active_refreshers() -> list:
    """The refreshers whose thread is still running."""
    with _active_lock:
        return [r for r in list(_active) if r.running]


def stop_all(timeout: float = 5.0) -> None:
    """Stop every running refresher (called at interpreter exit)."""
    for refresher in active_refreshers():
        refresher.stop(timeout)


atexit.register(stop_all)
