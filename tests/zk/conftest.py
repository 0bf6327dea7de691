import pytest

from kafkalab.common import MockScheduler, MockTime
from kafkalab.zk import ZkStore

TIMEOUT_MS = 6000  # within ZooKeeper's default [4000, 40000] negotiation window
TICK_MS = 2000     # the store's default tickTime
# a session last heard at a tick boundary expires in the bucket after timeout: timeout + one tick later
EXPIRY_MS = TIMEOUT_MS + TICK_MS


@pytest.fixture
def time():
    return MockTime()


@pytest.fixture
def store(time):
    """A store whose sessions expire only when a test calls expire_sessions()."""
    return ZkStore(time=time)


@pytest.fixture
def ticking_store(time):
    """A store with a MockScheduler: the expiry check runs every tick as the MockTime advances."""
    s = ZkStore(time=time, scheduler=MockScheduler(time))
    yield s
    s.close()


class Recorder:
    """A watcher that records what it hears."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    @property
    def types(self):
        return [e.type.name if e.path is not None else e.state.name for e in self.events]


@pytest.fixture
def recorder():
    return Recorder
