"""FetchSessionHandler: the fetcher's half of a fetch session (KIP-227), as a replica fetcher uses it.

Theory of operation
-------------------
The broker's :mod:`kafkalab.server.fetch_session` remembers what a fetcher asked for; the fetcher must
remember the same thing, so that it can send only the difference. Before each Fetch the fetcher hands the
handler everything it wants to fetch now, ``{tp: request data}``, and gets back what to put on the wire:

* With no session yet (``session_epoch`` 0): a **full** request naming every partition. If the answer carries
  a non-zero ``session_id``, the session exists and the next epoch is 1; a zero id means the broker had no
  room, and the next request is full again.
* Inside a session (epoch n > 0): an **incremental** request naming only partitions that are new or whose
  request data (fetch offset, log start offset, leader epoch, max bytes) differs from the last sent, and, as
  forgotten, those no longer wanted. Each good answer moves the epoch on (wrapping past 2147483647 to 1).
* When the broker answers ``FETCH_SESSION_ID_NOT_FOUND`` the session is gone: start over with id 0, epoch 0.
  On ``INVALID_FETCH_SESSION_EPOCH``, any other top-level error, or a lost connection, nobody knows what the
  broker last saw: the next request is full, epoch 0, with the old id -- which tells the broker to drop that
  session and open a new one.

Step by step, for a follower of ``t-0``, ``t-1``, ``t-2``: request 1 (id 0, epoch 0) names all three and the
leader answers id 77. Then only ``t-1`` gets records; request 2 (id 77, epoch 1) names just ``t-1`` with its
new offset. ``t-2`` is being truncated: request 3 (77, 2) names nothing new and forgets ``t-2``. The leader
restarts: request 4 (77, 3) gets FETCH_SESSION_ID_NOT_FOUND, and request 5 (0, 0) names ``t-0`` and ``t-1``.

Sans-IO: the handler never sends anything; the fetcher reports back with ``handle_response`` or
``handle_error``.

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/FetchSessionHandler.java`` (``Builder``,
``FetchRequestData``, ``handleResponse``, ``handleError``) and ``FetchMetadata.java``.
"""
from __future__ import annotations

from typing import Any, Hashable, NamedTuple

from kafkalab.protocol import ErrorCode
from kafkalab.server.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

__all__ = ["FetchSessionHandler", "FetchRequestData"]


class FetchRequestData(NamedTuple):
    """What to send: ``to_send`` ``{tp: data}``, ``to_forget`` ``[tp]``, and the session's id and epoch."""

    to_send: dict
    to_forget: list
    session_id: int
    session_epoch: int

    @property
    def is_full(self) -> bool:
        return self.session_epoch == INITIAL_EPOCH


class FetchSessionHandler:
    """One per (fetcher, source broker). ``data`` values are compared with ``==`` to find changes."""

    def __init__(self, node_id: int = -1):
        self.node_id = node_id
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.session_partitions: dict[Hashable, Any] = {}
        self.full_requests = 0
        self.incremental_requests = 0

    def build(self, wanted: dict) -> FetchRequestData:
        """The next request for ``wanted`` ``{tp: data}`` (in fetch order)."""
        if self.epoch == INITIAL_EPOCH:
            self.session_partitions = dict(wanted)
            self.full_requests += 1
            return FetchRequestData(dict(wanted), [], self.session_id, INITIAL_EPOCH)
        to_send = {tp: d for tp, d in wanted.items() if self.session_partitions.get(tp, _MISSING) != d}
        to_forget = [tp for tp in self.session_partitions if tp not in wanted]
        self.session_partitions = dict(wanted)
        self.incremental_requests += 1
        return FetchRequestData(to_send, to_forget, self.session_id, self.epoch)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Note the answer to the last built request; False when it failed (as a whole)."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:       # no room at the broker, or the session was closed
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif self.epoch == INITIAL_EPOCH:          # the full request opened a session
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request got no answer: close the session and try a new one next time."""
        self.epoch = INITIAL_EPOCH

    def __repr__(self) -> str:
        return (f"<FetchSessionHandler node={self.node_id} session={self.session_id} epoch={self.epoch} "
                f"partitions={len(self.session_partitions)}>")


_MISSING = object()
