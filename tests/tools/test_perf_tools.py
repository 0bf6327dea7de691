"""``kafkalab producer-perf-test`` / ``consumer-perf-test``: Kafka 3.9's flags and exact line shapes, the
ThroughputThrottler's pacing on a fake clock, and runs against kafkalab and Tansu."""
from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from kafkalab.cli import build_parser
from kafkalab.clients import Admin, Consumer, TopicPartition
from kafkalab.cluster import Cluster
from kafkalab.tools import consumer_perf, producer_perf
from kafkalab.tools.throughput_throttler import ThroughputThrottler

N = 2000
NUM = r"\d+\.\d+"
TOTAL = re.compile(rf"^(\d+) records sent, \d+\.\d{{6}} records/sec \({NUM} MB/sec\), \d+\.\d{{2}} ms avg latency, "
                   rf"\d+\.\d{{2}} ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$")
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
F4 = r"(?:\d+\.\d{4}|NaN|Infinity)"
SUMMARY = re.compile(rf"^{DATE}, {DATE}, \d+\.\d{{4}}, \d+\.\d{{4}}, (\d+), \d+\.\d{{4}}, \d+, -?\d+, {F4}, {F4}$")
DETAILED = re.compile(rf"^{DATE}, 0, \d+\.\d{{4}}, \d+\.\d{{4}}, (\d+), \d+\.\d{{4}}, \d+, -?\d+, {F4}, {F4}$")
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
          "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


class FakeClock:
    def __init__(self, ms: int = 1_000_000) -> None:
        self.ms = ms
        self.sleeps: list = []

    def __call__(self) -> int:
        return self.ms

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.ms += int(seconds * 1000)


def run_cli(argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    args = build_parser().parse_args(argv)
    module = producer_perf if argv[0] == "producer-perf-test" else consumer_perf
    rc = module.run(args, out, err)
    return rc, out.getvalue(), err.getvalue()


# -- the lines, on a fake clock ------------------------------------------------------------------------------
def test_total_line_is_kafkas_format_exactly():
    clock = FakeClock()
    out = io.StringIO()
    stats = producer_perf.Stats(4, 5000, out, clock)
    for latency in (1, 2, 3, 10):
        stats.record(latency, 1024, clock())
    clock.ms += 2000
    stats.print_total()
    assert out.getvalue() == ("4 records sent, 2.000000 records/sec (0.00 MB/sec), 4.00 ms avg latency, "
                              "10.00 ms max latency, 3 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.\n")


def test_window_line_every_reporting_interval():
    clock = FakeClock()
    out = io.StringIO()
    stats = producer_perf.Stats(100, 5000, out, clock)
    stats.record(4, 1 << 20, clock())
    clock.ms += 4999
    stats.record(8, 1 << 20, clock())
    assert out.getvalue() == ""
    clock.ms += 1
    stats.record(12, 1 << 20, clock())
    assert out.getvalue() == ("3 records sent, 0.6 records/sec (0.60 MB/sec), 8.0 ms avg latency, "
                              "12.0 ms max latency.\n")
    assert stats.window_count == 0 and stats.count == 3


def test_latencies_are_sampled_to_at_most_500000():
    stats = producer_perf.Stats(1_000_001, 5000, io.StringIO(), FakeClock())
    assert stats.sampling == 2 and stats.capacity == 500_001


# -- ThroughputThrottler ------------------------------------------------------------------------------------
def test_throttler_sleeps_once_two_ms_of_deficit_accumulate():
    clock = FakeClock()
    t = ThroughputThrottler(1000.0, clock(), clock.sleep)      # 1 ms per record
    clock.ms += 1
    assert t.should_throttle(5, clock())                       # 5 records in 1 ms: above 1000/s
    assert not t.should_throttle(1, clock())
    t.throttle()
    assert clock.sleeps == []                                  # 1 ms of deficit: not yet
    t.throttle()
    assert clock.sleeps == [0.002] and t.sleep_deficit_ns == 0


def test_throttler_negative_target_never_throttles_and_rate_is_kept():
    assert not ThroughputThrottler(-1, 0).should_throttle(10**9, 1)
    clock = FakeClock(0)
    t = ThroughputThrottler(500.0, 0, clock.sleep)
    clock.ms = 1                                               # no time elapsed: Kafka never throttles
    for i in range(1, 1001):                                   # a loop that sends instantly
        if t.should_throttle(i, clock()):
            t.throttle()
    assert 1900 <= clock.ms <= 2100                            # 1000 records at 500/s: about 2 s of fake time


# -- flags and errors ---------------------------------------------------------------------------------------
BASE = ["producer-perf-test", "--topic", "t", "--num-records", "10", "--throughput", "-1"]


def test_producer_needs_props_or_config():
    rc, _, err = run_cli(BASE + ["--record-size", "10"])
    assert rc == 1 and "Either --producer-props or --producer.config must be specified." in err


def test_producer_payload_options_are_exclusive_and_required():
    with pytest.raises(SystemExit):
        build_parser().parse_args(BASE + ["--producer-props", "a=b"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(BASE + ["--record-size", "1", "--payload-monotonic", "--producer-props", "a=b"])


def test_producer_rejects_bad_property_and_print_metrics():
    rc, _, err = run_cli(BASE + ["--record-size", "1", "--producer-props", "bootstrap.servers"])
    assert rc == 1 and "Invalid property: bootstrap.servers" in err
    rc, _, err = run_cli(BASE + ["--record-size", "1", "--producer-props", "a=b", "--print-metrics"])
    assert rc == 1 and "--print-metrics" in err


def test_producer_props_override_config_file_and_default_client_id(tmp_path):
    f = tmp_path / "p.properties"
    f.write_text("acks=1\nlinger.ms=7\nkey.serializer=org.apache.kafka.common.serialization.ByteArraySerializer\n")
    props = producer_perf.read_props(["linger.ms=0"], str(f), "tx", False)
    assert props == {"acks": "1", "linger.ms": "0", "client.id": "perf-producer-client"}
    assert producer_perf.read_props(["client.id=me"], None, "tx", True) == {"client.id": "me",
                                                                              "transactional.id": "tx"}


def test_random_payload_is_fresh_uniform_letters_per_record():
    payloads = producer_perf._Payloads(1024, [], False)
    first, second = payloads.next(0), payloads.next(1)
    assert len(first) == len(second) == 1024 and first != second            # refilled per record, as Kafka's
    assert set(first + second) <= set(range(65, 91))                         # upper-case ASCII letters only
    again = producer_perf._Payloads(1024, [], False)
    assert again.next(0) == first                                            # seeded: the same run, the same bytes
    import collections
    import random
    counts = collections.Counter(producer_perf.random_letters(random.Random(7), 260_000))
    assert sorted(counts) == list(range(65, 91))
    assert all(abs(n - 10_000) < 600 for n in counts.values()), counts      # each letter ~1/26 (no modulo bias)
    assert [len(producer_perf.random_letters(random.Random(1), n)) for n in (0, 1, 7, 5000)] == [0, 1, 7, 5000]


def test_payload_file_split_on_delimiter(tmp_path):
    f = tmp_path / "payloads.txt"
    f.write_text("alpha\nbeta\ngamma\n\n")
    out = io.StringIO()
    assert producer_perf.read_payload_file(str(f), "\n", out) == [b"alpha", b"beta", b"gamma"]
    assert out.getvalue() == f"Reading payloads from: {f}\nNumber of messages read: 3\n"
    assert producer_perf.read_payload_file(str(f), "a", io.StringIO())[:2] == [b"", b"lph"]
    with pytest.raises(ValueError, match="File does not exist or empty file provided."):
        producer_perf.read_payload_file(str(tmp_path / "missing"), "\n", io.StringIO())


def test_consumer_required_arguments_and_options():
    rc, _, err = run_cli(["consumer-perf-test", "--bootstrap-server", "x:1", "--messages", "5"])
    assert rc == 1 and err == 'Missing required argument "[topic]"\n'
    rc, _, err = run_cli(["consumer-perf-test", "--bootstrap-server", "x:1", "--topic", "t", "--messages", "5",
                          "--reporting-interval", "0"])
    assert rc == 1 and "Reporting interval must be greater than 0." in err
    rc, out, err = run_cli(["consumer-perf-test", "--bootstrap-server", "x:1", "--topic", "t", "--messages", "5",
                            "--threads", "3", "--print-metrics"])
    assert rc == 1 and "--print-metrics is not available" in err
    assert out == ("WARNING: option [threads] and [num-fetch-threads] have been deprecated and will be ignored by "
                   "the test\n")
    args = build_parser().parse_args(["consumer-perf-test", "--broker-list", "b:9", "--topic", "t", "--messages",
                                      "1", "--fetch-size", "4096", "--from-latest", "--timeout"])
    assert args.timeout == 10_000
    props = consumer_perf.consumer_props(args)
    assert props["bootstrap.servers"] == "b:9" and props["max.partition.fetch.bytes"] == "4096"
    assert props["auto.offset.reset"] == "latest" and props["check.crcs"] == "false"
    assert re.fullmatch(r"perf-consumer-\d+", props["group.id"]) and props["client.id"] == "perf-consumer-client"


def test_java_date_format():
    fmt = consumer_perf.java_date_format("yyyy-MM-dd HH:mm:ss:SSS")
    assert re.fullmatch(DATE, fmt(int(time.time() * 1000)))
    assert consumer_perf.java_date_format("ss.SSS'ms'")(61_042).endswith(".042ms")
    with pytest.raises(ValueError, match="Unsupported"):
        consumer_perf.java_date_format("yyyy-ww")


def test_help_lists_every_command_on_one_line():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    text = parser.format_help()
    listing = text[text.index("  COMMAND\n") + len("  COMMAND\n"):text.index("\noptions:")].splitlines()
    names = [re.fullmatch(r"    (\S+) {2,}\S.*", line).group(1) for line in listing if line.strip()]
    assert names == list(commands) and len(names) == len(listing)
    assert {"producer-perf-test", "consumer-perf-test"} <= set(names)


# -- against brokers ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kafkalab_cluster():
    with Cluster(brokers=1, overrides={"group.initial.rebalance.delay.ms": 0}) as c:
        yield c


def produce(bootstrap: str, topic: str, extra=()) -> str:
    rc, out, err = run_cli(["producer-perf-test", "--topic", topic, "--num-records", str(N), "--throughput", "-1",
                            "--producer-props", f"bootstrap.servers={bootstrap}", "linger.ms=1", *extra])
    assert rc == 0, err
    return out


def test_producer_then_consumer_against_kafkalab(kafkalab_cluster):
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    kafkalab_cluster.create_topic(topic, 2)
    out = produce(kafkalab_cluster.bootstrap_servers, topic, ["--record-size", "100"])
    last = out.splitlines()[-1]
    m = TOTAL.match(last)
    assert m and int(m.group(1)) == N, out
    with Consumer({"bootstrap.servers": kafkalab_cluster.bootstrap_servers}) as c:
        ends = c.end_offsets([TopicPartition(topic, p) for p in range(2)])
    assert sum(ends.values()) == N
    rc, out, err = run_cli(["consumer-perf-test", "--bootstrap-server", kafkalab_cluster.bootstrap_servers,
                            "--topic", topic, "--messages", str(N), "--timeout", "10000"])
    assert rc == 0, err
    header, summary = out.splitlines()
    assert header == HEADER
    m = SUMMARY.match(summary)
    assert m and int(m.group(1)) == N, summary


def test_consumer_detailed_stats_hide_header_and_timeout_warning(kafkalab_cluster):
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    kafkalab_cluster.create_topic(topic, 1)
    produce(kafkalab_cluster.bootstrap_servers, topic, ["--payload-monotonic"])
    rc, out, err = run_cli(["consumer-perf-test", "--bootstrap-server", kafkalab_cluster.bootstrap_servers,
                            "--topic", topic, "--messages", str(N + 1), "--timeout", "500", "--hide-header",
                            "--show-detailed-stats", "--reporting-interval", "1", "--group", "perf-detailed"])
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[-1] == ("WARNING: Exiting before consuming the expected number of messages: timeout (500 ms) "
                         "exceeded. You can use the --timeout option to increase the timeout.")
    progress = lines[:-1]
    assert progress and all(DETAILED.match(line) for line in progress), out
    counts = [int(DETAILED.match(line).group(1)) for line in progress]
    assert counts == sorted(counts) and counts[-1] <= N


def test_transactions_against_kafkalab(kafkalab_cluster):
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    kafkalab_cluster.create_topic(topic, 1)
    out = produce(kafkalab_cluster.bootstrap_servers, topic, ["--record-size", "10", "--transaction-duration-ms",
                                                              "50", "--transactional-id", f"tx-{topic}"])
    assert TOTAL.match(out.splitlines()[-1]).group(1) == str(N)
    with Consumer({"bootstrap.servers": kafkalab_cluster.bootstrap_servers,
                   "isolation.level": "read_committed"}) as c:
        assert c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)] > N    # commit markers


@pytest.fixture(params=("tansu", "noida"))
def peer(request):
    """A broker we did not write, started as tests/clients/conftest.py starts them (skipped if not installed)."""
    from tests.clients.conftest import _start_peer
    with tempfile.TemporaryDirectory(prefix=f"kafkalab-{request.param}-") as workdir:
        proc = _start_peer(request.param, workdir)
        try:
            yield request.param, f"127.0.0.1:{proc.port}"
        finally:
            proc.stop()


def test_against_a_peer_broker(peer, tmp_path):
    name, bootstrap = peer
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([(topic, 1, 1)])
    out = produce(bootstrap, topic, ["--record-size", "50"])
    assert TOTAL.match(out.splitlines()[-1]).group(1) == str(N)
    # tests/clients' group settings; with the defaults (45 s session, 3 s heartbeat) kafkalab's subscribed
    # consumer reads nothing from Tansu within the timeout. --consumer.config is applied under the tool's keys.
    config = tmp_path / "consumer.properties"
    config.write_text("session.timeout.ms=6000\nheartbeat.interval.ms=300\nfetch.max.wait.ms=100\n")
    rc, out, err = run_cli(["consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
                            "--messages", str(N), "--timeout", "10000", "--consumer.config", str(config)])
    assert rc == 0, err
    assert SUMMARY.match(out.splitlines()[-1]).group(1) == str(N)


def test_command_line_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "kafkalab.cli", "producer-perf-test", "--topic", "t", "--num-records",
                        "1", "--throughput", "-1", "--record-size", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Either --producer-props or --producer.config must be specified." in r.stderr


def test_throughput_paces_the_send_loop(kafkalab_cluster):
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    kafkalab_cluster.create_topic(topic, 1)
    ticks = iter(range(10**9))
    sleeps: list = []

    def now_ms() -> int:                       # a clock that moves 1 ms per reading, and by every sleep
        return next(ticks) + int(sum(sleeps) * 1000)

    args = build_parser().parse_args(["producer-perf-test", "--topic", topic, "--num-records", "50",
                                      "--record-size", "5", "--throughput", "100", "--producer-props",
                                      f"bootstrap.servers={kafkalab_cluster.bootstrap_servers}"])
    out = io.StringIO()
    assert producer_perf.run(args, out, io.StringIO(), now_ms=now_ms, sleep=sleeps.append) == 0
    assert TOTAL.match(out.getvalue().splitlines()[-1]).group(1) == "50"
    assert 0.3 <= sum(sleeps) <= 0.55           # 50 records at 100/s: about half a second asleep


def test_failed_sends_are_printed_and_not_counted(kafkalab_cluster):
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    kafkalab_cluster.create_topic(topic, 1, config={"max.message.bytes": "200"})
    rc, out, err = run_cli(["producer-perf-test", "--topic", topic, "--num-records", "3", "--record-size", "1000",
                            "--throughput", "-1", "--producer-props",
                            f"bootstrap.servers={kafkalab_cluster.bootstrap_servers}", "retries=0"])
    assert rc == 0                                          # Kafka's tool goes on and exits 0
    assert re.match(r"^0 records sent, ", out.splitlines()[-1]), out
    assert err.count("\n") == 3 and "MESSAGE_TOO_LARGE" in err, err
