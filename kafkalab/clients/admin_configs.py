"""The admin client's config requests: ``Admin.describe_configs``, ``incremental_alter_configs`` and the
deprecated ``alter_configs``.

Theory of operation
-------------------
A config belongs to a *resource*: a topic (type 2) or a broker (type 4; the empty name means the cluster-wide
dynamic defaults). A broker's own configs are known only to that broker, so a request about broker ``"1"`` goes
to broker 1; everything else goes to any broker (the least loaded), which reads the topic's overrides from the
shared store. Each resource is asked in its own request and has its own error code.

- DescribeConfigs: every config of the resource with its value, source and (``include_synonyms``) the other
  places it could come from, most specific first.
- IncrementalAlterConfigs (KIP-339): named keys only, one operation each (SET, DELETE, APPEND, SUBTRACT).
- AlterConfigs, deprecated: the resource's *whole* set of overrides; a key left out goes back to its default.
  ``kafka-configs.sh`` 3.9 still sends it for brokers.

Each function returns ``(results, errors)``; :class:`~kafkalab.clients.admin.Admin` raises ``AdminError`` when
``errors`` is not empty. Mirrors ``KafkaAdminClient.describeConfigs`` / ``incrementalAlterConfigs`` /
``alterConfigs`` and their ``dependsOnSpecificNode`` rule.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from kafkalab.clients.errors import KafkaProtocolError
from kafkalab.protocol import ApiKey, request_class

__all__ = ["ConfigResource", "describe_configs", "incremental_alter_configs", "alter_configs", "OPS"]

#: ``AlterConfigOp.OpType`` ids.
OPS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}


class ConfigResource(NamedTuple):
    """``ConfigResource("topic", "events")`` or ``ConfigResource("broker", "0")``."""

    type: str
    name: str

    TYPES = {"topic": 2, "broker": 4, "broker_logger": 8, "client_metrics": 16, "group": 32}

    @property
    def type_code(self) -> int:
        return self.TYPES[self.type.lower()]


def _error(code: int, message: Optional[str]) -> KafkaProtocolError:
    return KafkaProtocolError(code, message or None)


async def _node_for(client, res: ConfigResource) -> int:
    """A named broker (or its logger) is asked itself; anything else goes to the least loaded broker."""
    if res.type.lower() in ("broker", "broker_logger") and res.name not in ("", None):
        await client.update_metadata([])
        return int(res.name)
    return client.least_loaded_node()


async def _each(client, resources, build) -> tuple[dict, dict]:
    """Send ``build(res)`` for each resource to its broker; fold the per-resource answers."""
    results, errors = {}, {}
    for res in resources:
        resp = await client.send(await _node_for(client, res), build(res))
        body = resp.body
        for r in getattr(body, "results", None) or getattr(body, "responses", ()):
            if r.error_code:
                errors[res] = _error(r.error_code, r.error_message)
            else:
                results[res] = {c.name: c for c in r.configs} if hasattr(r, "configs") else None
    return results, errors


async def describe_configs(client, resources, include_synonyms: bool) -> tuple[dict, dict]:
    """``{resource: {name: DescribeConfigsResourceResult}}`` (value, read_only, config_source, synonyms...)."""
    cls = request_class(ApiKey.DESCRIBE_CONFIGS)
    return await _each(client, resources, lambda res: cls(
        resources=(cls.DescribeConfigsResource(resource_type=res.type_code, resource_name=res.name,
                                               configuration_keys=None),),
        include_synonyms=include_synonyms))


async def incremental_alter_configs(client, changes: dict, validate_only: bool) -> tuple[dict, dict]:
    """``changes``: ``{resource: {name: value | None | (op, value)}}``; a value SETs, None DELETEs."""
    cls = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)

    def build(res):
        configs = []
        for name, value in changes[res].items():
            op, val = ("DELETE", None) if value is None else (value if isinstance(value, tuple) else ("SET", value))
            configs.append(cls.AlterableConfig(name=name, config_operation=OPS[op.upper()],
                                               value=None if val is None else str(val)))
        return cls(resources=(cls.AlterConfigsResource(resource_type=res.type_code, resource_name=res.name,
                                                       configs=tuple(configs)),), validate_only=validate_only)

    return await _each(client, list(changes), build)


async def alter_configs(client, configs: dict, validate_only: bool) -> tuple[dict, dict]:
    """The deprecated AlterConfigs: ``{resource: {name: value}}``, each the resource's whole new set."""
    cls = request_class(ApiKey.ALTER_CONFIGS)

    def build(res):
        entries = tuple(cls.AlterableConfig(name=n, value=None if v is None else str(v))
                        for n, v in configs[res].items())
        return cls(resources=(cls.AlterConfigsResource(resource_type=res.type_code, resource_name=res.name,
                                                       configs=entries),), validate_only=validate_only)

    return await _each(client, list(configs), build)
