"""What security costs kafkalab, in one run: throughput per security protocol, SCRAM logins, the ACL authorizer.

    .venv/bin/python benchmarks/security.py                 # 50,000 records per run, 3 rounds, 8 A/B rounds
    .venv/bin/python benchmarks/security.py --quick         # 10,000 records, 1 round, 2 A/B rounds (rough numbers)
    .venv/bin/python benchmarks/security.py --records 100000 --rounds 5 --acls 10000 --acl-rounds 12

One kafkalab broker process listens on four sockets at once -- PLAINTEXT, SASL_PLAINTEXT, SSL and SASL_SSL, a
listener of each name -- with a lab CA's certificate (``kafkalab.security.certs``) and SASL users for PLAIN and
SCRAM-SHA-256 (the SCRAM user created with AlterUserScramCredentials, 4096 iterations). confluent-kafka
(librdkafka) does the same work through each listener, the listeners in rotating order every round, each on a
fresh one-partition topic: produce ``--records`` values of 1 KiB (acks=1, ``linger.ms=5``, ``batch.size``
1 MB, as ``broker.py``'s tuned profile) and consume them back (``assign()`` from offset 0). SASL runs log in with
SCRAM-SHA-256. Before the first round, every listener is run once with a tenth of the records, untimed.

**Logins.** ``--logins`` times, a fresh AdminClient asks for metadata through the SASL_PLAINTEXT listener with
SCRAM-SHA-256, and the same through PLAINTEXT: the difference of the medians is what a SCRAM login adds to a
connection (client and broker side), and the broker's CPU per login is read from ``/proc``.

**Authorizer.** Two more brokers run side by side, alike but for one thing: B has
``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` with ``--acls`` ACLs (literal and prefixed, on
other topics and principals, created through the admin protocol in requests of 1,000; the time it takes is
reported) plus the ones that let user ``bench`` create, describe, write and read; A has no authorizer. ``bench``
produces through SASL_PLAINTEXT (PLAIN, so the login costs nothing measurable) to A and to B in alternating
order (A B, B A, A B, ...: a drift of the machine over the run weighs on both alike) for ``--acl-rounds``
rounds, after an untimed warm-up of each; the cost is per round ``1 - B / A``, reported as the median with
its range. One run produces only (the authorizer's question is WRITE on the topic, asked per partition of
every Produce). The controller's principal (PLAINTEXT inter-broker listener, ``User:ANONYMOUS``) is a super
user.

Targets (issue 16): TLS at least 0.5x PLAINTEXT throughput; a SCRAM login under 20 ms at 4096 iterations; the
authorizer with 10,000 ACLs costs under 5% of produce throughput. Figures are medians of the rounds, with
[min-max]; ratios are per round, then their median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ClientLog, api_versions_ok, consume_run, create_topic, free_port,  # noqa: E402
                     kafkalab_env, print_rows, proc_cpu_seconds, produce_run)

import confluent_kafka as ck  # noqa: E402
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,  # noqa: E402
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SCRAM = ("scram", "scram-secret")
BENCH = ("bench", "bench-secret")
ADMIN = ("admin", "admin-secret")
PRODUCER = {"linger.ms": 5, "batch.size": 1_000_000, "enable.idempotence": False}


class Broker:
    """A ``kafkalab broker`` process with one listener per security protocol (only PLAINTEXT and SASL_PLAINTEXT
    when ``tls`` is None)."""

    def __init__(self, workdir: str, tls_files, authorizer: bool = False):
        self.authorizer = authorizer
        from kafkalab.security.jaas import jaas_line

        self.ports = {p: free_port() for p in (PROTOCOLS if tls_files else PROTOCOLS[:2])}
        self.datadir = tempfile.mkdtemp(dir=workdir)
        props = {"listeners": ",".join(f"{p}://127.0.0.1:{port}" for p, port in self.ports.items()),
                 "log.dirs": os.path.join(self.datadir, "kafka-logs"), "inter.broker.listener.name": "PLAINTEXT",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}
        for listener in [p for p in self.ports if p.startswith("SASL_")]:
            prefix = f"listener.name.{listener.lower()}."
            props[prefix + "plain.sasl.jaas.config"] = jaas_line("PLAIN", *ADMIN, **dict([ADMIN, BENCH]))
            props[prefix + "scram-sha-256.sasl.jaas.config"] = jaas_line("SCRAM-SHA-256", *ADMIN)
        if tls_files is not None:
            props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tls_files.keystore),
                          "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls_files.ca)})
        if authorizer:
            props.update({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                          "super.users": "User:ANONYMOUS;User:admin"})
        argv = [sys.executable, "-m", "kafkalab.cli", "broker"]
        for key, value in props.items():
            argv += ["--override", f"{key}={value}"]
        self.log = open(os.path.join(self.datadir, "broker.log"), "wb")
        self.proc = subprocess.Popen(argv, env=kafkalab_env(), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not api_versions_ok(self.ports["PLAINTEXT"]):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start: see {self.log.name}")
            time.sleep(0.05)

    def bootstrap(self, protocol: str) -> str:
        return f"127.0.0.1:{self.ports[protocol]}"

    def cpu(self) -> Optional[float]:
        return proc_cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def client_security(protocol: str, ca: str, login=SCRAM, mechanism: str = "SCRAM-SHA-256") -> dict:
    conf = {"security.protocol": protocol}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = ca
    if protocol.startswith("SASL_"):
        conf.update({"sasl.mechanism": mechanism, "sasl.username": login[0], "sasl.password": login[1]})
    return conf


def create_scram_user(broker: Broker, clog: ClientLog) -> None:
    admin = AdminClient(clog.config(broker.bootstrap("PLAINTEXT")))
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            SCRAM[0], ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), SCRAM[1].encode())]).values():
        f.result(30)


def throughput(broker: Broker, protocol: str, ca: str, records: int, tag: str, clog: ClientLog,
               login=SCRAM, mechanism: str = "SCRAM-SHA-256") -> dict:
    topic = f"sec-{protocol.lower()}-{tag}"
    create_topic(broker.bootstrap("PLAINTEXT"), topic, clog)
    sec = client_security(protocol, ca, login, mechanism)
    p = produce_run(broker.bootstrap(protocol), topic, records, "1", clog, producer={**PRODUCER, **sec})
    c = consume_run(broker.bootstrap(protocol), topic, records, clog, consumer={"group.id": "sec-bench", **sec})
    if p["failed"] or not c["complete"]:
        raise RuntimeError(f"{protocol}: {p['failed']} records failed, consume complete={c['complete']}")
    return {"produce": p["rps"], "consume": c["rps"]}


def logins(broker: Broker, ca: str, n: int, clog: ClientLog) -> dict:
    """Median time for a fresh client to connect and get metadata, PLAINTEXT vs SCRAM-SHA-256; broker CPU."""
    out = {}
    for protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        times = []
        cpu0 = broker.cpu()
        for _ in range(n):
            t0 = time.perf_counter()
            AdminClient(clog.config(broker.bootstrap(protocol), **client_security(protocol, ca))).list_topics(
                timeout=10)
            times.append(time.perf_counter() - t0)
        cpu1 = broker.cpu()
        out[protocol] = (statistics.median(times), (cpu1 - cpu0) / n if cpu0 is not None else None)
    return out


def add_acls(broker: Broker, n: int, clog: ClientLog) -> None:
    """``n`` ACLs for other principals on 1,000 other resource patterns (500 topic names, literal and prefixed:
    Kafka keeps a resource's ACLs in one znode), then bench's own."""
    admin = AdminClient(clog.config(broker.bootstrap("PLAINTEXT")))
    bindings = []
    for i in range(n):
        pattern = ResourcePatternType.PREFIXED if i % 3 == 0 else ResourcePatternType.LITERAL
        bindings.append(AclBinding(ResourceType.TOPIC, f"other-{i % 500}", pattern, f"User:user-{i}",
                                   "*", AclOperation.WRITE if i % 2 else AclOperation.READ,
                                   AclPermissionType.ALLOW))
    for op in (AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.READ):
        bindings.append(AclBinding(ResourceType.TOPIC, "sec-", ResourcePatternType.PREFIXED, f"User:{BENCH[0]}", "*",
                                   op, AclPermissionType.ALLOW))
    bindings.append(AclBinding(ResourceType.GROUP, "sec-bench", ResourcePatternType.LITERAL, f"User:{BENCH[0]}", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))
    for start in range(0, len(bindings), 1000):
        for f in admin.create_acls(bindings[start:start + 1000], request_timeout=300).values():
            f.result(300)


def produce_only(broker: Broker, tag: str, records: int, clog: ClientLog) -> float:
    """``bench`` produces ``records`` through SASL_PLAINTEXT (PLAIN) to a fresh topic: records per second."""
    topic = f"sec-acl-{tag}"
    create_topic(broker.bootstrap("PLAINTEXT"), topic, clog)
    p = produce_run(broker.bootstrap("SASL_PLAINTEXT"), topic, records, "1", clog,
                    producer={**PRODUCER, **client_security("SASL_PLAINTEXT", "", BENCH, "PLAIN")})
    if p["failed"]:
        raise RuntimeError(f"{p['failed']} records failed (authorizer={broker.authorizer})")
    return p["rps"]


def authorizer_ab(plain: Broker, authorized: Broker, records: int, rounds: int, clog: ClientLog) -> tuple:
    """Produce rates without (A) and with (B) the authorizer, A and B in alternating order each round."""
    for broker in (plain, authorized):      # warm-up, untimed
        produce_only(broker, f"warmup-{broker.authorizer}", max(1000, records // 10), clog)
    without, with_acls = [], []
    for r in range(rounds):
        pair = (plain, authorized) if r % 2 == 0 else (authorized, plain)
        for broker in pair:
            rps = produce_only(broker, f"{r}-{broker.authorizer}", records, clog)
            (with_acls if broker.authorizer else without).append(rps)
        cost = 1 - with_acls[-1] / without[-1]
        print(f"  A/B round {r + 1} ({'AB' if r % 2 == 0 else 'BA'}): without {without[-1]:>10,.0f}/s   "
              f"with {with_acls[-1]:>10,.0f}/s   cost {cost:+.1%}")
    return without, with_acls


def spread(values: list) -> str:
    return f"{statistics.median(values):,.0f} [{min(values):,.0f}-{max(values):,.0f}]"


def ratio(a: list, b: list) -> str:
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.2f}x [{min(r):.2f}-{max(r):.2f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--logins", type=int, default=20)
    ap.add_argument("--acls", type=int, default=10_000)
    ap.add_argument("--acl-rounds", type=int, default=8, help="A/B rounds of the authorizer comparison")
    ap.add_argument("--quick", action="store_true", help="10,000 records, 1 round, 5 logins, 1,000 ACLs, 2 A/B rounds")
    cfg = ap.parse_args(argv)
    if cfg.quick:
        cfg.records, cfg.rounds, cfg.logins, cfg.acls, cfg.acl_rounds = 10_000, 1, 5, 1_000, 2
    from kafkalab.security.certs import CertificateAuthority

    t_start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="kafkalab-security-bench-")
    ca = CertificateAuthority.create()
    files = ca.issue("broker").write(os.path.join(workdir, "pki"), "broker")
    clog = ClientLog()
    print(f"security benchmark: {cfg.records:,} records of 1 KiB per run, {cfg.rounds} round(s), "
          f"{cfg.logins} logins, {cfg.acls:,} ACLs; confluent-kafka {ck.__version__} / librdkafka "
          f"{ck.libversion()[0]}; producer {PRODUCER}, acks=1; SASL runs log in with SCRAM-SHA-256")
    broker = Broker(workdir, files)
    results: dict = {p: {"produce": [], "consume": []} for p in PROTOCOLS}
    try:
        create_scram_user(broker, clog)
        for protocol in PROTOCOLS:      # warm-up, untimed: the first runs of a fresh broker and client are slower
            throughput(broker, protocol, str(files.ca), max(1000, cfg.records // 10), "warmup", clog)
        for r in range(cfg.rounds):
            order = PROTOCOLS[r % 4:] + PROTOCOLS[:r % 4]
            for protocol in order:
                got = throughput(broker, protocol, str(files.ca), cfg.records, f"{r}", clog)
                for k, v in got.items():
                    results[protocol][k].append(v)
                print(f"  round {r + 1} {protocol:15s} produce {got['produce']:>10,.0f}/s   consume "
                      f"{got['consume']:>10,.0f}/s")
        login = logins(broker, str(files.ca), cfg.logins, clog)
    finally:
        broker.stop()
    plain_broker = Broker(workdir, None)
    try:
        authorized = Broker(workdir, None, authorizer=True)
        try:
            t0 = time.perf_counter()
            add_acls(authorized, cfg.acls, clog)
            acl_s = time.perf_counter() - t0
            print(f"  {cfg.acls:,} ACLs created in {acl_s:.1f} s")
            baseline, with_acls = authorizer_ab(plain_broker, authorized, cfg.records, cfg.acl_rounds, clog)
        finally:
            authorized.stop()
    finally:
        plain_broker.stop()

    plain = results["PLAINTEXT"]
    rows = [[p, spread(results[p]["produce"]), spread(results[p]["consume"]),
             ratio(results[p]["produce"], plain["produce"]), ratio(results[p]["consume"], plain["consume"])]
            for p in PROTOCOLS]
    print()
    print_rows(["listener", "produce rec/s", "consume rec/s", "produce vs PLAINTEXT", "consume vs PLAINTEXT"], rows)
    plain_t, plain_cpu = login["PLAINTEXT"]
    scram_t, scram_cpu = login["SASL_PLAINTEXT"]
    scram_ms = (scram_t - plain_t) * 1000
    print(f"\nconnect + metadata, median of {cfg.logins}: PLAINTEXT {plain_t * 1000:.1f} ms, SCRAM-SHA-256 "
          f"{scram_t * 1000:.1f} ms -> a SCRAM login adds {scram_ms:.1f} ms "
          + (f"(broker CPU per connection {plain_cpu * 1000:.1f} ms vs {scram_cpu * 1000:.1f} ms)"
             if plain_cpu is not None and scram_cpu is not None else ""))
    cost = [1 - a / b for a, b in zip(with_acls, baseline)]
    print(f"authorizer: {cfg.acls:,} ACLs created in {acl_s:.1f} s; produce as User:bench (SASL_PLAINTEXT, PLAIN), "
          f"{cfg.acl_rounds} A/B rounds: without an authorizer {spread(baseline)}/s, with it {spread(with_acls)}/s: "
          f"cost (per round) {statistics.median(cost):.1%} [{min(cost):.1%} to {max(cost):.1%}]")
    tls = min(statistics.median([a / b for a, b in zip(results[p][k], plain[k])])
              for p in ("SSL", "SASL_SSL") for k in ("produce", "consume"))
    print("\nTargets:")
    for name, ok, value in (("TLS >= 0.5x PLAINTEXT (worst of SSL/SASL_SSL, produce/consume)", tls >= 0.5,
                             f"{tls:.2f}x"),
                            ("a SCRAM login < 20 ms at 4096 iterations", scram_ms < 20, f"{scram_ms:.1f} ms"),
                            (f"authorizer with {cfg.acls:,} ACLs costs < 5% of produce",
                             statistics.median(cost) < 0.05, f"{statistics.median(cost):.1%}")):
        print(f"  {name:70s} {'MET' if ok else 'MISSED':7s} ({value})")
    print(f"\ntotal time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
