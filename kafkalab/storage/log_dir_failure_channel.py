"""The log directory failure channel: where an I/O error on a log directory is reported, once per directory.

Theory of operation
-------------------
A broker cannot tell a full disk from a dying one, and it does not try: *any* I/O error while appending,
reading, rolling, flushing or writing a checkpoint in a log directory means that directory can no longer be
trusted. Whoever hits the error (a log, the log manager's checkpoint tasks) calls
:meth:`LogDirFailureChannel.maybe_add_offline_log_dir` with the directory, Kafka's message for what it was doing
and the error, then answers its caller KAFKA_STORAGE_ERROR as usual. The channel logs the message at ERROR with
the cause, and, the first time a directory fails, hands it to the *failure handler* (the replica manager's
``handle_log_dir_failure``), which takes the directory offline:

* its partitions stop being served (requests for them get KAFKA_STORAGE_ERROR, the fetchers for them stop);
* the log manager closes their logs and stops writing checkpoints there; no clean-shutdown marker is written
  there at shutdown, so the next start recovers it;
* DescribeLogDirs reports the directory with KAFKA_STORAGE_ERROR;
* the broker writes ``/log_dir_event_notification/log_dir_event_<seq>``; the controller then moves the
  leadership of those replicas to other ISR members (``kafkalab.controller.log_dir_failures``);
* when no directory is left, the broker halts ("Shutdown broker because all log dirs in ... have failed"):
  another replica must take over, since this broker can store nothing.

A directory stays offline until the broker restarts (an operator replaces the disk first). Kafka's handler is
a thread blocked on a queue; here the handler is a callback the replica manager runs on the broker's loop.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogDirFailureChannel.java`` and
``ReplicaManager.handleLogDirFailure`` / ``LogManager.handleLogDirFailure``.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

__all__ = ["LogDirFailureChannel"]

log = logging.getLogger(__name__)


class LogDirFailureChannel:
    """Offline log directories, each reported once to the failure handler."""

    def __init__(self):
        self._offline: dict[str, None] = {}      # insertion-ordered set
        self._lock = threading.Lock()
        self._handler: Optional[Callable[[str], None]] = None
        self._pending: list[str] = []            # failed before a handler was set

    def has_offline_log_dir(self, log_dir: str) -> bool:
        return log_dir in self._offline

    @property
    def offline_log_dirs(self) -> list[str]:
        return list(self._offline)

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, error: BaseException) -> None:
        """Log ``message`` with its cause; the first report of ``log_dir`` goes to the failure handler."""
        log.error("%s (%s: %s)", message, type(error).__name__, error)
        with self._lock:
            if log_dir in self._offline:
                return
            self._offline[log_dir] = None
            handler = self._handler
            if handler is None:
                self._pending.append(log_dir)
        if handler is not None:
            handler(log_dir)

    def set_handler(self, handler: Optional[Callable[[str], None]]) -> None:
        """The failure handler (``handler(log_dir)``); directories that failed before it was set go to it now."""
        with self._lock:
            self._handler = handler
            pending, self._pending = (self._pending, []) if handler is not None else ([], self._pending)
        for log_dir in pending:
            handler(log_dir)
