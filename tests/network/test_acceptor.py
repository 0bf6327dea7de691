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
