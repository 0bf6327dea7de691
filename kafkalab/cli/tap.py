"""``kafkalab tap``: a recording proxy in front of a cluster, one line per frame, JSON lines and pcap on exit.

Theory of operation
-------------------
Starts a :class:`kafkalab.trace.Tap` on ``--listen`` in front of ``--bootstrap-server`` and prints every frame
as it passes (``--quiet`` to not). Clients bootstrap on the listen address; the brokers get the next ports (or
free ones with port 0), listed as they are first advertised. On Ctrl-C (or after ``--duration`` seconds) it
writes ``--jsonl`` and ``--pcap`` if asked and prints the totals. Open the pcap with
``tshark -r FILE -d tcp.port==PORT,kafka`` (one ``-d`` per tap port, as printed).
"""
from __future__ import annotations

import sys
import threading


def add_parser(sub) -> None:
    p = sub.add_parser("tap", help="a recording proxy between clients and a cluster (JSON lines, pcap)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to stand in front of")
    p.add_argument("--listen", default="127.0.0.1:9192", metavar="HOST:PORT",
                   help="where clients bootstrap (default 127.0.0.1:9192; brokers get the next ports)")
    p.add_argument("--jsonl", metavar="FILE", help="write every frame and event as JSON lines on exit")
    p.add_argument("--pcap", metavar="FILE", help="write a libpcap file on exit (tshark decodes it as Kafka)")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long (default: Ctrl-C)")
    p.add_argument("--quiet", action="store_true", help="do not print each frame")
    p.set_defaults(run=run)


def run(args) -> int:
    from kafkalab.trace import Tap

    printer = None if args.quiet else (lambda frame: print(frame.summary(), flush=True))
    try:
        tap = Tap(args.bootstrap_server, args.listen, on_frame=printer).start()
    except (ValueError, OSError) as e:
        print(f"kafkalab tap: {e}", file=sys.stderr)
        return 1
    print(f"tap listening on {tap.bootstrap_servers} for {args.bootstrap_server}", flush=True)
    try:
        threading.Event().wait(args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        tap.stop()
    if args.jsonl:
        tap.write_json_lines(args.jsonl)
    if args.pcap:
        tap.write_pcap(args.pcap)
    ports = " ".join(f"-d tcp.port=={port},kafka" for _, port in tap.broker_ports.values())
    print(f"{len(tap.frames)} frame(s) on {len(tap.connections)} connection(s), {tap.dropped} dropped; "
          f"tap ports: {ports}")
    return 0
