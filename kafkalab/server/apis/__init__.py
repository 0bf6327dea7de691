"""KafkaApis: dispatch every request to its handler, one module per API family.

Theory of operation
-------------------
Kafka's ``KafkaApis.handle`` is one giant ``match`` on the API key. kafkalab splits it by family, one module
each, and builds the dispatch table from the modules' declarations (:mod:`.base`), which also produce the
ApiVersions advertisement::

    api_versions   ApiVersions
    metadata       Metadata
    produce        Produce
    fetch          Fetch
    offsets        ListOffsets, OffsetForLeaderEpoch, DeleteRecords
    topics         CreateTopics, DeleteTopics, CreatePartitions
    configs        DescribeConfigs, IncrementalAlterConfigs, AlterConfigs (deprecated)
    cluster        DescribeCluster, DescribeTopicPartitions, DescribeLogDirs
    coordinators   FindCoordinator, InitProducerId
    transactions   AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions
    acls           CreateAcls, DescribeAcls, DeleteAcls
    controller_requests   LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown (from the controller,
                   inter-broker listener)
    txn_markers    WriteTxnMarkers (from a transaction coordinator, inter-broker listener)
    describe_producers   DescribeProducers (each producer's state on a replica, KIP-664)
    elect_leaders  ElectLeaders (an operator's PREFERRED or UNCLEAN election, through the controller)
    groups         JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
                   DescribeGroups, DeleteGroups, OffsetDelete
    txn_offset_commit   TxnOffsetCommit (offsets inside a transaction, to the group coordinator)
    scram_credentials   DescribeUserScramCredentials, AlterUserScramCredentials; SaslHandshake and
                   SaslAuthenticate after a login (the login itself is the socket server's)

Mirrors: ``core/src/main/scala/kafka/server/KafkaApis.scala`` and ``RequestHandlerHelper.scala``.
"""
from __future__ import annotations

import asyncio
import inspect
import logging

from typing import Optional

from kafkalab.network.request_channel import (CloseConnectionResponse, NetworkRequest, NoOpResponse,
                                              SendResponse)
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, api_name
from kafkalab.server.api_version_floors import ApiVersionTable, api_version_table
from kafkalab.server.apis.base import REGISTRY, Delayed, Handler
from kafkalab.server.auth_helper import ClusterAuthorizationException

# Importing the handler modules fills REGISTRY.
from kafkalab.server.apis import (acls, api_versions, cluster, configs, controller_requests,  # noqa: F401,E402
                                  coordinators, describe_producers, elect_leaders, fetch, groups, metadata, offsets,
                                  produce, scram_credentials, topics, transactions, txn_markers, txn_offset_commit)

__all__ = ["KafkaApis", "REGISTRY", "served_apis", "enabled_apis", "api_versions_for"]

log = logging.getLogger("kafkalab.server.KafkaApis")


def served_apis() -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version: exactly what the handlers implement."""
    return {key: (h.min_version, h.max_version) for key, h in sorted(REGISTRY.items())}


def api_versions_for(floors: Optional[str] = None) -> ApiVersionTable:
    """What a broker with ``kafkalab.api.version.floors=floors`` (default: the setting's default) advertises and
    accepts (:mod:`kafkalab.server.api_version_floors`)."""
    if floors is None:
        from kafkalab.server.config import SERVER_CONFIGS
        floors = SERVER_CONFIGS.default("kafkalab.api.version.floors")
    return api_version_table(served_apis(), floors)


def enabled_apis(floors: Optional[str] = None) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version that ApiVersions advertises with ``floors`` (default: the default setting)."""
    return api_versions_for(floors).advertised


class KafkaApis:
    def __init__(self, broker, channel):
        self.broker = broker
        self.channel = channel
        self._delayed: set[asyncio.Task] = set()

    async def handle(self, request: NetworkRequest) -> None:
        handler: Handler = REGISTRY[request.context.api_key]
        try:
            result = handler.func(self.broker, request)
            if inspect.isawaitable(result):
                result = await result
        except Exception as e:  # answer like Kafka: an error code in the response, or close
            result = self._error(handler, request, e)
        if isinstance(result, Delayed):
            request.local_complete_ns = self.channel.time.nanoseconds()
            request.delayed = True
            task = asyncio.get_running_loop().create_task(self._complete_later(handler, request, result))
            self._delayed.add(task)
            task.add_done_callback(self._delayed.discard)
            return
        self.channel.send_response(request, _action(result))

    async def _complete_later(self, handler: Handler, request: NetworkRequest, delayed: Delayed) -> None:
        try:
            result = await delayed.awaitable
        except asyncio.CancelledError:
            self.channel.send_response(request, CloseConnectionResponse("broker shutting down"))
            raise
        except Exception as e:
            result = self._error(handler, request, e)
        self.channel.send_response(request, _action(result))

    def _error(self, handler: Handler, request: NetworkRequest, e: Exception):
        if isinstance(e, ApiException):
            code, message = e.error_code, str(e)
            if isinstance(e, ClusterAuthorizationException):   # Kafka logs it: RequestHandlerHelper.handleError
                h = request.header
                log.error("[KafkaApi-%s] Error when handling request: clientId=%s, correlationId=%s, api=%s, "
                          "version=%s\n%s: %s", getattr(self.broker, "broker_id", "?"), h.client_id,
                          h.correlation_id, ApiKey(h.request_api_key).name, h.request_api_version,
                          e.java_class, message)
        else:
            log.exception("%s: error handling %r", getattr(self.broker, "name", "broker"), request)
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
        request.error = f"{ErrorCode(code).name}: {message}" if message else ErrorCode(code).name
        if handler.error_response is None:
            return CloseConnectionResponse(f"{api_name(handler.api_key)} failed: {request.error}")
        body = handler.error_response(request, code, message)
        return body if body is not None else CloseConnectionResponse(request.error)

    async def shutdown(self) -> None:
        for task in list(self._delayed):
            task.cancel()
        if self._delayed:
            await asyncio.gather(*self._delayed, return_exceptions=True)


def _action(result):
    if result is None:
        return NoOpResponse()
    if isinstance(result, (NoOpResponse, CloseConnectionResponse, SendResponse)):
        return result
    return SendResponse(result)
