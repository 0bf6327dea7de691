"""Fetch sessions (KIP-227): the broker remembers what a fetcher asks for, so it need not be told again.

Theory of operation
-------------------
Without sessions every Fetch names every partition, and every response answers for every partition, even
those with nothing new. A follower of 1000 partitions sends and receives 1000 entries a few times a second.
KIP-227 lets the broker keep the list: a **fetch session** is a set of partitions, each with what was last
asked (fetch offset, max bytes, leader epoch...) and what was last answered (high watermark, log start offset,
last stable offset). Two numbers in every request say where a fetcher stands:

* ``session_id`` 0 and ``session_epoch`` 0: a **full** request that opens a new session. The broker answers
  every partition in full and returns the new session's id (a random non-zero int32), or 0 if its cache had no
  room -- then the fetcher simply goes on with full requests.
* ``session_epoch`` -1 (``FINAL_EPOCH``): a **sessionless** full request (and, with a non-zero id, "close that
  session"). The broker answers in full and keeps nothing.
* ``session_id`` n, ``session_epoch`` e > 0: an **incremental** request. It names only partitions that are new
  or whose request changed, and in ``forgotten_topics_data`` those to drop; all others keep their last values.
  The answer carries only partitions with something to say. Epochs count 1, 2, 3, ... per session; after
  2147483647 comes 1 again (0 and -1 are taken). A wrong epoch (a lost or duplicated request) is refused with
  ``INVALID_FETCH_SESSION_EPOCH``, an unknown id (evicted, or another broker's) with
  ``FETCH_SESSION_ID_NOT_FOUND``; both tell the fetcher to start over with a full request.

A partition **must be answered** in an incremental response when (Kafka's ``CachedPartition``): it returns
records; its high watermark, log start offset or last stable offset moved since the last answer; it names a
preferred read replica or a diverging epoch; or it carries an error. Answered partitions move to the end of
the session's order, so when ``max_bytes`` cuts a response short the others get their turn next time.

**The cache** holds at most ``max.incremental.fetch.session.cache.slots`` sessions (1000). When full, a new
session may take the place of another (Kafka's ``FetchSessionCache.tryEvict``):

1. the least recently used session is evicted if it has been idle more than
   ``min.incremental.fetch.session.eviction.ms`` (120000); otherwise
2. sessions are ranked by (size, privileged, id); a **privileged** newcomer (a follower) may evict the lowest
   ranked consumer session, or any session older than the eviction time, a consumer only sessions older than
   the eviction time -- and only if the newcomer ranks at least as high (is at least as big).

Worked example with 2 slots and 120 s: consumer A (10 partitions) at t=0, consumer B (5) at t=0 fill the cache.
At t=60 s follower F (20 partitions) opens a session: nobody is idle 120 s, F is privileged and outranks B (the
smallest consumer), so B is evicted. At t=100 s consumer C (50) asks: A and F are younger than 120 s, so C gets
session id 0 and fetches sessionless. At t=200 s, if A has been idle since t=0, C takes A's slot by rule 1.

Mirrors: ``core/src/main/scala/kafka/server/FetchSession.scala`` (``CachedPartition``, ``FetchSession``,
``FetchSessionCache``, ``FetchManager``, ``SessionErrorContext``, ``SessionlessFetchContext``,
``FullFetchContext``, ``IncrementalFetchContext``) and ``FetchMetadata.java`` (epochs).
"""
from __future__ import annotations

import random
from typing import Any, Callable, Hashable, Iterable, Optional

from kafkalab.common.time import SYSTEM, Time
from kafkalab.protocol import ErrorCode

__all__ = ["INVALID_SESSION_ID", "INITIAL_EPOCH", "FINAL_EPOCH", "next_epoch", "CachedPartition", "FetchSession",
           "FetchSessionCache", "FetchManager", "FetchContext", "SessionErrorContext", "SessionlessFetchContext",
           "FullFetchContext", "IncrementalFetchContext"]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: -1 stays -1 (sessionless), the largest int32 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


def _has_records(records) -> bool:
    return records is not None and len(records) > 0


class CachedPartition:
    """One partition of a session: the last request's values and the last answer's offsets."""

    __slots__ = ("tp", "topic_id", "fetch_info", "high_watermark", "log_start_offset", "last_stable_offset")

    def __init__(self, tp: Hashable, fetch_info: Any, topic_id: Any = None):
        self.tp = tp
        self.topic_id = topic_id
        self.fetch_info = fetch_info       # a FetchPartitionInfo (or anything the handler reads back)
        self.high_watermark = -1
        self.log_start_offset = -1
        self.last_stable_offset = -1

    def maybe_update_response_data(self, resp, update: bool) -> bool:
        """Must ``resp`` (a partition's answer: ``error_code``, ``high_watermark``, ...) be sent? With
        ``update``, remember the offsets it carries."""
        must = _has_records(getattr(resp, "records", None))
        if resp.high_watermark != self.high_watermark:
            must = True
            if update:
                self.high_watermark = resp.high_watermark
        if resp.log_start_offset != self.log_start_offset:
            must = True
            if update:
                self.log_start_offset = resp.log_start_offset
        if resp.last_stable_offset != self.last_stable_offset:
            must = True
            if update:
                self.last_stable_offset = resp.last_stable_offset
        if getattr(resp, "preferred_read_replica", -1) >= 0:
            must = True
        diverging = getattr(resp, "diverging_epoch", None)
        if diverging is not None and diverging.epoch >= 0:
            must = True
        if resp.error_code != ErrorCode.NONE:
            must = True
            if update:  # forget the offsets: the next good answer is news
                self.high_watermark = -1
        return must

    def __repr__(self) -> str:
        return (f"CachedPartition({self.tp}, fetch_offset={getattr(self.fetch_info, 'fetch_offset', '?')}, "
                f"hw={self.high_watermark}, log_start={self.log_start_offset})")


class FetchSession:
    """A session: id, privileged (a follower's), partitions in answer order, epoch, times."""

    def __init__(self, session_id: int, privileged: bool, partitions: dict, uses_topic_ids: bool,
                 creation_ms: int, last_used_ms: int, epoch: int):
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[Hashable, CachedPartition] = partitions   # insertion order = answer order
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = creation_ms
        self.last_used_ms = last_used_ms
        self.epoch = epoch

    @property
    def size(self) -> int:
        return len(self.partitions)

    def eviction_key(self) -> tuple:
        """Kafka's ``EvictableKey``: smaller sessions go first, consumers before followers."""
        return (self.size, self.privileged, self.id)

    def update(self, fetch_data: dict, to_forget: Iterable[Hashable], topic_ids: Optional[dict] = None):
        """Apply an incremental request: ``fetch_data`` ``{tp: info}`` adds or changes, ``to_forget`` (``tp``s or
        ``(topic_id, partition)``) drops.
        Returns ``(added, updated, removed)`` lists of partitions."""
        added, updated, removed = [], [], []
        for tp, info in fetch_data.items():
            cached = self.partitions.get(tp)
            if cached is None:
                self.partitions[tp] = CachedPartition(tp, info, (topic_ids or {}).get(tp[0]))
                added.append(tp)
            else:
                cached.fetch_info = info
                if topic_ids and tp[0] in topic_ids:
                    cached.topic_id = topic_ids[tp[0]]
                updated.append(tp)
        for tp in to_forget:
            if tp not in self.partitions:  # named by topic id (v13+), maybe of a topic deleted since
                tp = next((key for key, c in self.partitions.items()
                           if c.topic_id is not None and (c.topic_id, key[1]) == tuple(tp)), tp)
            if self.partitions.pop(tp, None) is not None:
                removed.append(tp)
        return added, updated, removed

    def __repr__(self) -> str:
        kind = "privileged" if self.privileged else "consumer"
        return f"<FetchSession id={self.id} epoch={self.epoch} {kind} partitions={self.size}>"


class FetchSessionCache:
    """At most ``max_entries`` sessions, evicted by Kafka's rules (see the module's theory)."""

    def __init__(self, max_entries: int = 1000, eviction_ms: int = 120_000, *, rng: Optional[random.Random] = None):
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.rng = rng or random.Random()
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def total_partitions(self) -> int:
        return sum(s.size for s in self.sessions.values())

    def metrics(self) -> dict:
        """Kafka's ``FetchSessionCache`` metrics (the evictions as a count)."""
        return {"NumIncrementalFetchSessions": len(self.sessions),
                "NumIncrementalFetchPartitionsCached": self.total_partitions,
                "IncrementalFetchSessionEvictionsPerSec": self.evictions}

    def get(self, session_id: int) -> Optional[FetchSession]:
        return self.sessions.get(session_id)

    def _new_session_id(self) -> int:
        while True:
            sid = self.rng.randint(1, MAX_EPOCH)
            if sid not in self.sessions:
                return sid

    def maybe_create_session(self, now: int, privileged: bool, size: int, uses_topic_ids: bool,
                             create_partitions: Callable[[], dict]) -> int:
        """A new session's id, or ``INVALID_SESSION_ID`` (0) when the cache is full and nothing may go."""
        if len(self.sessions) >= self.max_entries and not self.try_evict(privileged, (size, privileged, 0), now):
            return INVALID_SESSION_ID
        sid = self._new_session_id()
        self.sessions[sid] = FetchSession(sid, privileged, create_partitions(), uses_topic_ids, now, now,
                                          next_epoch(INITIAL_EPOCH))
        return sid

    def try_evict(self, privileged: bool, key: tuple, now: int) -> bool:
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - lru.last_used_ms > self.eviction_ms:
            self.remove(lru.id)
            self.evictions += 1
            return True
        old = [s for s in self.sessions.values() if now - s.creation_ms > self.eviction_ms]
        if privileged:
            old += [s for s in self.sessions.values() if not s.privileged and s not in old]
        if not old:
            return False
        victim = min(old, key=FetchSession.eviction_key)
        if key < victim.eviction_key():
            return False
        self.remove(victim.id)
        self.evictions += 1
        return True

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now

    def remove(self, session_id: int) -> Optional[FetchSession]:
        return self.sessions.pop(session_id, None)

    def __repr__(self) -> str:
        return f"<FetchSessionCache {len(self.sessions)}/{self.max_entries} sessions>"


# ------------------------------------------------------------------------------------------------ contexts
class FetchContext:
    """What one Fetch request means for the session cache. The handler reads ``partitions()`` (what to read
    from the logs), then passes the answers, ``[(tp, partition_response)]``, to ``update_and_generate`` to
    learn the session id to return and which answers to send."""

    error_code = ErrorCode.NONE
    session_id = INVALID_SESSION_ID

    def partitions(self) -> list[tuple[Hashable, Any]]:
        return []

    def update_and_generate(self, responses: list) -> tuple[int, list]:
        return INVALID_SESSION_ID, responses

    def cached_topic_ids(self) -> dict:
        """``{tp: topic id}`` the session remembers (v13+ incremental contexts), to spot a re-created topic."""
        return {}


class SessionErrorContext(FetchContext):
    """The request's session is unknown or at another epoch: answer only the error."""

    def __init__(self, error_code: ErrorCode):
        self.error_code = error_code

    def update_and_generate(self, responses: list) -> tuple[int, list]:
        return INVALID_SESSION_ID, []

    def __repr__(self) -> str:
        return f"SessionErrorContext({ErrorCode(self.error_code).name})"


class SessionlessFetchContext(FetchContext):
    """Epoch -1: a full request answered in full, nothing cached."""

    def __init__(self, fetch_data: dict):
        self.fetch_data = fetch_data

    def partitions(self) -> list:
        return list(self.fetch_data.items())

    def __repr__(self) -> str:
        return f"SessionlessFetchContext({len(self.fetch_data)} partitions)"


class FullFetchContext(FetchContext):
    """Epoch 0: a full request that opens a session, if the cache has room."""

    def __init__(self, time: Time, cache: FetchSessionCache, fetch_data: dict, uses_topic_ids: bool,
                 is_from_follower: bool, topic_ids: Optional[dict] = None):
        self.time, self.cache, self.fetch_data = time, cache, fetch_data
        self.uses_topic_ids, self.is_from_follower = uses_topic_ids, is_from_follower
        self.topic_ids = topic_ids or {}

    def partitions(self) -> list:
        return list(self.fetch_data.items())

    def update_and_generate(self, responses: list) -> tuple[int, list]:
        def create_partitions() -> dict:
            cached = {}
            for tp, resp in responses:
                if tp in self.fetch_data:
                    c = cached[tp] = CachedPartition(tp, self.fetch_data[tp], self.topic_ids.get(tp[0]))
                    c.maybe_update_response_data(resp, True)
            return cached

        self.session_id = self.cache.maybe_create_session(self.time.milliseconds(), self.is_from_follower,
                                                          len(responses), self.uses_topic_ids, create_partitions)
        return self.session_id, responses

    def __repr__(self) -> str:
        return f"FullFetchContext({len(self.fetch_data)} partitions, session {self.session_id})"


class IncrementalFetchContext(FetchContext):
    """Epoch n > 0 of a known session: read every partition of the session, answer only the changed ones."""

    def __init__(self, session: FetchSession, request_epoch: int):
        self.session = session
        self.session_id = session.id
        self.expected_epoch = next_epoch(request_epoch)

    def partitions(self) -> list:
        return [(tp, c.fetch_info) for tp, c in self.session.partitions.items()]

    def cached_topic_ids(self) -> dict:
        if not self.session.uses_topic_ids:
            return {}
        return {tp: c.topic_id for tp, c in self.session.partitions.items() if c.topic_id is not None}

    def update_and_generate(self, responses: list) -> tuple[int, list]:
        if self.session.epoch != self.expected_epoch:  # another request of this session got there first
            self.error_code = ErrorCode.INVALID_FETCH_SESSION_EPOCH
            return INVALID_SESSION_ID, []
        sent = []
        for tp, resp in responses:
            cached = self.session.partitions.get(tp)
            if cached is None:           # not part of the session (e.g. an unknown topic id): always answer
                sent.append((tp, resp))
            elif cached.maybe_update_response_data(resp, True):
                sent.append((tp, resp))
                self.session.partitions[tp] = self.session.partitions.pop(tp)   # answered: to the back
        return self.session.id, sent

    def __repr__(self) -> str:
        return f"IncrementalFetchContext(session {self.session.id}, epoch {self.session.epoch})"


class FetchManager:
    """Turns a request's ``(session_id, session_epoch)`` into a context (Kafka's ``FetchManager.newContext``)."""

    def __init__(self, cache: Optional[FetchSessionCache] = None, time: Time = SYSTEM):
        self.cache = cache if cache is not None else FetchSessionCache()
        self.time = time

    def new_context(self, version: int, session_id: int, epoch: int, is_from_follower: bool, fetch_data: dict,
                    to_forget: Iterable[Hashable] = (), topic_ids: Optional[dict] = None) -> FetchContext:
        """``fetch_data``: ``{tp: info}`` in request order; ``to_forget``: the forgotten partitions;
        ``topic_ids``: ``{topic: id}`` (v13+)."""
        uses_topic_ids = version >= 13
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):        # a full request
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)            # closing (or restarting) a session
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.time, self.cache, fetch_data, uses_topic_ids, is_from_follower, topic_ids)
        session = self.cache.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, to_forget, topic_ids)
        if not session.partitions:
            self.cache.remove(session.id)
            return SessionlessFetchContext({})
        self.cache.touch(session, self.time.milliseconds())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, epoch)
