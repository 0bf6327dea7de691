"""``kafkalab cluster --brokers N [--base-port P] [--override key=value ...]``: a whole cluster in one process.

Runs N brokers (ids 0..N-1) and the embedded coordination store with :class:`kafkalab.cluster.Cluster` and
serves real clients from the shell (kcat, kafka-console-*, confluent-kafka, ...). With ``--base-port P`` broker
``i`` listens on ``127.0.0.1:P+i``, otherwise on free ports. One line on stdout says it is ready and lists every
listener (use it as ``bootstrap.servers``)::

    kafkalab cluster: 3 brokers ready, controller 0, bootstrap.servers=127.0.0.1:9092,127.0.0.1:9093,...

SIGTERM or Ctrl-C shuts every broker down cleanly. Data lives in a temporary directory unless ``--log-dirs``
names one (broker ``i`` then uses ``<dir>/broker-<i>``).
"""
from __future__ import annotations

import logging
import signal
import sys
import threading

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("cluster", help="run N brokers and the coordination store in the foreground",
                       description="Start a kafkalab cluster in one process. Stop it with Ctrl-C or SIGTERM.")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    p.add_argument("--base-port", type=int, default=0, help="broker i listens on base-port + i (default: free ports)")
    p.add_argument("--host", default="127.0.0.1", help="listener host (default 127.0.0.1)")
    p.add_argument("--log-dirs", default=None, help="base data directory (default: a temporary one)")
    p.add_argument("--override", action="append", default=[], metavar="key=value",
                   help="broker property applied to every broker (repeatable)")
    p.add_argument("--log-level", default="WARNING", help="Python logging level (default WARNING)")
    p.set_defaults(run=run)


def run(args) -> int:
    from kafkalab.cli.broker import parse_overrides
    from kafkalab.cluster import Cluster

    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)", stream=sys.stderr)
    if args.brokers < 1:
        print("kafkalab cluster: --brokers must be at least 1", file=sys.stderr)
        return 2
    overrides = parse_overrides(args.override)
    cluster = Cluster(brokers=args.brokers, overrides=overrides, log_dirs=args.log_dirs, host=args.host,
                      base_port=args.base_port)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start()
    except Exception as e:   # e.g. a port in use
        print(f"kafkalab cluster: could not start: {e}", file=sys.stderr)
        cluster.stop()
        return 1
    try:
        listeners = " ".join(f"{b}={cluster.brokers[b].bootstrap_servers}" for b in sorted(cluster.brokers))
        print(f"kafkalab cluster: {args.brokers} brokers ready, controller {cluster.controller_id}, "
              f"bootstrap.servers={cluster.bootstrap_servers} ({listeners})", flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        cluster.stop()
    print("kafkalab cluster: stopped", flush=True)
    return 0
