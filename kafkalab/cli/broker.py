"""``kafkalab broker [server.properties] [--override key=value ...]``: run one broker, like kafka-server-start.sh.

The broker runs in the foreground until SIGTERM or Ctrl-C, then shuts down cleanly (flushes and checkpoints its
logs, leaves the coordination store). After an unclean stop (SIGKILL, a power cut) the next start recovers the
logs: torn batches at the end of a segment are truncated, indexes rebuilt, and the log says what was done.

Defaults (Kafka's names): ``broker.id=0``, ``listeners=PLAINTEXT://127.0.0.1:9092``, ``log.dirs=kafka-logs``
(in the working directory), ``num.partitions=1``, ``auto.create.topics.enable=true``. The embedded coordination
store keeps its data in ``zookeeper/`` next to the first log directory, like Kafka's sample
``zookeeper.properties`` (``dataDir=/tmp/zookeeper``) next to ``log.dirs=/tmp/kafka-logs``.

A key that is Kafka's but that kafkalab does not implement (``transaction.state.log.min.isr``...) is refused:
the command prints why and exits 1 before it listens. A key that is not Kafka's at all is only warned about,
as Kafka warns ("The configuration '...' was supplied but isn't a known config.").
"""
from __future__ import annotations

import asyncio
import logging
import signal
import sys

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("broker", help="run a broker in the foreground (kafka-server-start.sh)",
                       description="Start a kafkalab broker. Stop it with Ctrl-C or SIGTERM.")
    p.add_argument("properties", nargs="?", help="a server.properties file (Kafka's format and key names)")
    p.add_argument("--override", action="append", default=[], metavar="key=value",
                   help="optional property that overrides the file's value (repeatable)")
    p.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    p.set_defaults(run=run)


def parse_overrides(items) -> dict:
    """``--override key=value`` arguments, parsed by :func:`kafkalab.common.config.parse_key_value_args`."""
    from kafkalab.common.config import ConfigException, parse_key_value_args

    try:
        return parse_key_value_args(items)
    except ConfigException as e:
        raise SystemExit(f"kafkalab broker: --override {e}") from None


def run(args) -> int:
    from kafkalab.common.config import ConfigException, load_properties
    from kafkalab.server import KafkaConfig, KafkaServer

    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)", stream=sys.stderr)
    props = load_properties(args.properties) if args.properties else {}
    props.update(parse_overrides(args.override))
    try:
        config = KafkaConfig(props)
    except (ConfigException, ValueError) as e:
        print(f"kafkalab broker: {e}", file=sys.stderr)
        return 1
    for key in config.unknown:
        logging.getLogger("kafkalab.server.KafkaConfig").warning(
            "The configuration '%s' was supplied but isn't a known config.", key)
    return asyncio.run(_serve(KafkaServer(config)))


async def _serve(server) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows: Ctrl-C still raises KeyboardInterrupt
            pass
    from kafkalab.common.config import ConfigException

    try:
        await server.startup()
    except (OSError, ConfigException) as e:
        print(f"kafkalab broker: could not start: {e}", file=sys.stderr)
        await server.shutdown()
        return 1
    if not logging.getLogger("kafkalab.server.KafkaServer").isEnabledFor(logging.INFO):
        # the broker logs this line itself at INFO; keep it when the log level hides INFO
        print(f"[KafkaServer id={server.broker_id}] started (listeners: "
              f"{', '.join(str(ep) for ep in server.socket_server.bound_endpoints())})", file=sys.stderr, flush=True)
    stopping = asyncio.ensure_future(stop.wait())
    halting = asyncio.ensure_future(server.halted.wait())
    try:
        await asyncio.wait((stopping, halting), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in (stopping, halting):
            waiter.cancel()
        await server.shutdown()
    return 1 if server.halted.is_set() else 0   # halted: every log dir failed (Kafka's Exit.halt(1))
