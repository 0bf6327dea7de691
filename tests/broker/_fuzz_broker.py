"""A ``kafkalab broker`` process under a memory cap, and a second connection that watches its latency: the harness
of the extreme-values fuzz test (``test_extreme_values.py``)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from kafkalab.protocol import ApiKey, request_class

from . import _broker_process
from ._raw_wire import Conn

MEMORY_CAP = 1536 << 20              # RLIMIT_AS of the broker process
LATENCY_BOUND = 2.0                  # seconds: the second connection's ApiVersions/Metadata
TOPIC = "fuzz"

ApiVersions = request_class(ApiKey.API_VERSIONS)
Metadata = request_class(ApiKey.METADATA)
CreateTopics = request_class(ApiKey.CREATE_TOPICS)
FindCoordinator = request_class(ApiKey.FIND_COORDINATOR)
InitProducerId = request_class(ApiKey.INIT_PRODUCER_ID)
#: transient answers while an earlier request's abort (or the coordinator's load) finishes
_RETRY_INIT = {14, 15, 16, 51}


class BrokerProcess(_broker_process.BrokerProcess):
    """The capped broker process of :mod:`._broker_process`, with the fuzz test's topic, group coordinator and
    transaction coordinator (``__transaction_state``, one partition and one replica) made at every start;
    ``new_log()``: what the broker logged since the last look; ``init_transactional_id()``: a live producer id and
    epoch for the transactional id ``TOPIC``."""

    def __init__(self, workdir: Path):
        super().__init__(workdir, {"group.initial.rebalance.delay.ms": 0,
                                   "transaction.state.log.num.partitions": 1,
                                   "transaction.state.log.replication.factor": 1,
                                   "transaction.state.log.min.isr": 1}, memory_cap=MEMORY_CAP,
                         log_level="WARNING")
        self._log_seen = 0

    def start(self) -> "BrokerProcess":
        super().start()
        self._log_seen = len(self.log_text())
        with Conn(self.port) as c:
            created = c.call(CreateTopics(topics=(CreateTopics.CreatableTopic(
                name=TOPIC, num_partitions=2, replication_factor=1),), timeout_ms=30_000), 7)
        assert created.topics[0].error_code == 0, created
        # __consumer_offsets before the first group request: creating its 50 partitions holds the event loop for
        # 1.5-2 s (the cost of creating partitions, measured elsewhere), which is not what the probe looks for
        deadline = time.monotonic() + 60
        with Conn(self.port) as c:
            while c.call(FindCoordinator(key=TOPIC), 3).error_code != 0:
                assert time.monotonic() < deadline, "no group coordinator within 60 s"
                time.sleep(0.1)
            while c.call(FindCoordinator(key=TOPIC, key_type=1), 3).error_code != 0:
                assert time.monotonic() < deadline, "no transaction coordinator within 60 s"
                time.sleep(0.1)
        return self

    def init_transactional_id(self) -> dict:
        """InitProducerId for the transactional id ``TOPIC`` (aborting whatever an earlier request left open):
        ``{"producer_id": ..., "producer_epoch": ...}``."""
        deadline = time.monotonic() + 30
        with Conn(self.port) as c:
            while True:
                r = c.call(InitProducerId(transactional_id=TOPIC, transaction_timeout_ms=60_000, producer_id=-1,
                                          producer_epoch=-1), 4)
                if r.error_code == 0:
                    return {"producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
                assert r.error_code in _RETRY_INIT and time.monotonic() < deadline, r
                time.sleep(0.05)

    def new_log(self) -> str:
        text = self.log_text()
        new, self._log_seen = text[self._log_seen:], len(text)
        return new

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class LatencyProbe(threading.Thread):
    """A second connection asking ApiVersions and Metadata (no topics) in turn, every 50 ms: the slowest answer
    since the last ``take()``, and any failure."""

    def __init__(self, port: int):
        super().__init__(daemon=True, name="latency-probe")
        self.port = port
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.slowest = 0.0
        self.failures: list[str] = []
        self.answers = 0
        self.last_answered_from = 0.0     # when the latest answered ping was sent (monotonic)

    def run(self) -> None:
        conn = None
        cid = 0
        while not self.stopping.is_set():
            cid += 1
            start = time.monotonic()
            try:
                if conn is None:
                    conn = Conn(self.port, timeout=LATENCY_BOUND * 5)
                if cid % 2:
                    assert conn.call(ApiVersions(client_software_name="probe", client_software_version="1"),
                                     3, cid).error_code == 0
                else:
                    conn.call(Metadata(topics=(), allow_auto_topic_creation=False), 12, cid)
            except (OSError, AssertionError) as e:
                with self.lock:
                    self.failures.append(f"{type(e).__name__}: {e}")
                if conn is not None:
                    conn.close()
                conn = None
            took = time.monotonic() - start
            with self.lock:
                self.slowest = max(self.slowest, took)
                self.answers += 1
                if conn is not None:
                    self.last_answered_from = start
            self.stopping.wait(0.05)
        if conn is not None:
            conn.close()

    def answered_since(self, since: float, within: float) -> bool:
        """Whether a ping sent after ``since`` is answered within ``within`` seconds from now."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.lock:
                if self.last_answered_from > since:
                    return True
            time.sleep(0.01)
        return False

    def take(self) -> tuple[float, list, int]:
        with self.lock:
            out = (self.slowest, self.failures, self.answers)
            self.slowest, self.failures, self.answers = 0.0, [], 0
        return out
