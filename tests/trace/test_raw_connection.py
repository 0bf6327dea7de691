"""RawConnection: frames out as given, frames back without their size, a close noticed."""
import socket
import struct
import threading

from kafkalab.trace import RawConnection


def _echo_once(server: socket.socket) -> None:
    """Answer the first size-prefixed frame with the same bytes reversed, then hang up."""
    conn, _ = server.accept()
    with conn:
        size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
        body = conn.recv(size, socket.MSG_WAITALL)
        conn.sendall(struct.pack(">i", len(body)) + body[::-1])


def test_send_receive_and_close():
    with socket.create_server(("127.0.0.1", 0)) as server:
        thread = threading.Thread(target=_echo_once, args=(server,), daemon=True)
        thread.start()
        host, port = server.getsockname()
        with RawConnection(f"{host}:{port}") as conn:
            conn.send(b"\x00\x01abc")
            assert conn.receive(5.0) == b"cba\x01\x00"
            assert conn.readable(5.0)                     # the close arrives
            assert conn.receive(5.0) is None and conn.closed
        thread.join(5.0)
