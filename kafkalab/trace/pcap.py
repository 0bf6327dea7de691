"""pcap export and read-back: the tap's recording as a libpcap file that Wireshark/tshark decode as Kafka.

Theory of operation
-------------------
The tap records frames, not packets, so the file is *reconstructed*: for each client connection it writes a
TCP three-way handshake between the client's address and the tap port it connected to, then every frame as
TCP payload (split into segments of at most :data:`MAX_SEGMENT` bytes) with sequence and acknowledgement
numbers that advance by the payload length in each direction, then a FIN from each side. Each packet is a
classic libpcap record (magic ``a1b2c3d4``, version 2.4, link type 1 = Ethernet) with Ethernet II, IPv4 (header
checksum filled in) and TCP headers (checksum left 0, which Wireshark does not verify by default). Timestamps
are the tap's own (wall clock at start + recorded offset). Requests are written as they arrived, responses as
the client received them (rewritten where the tap rewrote them).

:func:`read_pcap` reads such a file (or any Ethernet/IPv4/TCP capture) back: it follows each TCP flow by
sequence number and cuts its payload into Kafka frames with :class:`~kafkalab.protocol.FrameReader`; a flow
whose bytes stop making frames (a bad size) keeps the frames before and is not read further.

Decode with: ``tshark -r tap.pcap -d tcp.port==PORT,kafka``. Mirrors the file format of libpcap
(``pcap-savefile(5)``), not a Kafka class.
"""
from __future__ import annotations

import dataclasses
import socket
import struct
from typing import Iterable

from kafkalab.protocol import DecodeError, FrameReader, InvalidReceiveError, size_prefixed

__all__ = ["MAX_SEGMENT", "PcapFrame", "write_pcap", "read_pcap"]

MAX_SEGMENT = 1460
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
_MAGIC = 0xA1B2C3D4
_LINKTYPE_ETHERNET = 1
_SNAPLEN = 262144
_SYN, _ACK, _PSH, _FIN = 0x02, 0x10, 0x08, 0x01


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f">{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _ip(host: str) -> bytes:
    try:
        return socket.inet_aton(host)
    except OSError:
        return socket.inet_aton(socket.gethostbyname(host))


class _Flow:
    """One TCP connection being written: both ends' addresses and next sequence numbers."""

    def __init__(self, client: tuple[str, int], server: tuple[str, int], number: int):
        self.ends = {"c": (_ip(client[0]), client[1]), "s": (_ip(server[0]), server[1])}
        self.seq = {"c": 1000 + number * 100_000, "s": 5000 + number * 100_000}
        self.ip_id = 0

    def packet(self, side: str, flags: int, payload: bytes = b"") -> bytes:
        other = "s" if side == "c" else "c"
        (src, sport), (dst, dport) = self.ends[side], self.ends[other]
        tcp = struct.pack(">HHIIBBHHH", sport, dport, self.seq[side], self.seq[other], 5 << 4, flags, 65535, 0, 0)
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), self.ip_id, 0x4000, 64, 6, 0,
                         src, dst)
        ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
        eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
        self.seq[side] = (self.seq[side] + len(payload) + (1 if flags & (_SYN | _FIN) else 0)) & 0xFFFFFFFF
        return eth + ip + tcp + payload


def _record(stamp: float, packet: bytes) -> bytes:
    seconds = int(stamp)
    return _RECORD.pack(seconds, int((stamp - seconds) * 1_000_000), len(packet), len(packet)) + packet


def write_pcap(path, frames: Iterable, connections: Iterable, events: Iterable = (), started_at: float = 0.0) -> int:
    """Write the tap's ``frames`` of ``connections`` as a libpcap file; return the number of packets."""
    # Packets are built in time order, so that every acknowledgement number covers only bytes already in the
    # file (index order can differ slightly: the two relays of a connection record on different threads).
    frames = sorted(frames, key=lambda f: (f.time, f.index))
    conns = {c.number: c for c in connections}
    closes = {e.connection: e.time for e in events if e.kind.startswith("closed")}
    flows: dict[int, _Flow] = {}
    packets: list[tuple[float, bytes]] = []
    for f in frames:
        conn = conns.get(f.connection)
        if conn is None:
            continue
        if f.connection not in flows:
            flow = flows[f.connection] = _Flow(conn.client, conn.tap, conn.number)
            t = max(0.0, f.time - 0.000_003)
            packets += [(t, flow.packet("c", _SYN)), (t, flow.packet("s", _SYN | _ACK)), (t, flow.packet("c", _ACK))]
        side = "c" if f.direction == "request" else "s"
        data = size_prefixed(f.frame) if side == "c" else f.wire
        for start in range(0, len(data), MAX_SEGMENT):
            packets.append((f.time, flows[f.connection].packet(side, _PSH | _ACK, data[start:start + MAX_SEGMENT])))
    for number, flow in flows.items():
        if number in closes:
            t = closes[number]
            packets += [(t, flow.packet("c", _FIN | _ACK)), (t, flow.packet("s", _FIN | _ACK)),
                        (t, flow.packet("c", _ACK))]
    packets.sort(key=lambda p: p[0])
    with open(path, "wb") as out:
        out.write(_GLOBAL.pack(_MAGIC, 2, 4, 0, 0, _SNAPLEN, _LINKTYPE_ETHERNET))
        for t, packet in packets:
            out.write(_record(started_at + t, packet))
    return len(packets)


@dataclasses.dataclass(frozen=True)
class PcapFrame:
    """One Kafka frame read back from a capture: when, from where to where, and its bytes (no size prefix)."""

    time: float
    source: tuple[str, int]
    destination: tuple[str, int]
    frame: bytes


def _packets(data: bytes):
    if len(data) < _GLOBAL.size:
        raise DecodeError(f"a pcap file needs a {_GLOBAL.size}-byte header, got {len(data)} bytes", offset=0)
    magic = struct.unpack_from("<I", data)[0]
    if magic not in (_MAGIC, 0xA1B23C4D):
        raise DecodeError(f"not a little-endian libpcap file (magic {magic:#010x})", offset=0)
    scale = 1e-6 if magic == _MAGIC else 1e-9
    link = struct.unpack_from("<I", data, 20)[0]
    if link != _LINKTYPE_ETHERNET:
        raise DecodeError(f"link type {link} is not Ethernet (1)", offset=20)
    pos = _GLOBAL.size
    while pos + _RECORD.size <= len(data):
        sec, frac, incl, _ = _RECORD.unpack_from(data, pos)
        pos += _RECORD.size
        if incl > len(data) - pos:
            raise DecodeError(f"packet of {incl} bytes runs past the end of the file", offset=pos)
        yield sec + frac * scale, data[pos:pos + incl]
        pos += incl


def read_pcap(path) -> list[PcapFrame]:
    """The Kafka frames in a libpcap capture, in order of their last byte's arrival (IPv4/TCP over Ethernet)."""
    with open(path, "rb") as f:
        data = f.read()
    readers: dict = {}
    out: list[PcapFrame] = []
    for stamp, pkt in _packets(data):
        if len(pkt) < 34 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue
        ihl = (pkt[14] & 0x0F) * 4
        tcp = 14 + ihl
        if len(pkt) < tcp + 20:
            continue
        sport, dport, seq = struct.unpack_from(">HHI", pkt, tcp)
        total = struct.unpack_from(">H", pkt, 16)[0]
        payload = pkt[tcp + (pkt[tcp + 12] >> 4) * 4:14 + total]
        src, dst = (socket.inet_ntoa(pkt[26:30]), sport), (socket.inet_ntoa(pkt[30:34]), dport)
        if not payload:
            continue
        key = (src, dst)
        reader, expected = readers.get(key, (FrameReader(), None))
        if reader is None or (expected is not None and seq != expected):
            continue   # a flow that is not Kafka, a retransmission or a gap: only in-order bytes make frames
        readers[key] = (reader, (seq + len(payload)) & 0xFFFFFFFF)
        try:
            frames = reader.feed(payload)
        except InvalidReceiveError as e:   # not Kafka framing (or garbage): keep what came before, skip the rest
            frames = list(getattr(e, "frames", []) or [])
            readers[key] = (None, None)
        out += [PcapFrame(stamp, src, dst, bytes(fr)) for fr in frames]
    return out
