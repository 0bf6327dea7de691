"""Lab 06 section 12: zero-copy -- one Fetch in the clear and one through TLS.

Theory of operation
-------------------
A broker answers a Fetch with the bytes of its log file as they are (section 2). On a PLAINTEXT connection the
socket server hands a large file slice to the kernel with ``sendfile`` (page cache -> socket, the broker process
never holds the bytes: Kafka's ``FileRecords.writeTo`` -> ``FileChannel.transferTo``); on an SSL connection the
bytes must be encrypted in the process, so they are read and copied through the TLS layer (Kafka's
``SslTransportLayer.transferFrom``). The broker counts which way its response bytes went, per listener
(:class:`kafkalab.network.response_send.SendCounters`, in ``broker.metrics()``; kafkalab's own counters, Kafka
has no such metric). This module sets up the two listeners and measures one Fetch on each:

* :func:`two_listener_overrides` -- a lab CA and a broker certificate, and broker settings for a PLAINTEXT and
  an SSL listener for clients next to a REPLICATION listener for the broker's own traffic (so that nothing but
  the lab's Fetch is counted on the two it measures);
* :func:`fetch_once` -- one Fetch v12 on a new connection (TLS when a CA file is given): the response frame;
* :func:`measure_fetch` -- the listener's counters before and after one Fetch, waiting until the response's
  every byte is counted (the broker counts a sendfile when it has finished, which may be after the client
  has read the last byte);
* :func:`zero_copy_row` -- one measurement as a row of the lab's table; :data:`COUNTERS` -- the counter names.
"""
from __future__ import annotations

import socket
import ssl
import struct
import time
from pathlib import Path

__all__ = ["COUNTERS", "two_listener_overrides", "listener_address", "listener_counters", "fetch_once", "measure_fetch",
           "zero_copy_row"]

#: kafkalab's counters of how response bytes left the broker (``broker.metrics()``, also ``,listener=<name>``).
COUNTERS = ("sendfile-bytes-total", "sendfile-sends-total", "copied-bytes-total", "copied-sends-total",
            "copied-file-bytes-total")


def two_listener_overrides(directory) -> tuple[dict, Path]:
    """Broker settings for listeners ``PLAINTEXT`` and ``SSL`` (clients) and ``REPLICATION`` (the broker's own
    connections), with a fresh lab CA and broker certificate written into ``directory``; returns the settings and
    the CA file a client trusts."""
    from kafkalab.security.certs import CertificateAuthority

    ca = CertificateAuthority.create("kafkalab lab CA")
    files = ca.issue("broker", organizational_unit="kafka").write(Path(directory), "broker")
    overrides = {"listeners": "REPLICATION://127.0.0.1:0,PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                 "listener.security.protocol.map": "REPLICATION:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
                 "inter.broker.listener.name": "REPLICATION",
                 "ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.keystore)}
    return overrides, files.ca


def listener_address(broker, listener: str) -> str:
    """``host:port`` of one listener of ``broker`` (its port is chosen at start-up)."""
    return f"127.0.0.1:{broker.socket_server.bound_port(listener)}"


def listener_counters(broker, listener: str) -> dict[str, int]:
    """The broker's send counters of one listener (0 before its first response)."""
    metrics = broker.metrics()
    return {name: int(metrics.get(f"{name},listener={listener}", 0)) for name in COUNTERS}


def fetch_once(port: int, topic: str, *, partition: int = 0, max_bytes: int = 64 << 20,
               ca_file=None, timeout: float = 20.0) -> bytes:
    """One Fetch v12 of ``topic``/``partition`` from offset 0 on a new connection to ``127.0.0.1:port`` (TLS,
    trusting ``ca_file``, when given); returns the response frame (size prefix excluded)."""
    from kafkalab.protocol import ApiKey, encode_request, make_request, request_class

    Fetch = request_class(ApiKey.FETCH)
    body = Fetch(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, isolation_level=0, session_id=0,
                 session_epoch=-1, topics=(Fetch.FetchTopic(topic=topic, partitions=(Fetch.FetchPartition(
                     partition=partition, fetch_offset=0, partition_max_bytes=max_bytes),)),),
                 forgotten_topics_data=(), rack_id="")
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock = raw
    if ca_file is not None:
        sock = ssl.create_default_context(cafile=str(ca_file)).wrap_socket(raw, server_hostname="localhost")
    with sock:
        sock.sendall(encode_request(make_request(body, api_version=12, correlation_id=1, client_id="kafkalab-lab06"),
                                    size_prefix=True))
        (size,) = struct.unpack(">i", _exactly(sock, 4))
        return _exactly(sock, size)


def _exactly(sock, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError(f"the broker closed the connection {n - got} bytes short")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def measure_fetch(broker, listener: str, topic: str, *, ca_file=None, timeout: float = 10.0) -> dict:
    """One :func:`fetch_once` on ``listener`` of ``broker``; returns the records' size, the response's size
    (prefix included), the records themselves and what the listener's counters added, once every byte of the
    response is counted."""
    from kafkalab.protocol import ApiKey, decode_response

    before = listener_counters(broker, listener)
    frame = fetch_once(broker.socket_server.bound_port(listener), topic, ca_file=ca_file)
    response_bytes = 4 + len(frame)
    deadline = time.monotonic() + timeout
    while True:
        after = listener_counters(broker, listener)
        delta = {name: after[name] - before[name] for name in COUNTERS}
        counted = delta["sendfile-bytes-total"] + delta["copied-bytes-total"]
        if counted >= response_bytes or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    partition = decode_response(frame, ApiKey.FETCH, 12).body.responses[0].partitions[0]
    if partition.error_code:
        raise RuntimeError(f"Fetch failed with error code {partition.error_code}")
    records = bytes(partition.records)
    return {"listener": listener, "records bytes": len(records), "response bytes": response_bytes,
            "records": records, **delta}


def zero_copy_row(measured: dict) -> dict:
    """The lab's table row for one :func:`measure_fetch`."""
    return {"listener": measured["listener"], "records bytes": measured["records bytes"],
            "response bytes": measured["response bytes"],
            "sent with sendfile": measured["sendfile-bytes-total"],
            "sendfile sends": measured["sendfile-sends-total"],
            "copied by the broker": measured["copied-bytes-total"],
            "copied writes": measured["copied-sends-total"],
            "of which log slices read": measured["copied-file-bytes-total"]}

