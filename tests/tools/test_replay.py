"""data/clickstream: the generator reproduces the committed file; ``kafkalab replay`` puts it into a topic with
every event once, keys, event times and per-user order kept, paced by an injectable clock."""
from __future__ import annotations

import argparse
import collections
import importlib.util
import io
import json
import subprocess
import sys
import time as _time
import uuid
from pathlib import Path

import pytest

from kafkalab.clients import Consumer, TopicPartition
from kafkalab.common import MockTime
from kafkalab.cluster import Cluster
from kafkalab.tools.replay import ReplaySummary, TerminalProgress, parse_event_time, replay

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "clickstream"
EVENTS = DATA / "events.jsonl"
GENERATOR = DATA / "generate.py"

#: The committed file's numbers, as data/README.md documents them.
DOCUMENTED = {"events": 15423, "bytes": 3922306, "out_of_order": 353, "late": 34, "users": 1034, "sessions": 2152,
              "by_type": {"page_view": 13358, "add_to_cart": 1037, "remove_from_cart": 353, "checkout": 359,
                          "purchase": 316}}


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("clickstream_generate", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lines():
    return EVENTS.read_bytes().splitlines()


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def new_topic(cluster, partitions=3) -> str:
    name = f"clicks-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions)
    return name


def read_all(cluster, topic, want, partitions=3, timeout=30.0) -> list:
    got = []
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "fetch.max.wait.ms": 100,
                   "auto.offset.reset": "earliest", "max.poll.records": 5000}) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = _time.monotonic() + timeout
        while len(got) < want and _time.monotonic() < deadline:
            got += c.poll(0.2)
        got += c.poll(0.3)                      # nothing more may come
    return got


# -- the dataset ----------------------------------------------------------------------------------------------
def test_check_passes_on_the_committed_file():
    r = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "OK, identical" in r.stdout


def test_check_fails_when_the_file_differs(tmp_path, lines):
    bad = tmp_path / "events.jsonl"
    bad.write_bytes(b"\n".join(lines[:100] + [lines[101], lines[100]] + lines[102:]) + b"\n")
    r = subprocess.run([sys.executable, str(GENERATOR), "--check", "--out", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "first difference at line 101" in r.stderr


def test_same_seed_same_bytes_other_seed_other_bytes(gen):
    assert gen.generate() == EVENTS.read_bytes()
    assert gen.generate(7) == gen.generate(7) != gen.generate()


def test_counts_match_the_readme(gen):
    s = gen.stats(EVENTS.read_bytes())
    assert {k: s[k] for k in DOCUMENTED} == DOCUMENTED
    assert s["bytes"] < 4 * 1024 * 1024
    readme = (ROOT / "data" / "README.md").read_text()
    for n in (DOCUMENTED["events"], DOCUMENTED["out_of_order"], DOCUMENTED["late"]):
        assert f"{n:,}" in readme or str(n) in readme


def test_schema_keys_in_fixed_order(gen, lines):
    types = collections.Counter()
    ids = set()
    for line in lines:
        e = json.loads(line)
        assert tuple(e) == gen.FIELDS
        types[e["event_type"]] += 1
        ids.add(e["event_id"])
        assert e["event_time"].endswith("Z") and len(e["event_time"]) == 24
        if e["event_type"] in ("add_to_cart", "remove_from_cart", "purchase"):
            assert e["product_id"] and e["price"] > 0 and e["quantity"] >= 1
        if e["event_type"] == "checkout":
            assert e["product_id"] is None and e["price"] > 0 and e["quantity"] >= 1
    assert set(types) == set(gen.EVENT_TYPES)
    assert len(ids) == len(lines)                       # event ids are unique


def test_out_of_order_and_late_events_are_there_and_bounded(gen, lines):
    events = [json.loads(line) for line in lines]
    ooo, late = gen.disorder(events)
    assert 0.01 < len(ooo) / len(events) < 0.05
    assert 10 <= len(late) <= 60 and set(late) <= set(ooo)
    max_seen, lags = -1, {}
    for i, e in enumerate(events):
        ms = parse_event_time(e["event_time"])
        if ms < max_seen:
            lags[i] = max_seen - ms
        max_seen = max(max_seen, ms)
    # out of order by at most 30 s, unless late: then minutes behind (3..10 min delays)
    assert all(lag <= 30_000 for i, lag in lags.items() if i not in late)
    assert all(60_000 < lags[i] <= 600_000 for i in late)
    assert max(lags[i] for i in late) > 300_000


def test_parse_event_time_matches_the_generator(gen, lines):
    for line in lines[:50]:
        t = json.loads(line)["event_time"]
        assert parse_event_time(t) == gen.parse_ms(t)
    assert parse_event_time("1970-01-01T00:00:01.500Z") == 1500
    assert parse_event_time("2026-03-14T20:00:00+01:00") == parse_event_time("2026-03-14T19:00:00.000Z")


# -- replay into a broker -------------------------------------------------------------------------------------
def test_replay_whole_file_every_event_once_keys_times_and_order_kept(cluster, lines):
    topic = new_topic(cluster)
    summary = replay(EVENTS, topic, cluster.bootstrap_servers, producer_config={"linger.ms": 20})
    assert isinstance(summary, ReplaySummary)
    assert summary.count == len(lines)
    assert summary.bytes == sum(len(v) + len(json.loads(v)["user_id"]) for v in lines)
    assert sorted(summary.partitions) == [0, 1, 2]
    assert all(lo == 0 for lo, _ in summary.partitions.values())
    assert sum(hi + 1 for _, hi in summary.partitions.values()) == len(lines)

    records = read_all(cluster, topic, len(lines))
    assert len(records) == len(lines)
    assert collections.Counter(r.value for r in records) == collections.Counter(lines)   # each event exactly once
    partition_of = {}
    for r in records:
        e = json.loads(r.value)
        assert r.key == e["user_id"].encode()
        assert r.timestamp == parse_event_time(e["event_time"]) and r.timestamp_type == 0   # CreateTime
        assert r.headers == [("event_time", e["event_time"].encode())]
        assert partition_of.setdefault(r.key, r.partition) == r.partition               # one user, one partition
    # per-key order: each user's events come back in file order
    by_key_file = collections.defaultdict(list)
    for v in lines:
        by_key_file[json.loads(v)["user_id"].encode()].append(v)
    by_key_read = collections.defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        by_key_read[r.key].append(r.value)
    assert by_key_read == by_key_file


def test_rate_is_paced_on_the_injected_clock(cluster, lines):
    topic = new_topic(cluster)
    clock = MockTime(start_ms=1_800_000_000_000)
    sent = []
    wall = _time.monotonic()
    summary = replay(EVENTS, topic, cluster.bootstrap_servers, rate=2, limit=9, timestamp="now", time=clock,
                     on_sent=lambda i, md: sent.append((i, md)))
    wall = _time.monotonic() - wall
    assert summary.count == 9
    assert summary.elapsed == pytest.approx(4.0)          # 9 events at 2/s: the last one is due after 4 s
    assert clock.milliseconds() == 1_800_000_004_000
    assert wall < 3.5                                      # MockTime: no real sleeping through those 4 s
    assert [i for i, _ in sent] == list(range(9))
    assert [md.timestamp for _, md in sent] == [1_800_000_000_000 + 500 * i for i in range(9)]
    records = sorted(read_all(cluster, topic, 9), key=lambda r: r.timestamp)
    assert [r.timestamp for r in records] == [1_800_000_000_000 + 500 * i for i in range(9)]
    # processing-time stamps, but the event time is still in the header and the value
    assert [r.headers[0][1] for r in records] == [json.loads(v)["event_time"].encode() for v in lines[:9]]


def test_no_key_field_and_limit(cluster, lines):
    topic = new_topic(cluster, partitions=1)
    summary = replay(EVENTS, topic, cluster.bootstrap_servers, key_field=None, limit=25)
    assert summary.count == 25 and summary.partitions == {0: (0, 24)}
    records = read_all(cluster, topic, 25, partitions=1)
    assert [r.value for r in records] == lines[:25] and all(r.key is None for r in records)


def test_a_file_replayed_in_two_parts_is_the_file_once(cluster, lines):
    topic = new_topic(cluster, partitions=1)
    first = replay(EVENTS, topic, cluster.bootstrap_servers, key_field=None, limit=30)
    second = replay(EVENTS, topic, cluster.bootstrap_servers, key_field=None, skip=30, limit=20)
    assert (first.count, second.count) == (30, 20) and second.partitions == {0: (30, 49)}
    assert [r.value for r in read_all(cluster, topic, 50, partitions=1)] == lines[:50]


def test_bad_arguments_are_refused(cluster):
    with pytest.raises(ValueError, match="timestamp"):
        replay(EVENTS, "t", cluster.bootstrap_servers, timestamp="log-append")
    with pytest.raises(ValueError, match="rate"):
        replay(EVENTS, "t", cluster.bootstrap_servers, rate=0)
    with pytest.raises(ValueError, match="skip"):
        replay(EVENTS, "t", cluster.bootstrap_servers, skip=-1)


def test_cli_replays_with_limit(cluster):
    topic = new_topic(cluster)
    r = subprocess.run([sys.executable, "-m", "kafkalab.cli", "replay", str(EVENTS), "--bootstrap-server",
                        cluster.bootstrap_servers, "--topic", topic, "--limit", "40", "--rate", "1000"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "replayed 40 events" in r.stdout and topic in r.stdout and "offsets p" in r.stdout
    assert len(read_all(cluster, topic, 40)) == 40


def test_cli_reports_a_missing_file(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kafkalab.cli", "replay", str(tmp_path / "nope.jsonl"),
                        "--bootstrap-server", "127.0.0.1:1", "--topic", "t"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert r.returncode == 1 and "nope.jsonl" in r.stderr


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_progress_rewrites_one_line_at_most_every_interval_and_erases_it():
    clock = MockTime()
    term = Terminal()
    progress = TerminalProgress(term, clock, total=100, interval_s=0.5)
    progress(0)                         # the first event is shown at once
    clock.sleep(100)
    progress(1)                         # 0.1 s later: not yet
    clock.sleep(400)
    progress(2)
    assert term.getvalue() == "\rsent 1/100 events (- events/s)\rsent 3/100 events (6 events/s)"
    progress.close()
    assert term.getvalue().endswith("\r" + " " * len("sent 3/100 events (6 events/s)") + "\r")


def test_cli_shows_progress_on_a_terminal_only(cluster):
    from kafkalab.tools import replay as tool
    args = argparse.Namespace(file=str(EVENTS), topic=new_topic(cluster), bootstrap_server=cluster.bootstrap_servers,
                              rate=None, key_field="user_id", timestamp="event-time", limit=20, skip=0,
                              producer_property=[])
    out, term, pipe = io.StringIO(), Terminal(), io.StringIO()
    assert tool.run(args, out, term) == 0
    assert term.getvalue().startswith("\rsent 1/20 events (") and term.getvalue().endswith("\r")
    assert tool.run(args, io.StringIO(), pipe) == 0
    assert pipe.getvalue() == "" and "replayed 20 events" in out.getvalue()
