"""``kafkalab configs`` for topics and brokers: describing and altering config resources, as kafka-configs.sh.

Theory of operation
-------------------
A topic or a broker is a *config resource*; DescribeConfigs returns every config of it with its **source**
(``DYNAMIC_TOPIC_CONFIG``: set on the topic; ``DYNAMIC_BROKER_CONFIG`` / ``DYNAMIC_DEFAULT_BROKER_CONFIG``: set
at run time for one broker / every broker; ``STATIC_BROKER_CONFIG``: ``server.properties``; ``DEFAULT_CONFIG``:
Kafka's default) and its **synonyms**, the other places it could come from, most specific first. Kafka's tool
prints, per resource, a heading and one line per config::

    Dynamic configs for topic events are:
      cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, \\
    DEFAULT_CONFIG:log.cleanup.policy=delete}

(one line per config; broken here to fit).

``--describe`` keeps only the resource's dynamic source, ``--all`` keeps everything ("All configs for broker 0
are:"); lines are sorted by name; a sensitive value (a password) is ``null``. The cluster default of brokers is
headed "Default configs for brokers in the cluster are:".

Altering differs by entity (``ConfigCommand.alterConfig``):

- **topics**: describe the topic's dynamic configs first; a ``--delete-config`` key that is not among them fails
  here (``Invalid config(s): k``). Then one IncrementalAlterConfigs with a SET per added key and a DELETE per
  deleted one.
- **brokers**: describe the broker's (or the default's) dynamic configs, the same check, then build the new
  *whole* set (old, plus added, minus deleted) -- every sensitive entry must be given again, since a describe
  never returns its value -- and send it with the deprecated AlterConfigs. kafkalab's broker applies no dynamic
  broker config: it refuses any non-empty set (INVALID_REQUEST ``Cannot update these configs dynamically:
  Set(...)``, Kafka's answer for read-only keys), and the tool prints that as Kafka's tool prints a failure.

The Java exception line of a broker's refusal (:func:`java_exception`) names the exception class of the error
code, as the Java admin client raises it inside an ``ExecutionException``.

Mirrors: ``ConfigCommand.scala`` (``describeResourceConfig``, ``getResourceConfig``, the TOPIC and BROKER cases of
``alterConfig``) and ``clients/.../admin/ConfigEntry.ConfigSource``.
"""
from __future__ import annotations

import re
from typing import Optional

from kafkalab.clients import Admin
from kafkalab.clients.admin import AdminError, ConfigResource
from kafkalab.common.config import ConfigException
from kafkalab.protocol import ApiException, java_exception_class

__all__ = ["IllegalArgument", "InvalidConfiguration", "SOURCE_NAMES", "describe", "alter_topic", "alter_broker",
           "resource_configs", "java_exception", "is_int"]


class IllegalArgument(ValueError):
    """Kafka's ``IllegalArgumentException`` in the tool: the message alone on stderr, exit status 1."""


class InvalidConfiguration(ValueError):
    """Kafka's ``InvalidConfigurationException`` thrown by the tool itself: printed as IllegalArgument is."""


#: ``DescribeConfigsResponse.ConfigSource`` id -> the admin client's ``ConfigEntry.ConfigSource`` name.
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                7: "DYNAMIC_CLIENT_METRICS_CONFIG"}
_INT = re.compile(r"[+-]?[0-9]+")


def is_int(text: str) -> bool:
    """Would Java's ``Integer.parseInt`` take it?"""
    return bool(_INT.fullmatch(text)) and -2**31 <= int(text) < 2**31


def java_exception(e: BaseException) -> str:
    """The first line of the stack trace Kafka's tool prints for a failure it did not expect."""
    if isinstance(e, AdminError):
        e = next(iter(e.errors.values()))
    if isinstance(e, ApiException):
        return f"java.util.concurrent.ExecutionException: {java_exception_class(e.error_code)}: {e.message}"
    if isinstance(e, ConfigException):
        return f"org.apache.kafka.common.config.ConfigException: {e}"
    if isinstance(e, FileNotFoundError):
        return f"java.nio.file.NoSuchFileException: {e.filename}"
    return f"java.io.IOException: {e}"


def _resource(entity_type: str, name: str) -> ConfigResource:
    return ConfigResource("topic" if entity_type == "topics" else "broker", name)


def _dynamic_source(entity_type: str, name: str) -> str:
    if entity_type == "topics":
        return "DYNAMIC_TOPIC_CONFIG"
    return "DYNAMIC_DEFAULT_BROKER_CONFIG" if name == "" else "DYNAMIC_BROKER_CONFIG"


def resource_configs(admin: Admin, entity_type: str, name: str, include_synonyms: bool,
                     describe_all: bool) -> list:
    """``getResourceConfig``: the resource's config entries, only its dynamic ones unless ``describe_all``,
    sorted by name."""
    if entity_type == "brokers" and name != "" and not is_int(name):
        raise IllegalArgument(f"The entity name for {entity_type} must be a valid integer broker id, found: {name}")
    resource = _resource(entity_type, name)
    entries = admin.describe_configs([resource], include_synonyms=include_synonyms)[resource].values()
    wanted = None if describe_all else _dynamic_source(entity_type, name)
    return sorted((e for e in entries if wanted is None or SOURCE_NAMES.get(e.config_source) == wanted),
                  key=lambda e: e.name)


def _text(value: Optional[str]) -> str:
    return "null" if value is None else value


def describe(admin: Admin, entity_type: str, name: Optional[str], describe_all: bool, out) -> None:
    """``describeResourceConfig``: the named resource, or every topic / every broker and the brokers' default."""
    if name is not None:
        names = [name]
    elif entity_type == "topics":
        names = admin.list_topics()
    else:
        names = [str(b) for b in admin.describe_cluster().brokers] + [""]
    for entity in names:
        if entity == "":
            print(f"Default configs for {entity_type} in the cluster are:", file=out)
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {entity} are:", file=out)
        for entry in resource_configs(admin, entity_type, entity, True, describe_all):
            synonyms = ", ".join(f"{SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}={_text(s.value)}"
                                 for s in entry.synonyms)
            print(f"  {entry.name}={_text(entry.value)} sensitive={str(entry.is_sensitive).lower()} "
                  f"synonyms={{{synonyms}}}", file=out)


def _check_deletions(old: dict, deleted: list[str]) -> None:
    invalid = [k for k in deleted if k not in old]
    if invalid:
        raise InvalidConfiguration(f"Invalid config(s): {','.join(invalid)}")


def alter_topic(admin: Admin, name: str, added: dict, deleted: list[str]) -> None:
    """The TOPIC case: IncrementalAlterConfigs, a SET per added key and a DELETE per deleted one."""
    old = {e.name: e for e in resource_configs(admin, "topics", name, False, False)}
    _check_deletions(old, deleted)
    changes: dict = dict(added)
    changes.update({k: ("DELETE", "") for k in deleted})      # Kafka's tool sends DELETE with an empty value
    admin.incremental_alter_configs({_resource("topics", name): changes})


def alter_broker(admin: Admin, name: str, added: dict, deleted: list[str]) -> None:
    """The BROKER case: the whole new set of dynamic configs with the deprecated AlterConfigs."""
    old = {e.name: e.value for e in resource_configs(admin, "brokers", name, False, False)}
    _check_deletions(old, deleted)
    new = {**old, **added}
    for k in deleted:
        new.pop(k, None)
    missing = [k for k, v in new.items() if v is None]
    if missing:
        raise InvalidConfiguration(f"All sensitive broker config entries must be specified for --alter, missing "
                                   f"entries: Set({', '.join(missing)})")
    admin.alter_configs({_resource("brokers", name): new})
