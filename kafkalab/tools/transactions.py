"""``kafkalab transactions``: Kafka's ``kafka-transactions.sh``, with its commands, flags and tables.

Theory of operation
-------------------
A transaction lives in two places: its **coordinator** keeps its state (``__transaction_state``), and each
**partition leader** keeps, per producer, the first offset of the transaction open on that partition. The tool
asks both, through the admin client (:mod:`kafkalab.clients.admin_transactions`)::

    kafkalab transactions --bootstrap-server localhost:9092 list
    TransactionalId	Coordinator	ProducerId	TransactionState
    orders-app     	0          	1000      	Ongoing

    kafkalab transactions --bootstrap-server localhost:9092 describe --transactional-id orders-app
    kafkalab transactions --bootstrap-server localhost:9092 describe-producers --topic orders --partition 0
    kafkalab transactions --bootstrap-server localhost:9092 find-hanging --broker-id 0
    kafkalab transactions --bootstrap-server localhost:9092 abort --topic orders --partition 0 --start-offset 42

=====================  =================================================================================
command                what it prints (a table: each cell padded to its column's width, then a tab)
=====================  =================================================================================
``list``               TransactionalId, Coordinator, ProducerId, TransactionState -- every coordinator's ids
                       (``--duration-filter MS``: only those running longer, KIP-994)
``describe``           CoordinatorId, TransactionalId, ProducerId, ProducerEpoch, TransactionState,
                       TransactionTimeoutMs, CurrentTransactionStartTimeMs, TransactionDurationMs,
                       TopicPartitions (``None`` for the start and duration when no transaction is open)
``describe-producers``  ProducerId, ProducerEpoch, LatestCoordinatorEpoch, LastSequence, LastTimestamp,
                       CurrentTransactionStartOffset -- the partition leader's producer state
                       (``--broker-id`` asks that replica instead)
``find-hanging``       Topic, Partition, ProducerId, ProducerEpoch, CoordinatorEpoch, StartOffset,
                       LastTimestamp, Duration(min) -- open transactions older than
                       ``--max-transaction-timeout`` minutes (default 15) that their coordinator no longer
                       counts in (unknown producer id, unknown transactional id, or partition not in it)
``abort``              nothing: writes an ABORT marker on the partition (WriteTxnMarkers, needs
                       CLUSTER_ACTION); the transaction is named by ``--start-offset`` (looked up with
                       DescribeProducers) or by ``--producer-id --producer-epoch --coordinator-epoch``
=====================  =================================================================================

``--bootstrap-server`` and ``--command-config`` (a properties file of admin client settings) come before the
command. A failure prints ``<what failed>: <why>. Enable debug logging for additional detail.`` on stderr and
exits with 1, as does a usage error.

Mirrors ``tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java`` (KIP-664).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional

from kafkalab.clients import Admin, AdminError
from kafkalab.clients.admin_transactions import AbortTransactionSpec, tp_name
from kafkalab.clients.producer.accumulator import TopicPartition
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.common.time import SYSTEM, Time
from kafkalab.protocol import ApiException, ErrorCode

__all__ = ["add_parser", "run", "pretty_print_table", "LIST_HEADERS", "DESCRIBE_HEADERS", "PRODUCERS_HEADERS",
           "HANGING_HEADERS"]

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)")
MAX_BATCH_SIZE = 500            # topics per Metadata, partitions per DescribeProducers in find-hanging


class ToolFailure(Exception):
    """Ends the command: the message goes to stderr and the exit status is 1 (Kafka's ``printErrorAndExit``)."""


class _ToolParser(argparse.ArgumentParser):
    """Usage errors exit with 1, as kafka-transactions.sh does (argparse's own status is 2)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def add_parser(sub) -> None:
    p = sub.add_parser("transactions", help="list and describe transactions, find and abort hanging ones "
                                            "(kafka-transactions.sh)",
                       description="Look at the transactional state of the producers of a cluster: the "
                                   "coordinators' transactions and the partitions' open ones; find the hanging "
                                   "ones and abort them.")
    p.error = _ToolParser.error.__get__(p)            # the mounted parser is argparse's class: same exit status
    p.add_argument("--command-config", metavar="FILE", help="properties file of settings for the admin client")
    p.add_argument("--bootstrap-server", metavar="host:port", required=True,
                   help="the broker(s) to connect to, host:port (comma-separated for several)")
    commands = p.add_subparsers(dest="transactions_command", metavar="COMMAND", title="commands", required=True,
                                parser_class=_ToolParser)
    listing = commands.add_parser("list", help="list transactions")
    listing.add_argument("--duration-filter", type=int,
                         help="only transactions running longer than this many ms (all when < 0; ListTransactions v1)")
    describe = commands.add_parser("describe", help="describe the state of an active transactional-id",
                                   description="Describe the state of an active transactional-id.")
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = commands.add_parser("describe-producers",
                                    help="describe the states of active producers for a topic partition")
    producers.add_argument("--broker-id", type=int, help="ask this replica instead of the leader")
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")
    abort = commands.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    newer = abort.add_argument_group("Brokers on versions 3.0 and above",
                                     "the start offset of the transaction is enough")
    newer.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    older = abort.add_argument_group("Brokers on versions older than 3.0", "all three are needed")
    older.add_argument("--producer-id", type=int, help="producer id")
    older.add_argument("--producer-epoch", type=int, help="producer epoch")
    older.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    hanging.add_argument("--max-transaction-timeout", type=int, default=15,
                         help="maximum transaction timeout in minutes to limit the scope of the search (default 15)")
    hanging.add_argument("--topic", help="topic name to limit search to")
    hanging.add_argument("--partition", type=int, help="partition number")
    p.set_defaults(run=lambda args: run(args))


def run(args, *, out=None, err=None, time: Time = SYSTEM, admin_factory: Optional[Callable[[dict], Admin]] = None
        ) -> int:
    """Run one command; 0, or 1 after printing the failure on ``err``."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        admin = _admin(args, admin_factory or Admin)
        try:
            _COMMANDS[args.transactions_command](admin, args, out, time)
        finally:
            admin.close()
        return 0
    except ToolFailure as e:
        print(str(e), file=err)
        return 1


def _admin(args, factory) -> Admin:
    try:
        config = dict(load_properties(args.command_config)) if args.command_config else {}
    except OSError as e:
        raise ToolFailure(_because("Failed to load admin client properties", e)) from None
    config["bootstrap.servers"] = args.bootstrap_server
    try:
        return factory(config)
    except (ConfigException, ApiException) as e:
        raise ToolFailure(_because("Failed to create the admin client", e)) from None


def _cause(e: BaseException) -> BaseException:
    """The error of the one item that failed (what Java's ``ExecutionException.getCause()`` gives)."""
    if isinstance(e, AdminError) and e.errors:
        return next(iter(e.errors.values()))
    return e


def _because(message: str, e: BaseException) -> str:
    cause = _cause(e)
    text = cause.message if isinstance(cause, ApiException) else str(cause)
    return f"{message}: {text}. Enable debug logging for additional detail."


_FAILURES = (ApiException, OSError)        # admin errors, timeouts (KafkaTimeoutError), unreachable brokers


def pretty_print_table(headers, rows, out) -> None:
    """Kafka's table: each column as wide as its widest cell, every cell padded to it and followed by a tab."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]
    for row in (headers, *rows):
        print("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)), file=out)


def _or_none(value) -> str:
    return "None" if value is None else str(value)


# -- list -----------------------------------------------------------------------------------------------------
def _list(admin, args, out, time) -> None:
    try:
        by_broker = admin.list_transactions(**({} if args.duration_filter is None
                                               else {"filter_on_duration": args.duration_filter}))
    except _FAILURES as e:
        raise ToolFailure(_because("Failed to list transactions", e)) from None
    rows = [(t.transactional_id, str(broker), str(t.producer_id), str(t.state))
            for broker, listings in by_broker.items() for t in listings]
    pretty_print_table(LIST_HEADERS, rows, out)


# -- describe -------------------------------------------------------------------------------------------------
def _describe(admin, args, out, time) -> None:
    tid = args.transactional_id
    try:
        d = admin.describe_transactions([tid])[tid]
    except _FAILURES as e:
        raise ToolFailure(_because(f"Failed to describe transaction state of transactional-id `{tid}`", e)) from None
    start = d.transaction_start_time_ms
    duration = None if start is None else time.milliseconds() - start
    partitions = ",".join(tp_name(tp) for tp in sorted(d.topic_partitions))
    pretty_print_table(DESCRIBE_HEADERS, [(str(d.coordinator_id), tid, str(d.producer_id), str(d.producer_epoch),
                                           str(d.state), str(d.transaction_timeout_ms), _or_none(start),
                                           _or_none(duration), partitions)], out)


# -- describe-producers ---------------------------------------------------------------------------------------
def _describe_producers(admin, args, out, time) -> None:
    tp = TopicPartition(args.topic, args.partition)
    try:
        state = admin.describe_producers([tp], broker_id=args.broker_id)[tp]
    except _FAILURES as e:
        where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
        raise ToolFailure(_because(f"Failed to describe producers for partition {tp_name(tp)} on {where}", e)) \
            from None
    rows = [(str(p.producer_id), str(p.producer_epoch),
             str(-1 if p.coordinator_epoch is None else p.coordinator_epoch), str(p.last_sequence),
             str(p.last_timestamp), _or_none(p.current_transaction_start_offset)) for p in state.active_producers]
    pretty_print_table(PRODUCERS_HEADERS, rows, out)


# -- abort ----------------------------------------------------------------------------------------------------
def _abort(admin, args, out, time) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise ToolFailure("The transaction to abort must be identified either with --start-offset (for brokers on "
                          "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older "
                          "brokers)")
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise ToolFailure("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise ToolFailure("Missing required argument --coordinator-epoch")
        # a transaction that began before any marker was written shows coordinator epoch -1; 0 is never above the
        # leader's epoch, so it is the safe stand-in
        spec = AbortTransactionSpec(tp, args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
    else:
        spec = _spec_from_start_offset(admin, tp, args.start_offset)
    try:
        admin.abort_transaction(spec)
    except _FAILURES as e:
        raise ToolFailure(_because(f"Failed to abort transaction {spec}", e)) from None


def _spec_from_start_offset(admin, tp: TopicPartition, start_offset: int) -> AbortTransactionSpec:
    try:
        state = admin.describe_producers([tp])[tp]
    except _FAILURES as e:
        raise ToolFailure(_because(f"Failed to validate producer state for partition {tp_name(tp)}", e)) from None
    for p in state.active_producers:
        if p.current_transaction_start_offset == start_offset:
            return AbortTransactionSpec(tp, p.producer_id, p.producer_epoch, p.coordinator_epoch or 0)
    raise ToolFailure(f"Could not find any open transactions starting at offset {start_offset} on partition "
                      f"{tp_name(tp)}")


# -- find-hanging ---------------------------------------------------------------------------------------------
def _find_hanging(admin, args, out, time) -> None:
    if args.topic is None and args.broker_id is None:
        raise ToolFailure("The `find-hanging` command requires either --topic or --broker-id to limit the scope of "
                          "the search")
    if args.partition is not None and args.topic is None:
        raise ToolFailure("The --partition argument requires --topic to be provided")
    max_timeout_ms = args.max_transaction_timeout * 60_000
    partitions = _partitions_to_search(admin, args)
    candidates = _open_transactions(admin, args.broker_id, max_timeout_ms, partitions, time)
    hanging = []
    if candidates:
        by_producer: dict[int, list] = {}
        for tp, producer in candidates:
            by_producer.setdefault(producer.producer_id, []).append((tp, producer))
        ids = _transactional_ids(admin, set(by_producer))
        descriptions = _descriptions(admin, sorted(set(ids.values())))
        for producer_id, opened in by_producer.items():
            description = descriptions.get(ids.get(producer_id))
            # the coordinator still counts a partition in (Ongoing, or Prepare* with its marker not yet written):
            # it will write the marker itself; anything else is hanging
            hanging += [(tp, p) for tp, p in opened
                        if description is None or tp not in description.topic_partitions]
    now = time.milliseconds()
    rows = [(tp.topic, str(tp.partition), str(p.producer_id), str(p.producer_epoch),
             str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
             str(-1 if p.current_transaction_start_offset is None else p.current_transaction_start_offset),
             str(p.last_timestamp), str((now - p.last_timestamp) // 60_000)) for tp, p in hanging]
    pretty_print_table(HANGING_HEADERS, rows, out)


def _batches(items: list, size: int = MAX_BATCH_SIZE):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _partitions_to_search(admin, args) -> list:
    if args.topic is not None and args.partition is not None:
        return [TopicPartition(args.topic, args.partition)]
    if args.topic is not None:
        topics = [args.topic]
    else:
        try:
            topics = admin.list_topics()         # the internal ones too: offsets can hang in __consumer_offsets
        except _FAILURES as e:
            raise ToolFailure(_because("Failed to list topics", e)) from None
    out = []
    for batch in _batches(topics):
        try:
            described = admin.describe_topics(batch)
        except _FAILURES as e:
            raise ToolFailure(_because(f"Failed to describe {len(batch)} topics", e)) from None
        for name, info in described.items():
            out += [TopicPartition(name, p.partition) for p in info.partitions.values()
                    if args.broker_id is None or args.broker_id in p.replicas]
    return out


def _open_transactions(admin, broker_id, max_timeout_ms: int, partitions: list, time) -> list:
    """[(tp, ProducerState)]: transactions open on ``partitions`` whose producer last wrote longer ago than the
    largest transaction timeout allows (younger ones may simply still be running)."""
    found = []
    for batch in _batches(partitions):
        try:
            states = admin.describe_producers(batch, broker_id=broker_id)
        except _FAILURES as e:
            raise ToolFailure(_because(f"Failed to describe producers for {len(batch)} partitions on broker "
                                       f"{'Optional.empty' if broker_id is None else f'Optional[{broker_id}]'}",
                                       e)) from None
        now = time.milliseconds()
        found += [(tp, p) for tp, state in states.items() for p in state.active_producers
                  if p.current_transaction_start_offset is not None and now - p.last_timestamp > max_timeout_ms]
    return found


def _transactional_ids(admin, producer_ids: set) -> dict:
    """{producer id: transactional id} from every coordinator's ListTransactions, filtered by producer id."""
    try:
        by_broker = admin.list_transactions(filter_producer_ids=sorted(producer_ids))
    except _FAILURES as e:
        raise ToolFailure(_because(f"Failed to list transactions for {len(producer_ids)} producers", e)) from None
    return {t.producer_id: t.transactional_id for listings in by_broker.values() for t in listings
            if t.producer_id in producer_ids}


def _descriptions(admin, transactional_ids: list) -> dict:
    """{transactional id: TransactionDescription}; an id the coordinator does not know is left out."""
    if not transactional_ids:
        return {}
    try:
        return admin.describe_transactions(transactional_ids)
    except AdminError as e:
        if all(x.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND for x in e.errors.values()):
            return e.results
        raise ToolFailure(_because(f"Failed to describe {len(transactional_ids)} transactions", e)) from None
    except _FAILURES as e:
        raise ToolFailure(_because(f"Failed to describe {len(transactional_ids)} transactions", e)) from None


_COMMANDS = {"list": _list, "describe": _describe, "describe-producers": _describe_producers, "abort": _abort,
             "find-hanging": _find_hanging}
