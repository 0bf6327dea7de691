"""The broker as a process (``python -m kafkalab.cli broker``), killed with SIGKILL in the middle of production.

An idempotent confluent-kafka producer (``acks=all``) writes numbered records in a loop; the broker process is
killed without warning (no flush, no checkpoint, no clean-shutdown marker), the producer keeps queueing, the
broker is started again on the same port and log directory, and the producer's retries go through.

What must hold (Kafka's guarantees for a single replica when the *process* dies -- the page cache survives):

* every record whose delivery was acknowledged is in the log exactly once, at the offset the broker reported;
* records never acknowledged may be missing, but none is written twice (the idempotent producer's retries are
  recognised by producer id and sequence, whose state the restarted broker rebuilt from the log);
* the order of the log is the order of production, per partition;
* the restarted broker says it recovered the logs (no clean shutdown marker), and the auto-created topic is
  still there.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from ._broker_support import REPO, TIMEOUT_MS, deadline

pytestmark = [pytest.mark.interop, pytest.mark.slow]

TOPIC = "cli-kill"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """``kafkalab broker`` in a subprocess; its stderr (the log) is collected by a thread."""

    def __init__(self, port: int, data_dir):
        self.cmd = [sys.executable, "-m", "kafkalab.cli", "broker",
                    "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                    "--override", f"log.dirs={data_dir / 'kafka-logs'}",
                    "--override", "num.partitions=2"]
        self.cwd = data_dir
        self.proc = None
        self.lines: list[str] = []

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.lines = []
        self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines, stream = self.lines, self.proc.stderr
        threading.Thread(target=lambda: lines.extend(stream), daemon=True).start()
        end = deadline(timeout)
        while not any("started" in line for line in list(lines)):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.kill()
                raise AssertionError(f"the broker did not start (exit {self.proc.returncode}):\n{self.log}")
            time.sleep(0.02)
        return self

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def test_sigkill_mid_production_loses_no_acknowledged_record(tmp_path):
    import confluent_kafka as ck

    port = _free_port()
    broker = BrokerProcess(port, tmp_path).start()
    try:
        bootstrap = f"127.0.0.1:{port}"
        producer = ck.Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
            "message.timeout.ms": 30000, "socket.timeout.ms": TIMEOUT_MS, "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
            "topic.metadata.refresh.interval.ms": 1000})
        acked: dict[int, tuple[int, int]] = {}      # sequence number -> (partition, offset)
        failed: dict[int, str] = {}

        def on_delivery(err, msg):
            n = int(msg.value())
            if err is None:
                acked[n] = (msg.partition(), msg.offset())
            else:
                failed[n] = err.str()

        sent = 0

        def produce(count: int) -> None:
            nonlocal sent
            for _ in range(count):
                producer.produce(TOPIC, key=f"key-{sent % 7}".encode(), value=str(sent).encode(),
                                 on_delivery=on_delivery)
                sent += 1
                producer.poll(0)

        # produce until a good number of records is acknowledged and more are in flight, then kill
        end = deadline(20)
        while len(acked) < 300 and time.monotonic() < end:
            produce(20)
            time.sleep(0.002)
        assert len(acked) >= 300, f"only {len(acked)} acknowledged before the deadline:\n{broker.log}"
        produce(50)                                   # in flight while the broker dies
        broker.kill()
        acked_at_kill = len(acked)
        produce(100)                                  # queued while the broker is down
        time.sleep(0.3)

        broker.start()
        remaining = producer.flush(30)
        assert remaining == 0, f"{remaining} records neither delivered nor failed"
        assert len(acked) + len(failed) == sent
        assert len(acked) > acked_at_kill

        recovered = broker.log
        assert "Recovering (no clean shutdown file)" in recovered, recovered
        assert "unclean shutdown" in recovered, recovered

        # read everything back
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-cli-kill",
                                "enable.auto.commit": False, "enable.partition.eof": True,
                                "socket.timeout.ms": TIMEOUT_MS, "fetch.wait.max.ms": 100})
        md = consumer.list_topics(TOPIC, timeout=10).topics[TOPIC]
        assert md.error is None and sorted(md.partitions) == [0, 1], "the auto-created topic did not survive"
        log: dict[int, list[tuple[int, int]]] = {0: [], 1: []}   # partition -> [(offset, sequence number)]
        try:
            consumer.assign([ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING) for p in (0, 1)])
            eof: set = set()
            end = deadline(20)
            while eof != {0, 1} and time.monotonic() < end:
                m = consumer.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    assert m.error().code() == ck.KafkaError._PARTITION_EOF, m.error()
                    eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                log[m.partition()].append((m.offset(), int(m.value())))
        finally:
            consumer.close()
        assert eof == {0, 1}, "did not reach the end of both partitions"

        found: dict[int, list[tuple[int, int]]] = {}
        for p, entries in log.items():
            assert [o for o, _ in entries] == list(range(len(entries))), f"partition {p}: offsets have gaps"
            numbers = [n for _, n in entries]
            assert numbers == sorted(numbers), f"partition {p}: not in production order"
            for o, n in entries:
                found.setdefault(n, []).append((p, o))
        twice = {n: where for n, where in found.items() if len(where) > 1}
        assert not twice, f"written more than once: {dict(list(twice.items())[:5])}"
        lost = sorted(n for n in acked if n not in found)
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:10]}"
        moved = {n: (acked[n], found[n][0]) for n in acked if found[n][0] != acked[n]}
        assert not moved, f"acknowledged at one offset, found at another: {dict(list(moved.items())[:5])}"

        assert broker.terminate() == 0
        assert "shut down completed" in broker.log
    finally:
        broker.kill()
