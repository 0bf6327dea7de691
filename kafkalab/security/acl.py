"""ACLs as Kafka names them: resource patterns, access control entries, bindings and the filters over them.

Theory of operation
-------------------
An ACL **binding** joins two halves::

    ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)     which resources
    (principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)       who may (not) do what, from where

A pattern is ``LITERAL`` (exactly this name, or ``*`` for every resource of the type) or ``PREFIXED`` (every
name that starts with it). The cluster itself is the one resource named ``kafka-cluster``.

Describing and deleting ACLs take **filters**: each field may be "any" (``ANY`` or a null string), and a
resource filter with pattern type ``MATCH`` finds every pattern that would *apply* to a name (the literal
name, the literal ``*`` and every prefix of it).

On the wire (CreateAcls, DescribeAcls, DeleteAcls) the enums travel as int8 codes; in the coordination store
as PascalCase words (``Topic``, ``Read``, ``Allow``: ``SecurityUtils.resourceTypeName``/``operationName``).

Mirrors: ``org.apache.kafka.common.acl.{AclBinding,AccessControlEntry,AclOperation,AclPermissionType}`` and
``org.apache.kafka.common.resource.{ResourcePattern,ResourcePatternFilter,ResourceType,PatternType}``.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Optional

__all__ = ["ResourceType", "PatternType", "AclOperation", "AclPermissionType", "ResourcePattern",
           "AccessControlEntry", "AclBinding", "ResourcePatternFilter", "AccessControlEntryFilter",
           "AclBindingFilter", "CLUSTER_NAME", "WILDCARD_RESOURCE", "WILDCARD_HOST", "WILDCARD_PRINCIPAL_STRING",
           "pascal_case", "from_pascal_case", "ANY_FILTER"]

CLUSTER_NAME = "kafka-cluster"          # Resource.CLUSTER_NAME
WILDCARD_RESOURCE = "*"                 # ResourcePattern.WILDCARD_RESOURCE
WILDCARD_HOST = "*"                     # AclEntry.WildcardHost
WILDCARD_PRINCIPAL_STRING = "User:*"    # AclEntry.WildcardPrincipalString


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def pascal_case(member: enum.Enum) -> str:
    """``TRANSACTIONAL_ID`` -> ``TransactionalId`` (how the ZooKeeper-era store and kafka-acls.sh spell them)."""
    return "".join(word.capitalize() for word in member.name.split("_"))


def from_pascal_case(enum_type, text: str):
    """The member of ``enum_type`` named ``text`` in PascalCase or UPPER_CASE, any case (``fromString``)."""
    wanted = str(text).replace("_", "").lower()
    for member in enum_type:
        if member.name.replace("_", "").lower() == wanted:
            return member
    return enum_type.UNKNOWN


class ResourcePattern(NamedTuple):
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


class AccessControlEntry(NamedTuple):
    principal: str            # "User:alice" (a KafkaPrincipal's string form)
    host: str                 # an address or "*"
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


class AclBinding(NamedTuple):
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


class ResourcePatternFilter(NamedTuple):
    resource_type: ResourceType = ResourceType.ANY
    name: Optional[str] = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:      # MATCH: the patterns that apply to this name
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)

    def indefinite_field(self) -> Optional[str]:
        """Why this filter cannot be served (Kafka's ``findIndefiniteField``), or None."""
        if self.resource_type == ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.pattern_type == PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None


class AccessControlEntryFilter(NamedTuple):
    principal: Optional[str] = None
    host: Optional[str] = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))

    def indefinite_field(self) -> Optional[str]:
        if self.operation == AclOperation.UNKNOWN:
            return "Operation is UNKNOWN."
        if self.permission_type == AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN."
        return None


class AclBindingFilter(NamedTuple):
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def indefinite_field(self) -> Optional[str]:
        return self.pattern_filter.indefinite_field() or self.entry_filter.indefinite_field()


ANY_FILTER = AclBindingFilter()
