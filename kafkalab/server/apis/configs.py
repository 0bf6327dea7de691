"""Configs: DescribeConfigs (what is in effect, and why) and IncrementalAlterConfigs (change a topic's configs).

Theory of operation
-------------------
A config can be set in several places, and the most specific one wins. For a **topic** config such as
``retention.ms`` the candidates are, in order: an override on the topic (``kafka-configs.sh --alter
--entity-type topics``, stored in ZooKeeper under ``/config/topics/<topic>``), the broker's own setting with a
different name (``log.retention.ms``, else ``log.retention.minutes``, else ``log.retention.hours`` in
``server.properties``), and finally Kafka's built-in default. DescribeConfigs answers, for every config of a
resource, the value in effect and its **source** -- ``TOPIC_CONFIG`` (1; the Java admin client calls it
``DYNAMIC_TOPIC_CONFIG``), ``STATIC_BROKER_CONFIG`` (4, from ``server.properties``) or ``DEFAULT_CONFIG`` (5).
With ``include_synonyms`` it also lists every candidate that has a value, most specific first, which is
exactly the explanation a learner wants ("why is this 168 hours?"). From v3 each entry carries its type
(INT, LONG, LIST, PASSWORD...) and, if asked, its documentation. Password-type values are never sent: the
entry says ``is_sensitive`` and the value is null. DescribeConfigs v0 (Kafka 3.9 serves it, 4.0 does not) has no
source field but an ``is_default`` flag, which a Kafka 3.9 broker never sets (its config helper fills only the
source; only the Java client's v0 *reader* maps the flag back to a source): every v0 entry says false, as there.

Resources are named by type and name: ``TOPIC`` (2) by the topic name (UNKNOWN_TOPIC_OR_PARTITION if the
cluster has no such topic), ``BROKER`` (4) by this broker's id -- or by the empty string, which means the
cluster-wide *dynamic* defaults (none in kafkalab, so that answer is an empty list, as Kafka gives before any
were set). Another broker's id is an INVALID_REQUEST: each broker describes itself. With an authorizer,
describing needs DESCRIBE_CONFIGS and altering ALTER_CONFIGS, on the topic (else TOPIC_AUTHORIZATION_FAILED)
or, for a broker, on the cluster (else CLUSTER_AUTHORIZATION_FAILED), resource by resource.

**IncrementalAlterConfigs** (KIP-339) changes only the keys it names, one operation each: ``SET`` (0),
``DELETE`` (1, back to the broker default), ``APPEND`` (2) and ``SUBTRACT`` (3) for list configs such as
``cleanup.policy``. For a topic the broker applies the operations to the stored overrides, validates the
result (INVALID_CONFIG, with Kafka's message), writes it to ZooKeeper plus a change notification under
``/config/changes``; every broker hosting the topic reloads it and its logs use the new values from the
next append on (a smaller ``segment.bytes`` makes the log roll; ``cleanup.policy=compact`` hands it to the
cleaner). ``validate_only`` checks without writing.

Kafka also accepts *dynamic broker configs* (KIP-226) for keys marked dynamic (``log.retention.ms``,
``num.io.threads``...). kafkalab cannot apply broker configs to a running broker yet, so it refuses every
broker change with Kafka's own refusal for read-only keys -- INVALID_REQUEST "Cannot update these configs
dynamically: Set(...)" -- and, to stay consistent, describes every broker config as ``read_only``.
``BROKER_LOGGER`` resources (log4j levels, KIP-412) are not implemented: INVALID_REQUEST.

**AlterConfigs** (API 33) is the deprecated form: each resource carries its *whole* new set of overrides, and
whatever is not named goes back to its default. Kafka's admin clients still use it where no incremental form
existed when they were written -- and ``kafka-configs.sh --alter --entity-type brokers`` (3.9) sends it: it
describes the broker's dynamic configs, adds and removes keys locally and sends the result. The checks come
first (``ConfigAdminManager.preprocess``: each resource once, no duplicate key, no null value; a broker must be
this one and the set must be something it can apply -- here only the empty set), then the authorization, then
the change: for a topic the stored overrides are replaced by the set (validated as IncrementalAlterConfigs'
result is). ``BROKER_LOGGER`` is refused as an unknown resource type there, as Kafka does.

Mirrors: ``core/src/main/scala/kafka/server/ConfigHelper.scala`` (``describeConfigs``,
``createTopicConfigEntry``, ``createBrokerConfigEntry``, ``configSynonyms``), ``ConfigAdminManager.preprocess``,
``ZkAdminManager.incrementalAlterConfigs`` / ``alterConfigs``, ``KafkaApis.processLegacyAlterConfigsRequest``,
``DynamicBrokerConfig.brokerConfigSynonyms`` / ``validateConfigs``.
"""
from __future__ import annotations

import collections
import logging
import re
from typing import Any, Optional

from kafkalab.common.config import Dynamic, Type, to_string
from kafkalab.protocol import ApiException, ApiKey, ErrorCode, response_class
from kafkalab.security.acl import AclOperation, ResourceType
from kafkalab.server.admin_manager import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, validate_topic_name
from kafkalab.server.apis.base import handles
from kafkalab.storage.log_config import ConfigSource, ConfigType, LogConfig, TOPIC_CONFIGS

__all__ = ["handle_describe_configs", "handle_incremental_alter_configs", "handle_alter_configs", "RESOURCE_TYPES"]

DescribeResponse = response_class(ApiKey.DESCRIBE_CONFIGS)
AlterResponse = response_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
LegacyAlterResponse = response_class(ApiKey.ALTER_CONFIGS)

log = logging.getLogger("kafkalab.server.KafkaApis")

#: ``ConfigResource.Type`` ids.
RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
TOPIC, BROKER = 2, 4
#: Would a live change of a broker config take effect? Not yet: every broker config is read-only.
DYNAMIC_BROKER_CONFIGS_SUPPORTED = False

_INTEGER = re.compile(r"[+-]?\d+\Z")
_LISTENER_OVERRIDE = re.compile(r"^listener\.name\.[^.]*\.(.*)$")


def _resource(resource_type: int, name: str) -> str:
    return f"ConfigResource(type={RESOURCE_TYPES.get(resource_type, 'UNKNOWN')}, name='{name}')"


def _failure(e: Exception) -> tuple[int, Optional[str]]:
    if not isinstance(e, ApiException):
        log.exception("unexpected error in an admin request")
        return ErrorCode.UNKNOWN_SERVER_ERROR, None
    message = str(e)
    return e.error_code, (None if message == e.info.message else message)


def _broker_id(text: str, what: str) -> int:
    if not _INTEGER.match(text or ""):
        raise ApiException(ErrorCode.INVALID_REQUEST, f"{what} must be an integer, but it is: {text}")
    return int(text)


# ---------------------------------------------------------------------------------------------- DescribeConfigs

def _describe_error(request, code, message):
    R = DescribeResponse
    return R(throttle_time_ms=0, results=tuple(
        R.DescribeConfigsResult(error_code=code, error_message=ErrorCode(code).message, resource_type=r.resource_type,
                                resource_name=r.resource_name) for r in request.body.resources))


@handles(ApiKey.DESCRIBE_CONFIGS, versions=(0, 4), error_response=_describe_error)
def handle_describe_configs(broker, request):
    body, version = request.body, request.context.api_version
    R = DescribeResponse
    documentation = body.include_documentation if version >= 3 else False
    results = []
    for res in body.resources:
        keys = set(res.configuration_keys) if res.configuration_keys else None
        try:
            _authorize(broker, request, res.resource_type, res.resource_name, AclOperation.DESCRIBE_CONFIGS)
            entries = _describe(broker, res.resource_type, res.resource_name, keys, body.include_synonyms,
                                documentation)
            results.append(R.DescribeConfigsResult(error_code=ErrorCode.NONE, error_message=None,
                                                   resource_type=res.resource_type, resource_name=res.resource_name,
                                                   configs=tuple(entries)))
        except Exception as e:
            code, message = _failure(e)
            results.append(R.DescribeConfigsResult(error_code=code, error_message=message,
                                                   resource_type=res.resource_type, resource_name=res.resource_name))
    return R(throttle_time_ms=0, results=tuple(results))


def _authorize(broker, request, resource_type: int, name: str, operation: AclOperation) -> None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for a broker, on the cluster
    (CLUSTER_AUTHORIZATION_FAILED), as ``ConfigHelper``/``KafkaApis`` decide per resource."""
    auth = broker.auth
    if resource_type == TOPIC and not auth.authorize(request.context, operation, ResourceType.TOPIC, name):
        raise ApiException(ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED.message)
    if resource_type == BROKER and not auth.authorize_cluster(request.context, operation):
        raise ApiException(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)


def _describe(broker, resource_type: int, name: str, keys: Optional[set], synonyms: bool, documentation: bool):
    if resource_type == TOPIC:
        validate_topic_name(name)
        if not broker.metadata_cache.contains_topic(name):
            raise ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message)
        config = LogConfig.from_broker(broker.config.originals, broker.admin.topic_overrides(name))
        names = [n for n in TOPIC_CONFIGS if keys is None or n in keys]
        return [_entry(c) for c in config.describe(names, include_synonyms=synonyms,
                                                   include_documentation=documentation)]
    if resource_type == BROKER:
        if not name:
            return []  # the cluster-wide dynamic defaults: kafkalab has none
        if _broker_id(name, "Broker id") != broker.broker_id:
            raise ApiException(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.broker_id} or "
                                                          f"empty string, but received {name}")
        return [_entry(c) for c in _describe_broker(broker, keys, synonyms, documentation)]
    raise ApiException(ErrorCode.INVALID_REQUEST,
                       f"Unsupported resource type: {RESOURCE_TYPES.get(resource_type, resource_type)}")


def _entry(c):
    R = DescribeResponse
    return R.DescribeConfigsResourceResult(
        name=c.name, value=None if c.is_sensitive else c.value, read_only=c.read_only,
        config_source=int(c.config_source), is_sensitive=c.is_sensitive,
        synonyms=tuple(R.DescribeConfigsSynonym(name=s.name, value=None if c.is_sensitive else s.value,
                                                source=int(s.source)) for s in c.synonyms),
        config_type=int(c.config_type), documentation=c.documentation)


class _BrokerEntry:
    """One broker config as DescribeConfigs shows it (the same fields as ``LogConfig.describe``'s entries)."""

    __slots__ = ("name", "value", "read_only", "config_source", "is_sensitive", "synonyms", "config_type",
                 "documentation")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


class _Synonym(collections.namedtuple("_Synonym", "name value source")):
    pass


def _synonym_names(definitions, name: str) -> list[str]:
    """``DynamicBrokerConfig.brokerConfigSynonyms``: the key, then the keys the table lists as its synonyms
    (``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``); a per-listener override
    (``listener.name.<l>.<key>``) is followed by its base key."""
    if name in definitions:
        return [name] + [syn.name for syn in definitions[name].synonyms]
    m = _LISTENER_OVERRIDE.match(name)
    if m:
        return [name, m.group(1)]
    return [name]


def _describe_broker(broker, keys: Optional[set], synonyms: bool, documentation: bool) -> list:
    cfg = broker.config
    known = cfg.definitions
    names = list(known) + [n for n in cfg.originals if n not in known]
    out = []
    for name in names:
        if keys is not None and name not in keys:
            continue
        key = known.get(name)
        value = cfg.values.get(name) if key is not None else cfg.originals.get(name)
        type_ = key.type if key is not None else None
        if type_ is None:
            m = _LISTENER_OVERRIDE.match(name)  # a listener override has the type of its base config
            if m and m.group(1) in known:
                type_ = known[m.group(1)].type
        sensitive = type_ is None or type_ is Type.PASSWORD  # KafkaConfig.maybeSensitive
        found = []
        candidates = _synonym_names(known, name)
        for n in candidates:  # server.properties (dynamic broker configs would come first: kafkalab has none)
            if cfg.originals.get(n) is not None:
                found.append(_Synonym(n, to_string(cfg.originals[n]), ConfigSource.STATIC_BROKER_CONFIG))
        for n in candidates:  # Kafka's built-in defaults
            if n in known and known[n].default is not None:
                found.append(_Synonym(n, to_string(known[n].default), ConfigSource.DEFAULT_CONFIG))
        while found and found[0].name != name:  # a base config does not list its listener overrides
            found.pop(0)
        read_only = not (DYNAMIC_BROKER_CONFIGS_SUPPORTED and key is not None and key.dynamic != Dynamic.READ_ONLY)
        out.append(_BrokerEntry(
            name=name, value=None if sensitive else to_string(value), read_only=read_only,
            config_source=found[0].source if found else ConfigSource.DEFAULT_CONFIG, is_sensitive=sensitive,
            synonyms=tuple(found) if synonyms else (),
            config_type=ConfigType(type_.id) if type_ is not None else ConfigType.UNKNOWN,
            documentation=(key.documentation or None if key is not None else None) if documentation else None))
    return out


# ---------------------------------------------------------------------------------------------- IncrementalAlterConfigs

def _all_resources_failed(Response):
    """The error response of IncrementalAlterConfigs or AlterConfigs: every resource with the same error."""
    def error(request, code, message):
        return Response(throttle_time_ms=0, responses=tuple(
            Response.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                  resource_type=r.resource_type, resource_name=r.resource_name)
            for r in request.body.resources))
    return error


def _per_resource(request, Response, alter) -> Any:
    """Run ``alter(resource, duplicated)`` for each resource of an (Incremental)AlterConfigs request; each
    resource gets its own error code, as Kafka answers them."""
    resources = request.body.resources
    seen = collections.Counter((r.resource_type, r.resource_name) for r in resources)
    responses = []
    for res in resources:
        try:
            alter(res, seen[(res.resource_type, res.resource_name)] > 1)
            code, message = ErrorCode.NONE, None
        except Exception as e:
            code, message = _failure(e)
        responses.append(Response.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                               resource_type=res.resource_type,
                                                               resource_name=res.resource_name))
    return Response(throttle_time_ms=0, responses=tuple(responses))


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=(0, 1), error_response=_all_resources_failed(AlterResponse))
def handle_incremental_alter_configs(broker, request):
    def alter(res, duplicated: bool) -> None:
        _authorize(broker, request, res.resource_type, res.resource_name, AclOperation.ALTER_CONFIGS)
        _alter(broker, res, duplicated, request.body.validate_only)
    return _per_resource(request, AlterResponse, alter)


def _alter(broker, res, duplicated: bool, validate_only: bool) -> None:
    """``ConfigAdminManager.preprocess`` checks, then the change itself."""
    if duplicated:
        raise ApiException(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    names = [c.name for c in res.configs]
    if len(set(names)) != len(names):
        raise ApiException(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in res.configs if c.config_operation != OP_DELETE and c.value is None]
    if nulls:
        raise ApiException(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    changes = [(c.name, c.config_operation, c.value) for c in res.configs]
    if res.resource_type == TOPIC:
        broker.admin.alter_topic_config(res.resource_name, changes, validate_only)
    elif res.resource_type == BROKER:
        _alter_broker(broker, res.resource_name, changes)
    elif res.resource_type in RESOURCE_TYPES and res.resource_type != 0:
        raise ApiException(ErrorCode.INVALID_REQUEST, f"AlterConfigs is only supported for topics and brokers, "
                                                      f"but resource type is {RESOURCE_TYPES[res.resource_type]}")
    else:
        raise ApiException(ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}")


def _alter_broker(broker, name: str, changes: list) -> None:
    """Dynamic broker configs: the resulting set of dynamic keys must be empty, since kafkalab cannot apply any
    (``DynamicBrokerConfig.validateConfigs`` rejects read-only keys with this message)."""
    if name and _broker_id(name, "Node id") != broker.broker_id:
        raise ApiException(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {broker.broker_id}, but received {name}")
    props: dict[str, str] = {}  # the stored dynamic configs of this broker (or of the cluster): none
    for key, op, value in changes:
        if op == OP_SET:
            props[key] = value
        elif op == OP_DELETE:
            props.pop(key, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            type_ = broker.config.definitions[key].type if key in broker.config.definitions else None
            if type_ is not Type.LIST:
                verb = "append" if op == OP_APPEND else "subtract"
                raise ApiException(ErrorCode.INVALID_CONFIG,
                                   f"Config value {verb} is not allowed for config key: {key}")
            props[key] = value
        else:
            raise ApiException(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    if props and not DYNAMIC_BROKER_CONFIGS_SUPPORTED:
        raise ApiException(ErrorCode.INVALID_REQUEST,
                           f"Cannot update these configs dynamically: Set({', '.join(sorted(props))})")


# ---------------------------------------------------------------------------------------------- AlterConfigs

@handles(ApiKey.ALTER_CONFIGS, versions=(0, 2), error_response=_all_resources_failed(LegacyAlterResponse))
def handle_alter_configs(broker, request):
    """The deprecated AlterConfigs: per resource the preprocessing checks, then ALTER_CONFIGS, then the change."""
    def alter(res, duplicated: bool) -> None:
        _preprocess_legacy(broker, res, duplicated)
        _authorize(broker, request, res.resource_type, res.resource_name, AclOperation.ALTER_CONFIGS)
        if res.resource_type == TOPIC:
            _replace_topic_configs(broker, res, request.body.validate_only)
    return _per_resource(request, LegacyAlterResponse, alter)


def _preprocess_legacy(broker, res, duplicated: bool) -> None:
    """``ConfigAdminManager.preprocess`` for AlterConfigs; a broker's whole new set is checked here, as Kafka
    does (and so refused unless it is empty)."""
    if duplicated:
        raise ApiException(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    names = [c.name for c in res.configs]
    if len(set(names)) != len(names):
        raise ApiException(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in res.configs if c.value is None]
    if nulls:
        raise ApiException(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    if res.resource_type == BROKER:
        _alter_broker(broker, res.resource_name, [(c.name, OP_SET, c.value) for c in res.configs])
    elif res.resource_type != TOPIC:
        raise ApiException(ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}")


def _replace_topic_configs(broker, res, validate_only: bool) -> None:
    """``ZkAdminManager.alterTopicConfigs``: the set becomes the topic's overrides (every other override is
    deleted), validated and written as an incremental change would be."""
    wanted = {c.name: c.value for c in res.configs}
    current = {}
    if res.resource_name:
        validate_topic_name(res.resource_name)      # before the name goes into a znode path
        current = broker.admin.topic_overrides(res.resource_name)
    changes = [(k, OP_SET, v) for k, v in wanted.items()] + \
              [(k, OP_DELETE, None) for k in current if k not in wanted]
    broker.admin.alter_topic_config(res.resource_name, changes, validate_only)
