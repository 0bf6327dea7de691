"""The authorizer's decision core: may this principal, from this host, do this operation on this resource?

Theory of operation
-------------------
Kafka's two built-in authorizers -- ``AclAuthorizer`` (ZooKeeper era) and ``StandardAuthorizer`` (KRaft) --
decide with the same rules, tried in this order (:data:`RULES`, the table a lab draws):

==  ===========================  =====================================================================
1   ``super user``               the principal is listed in ``super.users``: ALLOWED, no ACL is consulted
2   ``deny acl``                 any DENY ACL matches: DENIED, however many ALLOW ACLs match too
3   ``allow acl``                any ALLOW ACL matches (directly or by an implied operation): ALLOWED
4   ``no acl found``             no ACL at all applies to the resource: ``allow.everyone.if.no.acl.found``
5   ``no matching allow acl``    DENIED
==  ===========================  =====================================================================

An ACL *matches* when its principal is the caller's or ``User:*``, its host the caller's or ``*``, and its
operation the one asked for or ``ALL``. Some operations are **implied**, by ALLOW ACLs only: READ, WRITE,
DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS (a DENY READ does not deny DESCRIBE).
Rule 4 looks at *every* ACL on the resource whatever its principal or operation: once a topic has an ACL for
alice, bob is denied even with the flag set.

**A lookup, not a scan.** A broker may hold ten thousand ACLs and asks for a decision for every partition of
every request, so the ACLs are indexed by resource as ``StandardAuthorizerData`` keeps them (a set sorted by
resource type, then name, then pattern type). Literal names (``*`` among them) are found by one dictionary
lookup each. Prefixed patterns sit in a sorted list per resource type, and the walk goes *backwards* from the
resource's name, since every prefix of a name sorts at or before it. Worked example, prefixed patterns of TOPIC
``["a", "or", "orders-", "orders-eu", "ordinal", "p"]`` and the topic ``orders-us``:

1. bisect: the last key ``<= "orders-us"`` is ``orders-eu`` -- not a prefix. The prefixes still to find share
   at most ``orders-`` (the common start of ``orders-eu`` and ``orders-us``) with the name, so
2. jump: the last key ``<= "orders-"`` is ``orders-`` -- a prefix: its ACLs apply; step back one,
3. ``ordinal`` is no prefix (common start ``ord``): jump to the last key ``<= "ord"``: ``or`` -- a prefix,
4. ``a`` is no prefix and shares nothing: the walk ends.

Four probes whatever the number of ACLs; ``ordinal`` and ``p`` were never compared with the whole name. The
ACLs that apply to a resource are then cached until the next ACL change (``AclAuthorizer``'s resource cache),
so the steady state of a produce is one dictionary lookup and a glance at a handful of entries.

**Which ACL a decision names** (:meth:`AuthorizerCore.explain`, the authorizer log, the lab's table) does not
depend on the order ACLs were added or on Python's hashing: the applying ACLs are looked at in
``StandardAuthorizerData``'s order -- the literal pattern of the name, then the prefixed patterns longest
first, then the literal ``*``, and within a pattern by operation, principal, host and permission type (enum
codes, strings by code point) -- and, as there, a denial names the *first* matching DENY and an allowance
the *last* matching ALLOW.

This module is sans-IO: :class:`AclIndex` holds bindings, :class:`AuthorizerCore` decides. The broker's
``AclAuthorizer`` (``kafkalab/server/acl_authorizer.py``) keeps the bindings in the coordination store and
feeds changes here.

Mirrors: ``core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`` (``authorizeAction``,
``matchingAcls``) and ``metadata/src/main/java/org/apache/kafka/metadata/authorizer/StandardAuthorizerData.java``
(``authorize``, ``findResult``, ``IMPLIES_DESCRIBE``, ``IMPLIES_DESCRIBE_CONFIGS``).
"""
from __future__ import annotations

import bisect
import os
from typing import Iterable, NamedTuple, Optional

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.security.acl import (ANY_FILTER, CLUSTER_NAME, WILDCARD_HOST, WILDCARD_PRINCIPAL_STRING,
                                   WILDCARD_RESOURCE, AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, PatternType, ResourcePattern, ResourceType, pascal_case)

__all__ = ["AuthorizationResult", "Decision", "AclIndex", "AuthorizerCore", "RULES", "IMPLIED_BY",
           "validate_binding", "parse_super_users", "decision_table", "SUPPORTED_OPERATIONS", "audit_message"]


class AuthorizationResult:
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


RULES = (
    ("super user", "the principal is in super.users", AuthorizationResult.ALLOWED),
    ("deny acl", "a DENY ACL matches principal, host and operation", AuthorizationResult.DENIED),
    ("allow acl", "an ALLOW ACL matches (operation, ALL or an operation that implies it)", AuthorizationResult.ALLOWED),
    ("no acl found", "no ACL applies to the resource and allow.everyone.if.no.acl.found=true",
     AuthorizationResult.ALLOWED),
    ("no matching allow acl", "otherwise", AuthorizationResult.DENIED),
)

# Operation asked for -> the ALLOW operations that grant it (StandardAuthorizerData.IMPLIES_DESCRIBE ...).
IMPLIED_BY: dict[AclOperation, frozenset] = {op: frozenset((op, AclOperation.ALL)) for op in AclOperation}
IMPLIED_BY[AclOperation.DESCRIBE] = frozenset((AclOperation.DESCRIBE, AclOperation.ALL, AclOperation.READ,
                                               AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER))
IMPLIED_BY[AclOperation.DESCRIBE_CONFIGS] = frozenset((AclOperation.DESCRIBE_CONFIGS, AclOperation.ALL,
                                                       AclOperation.ALTER_CONFIGS))
_DENIED_BY = {op: frozenset((op, AclOperation.ALL)) for op in AclOperation}

_Op = AclOperation
#: The operations each resource type has (``AclEntry.supportedOperations``): what authorized-operations bit fields
#: cover and what kafka-acls.sh accepts (plus ALL).
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: (_Op.READ, _Op.WRITE, _Op.CREATE, _Op.DESCRIBE, _Op.DELETE, _Op.ALTER, _Op.DESCRIBE_CONFIGS,
                         _Op.ALTER_CONFIGS),
    ResourceType.GROUP: (_Op.READ, _Op.DESCRIBE, _Op.DELETE),
    ResourceType.CLUSTER: (_Op.CREATE, _Op.CLUSTER_ACTION, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS,
                           _Op.IDEMPOTENT_WRITE, _Op.ALTER, _Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_Op.DESCRIBE, _Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (_Op.DESCRIBE,),
    ResourceType.USER: (_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS),
}


class Decision(NamedTuple):
    """One decision with its reason: which rule decided and, for rules 2 and 3, the ACL that did."""

    principal: str
    host: str
    operation: AclOperation
    resource: ResourcePattern
    result: str                        # AuthorizationResult.ALLOWED / DENIED
    rule: str                          # a name from RULES
    acl: Optional[AccessControlEntry] = None
    pattern: Optional[ResourcePattern] = None    # the pattern the deciding ACL belongs to

    @property
    def allowed(self) -> bool:
        return self.result == AuthorizationResult.ALLOWED


def parse_super_users(value: Optional[str]) -> frozenset:
    """``super.users`` (``User:bob;User:alice``, semicolon-separated, case-sensitive) -> principal strings."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def validate_binding(binding: AclBinding) -> None:
    """Refuse what no ACL may be (AclAuthorizer.validateAclBinding, AclApis.handleCreateAcls), as INVALID_REQUEST."""
    pattern, entry = binding
    if (pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY)
            or entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY)
            or entry.permission_type in (AclPermissionType.UNKNOWN, AclPermissionType.ANY)
            or pattern.pattern_type == PatternType.UNKNOWN):
        raise ApiException(ErrorCode.INVALID_REQUEST, "ACL binding contains unknown elements")
    if not pattern.pattern_type.is_specific:
        raise ApiException(ErrorCode.INVALID_REQUEST, f"Invalid pattern type: {pattern.pattern_type.name}")
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise ApiException(ErrorCode.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        raise ApiException(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
    if ":" not in entry.principal or entry.principal.startswith(":") or entry.principal.endswith(":"):
        raise ApiException(ErrorCode.INVALID_REQUEST,
                           f"expected a string in format principalType:principalName but got {entry.principal}")


class AclIndex:
    """Every ACL binding, indexed by resource pattern; finds the entries that apply to a resource by lookup."""

    def __init__(self):
        self._entries: dict[ResourcePattern, set[AccessControlEntry]] = {}
        self._prefixes: dict[ResourceType, list[str]] = {}       # sorted names of PREFIXED patterns per type
        self._applying: dict[tuple, tuple] = {}                  # (type, name) -> entries that apply (cache)

    def __len__(self) -> int:
        return sum(len(e) for e in self._entries.values())

    def patterns(self) -> list[ResourcePattern]:
        return sorted(self._entries)

    def entries(self, pattern: ResourcePattern) -> frozenset:
        return frozenset(self._entries.get(pattern, ()))

    def add(self, binding: AclBinding) -> bool:
        """Add one binding; False if it was there already."""
        pattern, entry = binding
        entries = self._entries.get(pattern)
        if entries is None:
            entries = self._entries[pattern] = set()
            if pattern.pattern_type == PatternType.PREFIXED:
                bisect.insort(self._prefixes.setdefault(pattern.resource_type, []), pattern.name)
        if entry in entries:
            return False
        entries.add(entry)
        self._applying.clear()
        return True

    def remove(self, binding: AclBinding) -> bool:
        pattern, entry = binding
        entries = self._entries.get(pattern)
        if entries is None or entry not in entries:
            return False
        entries.discard(entry)
        if not entries:
            self.replace(pattern, ())
        self._applying.clear()
        return True

    def replace(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Make ``pattern``'s entries exactly ``entries`` (what a change notification carries)."""
        entries = set(entries)
        had = pattern in self._entries
        if entries:
            if not had and pattern.pattern_type == PatternType.PREFIXED:
                bisect.insort(self._prefixes.setdefault(pattern.resource_type, []), pattern.name)
            self._entries[pattern] = entries
        elif had:
            del self._entries[pattern]
            if pattern.pattern_type == PatternType.PREFIXED:
                names = self._prefixes[pattern.resource_type]
                del names[bisect.bisect_left(names, pattern.name)]
        self._applying.clear()

    def bindings(self, acl_filter: AclBindingFilter = ANY_FILTER) -> list[AclBinding]:
        """Every binding the filter matches (DescribeAcls, DeleteAcls), sorted by pattern."""
        return [AclBinding(pattern, entry) for pattern in sorted(self._entries)
                for entry in sorted(self._entries[pattern], key=_entry_order)
                if acl_filter.matches(AclBinding(pattern, entry))]

    def prefixes_of(self, resource_type: ResourceType, name: str) -> list[str]:
        """The PREFIXED pattern names that apply to ``name``, longest first: the backwards walk."""
        keys = self._prefixes.get(resource_type)
        found: list[str] = []
        if not keys:
            return found
        hi = bisect.bisect_right(keys, name)
        while hi > 0:
            candidate = keys[hi - 1]
            if name.startswith(candidate):
                found.append(candidate)
                hi -= 1
            else:
                hi = bisect.bisect_right(keys, os.path.commonprefix((candidate, name)), 0, hi - 1)
        return found

    def applying_patterns(self, resource_type: ResourceType, name: str) -> list[ResourcePattern]:
        """The patterns that apply to the resource, in ``StandardAuthorizerData``'s scan order: the literal
        name, the prefixes longest first, the literal ``*``."""
        patterns = [ResourcePattern(resource_type, name, PatternType.LITERAL)]
        patterns += [ResourcePattern(resource_type, p, PatternType.PREFIXED)
                     for p in self.prefixes_of(resource_type, name)]
        if name != WILDCARD_RESOURCE:
            patterns.append(ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL))
        return patterns

    def applying_bindings(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The bindings behind :meth:`applying`, same order (for explaining a decision, not for deciding)."""
        return [AclBinding(p, e) for p in self.applying_patterns(resource_type, name)
                for e in sorted(self._entries.get(p, ()), key=_scan_order)]

    def applying(self, resource_type: ResourceType, name: str) -> tuple:
        """Every entry of every pattern that applies to the resource, in scan order (see the module)."""
        key = (resource_type, name)
        cached = self._applying.get(key)
        if cached is not None:
            return cached
        result = tuple(b.entry for b in self.applying_bindings(resource_type, name))
        if len(self._applying) > 100_000:       # bounded: many distinct names asked for
            self._applying.clear()
        self._applying[key] = result
        return result


def _entry_order(entry: AccessControlEntry):
    return (entry.principal, entry.host, int(entry.operation), int(entry.permission_type))


def _scan_order(entry: AccessControlEntry):
    """Within one pattern, ``StandardAcl.compareTo``'s order: operation, principal, host, permission type."""
    return (int(entry.operation), entry.principal, entry.host, int(entry.permission_type))


class AuthorizerCore:
    """The decision rules over an :class:`AclIndex`, with ``super.users`` and ``allow.everyone.if.no.acl.found``."""

    def __init__(self, super_users: Iterable = (), allow_everyone_if_no_acl_found: bool = False,
                 index: Optional[AclIndex] = None):
        self.super_users = frozenset(str(p) for p in super_users)
        self.allow_everyone_if_no_acl_found = bool(allow_everyone_if_no_acl_found)
        self.index = index if index is not None else AclIndex()

    def authorize(self, principal, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """The fast path: just the answer."""
        principal = str(principal)
        if principal in self.super_users:
            return True
        return self._find(principal, host, operation, self.index.applying(resource_type, name))[0]

    def explain(self, principal, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> Decision:
        """The decision with the rule that made it (what the lab's table and the authorizer log show)."""
        principal = str(principal)
        resource = ResourcePattern(resource_type, name, PatternType.LITERAL)
        if principal in self.super_users:
            return Decision(principal, host, operation, resource, AuthorizationResult.ALLOWED, "super user")
        bindings = self.index.applying_bindings(resource_type, name)
        allowed, rule, acl = self._find(principal, host, operation, tuple(b.entry for b in bindings))
        pattern = None
        if acl is not None:   # the deciding entry's pattern: the first holding it for a DENY, the last for an ALLOW
            holders = [b.pattern for b in bindings if b.entry == acl]
            pattern = holders[0] if rule == "deny acl" else holders[-1]
        return Decision(principal, host, operation, resource,
                        AuthorizationResult.ALLOWED if allowed else AuthorizationResult.DENIED, rule, acl, pattern)

    def authorize_by_resource_type(self, principal, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May the principal do ``operation`` on *some* resource of the type (Kafka's ``authorizeByResourceType``,
        asked by an idempotent producer's InitProducerId: WRITE on any topic, KIP-679)? Yes for a super user;
        yes when a pattern of the type has a matching ALLOW and neither it nor the literal ``*`` has a matching
        DENY; with ``allow.everyone.if.no.acl.found``, yes when no matching DENY exists at all (some resource
        may have no ACL). A scan over the type's patterns, asked once per producer, not per record."""
        principal = str(principal)
        if principal in self.super_users:
            return True
        wildcard = ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL)
        denied_everywhere = self._find(principal, host, operation, tuple(self.index.entries(wildcard)))[1] == "deny acl"
        any_deny = denied_everywhere
        for pattern in self.index.patterns():
            if pattern.resource_type != resource_type:
                continue
            allowed, rule, _ = self._find(principal, host, operation, tuple(self.index.entries(pattern)))
            if allowed and not denied_everywhere:
                return True
            any_deny = any_deny or rule == "deny acl"
        return self.allow_everyone_if_no_acl_found and not any_deny

    def _find(self, principal: str, host: str, operation: AclOperation, entries: tuple):
        if not entries:
            return self.allow_everyone_if_no_acl_found, ("no acl found" if self.allow_everyone_if_no_acl_found
                                                         else "no matching allow acl"), None
        allow = None
        granting = IMPLIED_BY[operation]
        denying = _DENIED_BY[operation]
        for entry in entries:   # in scan order: the first matching DENY decides; the last matching ALLOW is named
            if entry.principal != principal and entry.principal != WILDCARD_PRINCIPAL_STRING:
                continue
            if entry.host != host and entry.host != WILDCARD_HOST:
                continue
            if entry.permission_type == AclPermissionType.DENY:
                if entry.operation in denying:
                    return False, "deny acl", entry
            elif entry.operation in granting:
                allow = entry
        if allow is not None:
            return True, "allow acl", allow
        return False, "no matching allow acl", None


def decision_table(core: AuthorizerCore, questions: Iterable[tuple]) -> list[dict]:
    """Rows for a lab: each question ``(principal, host, operation, resource_type, name)`` with its decision."""
    rows = []
    for principal, host, operation, resource_type, name in questions:
        d = core.explain(principal, host, operation, resource_type, name)
        rows.append({"principal": d.principal, "host": d.host, "operation": d.operation.name,
                     "resource": f"{d.resource.resource_type.name}:{d.resource.name}", "result": d.result,
                     "rule": d.rule, "acl": str(AclBinding(d.pattern, d.acl)) if d.acl is not None else ""})
    return rows


def audit_message(d: Decision, request: str, ref_count: int, *, standard: bool = False) -> str:
    """One decision as Kafka's authorizer logs it: ``AclAuthorizer.logAuditMessage`` (``Operation = Write``) or,
    for ``standard``, ``StandardAuthorizer``'s (``operation = WRITE ... based on rule MatchingAcl(...)``)."""
    r = d.resource
    resource = f"{pascal_case(r.resource_type)}:{r.pattern_type.name}:{r.name}"
    verdict = "Allowed" if d.allowed else "Denied"
    if not standard:
        return (f"Principal = {d.principal} is {verdict} Operation = {pascal_case(d.operation)} from host = "
                f"{d.host} on resource = {resource} for request = {request} with resourceRefCount = {ref_count}")
    if d.rule == "super user":
        rule = "SuperUser"
    elif d.acl is not None and d.pattern is not None:
        p, e = d.pattern, d.acl
        rule = (f"MatchingAcl(acl=StandardAcl[resourceType={p.resource_type.name}, resourceName={p.name}, "
                f"patternType={p.pattern_type.name}, principal={e.principal}, host={e.host}, "
                f"operation={e.operation.name}, permissionType={e.permission_type.name}])")
    else:
        rule = "DefaultAllow" if d.allowed else "DefaultDeny"
    return (f"Principal = {d.principal} is {verdict} operation = {d.operation.name} from host = {d.host} on "
            f"resource = {resource} for request = {request} with resourceRefCount = {ref_count} based on rule {rule}")
