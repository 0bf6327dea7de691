"""The acceptor closes cleanly while an accept is pending.

A cancelled ``sock_accept`` unregisters its reader only in a callback the loop runs later. If the listening socket
is closed before that, the loop still watches a descriptor number that is free again: when a restarted broker's
new socket takes that number and becomes readable, the loop calls the dead accept, which logs
``InvalidStateError`` (seen intermittently when a cluster restarts its controller broker).
"""
from __future__ import annotations

import asyncio

from kafkalab.network.acceptor import Acceptor, open_server_sockets
from kafkalab.network.endpoint import EndPoint
from tests.network.test_connection_quotas import quotas


def test_close_with_an_accept_pending_leaves_no_reader_registered():
    errors = []

    async def scenario():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        sockets = open_server_sockets("127.0.0.1", 0)
        acceptor = Acceptor(EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"), sockets, quotas(), serve=None)
        acceptor.start()
        await asyncio.sleep(0.05)          # the acceptor now waits in sock_accept
        descriptors = [s.fileno() for s in sockets]
        acceptor.close()
        # nothing is watched any more by the time the socket is closed (remove_reader says whether it was)
        assert [loop.remove_reader(fd) for fd in descriptors] == [False] * len(descriptors)
        assert all(s.fileno() == -1 for s in sockets)
        await acceptor.wait_closed()

    asyncio.run(scenario())
    assert errors == []


def test_a_connection_accepted_as_the_acceptor_is_cancelled_is_closed_not_leaked(monkeypatch):
    """The kernel hands over a connection, and before the acceptor's task runs again the broker stops (cancels it):
    that socket must be closed -- left open, its client waits for an answer nobody will read."""
    import socket

    import kafkalab.network.acceptor as acceptor_module

    pending = {}

    def accept_one(loop, listening):
        pending["future"] = loop.create_future()
        return pending["future"]

    monkeypatch.setattr(acceptor_module, "_accept_one", accept_one)

    async def scenario():
        server_side, client_side = socket.socketpair()
        sockets = open_server_sockets("127.0.0.1", 0)
        acceptor = Acceptor(EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"), sockets, quotas(), serve=None)
        acceptor.start()
        await asyncio.sleep(0.01)                       # the task waits on the accept future
        pending["future"].set_result((server_side, ("127.0.0.1", 5555)))
        acceptor.close()                                # in the same step: the task has not resumed yet
        await acceptor.wait_closed()
        assert server_side.fileno() == -1
        client_side.settimeout(1)
        assert client_side.recv(1) == b""               # the client sees the close at once
        client_side.close()

    asyncio.run(scenario())
