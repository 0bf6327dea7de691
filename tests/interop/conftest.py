"""Fixtures of the real-client tests against the kafkalab broker (``test_broker_*.py``)."""
from __future__ import annotations

import pytest

from kafkalab import Cluster

from ._broker_support import unique


@pytest.fixture(scope="module")
def cluster():
    """One broker per test module (each test uses topics of its own): starting one takes milliseconds."""
    with Cluster(brokers=1) as c:
        yield c


@pytest.fixture
def topic(cluster, request):
    """A fresh two-partition topic named after the test."""
    name = unique(request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60])
    cluster.create_topic(name, 2)
    return name


@pytest.fixture(scope="module")
def txn_cluster():
    """One broker per transaction test module (``test_transactions_*.py``): ``__transaction_state`` with one
    replica, and a short scan for timed-out transactions (:data:`._txn_support.TXN_OVERRIDES`)."""
    from ._txn_support import TXN_OVERRIDES

    with Cluster(brokers=1, overrides=TXN_OVERRIDES) as c:
        yield c
