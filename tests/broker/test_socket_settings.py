"""socket.send.buffer.bytes / socket.receive.buffer.bytes reach the broker's sockets (SocketServer's own tests
cover the rule; this one covers the wiring from server.properties)."""
from __future__ import annotations

import socket
import time

from kafkalab import Cluster


def test_the_broker_sizes_its_sockets_from_its_config():
    with Cluster(brokers=1, overrides={"socket.send.buffer.bytes": 65536,
                                       "socket.receive.buffer.bytes": 98304}) as cluster:
        server = cluster.broker(0).socket_server
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        before = set(server.connection_ids)
        with socket.create_connection((host, int(port))):
            deadline = time.monotonic() + 5
            while not set(server.connection_ids) - before:
                assert time.monotonic() < deadline, "the broker never saw the connection"
                time.sleep(0.01)
            (conn_id,) = set(server.connection_ids) - before
            sock = server._connections[conn_id].get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (65536, 131072)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (98304, 196608)
