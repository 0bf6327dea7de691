"""kafkalab's counters of how response bytes left a broker (per listener, summed per broker)."""
from __future__ import annotations

import asyncio

from kafkalab.network.response_send import FileRegion, ResponseSendStats, write_pieces


class _Writer:
    """A connection that records what was written from memory and which regions went to sendfile."""

    def __init__(self, counters, tls=False):
        self.send_counters, self.tls, self.written = counters, tls, []

    def write(self, data) -> None:
        self.send_counters.copied(len(data))
        self.written.append(bytes(data))

    async def drain(self) -> None:
        pass


def test_metrics_name_each_path_per_listener_and_sum_them_for_the_broker():
    stats = ResponseSendStats()
    stats.listener("PLAINTEXT").sent_with_sendfile(1000)
    stats.listener("PLAINTEXT").copied(60)
    stats.listener("SSL").copied(1060)
    stats.listener("SSL").read_from_file(1000)
    assert stats.metrics() == {
        "sendfile-bytes-total": 1000, "sendfile-sends-total": 1, "copied-bytes-total": 1120,
        "copied-sends-total": 2, "copied-file-bytes-total": 1000,
        "sendfile-bytes-total,listener=PLAINTEXT": 1000, "sendfile-sends-total,listener=PLAINTEXT": 1,
        "copied-bytes-total,listener=PLAINTEXT": 60, "copied-sends-total,listener=PLAINTEXT": 1,
        "copied-file-bytes-total,listener=PLAINTEXT": 0,
        "sendfile-bytes-total,listener=SSL": 0, "sendfile-sends-total,listener=SSL": 0,
        "copied-bytes-total,listener=SSL": 1060, "copied-sends-total,listener=SSL": 1,
        "copied-file-bytes-total,listener=SSL": 1000}


def test_a_small_file_region_is_read_and_counted_as_copied_a_large_one_goes_to_sendfile(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(bytes(range(256)) * 1024)              # 256 KiB
    counters = ResponseSendStats().listener("PLAINTEXT")
    writer = _Writer(counters)
    handed_to_sendfile = []

    async def sendfile(w, region):
        handed_to_sendfile.append(region.size)
        w.send_counters.sent_with_sendfile(region.size)

    pieces = [b"head", FileRegion(log, 0, 100), b"mid", FileRegion(log, 1000, 200_000), b"tail"]
    asyncio.run(write_pieces(writer, pieces, sendfile))
    assert handed_to_sendfile == [200_000]
    assert counters.file_bytes_copied == 100                    # the small region was read into the process
    assert counters.copied_bytes == len(b"head") + 100 + len(b"mid") + len(b"tail")
    assert counters.sendfile_bytes == 200_000 and counters.sendfile_sends == 1
