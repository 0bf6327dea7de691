"""``benchmarks/tap.py`` runs end to end at a tiny size: every route, the latency runs, the perf-tool comparison,
the report with its targets, and no failed run (the figures of so small a run mean nothing and are not checked)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.interop, pytest.mark.slow]


def test_tap_benchmark_runs_end_to_end_at_a_tiny_size():
    env = {**os.environ, "PYTHONPATH": REPO}
    run = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "tap.py"), "--records", "300",
                          "--latency", "5", "--perf-records", "200", "--rounds", "1"],
                         capture_output=True, text=True, timeout=240, env=env, cwd=REPO)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-3000:]
    assert "PROBLEM" not in out
    for route in ("direct", "process", "thread"):
        assert f"round 1 {route} " in out
    for client in ("perf-tool", "kafka-python", "kafkalab-producer"):
        assert f"round 1 {client} " in out
    assert "process  / direct: produce " in out and "thread   / direct: produce " in out
    assert "tap process on exit: " in out and " 0 dropped" in out
    targets = out.split("Targets:")[1]
    assert targets.count("tap (process)") == 2 and "tap (thread)" not in targets   # reported, not judged
    assert "producer-perf-test >= 0.8x kafka-python's producer" in targets
