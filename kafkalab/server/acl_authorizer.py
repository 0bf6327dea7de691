"""The broker's authorizer: ACLs kept in the coordination store, decided by the sans-IO core.

Theory of operation
-------------------
``authorizer.class.name`` turns authorization on. kafkalab accepts exactly Kafka's two built-in names,
``kafka.security.authorizer.AclAuthorizer`` (ZooKeeper era) and ``org.apache.kafka.metadata.authorizer.
StandardAuthorizer`` (KRaft), both served by this class; any other name stops the broker at start-up, and no
class named in configuration is ever loaded. ``super.users`` and ``allow.everyone.if.no.acl.found`` feed the
decision rules of :mod:`kafkalab.security.authorizer`.

The ACLs live where a ZooKeeper-era Kafka keeps them (``ZkAclStore``), one znode per resource pattern holding
every entry of that pattern::

    /kafka-acl/Topic/orders                   {"version":1,"acls":[{"principal":"User:alice",
                                                "permissionType":"Allow","operation":"Write","host":"*"}]}
    /kafka-acl/Cluster/kafka-cluster          LITERAL patterns (and the wildcard "*")
    /kafka-acl-extended/prefixed/Topic/ord    PREFIXED patterns
    /kafka-acl-changes/acl_changes_0000000003           TOPIC:orders        (a literal pattern changed)
    /kafka-acl-extended-changes/acl_changes_0000000004  {"version":1,"resourceType":"TOPIC","name":"ord",
                                                         "patternType":"PREFIXED"}

Every broker loads all ACLs at start-up into its index and watches the two change paths: a broker that
creates or deletes ACLs rewrites each resource's znode (a conditional update on the version it read), updates
its own index, and writes one sequential change node per resource; every other broker re-reads that one
resource when the node appears. Change nodes older than 15 minutes are deleted while notifications are
processed (``ZkNodeChangeNotificationListener``'s ``changeExpirationMs``), so a lab sees the recent ones.

**One transaction per request.** Kafka's ``AclAuthorizer`` writes resource by resource: per resource a
versioned set (or create, or delete when no ACL is left), then its change node. kafkalab writes the same
znodes, but all of one CreateAcls or DeleteAcls request as one ``multi``: every resource's versioned write and
its change node, all or nothing. When another broker changed one of the resources since it was read (a version
that moved, a znode created or deleted meanwhile), the multi writes nothing, and the request reads the
resources again and retries, up to Kafka's ``maxUpdateRetries`` (10) times. One commit per request instead of
two per resource is what keeps creating 10,000 ACLs linear (each commit is an fsync).

Every decision can be logged (:func:`~kafkalab.security.authorizer.audit_message`) on
``kafkalab.authorizer.logger`` (Kafka: ``kafka.authorizer.logger``) in Kafka's shape: denials the request asked
for at INFO, grants at DEBUG::

    Principal = User:bob is Denied Operation = Write from host = 127.0.0.1 on resource = Topic:LITERAL:orders
    for request = Produce with resourceRefCount = 1

(with ``StandardAuthorizer`` configured, in its own shape: ``operation = WRITE ... based on rule
MatchingAcl(acl=StandardAcl[...])``, ``DefaultDeny`` or ``SuperUser``).

Mirrors: ``core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`` and the ACL parts of
``core/src/main/scala/kafka/zk/ZkData.scala`` (``ZkAclStore``, ``LiteralAclChangeStore``,
``ExtendedAclChangeStore``, ``ResourceZNode``), ``kafka/security/authorizer/AclEntry.scala``.
"""
from __future__ import annotations

import bisect
import json
import logging
from typing import Iterable, Optional

from kafkalab.common.config import ConfigException
from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.security.acl import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, PatternType, ResourcePattern, ResourceType, from_pascal_case,
                                   pascal_case)
from kafkalab.security.authorizer import (AuthorizerCore, Decision, audit_message, parse_super_users,
                                          validate_binding)
from kafkalab.zk import (BadVersionException, CreateOp, DeleteOp, KeeperException, NodeExistsException,
                         NoNodeException, NotEmptyException, SetDataOp)

__all__ = ["AclAuthorizer", "AUTHORIZER_CLASS_NAMES", "check_authorizer_class_name", "resource_path",
           "encode_acls", "decode_acls", "LITERAL_ACL_PATH", "EXTENDED_ACL_PATH", "LITERAL_ACL_CHANGES_PATH",
           "EXTENDED_ACL_CHANGES_PATH", "ACL_CHANGE_PREFIX", "AUTHORIZER_LOGGER"]

AUTHORIZER_CLASS_NAMES = ("kafka.security.authorizer.AclAuthorizer",
                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
AUTHORIZER_LOGGER = "kafkalab.authorizer.logger"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
MAX_UPDATE_RETRIES = 10     # AclAuthorizer.maxUpdateRetries
_PATTERN_ROOTS = {PatternType.LITERAL: LITERAL_ACL_PATH,
                  PatternType.PREFIXED: f"{EXTENDED_ACL_PATH}/{PatternType.PREFIXED.name.lower()}"}
_RESOURCE_TYPES = [t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY)]

TRACE = 5   # below DEBUG: decisions made only to fill authorized-operations fields (Kafka logs them at TRACE)
audit = logging.getLogger(AUTHORIZER_LOGGER)
log = logging.getLogger("kafkalab.server.AclAuthorizer")


def check_authorizer_class_name(name: Optional[str]) -> Optional[str]:
    """The configured authorizer, None when off; ConfigException for any other class (never loaded)."""
    name = (name or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigException(f"java.lang.ClassNotFoundException: {name} (authorizer.class.name: kafkalab serves "
                              f"{' and '.join(AUTHORIZER_CLASS_NAMES)}, and loads no class named in configuration)")
    return name


# ------------------------------------------------------------------------------------------------ the znodes
def resource_path(pattern: ResourcePattern) -> str:
    return f"{_PATTERN_ROOTS[pattern.pattern_type]}/{pascal_case(pattern.resource_type)}/{pattern.name}"


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    acls = [{"principal": e.principal, "permissionType": pascal_case(e.permission_type),
             "operation": pascal_case(e.operation), "host": e.host}
            for e in sorted(entries, key=lambda e: (e.principal, e.host, int(e.operation), int(e.permission_type)))]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: Optional[bytes]) -> set[AccessControlEntry]:
    """The entries of a resource znode; ValueError for bytes that are not Kafka's ACL JSON."""
    if not data:
        return set()
    try:
        doc = json.loads(data)
        out = set()
        for a in doc["acls"]:
            entry = AccessControlEntry(str(a["principal"]), str(a["host"]),
                                       from_pascal_case(AclOperation, a["operation"]),
                                       from_pascal_case(AclPermissionType, a["permissionType"]))
            if entry.operation == AclOperation.UNKNOWN or entry.permission_type == AclPermissionType.UNKNOWN:
                raise ValueError(f"unknown operation or permission type in {a}")
            out.add(entry)
        return out
    except (TypeError, KeyError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"not ACL JSON: {e}") from e


def _change_node(pattern: ResourcePattern) -> tuple[str, bytes]:
    if pattern.pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_CHANGES_PATH, f"{pattern.resource_type.name}:{pattern.name}".encode()
    return EXTENDED_ACL_CHANGES_PATH, json.dumps(
        {"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
         "patternType": pattern.pattern_type.name}, separators=(",", ":")).encode()


def _decode_change(path: str, data: bytes) -> ResourcePattern:
    if path == LITERAL_ACL_CHANGES_PATH:
        rtype, sep, name = data.decode().partition(":")
        if not sep:
            raise ValueError(f"expected a string in format ResourceType:ResourceName but got {data!r}")
        return ResourcePattern(from_pascal_case(ResourceType, rtype), name, PatternType.LITERAL)
    doc = json.loads(data)
    return ResourcePattern(from_pascal_case(ResourceType, doc["resourceType"]), doc["name"],
                           from_pascal_case(PatternType, doc["patternType"]))


# ------------------------------------------------------------------------------------------------ the authorizer
class AclAuthorizer:
    """One broker's authorizer: the index of every ACL, kept in step with the coordination store."""

    def __init__(self, class_name: str, zk, *, super_users: Optional[str] = None,
                 allow_everyone_if_no_acl_found: bool = False):
        self.class_name = class_name
        self.zk = zk
        self.core = AuthorizerCore(parse_super_users(super_users), allow_everyone_if_no_acl_found)
        self._seen_changes: dict[str, str] = {}

    @classmethod
    def from_config(cls, config, zk) -> Optional["AclAuthorizer"]:
        name = check_authorizer_class_name(config["authorizer.class.name"])
        if name is None:
            return None
        return cls(name, zk, super_users=config["super.users"],
                   allow_everyone_if_no_acl_found=config["allow.everyone.if.no.acl.found"])

    # -- start-up and change notifications ---------------------------------------------------------------
    def startup(self) -> None:
        for path in (LITERAL_ACL_PATH, EXTENDED_ACL_PATH, LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
            self.zk.make_sure_persistent_path_exists(path)
        for change_path in (LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
            children = self.zk.get_children(change_path)
            self._seen_changes[change_path] = max(children, default="")
        for pattern_type, root in _PATTERN_ROOTS.items():
            for rtype_name in self.zk.get_children(root):
                rtype = from_pascal_case(ResourceType, rtype_name)
                if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
                    continue
                for name in self.zk.get_children(f"{root}/{rtype_name}"):
                    self._reload(ResourcePattern(rtype, name, pattern_type))
        self.watch_changes()

    def watch_changes(self) -> None:
        """(Re-)arm the watches on both change paths (again after a new coordination-store session)."""
        for change_path in (LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
            self._process_changes(change_path)

    def _process_changes(self, change_path: str, _event=None) -> None:
        try:
            self._read_changes(change_path)
        except KeeperException as e:   # the session ended (a broker stopping): the next session re-arms the watch
            log.debug("ACL change notifications on %s not read: %s", change_path, e)

    def _read_changes(self, change_path: str) -> None:
        children = sorted(self.zk.get_children(change_path,
                                               watch=lambda e, p=change_path: self._process_changes(p, e)))
        last = self._seen_changes.get(change_path, "")
        now = self.zk.time.milliseconds()
        # Sequence order is creation order, so the expired notifications are the oldest ones: purge from the
        # front and stop at the first one still young (reading every node on every change made creating
        # 10,000 ACLs quadratic).
        expired: dict[str, int] = {}
        for child in children:
            data, stat = self.zk.get_data_and_stat(f"{change_path}/{child}")
            if stat is None or now - stat.ctime <= CHANGE_EXPIRATION_MS:
                break
            expired[f"{change_path}/{child}"] = stat.version
        self.zk.conditional_delete_paths(expired)    # in batches, not one commit each
        for child in children[bisect.bisect_right(children, last):]:   # the ones not processed yet
            data, _ = self.zk.get_data_and_stat(f"{change_path}/{child}")
            self._seen_changes[change_path] = child
            if data is None:
                continue
            try:
                self._reload(_decode_change(change_path, data))
            except (ValueError, KeyError, TypeError) as e:
                log.warning("Ignoring ACL change notification %s/%s: %s", change_path, child, e)

    def _reload(self, pattern: ResourcePattern) -> None:
        data, _ = self.zk.get_data_and_stat(resource_path(pattern))
        self.core.index.replace(pattern, self._decode(pattern, data))

    # -- the admin side (CreateAcls, DescribeAcls, DeleteAcls) --------------------------------------------
    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.core.index.bindings(acl_filter)

    def create_acls(self, bindings: list[AclBinding]) -> list[Optional[ApiException]]:
        """Per binding: None when created (or already there), else the error."""
        results: list[Optional[ApiException]] = []
        by_pattern: dict[ResourcePattern, set] = {}
        for binding in bindings:
            try:
                validate_binding(binding)
            except ApiException as e:
                results.append(e)
                continue
            results.append(None)
            by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
        try:
            self._update_resources({pattern: (lambda current, new=entries: current | new)
                                    for pattern, entries in by_pattern.items()})
        except ApiException as e:
            results = [e if r is None else r for r in results]
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list:
        """Per filter: the bindings it deleted, or an ApiException for a filter that cannot be served. A binding
        that several filters match is reported under the first of them (as Kafka does)."""
        results: list = [[] for _ in filters]
        first_filter: dict[AclBinding, int] = {}
        for i, acl_filter in enumerate(filters):
            problem = acl_filter.indefinite_field()
            if problem:
                results[i] = ApiException(ErrorCode.INVALID_REQUEST, problem)
                continue
            for binding in self.core.index.bindings(acl_filter):
                first_filter.setdefault(binding, i)
        doomed: dict[ResourcePattern, set] = {}
        for binding in first_filter:
            doomed.setdefault(binding.pattern, set()).add(binding.entry)
        try:
            written = self._update_resources({pattern: (lambda current, gone=entries: current - gone)
                                              for pattern, entries in doomed.items()})
        except ApiException as e:
            failed = set(first_filter.values())
            return [e if i in failed else r for i, r in enumerate(results)]
        for binding, i in first_filter.items():      # in the index's order, so sorted by pattern
            before, after = written.get(binding.pattern, ((), ()))
            if binding.entry in before and binding.entry not in after:
                results[i].append(binding)
        return results

    def _update_resources(self, changes: dict) -> dict:
        """Apply ``changes`` (pattern -> function from the current entries to the wanted ones) as one multi:
        per changed resource its versioned write and a change node (``AclAuthorizer.updateResourceAcls`` and
        ``updateAclChangedFlag``, for all resources at once). Returns pattern -> (entries before, after) for
        the resources that changed; ApiException when the resources kept changing under it."""
        for _ in range(MAX_UPDATE_RETRIES + 1):
            ops: list = []
            written: dict[ResourcePattern, tuple] = {}
            for pattern, change in changes.items():
                path = resource_path(pattern)
                data, stat = self.zk.get_data_and_stat(path)
                current = self._decode(pattern, data)
                wanted = change(current)
                if wanted == current:
                    continue
                if stat is None:
                    ops.append(CreateOp(path, encode_acls(wanted), make_parents=True))
                elif wanted:
                    ops.append(SetDataOp(path, encode_acls(wanted), stat.version))
                else:
                    ops.append(DeleteOp(path, stat.version))
                change_path, payload = _change_node(pattern)
                ops.append(CreateOp(f"{change_path}/{ACL_CHANGE_PREFIX}", payload, sequential=True))
                written[pattern] = (current, wanted)
            if not ops:
                return {}
            try:
                self.zk.multi(ops)
            except (BadVersionException, NodeExistsException, NoNodeException, NotEmptyException) as e:
                log.debug("Failed to update ACLs (%s): reading them again and retrying", e)
                continue
            for pattern, (_, wanted) in written.items():
                self.core.index.replace(pattern, wanted)
            return written
        names = ", ".join(str(p) for p in changes)
        raise ApiException(ErrorCode.UNKNOWN_SERVER_ERROR,
                           f"Failed to update ACLs for {names} after trying a maximum of {MAX_UPDATE_RETRIES} times")

    @staticmethod
    def _decode(pattern: ResourcePattern, data: Optional[bytes]) -> set:
        try:
            return decode_acls(data)
        except ValueError as e:
            log.warning("Ignoring the ACLs of %s: %s", pattern, e)
            return set()

    # -- decisions ------------------------------------------------------------------------------------------
    def authorize(self, principal, host: str, operation: AclOperation, resource_type: ResourceType, name: str,
                  *, request: str = "", log_if_allowed: bool = True, log_if_denied: bool = True,
                  ref_count: int = 1) -> bool:
        allowed = self.core.authorize(principal, host, operation, resource_type, name)
        level = (logging.DEBUG if log_if_allowed else TRACE) if allowed else (logging.INFO if log_if_denied else TRACE)
        if audit.isEnabledFor(level):
            self._log(self.core.explain(principal, host, operation, resource_type, name), request, level, ref_count)
        return allowed

    def explain(self, principal, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> Decision:
        return self.core.explain(principal, host, operation, resource_type, name)

    def _log(self, d: Decision, request: str, level: int, ref_count: int) -> None:
        audit.log(level, audit_message(d, request, ref_count, standard=self.class_name == AUTHORIZER_CLASS_NAMES[1]))
