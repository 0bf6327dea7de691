"""KAFKALAB_REQUIRE_SPECS=1 (set by .ci/run) turns missing Kafka message specs from a skip into a failure.

``specs.py`` raises while it is imported, so every test module that reads the specs fails to collect (pytest
exits non-zero) instead of skipping. Each test runs a fresh copy of ``specs.py`` with the environment it sets.
"""
import runpy
from pathlib import Path

import pytest

SPECS_PY = str(Path(__file__).with_name("specs.py"))


@pytest.fixture
def missing_specs(tmp_path, monkeypatch):
    where = tmp_path / "no-such-specs"
    monkeypatch.setenv("KAFKALAB_SPECS_DIR", str(where))
    monkeypatch.delenv("KAFKALAB_REQUIRE_SPECS", raising=False)
    return where


def test_missing_specs_fail_when_required(missing_specs, monkeypatch):
    monkeypatch.setenv("KAFKALAB_REQUIRE_SPECS", "1")
    with pytest.raises(RuntimeError, match="KAFKALAB_REQUIRE_SPECS=1, but Kafka's JSON message specs not found") as e:
        runpy.run_path(SPECS_PY)
    assert str(missing_specs) in str(e.value)


def test_missing_specs_skip_otherwise(missing_specs):
    specs = runpy.run_path(SPECS_PY)
    assert not specs["HAVE_SPECS"] and not specs["REQUIRE_SPECS"]
    mark = specs["needs_specs"].mark
    assert mark.name == "skipif" and mark.args == (True,) and str(missing_specs) in mark.kwargs["reason"]
