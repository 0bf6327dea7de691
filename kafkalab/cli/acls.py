"""``kafkalab acls``: Kafka's ``kafka-acls.sh`` over the admin protocol, with its flags and its output.

Examples (as with Kafka's tool)::

    kafkalab acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice --operation Write --topic orders
    kafkalab acls --bootstrap-server 127.0.0.1:9092 --add --deny-principal User:bob --deny-host 10.0.0.9 \\
        --operation All --topic orders- --resource-pattern-type prefixed
    kafkalab acls --bootstrap-server 127.0.0.1:9092 --list [--topic orders]
    kafkalab acls --bootstrap-server 127.0.0.1:9092 --remove --force --allow-principal User:alice --topic orders
    kafkalab acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:app --consumer --topic t --group g

``--add`` prints ``Adding ACLs for resource `ResourcePattern(...)`:`` with one tab-indented entry per line,
then lists the resource's ACLs as ``--list`` does (``Current ACLs for resource `...`:``); ``--remove`` asks for
confirmation unless ``--force`` and removes what the principals, hosts and operations given select (every ACL
of the resource when no principal is given). A host defaults to ``*`` and an operation to ``All``. ``--producer``
and ``--consumer`` stand for the operations those roles need (Kafka's convenience options).
``--resource-pattern-type`` is LITERAL by default; PREFIXED to add prefixed ACLs; ANY or MATCH to list or remove.
``--command-config`` names a properties file of client settings (``security.protocol``, ``sasl.*``, ...).
Failures print ``Error while executing ACL command: ...`` and exit with 1.

Mirrors: ``core/src/main/scala/kafka/admin/AclCommand.scala`` (``AdminClientService``, ``AclCommandOptions``).
"""
from __future__ import annotations

import sys

from kafkalab.security.acl import (CLUSTER_NAME, WILDCARD_HOST, AccessControlEntry, AccessControlEntryFilter,
                                   AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
                                   ResourcePattern, ResourcePatternFilter, ResourceType, from_pascal_case)
from kafkalab.security.authorizer import SUPPORTED_OPERATIONS

__all__ = ["add_parser", "run"]


class UsageError(Exception):
    pass


def add_parser(sub) -> None:
    p = sub.add_parser("acls", help="add, remove or list ACLs (kafka-acls.sh)",
                       description="Manage ACLs through the admin protocol, as kafka-acls.sh does.")
    p.add_argument("--bootstrap-server", required=True, help="host:port of a broker")
    p.add_argument("--command-config", help="properties file of client settings for the admin client")
    for flag, text in (("--add", "Indicates you are trying to add ACLs."),
                       ("--remove", "Indicates you are trying to remove ACLs."),
                       ("--list", "List ACLs for the specified resource.")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--allow-principal", action="append", default=[], help="principalType:name, e.g. User:alice")
    p.add_argument("--deny-principal", action="append", default=[], help="principalType:name; DENY beats ALLOW")
    p.add_argument("--allow-host", action="append", default=[], help="host of --allow-principal (default *)")
    p.add_argument("--deny-host", action="append", default=[], help="host of --deny-principal (default *)")
    p.add_argument("--operation", action="append", default=[],
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                        "IdempotentWrite, All (default All)")
    p.add_argument("--topic", action="append", default=[], help="topic (* for all topics)")
    p.add_argument("--group", action="append", default=[], help="consumer group (* for all groups)")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--transactional-id", action="append", default=[], help="transactional id (* for all)")
    p.add_argument("--producer", action="store_true", help="convenience: WRITE, DESCRIBE, CREATE on the topics "
                   "(WRITE, DESCRIBE on the transactional ids; IDEMPOTENT_WRITE on the cluster with --idempotent)")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    p.add_argument("--consumer", action="store_true", help="convenience: READ, DESCRIBE on the topics, READ on "
                   "the groups")
    p.add_argument("--resource-pattern-type", default="LITERAL",
                   help="LITERAL (default), PREFIXED; ANY or MATCH for --list and --remove")
    p.add_argument("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    p.set_defaults(run=run)


def run(args, *, out=None, confirm=input) -> int:
    out = out or sys.stdout
    try:
        actions = [a for a in ("add", "remove", "list") if getattr(args, a)]
        if len(actions) != 1:
            raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
        admin = _admin(args)
        try:
            {"add": _add, "remove": _remove, "list": _list}[actions[0]](args, admin, out, confirm)
        finally:
            admin.close()
        return 0
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 1
    except Exception as e:  # what Kafka's tool prints for any failure
        print(f"Error while executing ACL command: {e}", file=out)
        return 1


def _admin(args):
    from kafkalab.clients import Admin
    from kafkalab.common.config import load_properties

    config = load_properties(args.command_config) if args.command_config else {}
    config["bootstrap.servers"] = args.bootstrap_server
    return Admin(config)


def _pattern_type(args, *, specific: bool) -> PatternType:
    pattern_type = from_pascal_case(PatternType, args.resource_pattern_type)
    if pattern_type == PatternType.UNKNOWN or (specific and not pattern_type.is_specific):
        raise UsageError(f"A '--resource-pattern-type' value of '{args.resource_pattern_type}' is not valid when "
                         f"adding acls." if specific else
                         f"Unknown resource pattern type: {args.resource_pattern_type}")
    return pattern_type


def _resources(args) -> list:
    out = [(ResourceType.TOPIC, t.strip()) for t in args.topic]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    out += [(ResourceType.GROUP, g.strip()) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t.strip()) for t in args.transactional_id]
    return out


def _plan(args) -> list:
    """[(resource type, name, entries)] to add or remove: from --operation, or the --producer/--consumer roles
    (AclCommand's getProducerResourceFilterToAcls / getConsumerResourceFilterToAcls)."""
    resources = _resources(args)
    if not resources:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group>")
    if not (args.producer or args.consumer):
        entries = _entries(args, _operations(args))
        return [(rtype, name, entries) for rtype, name in resources]
    if args.operation or args.deny_principal or args.deny_host:
        raise UsageError("--producer and --consumer infer the operations and allow only: no --operation, "
                         "--deny-principal or --deny-host")
    topics = [r for r in resources if r[0] == ResourceType.TOPIC]
    if args.producer and not topics:
        raise UsageError("With --producer you must specify a --topic")
    groups = [r for r in resources if r[0] == ResourceType.GROUP]
    if args.consumer and (not topics or not groups or (not args.producer and args.cluster)):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster option should "
                         "be specified.")
    Op = AclOperation
    wanted: dict = {}
    if args.producer:
        for r in topics:
            wanted.setdefault(r, []).extend((Op.WRITE, Op.DESCRIBE, Op.CREATE))
        for r in resources:
            if r[0] == ResourceType.TRANSACTIONAL_ID:
                wanted.setdefault(r, []).extend((Op.WRITE, Op.DESCRIBE))
        if args.idempotent:
            wanted.setdefault((ResourceType.CLUSTER, CLUSTER_NAME), []).append(Op.IDEMPOTENT_WRITE)
    if args.consumer:
        for r in topics:
            wanted.setdefault(r, []).extend((Op.READ, Op.DESCRIBE))
        for r in groups:
            wanted.setdefault(r, []).append(Op.READ)
    return [(rtype, name, _entries(args, list(dict.fromkeys(ops)))) for (rtype, name), ops in wanted.items()]


def _operations(args) -> list:
    ops = [from_pascal_case(AclOperation, o.strip()) for o in args.operation] or [AclOperation.ALL]
    for given, op in zip(args.operation, ops):
        if op in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise UsageError(f"Unknown operation: {given}")
    return ops


def _entries(args, operations) -> list:
    entries = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
                                          (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        for principal in principals:
            if ":" not in principal.strip():
                raise UsageError(f"expected a string in format principalType:principalName but got {principal}")
            for host in hosts or [WILDCARD_HOST]:
                entries.extend(AccessControlEntry(principal.strip(), host.strip(), op, permission)
                               for op in operations)
    return list(dict.fromkeys(entries))


def _validate(resource_type: ResourceType, entries) -> None:
    valid = SUPPORTED_OPERATIONS[resource_type] + (AclOperation.ALL,)
    if any(e.operation not in valid for e in entries):
        raise UsageError(f"ResourceType {resource_type.name} only supports operations "
                         f"{','.join(op.name for op in valid)}")


def _print_entries(out, heading: str, entries) -> None:
    # Kafka: s"$heading: $Newline ${acls.map("\t" + _).mkString(Newline)} $Newline", then println's newline.
    lines = "\n".join(f"\t{e}" for e in entries)
    print(f"{heading}: \n {lines} \n", file=out)


def _add(args, admin, out, confirm) -> None:
    plan = _plan(args)
    pattern_type = _pattern_type(args, specific=True)
    if any(not entries for _, _, entries in plan):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    for rtype, _name, entries in plan:
        _validate(rtype, entries)
    for rtype, name, entries in plan:
        pattern = ResourcePattern(rtype, name, pattern_type)
        _print_entries(out, f"Adding ACLs for resource `{pattern}`", entries)
        admin.create_acls([AclBinding(pattern, e) for e in entries])
    _list(args, admin, out, confirm)


def _remove(args, admin, out, confirm) -> None:
    plan = _plan(args)
    pattern_type = _pattern_type(args, specific=False)
    for rtype, name, entries in plan:
        pattern_filter = ResourcePatternFilter(rtype, name, pattern_type)
        # Kafka's ResourcePatternFilter prints itself as "ResourcePattern(...)"
        shown = f"ResourcePattern(resourceType={rtype.name}, name={name}, patternType={pattern_type.name})"
        if not entries:
            question = f"Are you sure you want to delete all ACLs for resource filter `{shown}`? (y/n)"
            filters = [AclBindingFilter(pattern_filter, AccessControlEntryFilter())]
        else:
            lines = "\n".join(f"\t{e}" for e in entries)
            question = f"Are you sure you want to remove ACLs: \n {lines} \n from resource filter `{shown}`? (y/n)"
            filters = [AclBindingFilter(pattern_filter, AccessControlEntryFilter(e.principal, e.host, e.operation,
                                                                                 e.permission_type))
                       for e in entries]
        if args.force or _confirmed(out, confirm, question):
            admin.delete_acls(filters)
    _list(args, admin, out, confirm)


def _confirmed(out, confirm, question: str) -> bool:
    print(question, file=out)
    return (confirm() or "").strip().lower() == "y"


def _list(args, admin, out, confirm=None) -> None:
    resources = _resources(args)
    pattern_type = _pattern_type(args, specific=False)
    filters = ([AclBindingFilter(ResourcePatternFilter(rtype, name, pattern_type)) for rtype, name in resources]
               or [AclBindingFilter()])
    by_pattern: dict[ResourcePattern, list] = {}
    for acl_filter in filters:
        for binding in admin.describe_acls(acl_filter):
            by_pattern.setdefault(binding.pattern, [])
            if binding.entry not in by_pattern[binding.pattern]:
                by_pattern[binding.pattern].append(binding.entry)
    for pattern, entries in by_pattern.items():
        _print_entries(out, f"Current ACLs for resource `{pattern}`", entries)
