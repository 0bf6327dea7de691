"""What every handler asks the authorizer: one place for Kafka's ``AuthHelper``.

Theory of operation
-------------------
A handler never talks to the ACLs itself. It asks this helper, with the request's context (principal, client
host, API), one of four questions, as Kafka's ``AuthHelper`` does:

* ``authorize(context, READ, TOPIC, "orders")`` -- one decision, logged on the authorizer logger when denied;
* ``authorize_cluster(context, CLUSTER_ACTION)`` -- the same on the one cluster resource ``kafka-cluster``;
  ``require_cluster`` raises :class:`ClusterAuthorizationException` (CLUSTER_AUTHORIZATION_FAILED) instead, for
  the requests that are all-or-nothing (the controller's LeaderAndIsr, UpdateMetadata, StopReplica, ...);
* ``filter_authorized(context, DESCRIBE, TOPIC, names)`` -- the subset allowed (an all-topics Metadata
  leaves the others out);
* ``authorized_operations(context, TOPIC, name)`` -- the bit field of the operations allowed, for the
  authorized-operations fields of Metadata, DescribeCluster and DescribeGroups (decided without logging).

With no ``authorizer.class.name`` every answer is "allowed" and costs one attribute test.

Mirrors: ``core/src/main/scala/kafka/server/AuthHelper.scala`` (``authorize``, ``authorizeClusterOperation``,
``filterByAuthorized``, ``authorizedOperations``) and ``AclEntry.supportedOperations``.
"""
from __future__ import annotations

from typing import Iterable, Optional

from kafkalab.protocol import ApiException, ErrorCode, api_name
from kafkalab.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kafkalab.security.authorizer import SUPPORTED_OPERATIONS

__all__ = ["AuthHelper", "ClusterAuthorizationException", "SUPPORTED_OPERATIONS", "to_bit_field"]



def to_bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation."""
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


class ClusterAuthorizationException(ApiException):
    error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    java_class = "org.apache.kafka.common.errors.ClusterAuthorizationException"

    def __init__(self, message: Optional[str] = None):
        super().__init__(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)


class AuthHelper:
    def __init__(self, authorizer=None):
        self.authorizer = authorizer      # an AclAuthorizer, or None: everything is allowed

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(self, context, operation: AclOperation, resource_type: ResourceType, name: str, *,
                  log_if_allowed: bool = True, log_if_denied: bool = True, ref_count: int = 1) -> bool:
        authorizer = self.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize(context.principal, context.client_host, operation, resource_type, name,
                                    request=api_name(context.api_key), log_if_allowed=log_if_allowed,
                                    log_if_denied=log_if_denied, ref_count=ref_count)

    def authorize_cluster(self, context, operation: AclOperation, *, log_if_denied: bool = True) -> bool:
        return self.authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)

    def require_cluster(self, context, operation: AclOperation) -> None:
        """CLUSTER_AUTHORIZATION_FAILED unless allowed, with Kafka's message naming the request's session."""
        if not self.authorize_cluster(context, operation):
            raise ClusterAuthorizationException(f"Request {describe_request(context)} is not authorized.")

    def filter_authorized(self, context, operation: AclOperation, resource_type: ResourceType,
                          names: Iterable[str], *, log_if_denied: bool = True) -> set:
        names = list(names)
        if self.authorizer is None:
            return set(names)
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        return {n for n, count in counts.items()
                if self.authorize(context, operation, resource_type, n, log_if_denied=log_if_denied,
                                  ref_count=count)}

    def authorize_by_resource_type(self, context, operation: AclOperation, resource_type: ResourceType) -> bool:
        """On *any* resource of the type (an idempotent producer's WRITE on any topic, KIP-679)."""
        if self.authorizer is None:
            return True
        return self.authorizer.core.authorize_by_resource_type(context.principal, context.client_host, operation,
                                                               resource_type)

    def denied(self, context, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> set:
        """The names among ``names`` the principal may not do ``operation`` on (empty without an authorizer)."""
        if self.authorizer is None:
            return set()
        names = list(names)
        return set(names) - self.filter_authorized(context, operation, resource_type, names)

    def authorized_operations(self, context, resource_type: ResourceType, name: str) -> int:
        supported = SUPPORTED_OPERATIONS[resource_type]
        if self.authorizer is None:
            return to_bit_field(supported)
        return to_bit_field(op for op in supported
                            if self.authorize(context, op, resource_type, name, log_if_allowed=False,
                                              log_if_denied=False))


def describe_request(context) -> str:
    """How Kafka 2.x printed a request in "is not authorized" (``RequestChannel.Request.toString``)."""
    return (f"Request(processor=0, connectionId={context.connection_id}, session=Session({context.principal},"
            f"/{context.client_host}), listenerName=ListenerName({context.listener_name}), "
            f"securityProtocol={context.security_protocol}, buffer=null)")
