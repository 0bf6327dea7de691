"""A broker with three listeners at once -- PLAINTEXT (inter-broker), SSL, and MTLS (SSL with required client
certificates) -- and kafkalab's own clients over TLS: produce and consume, the endpoints each listener
advertises, record data that must not be sendfile'd past TLS, and the start-up checks of a TLS listener."""
from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import time

import pytest

from kafkalab import Cluster
from kafkalab.clients import Admin, Consumer, Producer, TopicPartition
from kafkalab.clients.errors import SslAuthenticationException
from kafkalab.common.config import ConfigException
from kafkalab.network import response_send
from kafkalab.protocol import ApiKey, decode_response, encode_request, make_request, request_class
from kafkalab.security.ssl_factory import NO_KEYSTORE_MESSAGE

from ._pki import make_pki

Metadata = request_class(ApiKey.METADATA)
FindCoordinator = request_class(ApiKey.FIND_COORDINATOR)
DescribeCluster = request_class(ApiKey.DESCRIBE_CLUSTER)
Fetch = request_class(ApiKey.FETCH)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(pki):
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        **pki.broker_configs()}
    with Cluster(brokers=1, overrides=overrides) as c:
        yield c


def port_of(cluster, listener: str) -> int:
    return cluster.broker(0).socket_server.bound_port(listener)


def ssl_configs(cluster, pki, listener="SSL", *, certificate=False) -> dict:
    configs = {"bootstrap.servers": f"localhost:{port_of(cluster, listener)}", "security.protocol": "SSL",
               "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.broker_files.ca)}
    if certificate:
        configs.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.alice_files.keystore)})
    return configs


def produce_and_consume(configs: dict, topic: str, values: list[bytes]) -> list[bytes]:
    with Producer({**configs, "linger.ms": 5}) as p:
        for f in [p.send(topic, v, partition=0) for v in values]:
            f.result(15)
    with Consumer({**configs, "fetch.max.wait.ms": 100}) as c:
        c.assign([TopicPartition(topic, 0)])
        c.seek(TopicPartition(topic, 0), 0)
        got: list = []
        for _ in range(100):
            got += [r.value for r in c.poll(0.2)]
            if len(got) >= len(values):
                break
    return got


def call(sock, body, version: int, api_key: int):
    sock.sendall(encode_request(make_request(body, api_version=version, correlation_id=3, client_id="t"),
                                size_prefix=True))
    head = _read(sock, 4)
    return decode_response(_read(sock, struct.unpack(">i", head)[0]), api_key, version).body


def _read(sock, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "closed by the broker"
        out += chunk
    return out


def connect(cluster, pki, listener: str):
    raw = socket.create_connection(("127.0.0.1", port_of(cluster, listener)), timeout=10)
    if listener == "PLAINTEXT":
        return raw
    context = ssl.create_default_context(cafile=str(pki.broker_files.ca))
    if listener == "MTLS":
        context.load_cert_chain(str(pki.alice_files.keystore))
    return context.wrap_socket(raw, server_hostname="localhost")


# -- kafkalab's clients over TLS ------------------------------------------------------------------------------------
def test_kafkalab_clients_produce_and_consume_over_ssl_and_mtls(cluster, pki):
    cluster.create_topic("over-ssl", 1)
    assert produce_and_consume(ssl_configs(cluster, pki), "over-ssl", [b"a", b"b"]) == [b"a", b"b"]
    cluster.create_topic("over-mtls", 1)
    assert produce_and_consume(ssl_configs(cluster, pki, "MTLS", certificate=True), "over-mtls", [b"c"]) == [b"c"]


def test_a_client_that_does_not_trust_the_broker_fails_cleanly(cluster, pki):
    untrusting = {**ssl_configs(cluster, pki), "ssl.truststore.location": str(pki.other_ca),
                  "default.api.timeout.ms": 2000, "request.timeout.ms": 1000}
    with Admin(untrusting) as admin:
        with pytest.raises(SslAuthenticationException, match="SSL handshake failed .*CERTIFICATE_VERIFY_FAILED"):
            admin.create_topics([("never", 1, 1)])
    del untrusting["default.api.timeout.ms"]
    with Producer({**untrusting, "max.block.ms": 20_000}) as producer:
        started = time.monotonic()
        with pytest.raises(SslAuthenticationException):
            producer.send("never", b"x").result(30)
        assert time.monotonic() - started < 10     # not retried until max.block.ms: it cannot get better


def test_the_mtls_listener_refuses_a_client_without_a_certificate(cluster, pki):
    raw = socket.create_connection(("127.0.0.1", port_of(cluster, "MTLS")), timeout=5)
    context = ssl.create_default_context(cafile=str(pki.broker_files.ca))     # trusts the broker, no certificate
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError)):
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            call(sock, Metadata(topics=()), 12, ApiKey.METADATA)


def test_a_tls_client_on_the_plaintext_port_is_closed_and_the_broker_goes_on(cluster, pki, caplog):
    """The ClientHello's first bytes (0x16 0x03 0x01 ...) read as a frame size of ~369 MB: above
    socket.request.max.bytes, so the broker closes the connection without allocating anything."""
    raw = socket.create_connection(("127.0.0.1", port_of(cluster, "PLAINTEXT")), timeout=5)
    context = ssl.create_default_context(cafile=str(pki.broker_files.ca))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        context.wrap_socket(raw, server_hostname="localhost")
    raw.close()
    with connect(cluster, pki, "PLAINTEXT") as sock:
        assert call(sock, Metadata(topics=()), 12, ApiKey.METADATA).brokers
    assert "Invalid receive (size = 3" in caplog.text


# -- one broker, several listeners: answers name the listener the request came in on -------------------------------
@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL", "MTLS"])
def test_metadata_find_coordinator_and_describe_cluster_answer_with_the_listener_asked_on(cluster, pki, listener):
    expected = port_of(cluster, listener)
    with connect(cluster, pki, listener) as sock:
        metadata = call(sock, Metadata(topics=()), 12, ApiKey.METADATA)
        assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", expected)]
        described = call(sock, DescribeCluster(include_cluster_authorized_operations=False), 0,
                         ApiKey.DESCRIBE_CLUSTER)
        assert [(b.host, b.port) for b in described.brokers] == [("127.0.0.1", expected)]
        for _ in range(50):     # the first FindCoordinator creates __consumer_offsets
            found = call(sock, FindCoordinator(key_type=0, coordinator_keys=("g",)), 4, ApiKey.FIND_COORDINATOR)
            if found.coordinators[0].error_code == 0:
                break
        assert (found.coordinators[0].host, found.coordinators[0].port) == ("127.0.0.1", expected)


# -- record data and TLS: never sendfile -------------------------------------------------------------------------
def test_large_records_are_copied_through_tls_never_sendfiled_past_it(cluster, pki, monkeypatch):
    direct = []
    original = response_send._sendfile_while_it_takes

    def spy(out_fd, in_fd, position, count):
        direct.append(count)
        return original(out_fd, in_fd, position, count)
    monkeypatch.setattr(response_send, "_sendfile_while_it_takes", spy)
    values = [bytes([i]) * 200_000 for i in range(3)]     # each fetch slice far above SENDFILE_THRESHOLD
    cluster.create_topic("large-over-ssl", 1)
    assert produce_and_consume(ssl_configs(cluster, pki), "large-over-ssl", values) == values
    assert direct == []
    plaintext = {"bootstrap.servers": f"127.0.0.1:{port_of(cluster, 'PLAINTEXT')}"}
    with Consumer({**plaintext, "fetch.max.wait.ms": 100}) as c:     # the same data in the clear: sendfile
        c.assign([TopicPartition("large-over-ssl", 0)])
        c.seek(TopicPartition("large-over-ssl", 0), 0)
        got: list = []
        for _ in range(100):
            got += [r.value for r in c.poll(0.2)]
            if len(got) >= len(values):
                break
    assert got == values and direct


def test_the_send_counters_show_tls_copied_everything_and_plaintext_used_sendfile(cluster, pki):
    """One Fetch of the same large slice on each listener: over SSL no byte went by sendfile and every byte of
    the slice was read into the process (``copied-file-bytes-total``); over PLAINTEXT the slice went by sendfile."""
    value = bytes(range(256)) * 1200                        # 300 KiB: one slice above SENDFILE_THRESHOLD
    cluster.create_topic("counted-over-ssl", 1)
    tls = ssl_configs(cluster, pki)
    with Producer({**tls, "linger.ms": 5}) as p:
        p.send("counted-over-ssl", value, partition=0).result(15)
    broker = cluster.broker(0)
    fetch = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                  session_epoch=-1, topics=(Fetch.FetchTopic(topic="counted-over-ssl", partitions=(
                      Fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),),
                  forgotten_topics_data=(), rack_id="")
    seen = {}
    for listener in ("SSL", "PLAINTEXT"):
        before = send_counters(broker, listener)
        with connect(cluster, pki, listener) as sock:
            records = call(sock, fetch, 12, ApiKey.FETCH).responses[0].partitions[0].records
        deadline = time.monotonic() + 5
        while True:     # a sendfile counts once done, maybe after the client read the last byte
            delta = {k: v - before[k] for k, v in send_counters(broker, listener).items()}
            if delta["sendfile-bytes-total"] + delta["copied-file-bytes-total"] >= len(records) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        seen[listener] = (len(records), delta)
    size, tls_delta = seen["SSL"]
    assert size > 64 * 1024
    assert tls_delta["sendfile-bytes-total"] == 0 and tls_delta["sendfile-sends-total"] == 0
    assert tls_delta["copied-file-bytes-total"] == size and tls_delta["copied-bytes-total"] > size
    size, clear_delta = seen["PLAINTEXT"]
    assert clear_delta["sendfile-bytes-total"] == size and clear_delta["sendfile-sends-total"] == 1
    assert clear_delta["copied-file-bytes-total"] == 0


def send_counters(broker, listener: str) -> dict:
    metrics = broker.metrics()
    return {name: metrics.get(f"{name},listener={listener}", 0)
            for name in ("sendfile-bytes-total", "sendfile-sends-total", "copied-bytes-total",
                         "copied-file-bytes-total")}


# -- start-up checks -----------------------------------------------------------------------------------------------
def test_an_ssl_listener_without_a_keystore_refuses_to_start():
    with pytest.raises(ConfigException, match=NO_KEYSTORE_MESSAGE.replace(".", r"\.")):
        Cluster(brokers=1, overrides={"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}).start()


def test_a_jks_keystore_refuses_to_start(pki):
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", **pki.broker_configs(),
                 "listener.name.ssl.ssl.keystore.type": "JKS"}
    with pytest.raises(ConfigException, match="kafkalab reads PEM key stores only"):
        Cluster(brokers=1, overrides=overrides).start()


def test_kafkalab_broker_exits_non_zero_for_an_ssl_listener_without_a_keystore(tmp_path):
    result = subprocess.run([sys.executable, "-m", "kafkalab.cli", "broker", "--override", "listeners=SSL://127.0.0.1:0",
                             "--override", "security.inter.broker.protocol=SSL", "--override",
                             f"log.dirs={tmp_path / 'logs'}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert NO_KEYSTORE_MESSAGE in result.stderr
    assert "Traceback" not in result.stderr


# -- brokers among themselves over TLS ----------------------------------------------------------------------------
def test_brokers_talk_to_each_other_over_an_ssl_inter_broker_listener_with_client_certificates(pki):
    overrides = {"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
                 **pki.broker_configs(client_auth="required")}
    with Cluster(brokers=2, overrides=overrides) as c:
        c.create_topic("replicated", 1, replication_factor=2)
        assert c.wait_until(lambda: len(c.partition_state("replicated", 0)["isr"]) == 2, timeout=20)
        port = c.broker(0).socket_server.bound_port("SSL")
        configs = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
                   "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.broker_files.ca),
                   "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.alice_files.keystore)}
        assert produce_and_consume(configs, "replicated", [b"x", b"y"]) == [b"x", b"y"]


def test_a_fetch_response_larger_than_the_socket_buffer_arrives_whole_over_tls(pki, monkeypatch):
    """As tests/broker/test_sendfile.py, through TLS: a tiny send buffer and a client that reads late, so the
    copy through the TLS layer has to wait for room again and again."""
    from kafkalab.records import build_batch, decode_batches
    Produce, Fetch = request_class(ApiKey.PRODUCE), request_class(ApiKey.FETCH)
    monkeypatch.setattr(response_send, "_sendfile_while_it_takes", lambda *a: pytest.fail("sendfile past TLS"))
    values = [bytes([i]) * 200_000 for i in range(4)]   # one batch under message.max.bytes
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "socket.send.buffer.bytes": "4096",
                 **pki.broker_configs()}
    with Cluster(brokers=1, overrides=overrides) as c:
        c.create_topic("big-tls", 1)
        with connect(c, pki, "SSL") as sock:
            batch = build_batch([(b"k", v, [], 1_700_000_000_000) for v in values])
            produced = call(sock, Produce(transactional_id=None, acks=1, timeout_ms=5000, topic_data=(
                Produce.TopicProduceData(name="big-tls", partition_data=(
                    Produce.PartitionProduceData(index=0, records=batch),)),)), 9, ApiKey.PRODUCE)
            assert produced.responses[0].partition_responses[0].error_code == 0
            fetch = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, isolation_level=0,
                          session_id=0, session_epoch=-1, topics=(Fetch.FetchTopic(topic="big-tls", partitions=(
                              Fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=8 << 20),)),),
                          forgotten_topics_data=(), rack_id="")
            sock.sendall(encode_request(make_request(fetch, api_version=12, correlation_id=4, client_id="t"),
                                        size_prefix=True))
            time.sleep(0.3)                      # let the broker fill its send buffer and wait
            size = struct.unpack(">i", _read(sock, 4))[0]
            body = decode_response(_read(sock, size), ApiKey.FETCH, 12).body
    [partition] = body.responses[0].partitions
    assert [r.value for b in decode_batches(partition.records) for r in b.records] == values
