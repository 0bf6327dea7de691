"""Three brokers whose only listener is SASL_PLAINTEXT: the controller's channel and the replica fetchers log in
with sasl.mechanism.inter.broker.protocol and the listener's JAAS username/password; replication works."""
from __future__ import annotations

import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import Admin, NewTopic, Producer
from kafkalab.security.jaas import jaas_line
from kafkalab.server.sasl_listeners import sasl_plaintext_overrides


def _client(cluster, **extra):
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas_line("PLAIN", "alice", "alice-secret"), **extra}


def _wait(predicate, seconds=15.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_three_brokers_replicate_over_sasl_plain():
    with Cluster(brokers=3, overrides=sasl_plaintext_overrides({"alice": "alice-secret"})) as c:
        with Admin(_client(c)) as admin:
            admin.create_topics([NewTopic("replicated", 1, 3)])
        with Producer(_client(c, acks="all")) as p:
            for i in range(20):
                p.send("replicated", str(i).encode()).result(10)
        # every replica caught up through a fetcher that logged in
        assert _wait(lambda: all(b.replica_manager.get_partition("replicated", 0) is not None and
                                 b.replica_manager.get_partition("replicated", 0).log.log_end_offset == 20
                                 for b in c.brokers.values()))
        fetchers = set()
        for broker in c.brokers.values():
            records = broker.channel.request_log.records
            fetchers |= {r.principal for r in records if r.api_name == "Fetch" and "fetcher" in (r.client_id or "")}
            controller = {r.principal for r in records if r.api_name in ("LeaderAndIsr", "UpdateMetadata")}
            assert controller == {"User:admin"}
        assert fetchers == {"User:admin"}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_inter_broker_once_the_admin_user_exists(mechanism):
    """As Kafka's docs say for SCRAM between brokers: the brokers' user must exist in the store; until it does,
    the controller cannot reach the brokers; created (here over PLAIN), it logs in and leaders appear."""
    from kafkalab.clients import ScramCredentialInfo, UserScramCredentialUpsertion

    overrides = sasl_plaintext_overrides({"alice": "alice-secret"}, inter_broker_mechanism=mechanism)
    with Cluster(brokers=1, overrides=overrides, wait_for_metadata=False) as c:   # the controller cannot log in yet
        with Admin(_client(c)) as admin:
            assert admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "admin", ScramCredentialInfo(mechanism, 4096), "admin-secret")]) == {"admin": None}
            admin.create_topics([NewTopic("scram-ib", 1, 1)])
        with Producer(_client(c)) as p:
            assert p.send("scram-ib", b"v").result(20).offset == 0
        records = c.brokers[0].channel.request_log.records
        assert "User:admin" in {r.principal for r in records if r.api_name == "LeaderAndIsr"}
