"""The admin client's ACL operations: create, describe and delete ACL bindings.

Theory of operation
-------------------
ACLs live in the cluster's coordination store and every broker holds all of them, so any broker can answer:
the requests go to the least-loaded broker, which writes the change and notifies the others.

=================  ============  =========================================================================
method             request       result
=================  ============  =========================================================================
create_acls        CreateAcls    nothing; an :class:`~.admin.AdminError` naming each binding refused
describe_acls      DescribeAcls  the bindings one :class:`~kafkalab.security.acl.AclBindingFilter` matches
delete_acls        DeleteAcls    per filter, the bindings it deleted
=================  ============  =========================================================================

Bindings and filters are :mod:`kafkalab.security.acl`'s types (Kafka's ``AclBinding``, ``AclBindingFilter``),
the same the broker decides with. A broker without an authorizer answers SECURITY_DISABLED; a principal
without ALTER (create, delete) or DESCRIBE (describe) on the cluster gets CLUSTER_AUTHORIZATION_FAILED.

**Who does what.** :class:`AclOperations` is a collaborator owned by the admin client (``admin.acls``), built
with the network client; the admin's blocking ``create_acls``/``describe_acls``/``delete_acls`` run its
coroutines under the admin's timeout.

Mirrors ``KafkaAdminClient.createAcls``, ``describeAcls``, ``deleteAcls``.
"""
from __future__ import annotations

from typing import Iterable

from kafkalab.protocol import ApiKey, ErrorCode, KafkaProtocolError, request_class
from kafkalab.security.acl import (ANY_FILTER, AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, PatternType, ResourcePattern, ResourceType)

__all__ = ["AclOperations"]


def _enum(enum_type, code):
    try:
        return enum_type(code)
    except ValueError:
        return enum_type.UNKNOWN


class AclOperations:
    def __init__(self, client):
        self.client = client

    async def _send(self, body):
        conn = await self.client.connection(self.client.least_loaded_node())
        return (await conn.send(body)).body

    async def create_acls(self, bindings: Iterable[AclBinding]) -> tuple[dict, dict]:
        """(created {binding: None}, refused {binding: KafkaProtocolError})."""
        bindings = list(bindings)
        cls = request_class(ApiKey.CREATE_ACLS)
        body = cls(creations=tuple(cls.AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type)) for b in bindings))
        response = await self._send(body)
        created, refused = {}, {}
        for binding, result in zip(bindings, response.results):
            if result.error_code == ErrorCode.NONE:
                created[binding] = None
            else:
                refused[binding] = KafkaProtocolError(result.error_code, result.error_message or None)
        return created, refused

    async def describe_acls(self, acl_filter: AclBindingFilter = ANY_FILTER) -> list[AclBinding]:
        p, e = acl_filter
        body = request_class(ApiKey.DESCRIBE_ACLS)(
            resource_type_filter=int(p.resource_type), resource_name_filter=p.name,
            pattern_type_filter=int(p.pattern_type), principal_filter=e.principal, host_filter=e.host,
            operation=int(e.operation), permission_type=int(e.permission_type))
        response = await self._send(body)
        if response.error_code != ErrorCode.NONE:
            raise KafkaProtocolError(response.error_code, response.error_message or None)
        return [AclBinding(ResourcePattern(_enum(ResourceType, r.resource_type), r.resource_name,
                                           _enum(PatternType, r.pattern_type)),
                           AccessControlEntry(a.principal, a.host, _enum(AclOperation, a.operation),
                                              _enum(AclPermissionType, a.permission_type)))
                for r in response.resources for a in r.acls]

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> tuple[dict, dict]:
        """(deleted {filter: [bindings]}, refused {filter: KafkaProtocolError})."""
        filters = list(filters)
        cls = request_class(ApiKey.DELETE_ACLS)
        body = cls(filters=tuple(cls.DeleteAclsFilter(
            resource_type_filter=int(p.resource_type), resource_name_filter=p.name,
            pattern_type_filter=int(p.pattern_type), principal_filter=e.principal, host_filter=e.host,
            operation=int(e.operation), permission_type=int(e.permission_type)) for p, e in filters))
        response = await self._send(body)
        deleted, refused = {}, {}
        for acl_filter, result in zip(filters, response.filter_results):
            if result.error_code != ErrorCode.NONE:
                refused[acl_filter] = KafkaProtocolError(result.error_code, result.error_message or None)
                continue
            deleted[acl_filter] = [AclBinding(
                ResourcePattern(_enum(ResourceType, m.resource_type), m.resource_name,
                                _enum(PatternType, m.pattern_type)),
                AccessControlEntry(m.principal, m.host, _enum(AclOperation, m.operation),
                                   _enum(AclPermissionType, m.permission_type)))
                for m in result.matching_acls if m.error_code == ErrorCode.NONE]
        return deleted, refused
