"""``kafkalab consumer-groups``: Kafka's ``kafka-consumer-groups.sh``, with its actions, flags and tables.

Theory of operation
-------------------
A consumer group lives on its **group coordinator** (members, state, committed offsets); how far behind it is
needs the partitions' **log end offsets** from their leaders. The tool asks both through the admin client
(:mod:`kafkalab.clients.admin_groups`, ``Admin.list_offsets``)::

    kafkalab consumer-groups --bootstrap-server localhost:9092 --list [--state [Stable,Empty]]
    kafkalab consumer-groups --bootstrap-server localhost:9092 --describe --group G [--members [--verbose] | --state]
    kafkalab consumer-groups --bootstrap-server localhost:9092 --delete --group G
    kafkalab consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group G --topic T --to-earliest --execute
    kafkalab consumer-groups --bootstrap-server localhost:9092 --delete-offsets --group G --topic T

=====================  =================================================================================
action                 what it prints (Java's ``printf`` formats, columns widened to their longest value)
=====================  =================================================================================
``--list``             one group id a line; with ``--state``: ``GROUP`` and ``STATE`` columns
``--describe``         GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID, a row
                       per assigned partition (members with most partitions first) then per committed but
                       unassigned partition (``-`` for the member columns)
``--members``          GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT]
``--state``            GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
``--reset-offsets``    GROUP TOPIC PARTITION NEW-OFFSET -- the plan (``--to-earliest``, ``--to-latest``,
                       ``--to-offset``, ``--shift-by``, ``--to-current``, ``--to-datetime``,
                       ``--by-duration``, ``--from-file``; ``--export``: as CSV); written only with ``--execute``, and only while the group is
                       Empty (or Dead): committed as generation -1 (OffsetCommit)
``--delete``           ``Deletion of requested consumer groups ('G') was successful.``
``--delete-offsets``   TOPIC PARTITION STATUS (OffsetDelete; refused for topics the group is subscribed to)
=====================  =================================================================================

As in Kafka a failure is printed on stdout as ``\\nError: ...`` and the exit status stays 0; a usage error
prints the message and exits with 1. A group with no members prints ``Consumer group 'G' has no active
members.`` on stderr; one that does not exist ``Error: Consumer group 'G' does not exist.``. Two differences, both
line ends: each table ends with one (Kafka leaves the cursor after its last row), and the reset plan's and
delete-offsets' rows are one a line as the Scala tool printed them (3.9's Java port runs them together).

Mirrors ``tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java`` and
``ConsumerGroupCommandOptions.java`` (Kafka 3.9).
"""
from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
from typing import Callable, Optional

from kafkalab.clients import Admin
from kafkalab.clients.admin_groups import ConsumerGroupDescription
from kafkalab.clients.consumer.assignors.protocol import TopicPartition
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException, java_exception_class
from kafkalab.tools.consumer_groups_tables import (MISSING, delete_offsets_table, export_csv, list_table,
                                                   members_table, offsets_table, reset_plan_table, state_table)

__all__ = ["add_parser", "run", "GROUP_STATES", "offsets_table", "members_table", "state_table", "list_table",
           "reset_plan_table", "export_csv", "parse_reset_plan", "parse_datetime", "parse_duration_ms",
           "delete_offsets_table"]

GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
_REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
_SCENARIOS = ("to_earliest", "to_latest", "to_offset", "shift_by", "to_current", "to_datetime", "by_duration",
              "from_file")
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?")
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:\.\d{1,9})?)S)?)?",
                       re.IGNORECASE)


class UsageError(Exception):
    """A bad combination of options: printed with the usage, exit status 1 (``printUsageAndExit``)."""


class _ToolParser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def add_parser(sub) -> None:
    p = sub.add_parser("consumer-groups", help="list, describe, delete consumer groups; reset and delete their "
                                               "offsets (kafka-consumer-groups.sh)",
                       description="List all consumer groups, describe a consumer group, delete consumer group "
                                   "info, or reset consumer group offsets.")
    p.error = _ToolParser.error.__get__(p)
    p.add_argument("--bootstrap-server", metavar="server to connect to", required=True,
                   help="the server(s) to connect to, host:port (comma-separated for several)")
    p.add_argument("--command-config", metavar="command config property file",
                   help="property file containing configs to be passed to the admin client")
    actions = p.add_argument_group("actions (exactly one)")
    for flag, text in (("--list", "list all consumer groups"), ("--describe", "describe consumer group(s)"),
                       ("--delete", "delete consumer group(s)"),
                       ("--reset-offsets", "reset offsets of consumer group(s); dry run unless --execute"),
                       ("--delete-offsets", "delete offsets of a consumer group")):
        actions.add_argument(flag, action="store_true", help=text)
    p.add_argument("--group", action="append", default=[], metavar="consumer group",
                   help="the consumer group (repeat for several)")
    p.add_argument("--all-groups", action="store_true", help="apply to all consumer groups")
    p.add_argument("--topic", action="append", default=[], metavar="topic",
                   help="topic, or topic:partition,partition (reset-offsets); topic (delete-offsets)")
    p.add_argument("--all-topics", action="store_true", help="reset-offsets: every topic the group has offsets for")
    p.add_argument("--offsets", action="store_true", help="describe: the group's offsets (the default)")
    p.add_argument("--members", action="store_true", help="describe: the group's members")
    p.add_argument("--verbose", action="store_true", help="members: list each member's partitions")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="states",
                   help="describe: the group's state; list: its state column, only these states if given")
    p.add_argument("--dry-run", action="store_true", help="reset-offsets: only print the plan (the default)")
    p.add_argument("--execute", action="store_true", help="reset-offsets: commit the plan")
    p.add_argument("--to-earliest", action="store_true", help="reset to the earliest offset")
    p.add_argument("--to-latest", action="store_true", help="reset to the latest offset")
    p.add_argument("--to-current", action="store_true", help="reset to the current offset")
    p.add_argument("--to-offset", type=int, metavar="offset", help="reset to this offset")
    p.add_argument("--shift-by", type=int, metavar="number-of-offsets", help="move the offsets by n (+ or -)")
    p.add_argument("--to-datetime", metavar="datetime",
                   help="reset to the offsets of this time: 'YYYY-MM-DDTHH:mm:SS.sss' (UTC unless a zone follows)")
    p.add_argument("--by-duration", metavar="duration",
                   help="reset to the offsets of this long ago: 'PnDTnHnMnS' (ISO-8601 duration)")
    p.add_argument("--from-file", metavar="path to CSV file",
                   help="reset to the offsets of a CSV file (topic,partition,offset; group,topic,partition,offset)")
    p.add_argument("--export", action="store_true",
                   help="reset-offsets: print the plan as CSV (what --from-file reads) instead of the table")
    p.add_argument("--timeout", type=int, default=5000, metavar="timeout (ms)",
                   help="ms to wait for the group to be stable and other calls (default 5000)")
    p.set_defaults(run=lambda args: run(args))


# -- the service ------------------------------------------------------------------------------------------------
class ToolError(Exception):
    """Printed as ``\\nError: <message>`` on stdout (Kafka's ``printError``)."""


class ConsumerGroupService:
    """The actions, against one admin client; each returns the text for stdout, warnings go to ``err``."""

    def __init__(self, admin: Admin, args, err):
        self.admin, self.args, self.err = admin, args, err
        self.notes: list = []            # Kafka's warnings and errors printed on stdout before the table

    def _group_ids(self) -> list:
        if self.args.all_groups:
            return [g.group_id for g in self.admin.list_consumer_groups()]
        return list(self.args.group)

    def _describe(self, group_ids) -> dict:
        return dict(sorted(self.admin.describe_consumer_groups(group_ids).items())) if group_ids else {}

    def _printable(self, group: str, state: str, rows: int) -> tuple:
        """``shouldPrintMemberState``: (print the rows?, text to print first); notes go to ``err``."""
        if state == "Dead":
            return False, f"\nError: Consumer group '{group}' does not exist.\n"
        if state == "Empty":
            print(f"\nConsumer group '{group}' has no active members.", file=self.err)
        elif state in _REBALANCING:
            print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=self.err)
        return rows > 0, ""

    def list(self) -> str:
        listings = self.admin.list_consumer_groups()
        include_state = self.args.state is not None
        if include_state and self.args.state:
            wanted = _parse_states(self.args.state)
            listings = [g for g in listings if g.state in wanted]
        return list_table(listings, include_state)

    def describe(self) -> str:
        groups = self._describe(self._group_ids())
        if self.args.members:
            return "".join(self._members(g) for g in groups.values())
        if self.args.state is not None and not self.args.offsets:
            return "".join(self._state(g) for g in groups.values())
        return "".join(self._offsets(g) for g in groups.values())

    def _members(self, g: ConsumerGroupDescription) -> str:
        _, first = self._printable(g.group_id, g.state, len(g.members))
        return first + members_table(g.group_id, g.members, self.args.verbose)     # the header in any case

    def _state(self, g: ConsumerGroupDescription) -> str:
        shown, first = self._printable(g.group_id, g.state, 1)
        if not shown:
            return first
        broker = self.admin.describe_cluster().brokers.get(g.coordinator)
        where = f"{broker['host']}:{broker['port']}" if broker is not None else ""
        return state_table(g.group_id, f"{where}  ({g.coordinator})", g.partition_assignor, g.state,
                           len(g.members))

    def _offsets(self, g: ConsumerGroupDescription) -> str:
        committed = self.admin.list_consumer_group_offsets(g.group_id)
        rows, assigned = [], set()
        for m in sorted((m for m in g.members if m.assignment), key=lambda m: -len(m.assignment)):
            tps = sorted(m.assignment, key=lambda tp: tp[1])
            assigned.update(tps)
            rows += self._partition_rows(g.group_id, tps, committed, (m.member_id, m.host, m.client_id))
        unassigned = sorted((tp for tp in committed if tp not in assigned), key=lambda tp: (tp[1], tp[0]))
        rows += self._partition_rows(g.group_id, unassigned, committed, (MISSING, MISSING, MISSING))
        shown, first = self._printable(g.group_id, g.state, len(rows))
        return first + (offsets_table(rows) + "\n" if shown else "")

    def _partition_rows(self, group, tps, committed, member) -> list:
        if not tps:
            return []
        ends = self._log_offsets(tps, "latest")
        rows = []
        for tp in tps:
            om = committed.get(tp)
            offset = None if om is None else om.offset
            end = ends.get(tp)
            lag = end - offset if offset is not None and offset != -1 and end is not None else None
            rows.append((group, tp[0], str(tp[1]), _cell(offset), _cell(end), _cell(lag), *member))
        return rows

    def _log_offsets(self, tps, spec) -> dict:
        try:
            answers = self.admin.list_offsets({tp: spec for tp in tps})
        except ApiException:
            return {}
        return {TopicPartition(*tp): r.offset for tp, r in answers.items()}

    def delete(self) -> str:
        groups = self._group_ids()
        try:
            self.admin.delete_consumer_groups(groups)
            return f"Deletion of requested consumer groups ('{', '.join(groups)}') was successful.\n"
        except ApiException as e:
            errors, done = getattr(e, "errors", {}), getattr(e, "results", {})
            text = "\nError: Deletion of some consumer groups failed:\n"
            text += "".join(f"* Group '{g}' could not be deleted due to: {_name(err)}: {err.message}\n"
                            for g, err in errors.items())
            if done:
                text += f"\nThese consumer groups were deleted successfully: '{chr(39).join(done)}', '\n"
            return text

    def reset_offsets(self) -> str:
        plan = {}
        for group, g in self._describe(self._group_ids()).items():
            if g.state not in ("Empty", "Dead"):
                self.notes.append(f"\nError: Assignments can only be reset if the group '{group}' is inactive, but "
                                  f"the current state is {g.state}.\n")
                plan[group] = {}
                continue
            if self.args.from_file is not None:
                offsets = self._plan_from_file().get(group, {})
            else:
                offsets = self._prepare(group, self._partitions_to_reset(group))
            if self.args.execute and not self.args.dry_run:
                self.admin.alter_consumer_group_offsets(group, offsets)
            plan[group] = offsets
        if self.args.export:
            return export_csv(plan, single_group=len(self.args.group) == 1) + "\n"
        return reset_plan_table(plan)

    def _plan_from_file(self) -> dict:
        try:
            with open(self.args.from_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ToolError(str(e)) from None
        return parse_reset_plan(text, self.args.group[0] if len(self.args.group) == 1 else None)

    def _partitions_to_reset(self, group: str) -> list:
        if self.args.all_topics:
            return sorted(self.admin.list_consumer_group_offsets(group))
        return self._topic_args()

    def _topic_args(self) -> list:
        """``--topic T`` (every partition of T) or ``--topic T:0,2``, in the order given."""
        tps = []
        for spec in self.args.topic:
            topic, _, parts = spec.partition(":")
            if parts:
                tps += [TopicPartition(topic, _partition_number(p)) for p in parts.split(",")]
            else:
                info = self.admin.describe_topics([topic])[topic]
                tps += [TopicPartition(topic, p) for p in sorted(info.partitions)]
        return tps

    def _prepare(self, group: str, tps) -> dict:
        a = self.args
        if a.to_earliest:
            return dict(sorted(self._log_offsets(tps, "earliest").items()))
        if a.to_latest:
            return dict(sorted(self._log_offsets(tps, "latest").items()))
        if a.to_datetime is not None or a.by_duration is not None:
            when = parse_datetime(a.to_datetime) if a.to_datetime is not None else (
                int(time.time() * 1000) - parse_duration_ms(a.by_duration))
            return self._offsets_for_time(tps, when)
        committed = self.admin.list_consumer_group_offsets(group, tps)
        if a.to_current:
            return {tp: committed[tp].offset for tp in tps if tp in committed}
        starts, ends = self._log_offsets(tps, "earliest"), self._log_offsets(tps, "latest")
        out = {}
        for tp in tps:
            if a.to_offset is not None:
                target = a.to_offset
            elif tp in committed:
                target = committed[tp].offset + a.shift_by
            else:
                raise ToolError(f"Error getting committed offset for partition {tp[0]}-{tp[1]}")
            out[tp] = _within(tp, target, starts.get(tp), ends.get(tp), self.notes)
        return out

    def _offsets_for_time(self, tps, when: int) -> dict:
        """``getLogTimestampOffsets``: the first offset at or after ``when``; the log end where there is none."""
        found = {tp: offset for tp, offset in self._log_offsets(tps, when).items() if offset != -1}
        empty = [tp for tp in tps if tp not in found]
        for tp in empty:
            self.notes.append(f"\nWarn: Partition {tp[1]} from topic {tp[0]} is empty. Falling back to latest known "
                              "offset.\n")
        if empty:
            found.update(self._log_offsets(empty, "latest"))
        return {tp: found[tp] for tp in tps if tp in found}

    def delete_offsets(self) -> str:
        (group,) = self.args.group
        topics = self.args.topic
        tps = self._topic_args()
        try:
            self.admin.delete_consumer_group_offsets(group, tps)
            top, errors = None, {}
        except ApiException as e:
            errors = dict(getattr(e, "errors", {}))
            top = None if errors else e
            if top is not None:
                errors = {tp: e for tp in tps}
        if not errors:
            text = f"Request succeed for deleting offsets with topic {', '.join(topics)} group {group}\n"
        elif top is None:
            text = "\nError: Encounter some partition level error, see the follow-up details:\n"
        else:
            text = f"\nError: {_delete_offsets_failure(group, top)}\n"
        statuses = [(tp[0], tp[1], f"Error: :{errors[tp].message}" if tp in errors else "Successful")
                    for tp in sorted(tps, key=lambda tp: tp[0] + str(tp[1]))]
        return text + delete_offsets_table(statuses)


def _delete_offsets_failure(group: str, e: ApiException) -> str:
    code = getattr(e.error_code, "name", "")
    return {"INVALID_GROUP_ID": f"'{group}' is not valid.",
            "GROUP_ID_NOT_FOUND": f"'{group}' does not exist.",
            "GROUP_AUTHORIZATION_FAILED": f"Access to '{group}' is not authorized.",
            "NON_EMPTY_GROUP": f"Deleting offsets of a consumer group '{group}' is forbidden if the group is not "
                               "empty.",
            "GROUP_SUBSCRIBED_TO_TOPIC": "Encounter some partition level error, see the follow-up details:",
            }.get(code, f"Encounter some unknown error: {code}")


def _within(tp, target: int, start: Optional[int], end: Optional[int], notes: list) -> int:
    """``checkOffsetRange``: a target outside [log start, log end] is moved to the nearest bound, with a warning."""
    if end is not None and target > end:
        notes.append(f"\nWarn: New offset ({target}) is higher than latest offset for topic partition {tp[0]}-{tp[1]}. "
              f"Value will be set to {end}\n")
        return end
    if start is not None and target < start:
        notes.append(f"\nWarn: New offset ({target}) is lower than earliest offset for topic partition {tp[0]}-{tp[1]}. "
              f"Value will be set to {start}\n")
        return start
    return target


def parse_datetime(text: str) -> int:
    """``Utils.getDateTime``: 'yyyy-MM-ddTHH:mm:ss.SSS' with an optional zone (Z, +hh, +hh:mm), UTC by default."""
    m = _DATETIME.fullmatch(text)
    if m is None:
        raise ToolError(f'Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = (int(g) for g in m.groups()[:7])
    zone = m.group(8) or "Z"
    offset = datetime.timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0)) * (-1 if zone[0] == "-" else 1)
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second, millis * 1000,
                                   tzinfo=datetime.timezone(offset))
    except ValueError:
        raise ToolError(f'Unparseable date: "{text}"') from None
    return int(moment.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """``java.time.Duration.parse``: 'PnDTnHnMn.nS' -> milliseconds."""
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.groups()[1:]):
        raise ToolError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds = m.groups()
    ms = (int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000
          + round(float(seconds or 0) * 1000))
    return -ms if sign == "-" else ms


def parse_reset_plan(text: str, group: Optional[str]) -> dict:
    """``parseResetPlan``: the CSV ``export_csv`` writes -> ``{group: {TopicPartition: offset}}``."""
    plan: dict = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) == 4:
            owner, topic, partition, offset = cells
        elif len(cells) == 3 and group is not None:
            owner, (topic, partition, offset) = group, cells
        else:
            raise ToolError(f"Invalid reset plan line: {line}")
        plan.setdefault(owner, {})[TopicPartition(topic, _partition_number(partition))] = _offset_number(offset)
    return plan


def _offset_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ToolError(f'For input string: "{text}"') from None


def _partition_number(text: str) -> int:
    if not text.strip().isdigit():
        raise ToolError(f'For input string: "{text}"')         # Integer.parseInt's NumberFormatException
    return int(text)


def _cell(value) -> str:
    return MISSING if value is None else str(value)


def _name(e: ApiException) -> str:
    """What Java's ``ExecutionException.toString()`` starts with: GROUP_ID_NOT_FOUND ->
    ``java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.GroupIdNotFoundException``."""
    return f"java.util.concurrent.ExecutionException: {java_exception_class(e.error_code)}"


def _parse_states(text: str) -> set:
    by_lower = {s.lower(): s for s in GROUP_STATES}
    states = {by_lower.get(s.strip().lower()) for s in text.split(",")}
    if None in states:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(GROUP_STATES)}")
    return states


def _check(args) -> str:
    """``ConsumerGroupCommandOptions.checkArgs``: the action, and what it needs; raises UsageError."""
    chosen = [a for a in ("list", "describe", "delete", "reset_offsets", "delete_offsets") if getattr(args, a)]
    if len(chosen) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets")
    action = chosen[0]
    if action in ("describe", "delete", "reset_offsets") and not args.group and not args.all_groups:
        raise UsageError(f"Option --{action.replace('_', '-')} takes one of these options: --all-groups, --group")
    if action == "delete_offsets" and (len(args.group) != 1 or not args.topic):
        raise UsageError("Option --delete-offsets takes the following options: --group, --topic")
    if action == "reset_offsets":
        if sum(getattr(args, s) not in (None, False) for s in _SCENARIOS) != 1:
            raise UsageError("Option '--reset-offsets' requires one of the following scenarios: [--to-offset, "
                             "--to-datetime, --by-duration, --to-earliest, --to-latest, --shift-by, --from-file, "
                             "--to-current]")
        for name in ("to_datetime", "by_duration"):
            value = getattr(args, name)
            if value is not None:
                try:
                    parse_datetime(value) if name == "to_datetime" else parse_duration_ms(value)
                except ToolError as e:
                    raise UsageError(str(e)) from None
        if args.from_file is None and bool(args.topic) == bool(args.all_topics):
            raise UsageError("Option --reset-offsets takes one of these options: --all-topics, --topic")
        if args.dry_run and args.execute:
            raise UsageError("Option --reset-offsets only accepts one of --execute and --dry-run")
    if action == "describe" and (args.members + args.offsets + (args.state is not None)) > 1:
        raise UsageError("Option --describe takes at most one of these options: --members, --offsets, --state")
    if args.verbose and not args.members:
        raise UsageError("Option --verbose can only be used with --describe --members")
    return action


def run(args, *, out=None, err=None, admin_factory: Optional[Callable[[dict], Admin]] = None) -> int:
    """Run the chosen action; 1 on a usage error, else 0 (failures print ``Error: ...`` as Kafka's tool does)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        action = _check(args)
    except UsageError as e:
        print(f"{e}", file=err)
        return 1
    try:
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config.setdefault("default.api.timeout.ms", args.timeout)
        config["bootstrap.servers"] = args.bootstrap_server
        admin = (admin_factory or Admin)(config)
    except (OSError, ConfigException, ApiException) as e:
        print(f"\nError: Executing consumer group command failed due to {_message(e)}", file=out)
        return 0
    try:
        service = ConsumerGroupService(admin, args, err)
        text = getattr(service, action)()
        out.write("".join(service.notes) + text)
    except UsageError as e:
        print(f"{e}", file=err)
        return 1
    except (ToolError, ApiException, OSError) as e:
        print(f"\nError: Executing consumer group command failed due to {_message(e)}", file=out)
    finally:
        admin.close()
    return 0


def _message(e: BaseException) -> str:
    errors = getattr(e, "errors", None)
    if errors:
        e = next(iter(errors.values()))
    return e.message if isinstance(e, ApiException) else str(e)
