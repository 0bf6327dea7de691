"""The ``kafkalab`` command line.

Theory of operation
-------------------
One entry point with a sub-command per tool, named like the Kafka tool it mirrors where there is one::

    kafkalab broker [server.properties] [--override key=value ...]      (kafka-server-start.sh)
    kafkalab cluster --brokers N [--base-port P] [--override key=value ...]
    kafkalab dump-log --files F [--print-data-log] [--deep-iteration]     (kafka-dump-log.sh)
    kafkalab decode FRAME_HEX_OR_FILE [--response API_KEY VERSION] [--size-prefix] [--records]
    kafkalab capture CLIENT [metadata|produce] [--first]
    kafkalab tap --bootstrap-server HOST:PORT [--listen HOST:PORT] [--jsonl FILE] [--pcap FILE] [--duration S]
    kafkalab configs --bootstrap-server H:P [--command-config F] --describe [--all] | --alter
                     --entity-type topics|brokers|users [--entity-name N | --entity-default]
                     [--add-config 'k=v,k2=[a,b]' | --add-config-file F] [--delete-config k,k2]
                                                                          (kafka-configs.sh)
    kafkalab replay FILE --bootstrap-server HOST:PORT --topic T [--rate N] [--key-field F]
                         [--timestamp event-time|now] [--limit N]
    kafkalab acls --bootstrap-server HOST:PORT (--add|--remove|--list) [--allow-principal P] [--deny-principal P]
                  [--allow-host H] [--deny-host H] [--operation OP] [--topic T] [--group G] [--cluster]
                  [--resource-pattern-type literal|prefixed|any|match] [--command-config FILE] [--force]
                                                                          (kafka-acls.sh)
    kafkalab transactions --bootstrap-server HOST:PORT [--command-config FILE] list [--duration-filter MS]
                          | describe --transactional-id ID
                          | describe-producers --topic T --partition P [--broker-id B]
                          | find-hanging (--topic T [--partition P] | --broker-id B) [--max-transaction-timeout MIN]
                          | abort --topic T --partition P (--start-offset O | --producer-id I --producer-epoch E
                                  --coordinator-epoch C)                  (kafka-transactions.sh)
    kafkalab producer-perf-test --topic T --num-records N (--record-size S|--payload-file F|--payload-monotonic)
                                --throughput R (--producer-props K=V ...|--producer.config F)
                                                                          (kafka-producer-perf-test.sh)
    kafkalab consumer-perf-test --bootstrap-server H:P --topic T --messages N [--group G] [--fetch-size B]
                                [--timeout MS] [--show-detailed-stats] [--reporting-interval MS] [--hide-header]
                                                                          (kafka-consumer-perf-test.sh)
    kafkalab consumer-groups --bootstrap-server HOST:PORT [--command-config FILE] --list [--state [S,..]]
                             | --describe (--group G | --all-groups) [--members [--verbose] | --state | --offsets]
                             | --delete (--group G | --all-groups) | --delete-offsets --group G --topic T
                             | --reset-offsets (--group G | --all-groups) (--topic T[:P,..] | --all-topics)
                               (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N
                                | --to-datetime T | --by-duration D | --from-file CSV) [--export]
                               [--dry-run | --execute]                    (kafka-consumer-groups.sh)
    kafkalab get-offsets --bootstrap-server HOST:PORT [--topic REGEX] [--partitions P,..]
                         [--topic-partitions RULES] [--time latest|earliest|max-timestamp|MS]
                         [--exclude-internal-topics] [--command-config FILE]   (kafka-get-offsets.sh)
    kafkalab delete-records --bootstrap-server HOST:PORT --offset-json-file F [--command-config FILE]
                                                                          (kafka-delete-records.sh)
    kafkalab log-dirs --bootstrap-server HOST:PORT --describe [--broker-list 0,1] [--topic-list T,..]
                      [--command-config FILE]                             (kafka-log-dirs.sh)
    kafkalab leader-election --bootstrap-server HOST:PORT --election-type preferred|unclean
                             (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)
                             [--admin.config FILE]                        (kafka-leader-election.sh)
    kafkalab reassign-partitions ...      not implemented: says so, exit status 1 (kafka-reassign-partitions.sh)
    kafkalab metadata-quorum ...          ZooKeeper-based cluster, no quorum: says so, exit 1 (kafka-metadata-quorum.sh)

``broker`` runs a broker in the foreground, ``cluster`` N brokers and the coordination store in one process, ``dump-log`` prints segment, index and checkpoint files with
Kafka's tool's flags and output, ``decode`` prints the annotated field tree and hex dump of a frame (what
``kafkalab.viz.show_frame`` draws in a notebook), ``capture`` runs a real client against a recording listener
and lists what it sent, ``tap`` stands between real clients and a cluster and records every frame both ways
(JSON lines, pcap), ``replay`` sends a JSON-lines event file (``data/clickstream/events.jsonl``) to a topic
at a chosen rate with keys and event times kept, ``acls`` manages ACLs with kafka-acls.sh's flags and output,
``transactions`` lists and describes transactions and finds and aborts hanging ones as kafka-transactions.sh does,
``topics`` creates, lists, describes, grows and deletes topics with kafka-topics.sh's flags, output and exit codes,
``console-consumer`` prints a topic's records with kafka-console-consumer.sh's flags and formatter properties,
``console-producer`` sends standard input's lines as records with kafka-console-producer.sh's flags and reader,
``consumer-groups`` lists, describes and deletes groups and resets their offsets as kafka-consumer-groups.sh does,
``get-offsets`` prints partitions' offsets for a time and ``delete-records`` moves log start offsets forward, as
kafka-get-offsets.sh and kafka-delete-records.sh do, ``log-dirs`` prints each broker's log directories as
kafka-log-dirs.sh's JSON, ``leader-election`` runs PREFERRED or UNCLEAN elections as kafka-leader-election.sh does;
``reassign-partitions`` and ``metadata-quorum`` only explain that this cluster has no partition reassignment and
no KRaft quorum.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from kafkalab.cli import acls as _acls
from kafkalab.cli import broker as _broker
from kafkalab.cli import cluster as _cluster
from kafkalab.cli import decode as _decode
from kafkalab.cli import tap as _tap
from kafkalab.cli import unimplemented as _unimplemented

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kafkalab", description="kafkalab: Kafka, down to the bytes on the wire.")
    ap.formatter_class = _one_line_per_command
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _broker.add_parser(sub)
    _cluster.add_parser(sub)
    from kafkalab.tools import dump_log

    dump_log.add_parser(sub)
    _decode.add_parser(sub)
    cap = sub.add_parser("capture", help="run a real client against a recording listener, list its requests")
    cap.add_argument("client", help="kcat, confluent-kafka, kafka-python or aiokafka")
    cap.add_argument("action", nargs="?", default="metadata", choices=("metadata", "produce"))
    cap.add_argument("--first", action="store_true", help="answer nothing: show only the very first request")
    cap.set_defaults(run=_run_capture)
    _tap.add_parser(sub)
    from kafkalab.tools import (configs, console_consumer, console_producer, consumer_groups, consumer_perf,
                                delete_records, get_offsets, leader_election, log_dirs, producer_perf, replay, topics,
                                transactions)

    replay.add_parser(sub)
    _acls.add_parser(sub)
    configs.add_parser(sub)
    transactions.add_parser(sub)
    topics.add_parser(sub)
    console_consumer.add_parser(sub)
    console_producer.add_parser(sub)
    consumer_groups.add_parser(sub)
    get_offsets.add_parser(sub)
    delete_records.add_parser(sub)
    log_dirs.add_parser(sub)
    leader_election.add_parser(sub)
    _unimplemented.add_parsers(sub)
    producer_perf.add_parser(sub)
    consumer_perf.add_parser(sub)
    return ap


def _one_line_per_command(prog: str) -> argparse.HelpFormatter:
    """``kafkalab --help`` lists every command on one line: a help column past the longest names (argparse
    does not measure a sub-command's name) and room for the help."""
    formatter = argparse.HelpFormatter(prog, max_help_position=28, width=160)
    formatter._action_max_length = 28
    return formatter


def _run_capture(args) -> int:
    from kafkalab.trace import CLIENTS, capture, first_request_only

    if args.client not in CLIENTS:
        print(f"kafkalab capture: unknown client {args.client!r}; choose from {', '.join(CLIENTS)}", file=sys.stderr)
        return 2
    result = capture(args.client, args.action, reply=first_request_only if args.first else None)
    print(f"{args.client} {result.client_version}: {len(result)} request(s) on {len(result.connections)} "
          f"connection(s)")
    for r in result:
        print(" ", r.summary())
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:   # only a command that takes any arguments (``reassign-partitions``, ``metadata-quorum``) gets them
        if not hasattr(args, "arguments"):
            parser.error("unrecognized arguments: " + " ".join(extra))
        args.arguments = [*extra, *args.arguments]
    args.argv = argv            # the words as typed: a tool's error line repeats them, as Kafka's tools do
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
