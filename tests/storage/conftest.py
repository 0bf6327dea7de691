"""Storage tests run on a MockTime/MockScheduler and skip the real fsync system call (the page-cache model still
tracks what would have been fsync'd)."""
import pytest

from kafkalab.common import MockScheduler, MockTime
from kafkalab.storage import file_records

from .helpers import T0, open_log


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    monkeypatch.setattr(file_records, "FSYNC", False)


@pytest.fixture
def clock():
    return MockTime(start_ms=T0)


@pytest.fixture
def scheduler(clock):
    return MockScheduler(clock)


@pytest.fixture
def make_log(tmp_path, clock, scheduler):
    """make_log(config_dict=None, name="topic-0", **UnifiedLog kwargs) -> UnifiedLog in tmp_path."""
    def make(config=None, name="topic-0", **kw):
        kw.setdefault("time", clock)
        kw.setdefault("scheduler", scheduler)
        return open_log(tmp_path / name, config, **kw)
    return make
