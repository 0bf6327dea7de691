"""CreateAcls, DescribeAcls, DeleteAcls: the admin protocol of the authorizer.

Theory of operation
-------------------
``kafka-acls.sh``, ``AdminClient.create_acls`` and friends manage ACLs over the wire. Each request is itself
authorized first: DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls need ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED otherwise). A broker without ``authorizer.class.name`` answers
SECURITY_DISABLED ("No Authorizer is configured on the broker").

* **CreateAcls** -- one result per creation, in order; a binding Kafka refuses (the cluster resource not named
  ``kafka-cluster``, an empty name, an ANY/UNKNOWN/MATCH element) gets INVALID_REQUEST with Kafka's message and
  does not stop the others.
* **DescribeAcls** -- one filter; the matching bindings grouped by resource pattern.
* **DeleteAcls** -- several filters; per filter, the bindings it removed.

The enums travel as int8 codes (:mod:`kafkalab.security.acl`); an unknown code reads as UNKNOWN, which the
validation then refuses. Versions 0-3 as Kafka 3.9 (v1 added the pattern type, KIP-290: a v0 request
carries none and means LITERAL, so it only ever creates, finds or deletes literal bindings; v2 flexible; v3 user
principals in ``User:`` form only); Kafka 4.0 removed v0.

Mirrors: ``core/src/main/scala/kafka/server/AclApis.scala`` and ``CreateAclsRequest``, ``DescribeAclsResponse``,
``DeleteAclsResponse`` in ``clients/.../common/requests/``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import (AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter,
                                   AclOperation, AclPermissionType, PatternType, ResourcePattern,
                                   ResourcePatternFilter, ResourceType)
from kafkalab.server.apis.base import handles, top_level_error

__all__ = ["handle_create_acls", "handle_describe_acls", "handle_delete_acls"]

CreateAclsResponse = response_class(ApiKey.CREATE_ACLS)
DescribeAclsResponse = response_class(ApiKey.DESCRIBE_ACLS)
DeleteAclsResponse = response_class(ApiKey.DELETE_ACLS)
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _enum(enum_type, code):
    try:
        return enum_type(code)
    except ValueError:
        return enum_type.UNKNOWN


def _filter(f) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(_enum(ResourceType, f.resource_type_filter), f.resource_name_filter,
                              _enum(PatternType, f.pattern_type_filter)),
        AccessControlEntryFilter(f.principal_filter, f.host_filter, _enum(AclOperation, f.operation),
                                 _enum(AclPermissionType, f.permission_type)))


# ---------------------------------------------------------------------------------------------- CreateAcls
def _create_error(request, code, message):
    R = CreateAclsResponse
    return R(results=tuple(R.AclCreationResult(error_code=code, error_message=message)
                           for _ in request.body.creations))


@handles(ApiKey.CREATE_ACLS, versions=(0, 3), error_response=_create_error)
def handle_create_acls(broker, request):
    broker.auth.require_cluster(request.context, AclOperation.ALTER)
    if broker.authorizer is None:
        raise ApiException(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    bindings = [AclBinding(ResourcePattern(_enum(ResourceType, c.resource_type), c.resource_name,
                                           _enum(PatternType, c.resource_pattern_type)),
                           AccessControlEntry(c.principal, c.host, _enum(AclOperation, c.operation),
                                              _enum(AclPermissionType, c.permission_type)))
                for c in request.body.creations]
    R = CreateAclsResponse
    results = broker.authorizer.create_acls(bindings)
    return R(throttle_time_ms=0, results=tuple(
        R.AclCreationResult(error_code=ErrorCode.NONE, error_message=None) if e is None
        else R.AclCreationResult(error_code=e.error_code, error_message=str(e)) for e in results))


# ---------------------------------------------------------------------------------------------- DescribeAcls
@handles(ApiKey.DESCRIBE_ACLS, versions=(0, 3), error_response=top_level_error(ApiKey.DESCRIBE_ACLS))
def handle_describe_acls(broker, request):
    broker.auth.require_cluster(request.context, AclOperation.DESCRIBE)
    R = DescribeAclsResponse
    if broker.authorizer is None:
        return R(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
    acl_filter = _filter(request.body)
    problem = acl_filter.indefinite_field()
    if problem:
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
    by_pattern: dict = {}
    for binding in broker.authorizer.acls(acl_filter):
        e = binding.entry
        by_pattern.setdefault(binding.pattern, []).append(R.AclDescription(
            principal=e.principal, host=e.host, operation=int(e.operation), permission_type=int(e.permission_type)))
    return R(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=tuple(
        R.DescribeAclsResource(resource_type=int(p.resource_type), resource_name=p.name,
                               pattern_type=int(p.pattern_type), acls=tuple(acls))
        for p, acls in by_pattern.items()))


# ---------------------------------------------------------------------------------------------- DeleteAcls
def _delete_error(request, code, message):
    R = DeleteAclsResponse
    return R(filter_results=tuple(R.DeleteAclsFilterResult(error_code=code, error_message=message)
                                  for _ in request.body.filters))


@handles(ApiKey.DELETE_ACLS, versions=(0, 3), error_response=_delete_error)
def handle_delete_acls(broker, request):
    broker.auth.require_cluster(request.context, AclOperation.ALTER)
    if broker.authorizer is None:
        raise ApiException(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    R = DeleteAclsResponse
    results = []
    for outcome in broker.authorizer.delete_acls([_filter(f) for f in request.body.filters]):
        if isinstance(outcome, ApiException):
            results.append(R.DeleteAclsFilterResult(error_code=outcome.error_code, error_message=str(outcome)))
            continue
        results.append(R.DeleteAclsFilterResult(error_code=ErrorCode.NONE, error_message=None, matching_acls=tuple(
            R.DeleteAclsMatchingAcl(error_code=ErrorCode.NONE, error_message=None,
                                    resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
                                    pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal,
                                    host=b.entry.host, operation=int(b.entry.operation),
                                    permission_type=int(b.entry.permission_type)) for b in outcome)))
    return R(throttle_time_ms=0, filter_results=tuple(results))
