"""``kafkalab configs``: kafka-configs.sh (3.9) for topics, brokers and SCRAM users, through the admin protocol.

Theory of operation
-------------------
Kafka's ``kafka-configs.sh --bootstrap-server`` describes and changes the configs that live *outside*
``server.properties``: a topic's overrides (``retention.ms`` for one topic), dynamic broker configs (per broker or
the cluster-wide default, ``--entity-default``) and users' SCRAM credentials::

    kafkalab configs --bootstrap-server localhost:9092 --alter --entity-type topics --entity-name events \\
        --add-config 'cleanup.policy=compact,retention.ms=3600000'
    Completed updating config for topic events.

    kafkalab configs --bootstrap-server localhost:9092 --describe --entity-type topics --entity-name events
    Dynamic configs for topic events are:
      cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, ...}

``--describe`` lists only what was set dynamically (the ``DYNAMIC_*`` source of the resource); ``--all`` lists
every config with the synonyms that explain its value. Without ``--entity-name`` every topic (or every broker,
then the cluster default) is described. ``--alter`` takes ``--add-config k=v,k2=[a,b]`` (brackets group a value
with commas), or ``--add-config-file F`` (a properties file), and ``--delete-config k,k2``.

How the change travels differs by entity, exactly as in Kafka's tool (:mod:`.configs_resources`): topics with
IncrementalAlterConfigs (SET and DELETE of the named keys); brokers with the deprecated AlterConfigs, the
broker's whole set of dynamic configs (described first, changed locally, sent back). kafkalab's broker applies
no dynamic broker config, so it refuses any non-empty set as Kafka refuses a read-only key, and the tool prints
that refusal as Kafka's does. SCRAM credentials go through AlterUserScramCredentials (the password is salted and
hashed by the client, PBKDF2, before anything is sent) and DescribeUserScramCredentials::

    kafkalab configs --bootstrap-server localhost:9092 --command-config admin.properties \\
        --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' \\
        --entity-type users --entity-name alice
    Completed updating config for user alice.

Errors as Kafka's tool prints them (exit status 1): a wrong argument or a refused local check prints its message
alone on stderr (``IllegalArgumentException`` / ``InvalidConfigurationException``: ``Invalid config(s): k``);
a broker's refusal prints ``Error while executing config command with args '...'`` and the exception line
(``java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: ...``; Java's
stack frames are left out). Unlike Kafka, the args line never shows a password or SCRAM credential.
``--command-config`` is a properties file with the admin client's settings (``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config``). Client quotas (``clients``, ``ips``, quota keys of users),
``broker-loggers`` and ``client-metrics`` are not implemented by kafkalab's broker, and the tool says so.

Mirrors: ``core/src/main/scala/kafka/admin/ConfigCommand.scala`` (``ConfigCommandOptions.checkArgs``,
``parseConfigsToBeAdded``, ``alterConfig``, ``describeConfig``, ``alterUserScramCredentialConfigs``).
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Optional

from kafkalab.clients import Admin, ScramCredentialInfo, UserScramCredentialDeletion, UserScramCredentialUpsertion
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException
from kafkalab.security.scram import SCRAM_MECHANISMS
from kafkalab.storage.log_config import TOPIC_CONFIGS
from kafkalab.tools import configs_resources as resources
from kafkalab.tools.configs_resources import IllegalArgument, InvalidConfiguration

__all__ = ["add_parser", "run", "parse_configs_to_be_added", "parse_scram_credentials"]

DEFAULT_SCRAM_ITERATIONS = 4096
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)")
#: ``ConfigType.ALL`` then the two the broker adds (``BrokerSupportedConfigTypes``).
ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics")
#: What kafkalab's broker does not implement (no client quotas, no log4j loggers, no client metrics).
_NOT_IMPLEMENTED = {
    "clients": "client quotas (DescribeClientQuotas, AlterClientQuotas)",
    "ips": "connection quotas per IP (DescribeClientQuotas, AlterClientQuotas)",
    "broker-loggers": "broker loggers (DescribeConfigs and IncrementalAlterConfigs of BROKER_LOGGER)",
    "client-metrics": "client metrics subscriptions (KIP-714)",
}
_ABOUT = ("This tool helps to manipulate and describe entity config for a topic, client, user, broker, ip or "
          "client-metrics")
#: ``Topic.MESSAGE_FORMAT_VERSION_CONFIG``'s deprecation warning (printed, as Kafka does, when it is added).
_MESSAGE_FORMAT = "message.format.version"
_SPLIT_ITEMS = re.compile(r",(?=[^\]]*(?:\[|$))")
_SPLIT_PAIR = re.compile(r"\s*=\s*(?=[^\]]*(?:\[|$))")
_KEY = re.compile(r"[a-zA-Z0-9._-]*")


class UsageError(ValueError):
    """``CommandLineUtils.printUsageAndExit``: the message, then the usage, on stderr."""


class _AppendName(argparse.Action):
    """``--entity-name N`` and ``--entity-default`` share one ordered list, as joptsimple keeps them."""

    def __call__(self, parser, namespace, values, option_string=None):
        names = list(getattr(namespace, self.dest) or [])
        names.append("" if values is None or values == [] else values)
        setattr(namespace, self.dest, names)


def add_parser(sub) -> None:
    p = sub.add_parser("configs", help="kafka-configs.sh: describe and alter configs of topics, brokers and "
                                       "SCRAM users",
                       description=_ABOUT + ". kafkalab implements topics, brokers (refused: no dynamic broker "
                                            "configs) and users (SCRAM credentials).")
    p.add_argument("--bootstrap-server", help="The Kafka servers to connect to.")
    p.add_argument("--command-config", help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    p.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    p.add_argument("--all", action="store_true", help="List all configs for the given topic or broker entity "
                                                      "(includes static configuration when the entity type is "
                                                      "brokers)")
    p.add_argument("--entity-type", dest="entity_types", action="append", default=[],
                   help="Type of entity (topics/clients/users/brokers/broker-loggers/ips/client-metrics)")
    p.add_argument("--entity-name", dest="entity_names", action=_AppendName, default=[],
                   help="Name of entity (topic name/user principal name/broker id)")
    p.add_argument("--entity-default", dest="entity_names", action=_AppendName, nargs=0,
                   help="Default entity name for clients/users/brokers/ips (applies to corresponding entity type "
                        "in command line)")
    p.add_argument("--add-config", help="Key Value pairs of configs to add. Square brackets can be used to group "
                                        "values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'. Topic configs: "
                                        + ", ".join(sorted(TOPIC_CONFIGS)) + ". Users: SCRAM-SHA-256, SCRAM-SHA-512 "
                                        "('SCRAM-SHA-256=[iterations=8192,password=...]').")
    p.add_argument("--add-config-file", help="Path to a properties file with configs to add.")
    p.add_argument("--delete-config", action="append", default=[], help="config keys to remove 'k1,k2'")
    p.add_argument("--force", action="store_true", help="Suppress console prompts")
    p.add_argument("--topic", help="The topic's name.")
    p.add_argument("--user", help="The user's principal name.")
    p.add_argument("--broker", help="The broker's ID.")
    p.add_argument("--broker-defaults", action="store_true", help="The config defaults for all brokers.")
    p.set_defaults(run=run, configs_parser=p)


# ---------------------------------------------------------------------------------------------- options

class Options:
    """``ConfigCommandOptions``: the entity types and names from ``--entity-*`` and the specific flags."""

    def __init__(self, args):
        self.args = args
        flags = [(f, t) for f, t in (("topic", "topics"), ("user", "users"), ("broker", "brokers"))
                 if getattr(args, f, None) is not None]
        self.used_entity_flags = bool(flags) or args.broker_defaults
        self.entity_types = list(args.entity_types) + [t for _, t in flags] + \
            (["brokers"] if args.broker_defaults else [])
        self.entity_names = list(args.entity_names) + [getattr(args, f) for f, _ in flags] + \
            ([""] if args.broker_defaults else [])

    def check(self) -> None:
        """``checkArgs``, in Kafka's order and words."""
        a, types = self.args, self.entity_types
        if int(a.alter) + int(a.describe) != 1:
            raise UsageError("Command must include exactly one action: --describe, --alter")
        if a.describe:
            for flag, used in (("add-config", a.add_config is not None), ("delete-config", bool(a.delete_config))):
                if used:
                    raise UsageError(f'Option "[describe]" can\'t be used with option "[{flag}]"')
        duplicates = sorted({t for t in types if types.count(t) > 1})
        if duplicates:
            raise IllegalArgument(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
        for t in types:
            if t not in ENTITY_TYPES:
                raise IllegalArgument(f"Invalid entity type {t}, the entity type must be one of "
                                      f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server or --bootstrap-controller "
                                      f"argument")
        if not types:
            raise IllegalArgument("At least one entity type must be specified")
        if len(types) > 1 and set(types) != {"users", "clients"}:
            raise IllegalArgument("Only 'users' and 'clients' entity types may be specified together")
        if (a.entity_names or a.entity_types) and self.used_entity_flags:
            raise IllegalArgument("--entity-{type,name,default} should not be used in conjunction with specific "
                                  "entity flags")
        if not a.bootstrap_server:
            raise IllegalArgument("One of the required --bootstrap-server, --boostrap-controller, or --zookeeper "
                                  "arguments must be specified")
        has_name = any(self.entity_names)
        has_default = "" in self.entity_names
        if has_name and ("brokers" in types or "broker-loggers" in types):
            for name in self.entity_names:
                if name and not resources.is_int(name):
                    raise IllegalArgument(f"The entity name for {types[0]} must be a valid integer broker id, but "
                                          f"it is: {name}")
        if a.alter:
            self._check_alter(types, has_name, has_default)

    def _check_alter(self, types, has_name: bool, has_default: bool) -> None:
        a = self.args
        if set(types) & {"users", "clients", "brokers", "ips"}:
            if not has_name and not has_default:
                raise IllegalArgument("an entity-name or default entity must be specified with --alter of users, "
                                      "clients, brokers or ips")
        elif not has_name:
            raise IllegalArgument(f"an entity name must be specified with --alter of {','.join(types)}")
        if a.add_config is not None and a.add_config_file is not None:
            raise IllegalArgument("Only one of --add-config or --add-config-file must be specified")
        if a.add_config is None and a.add_config_file is None and not a.delete_config:
            raise IllegalArgument("At least one of --add-config, --add-config-file, or --delete-config must be "
                                  "specified with --alter")


def parse_configs_to_be_added(add_config: Optional[str], add_config_file: Optional[str] = None,
                              out=None) -> dict:
    """``parseConfigsToBeAdded``: the file's properties, then ``k=v,k2=[a,b]`` (brackets dropped from values;
    a comma inside brackets belongs to the value). Raises IllegalArgument with Kafka's messages."""
    props: dict = {}
    if add_config_file is not None:
        props.update(load_properties(add_config_file))
    if add_config is not None:
        items = _SPLIT_ITEMS.split(add_config)
        while items and items[-1] == "":            # Java's String.split drops trailing empty strings
            items.pop()
        pairs = [_SPLIT_PAIR.split(item) for item in items]
        if not all(len(pair) == 2 for pair in pairs):
            raise IllegalArgument('requirement failed: Invalid entity config: all configs to be added must be in the '
                                  'format "key=val".')
        for key, value in pairs:
            props[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    if _MESSAGE_FORMAT in props:
        print(f"WARNING: The configuration {_MESSAGE_FORMAT}={props[_MESSAGE_FORMAT]} is specified. This configuration "
              "will be ignored if the version is newer than the inter.broker.protocol.version specified in the broker "
              "or if the inter.broker.protocol.version is 3.0 or newer. This configuration is deprecated and it will "
              "be removed in Apache Kafka 4.0.", file=out or sys.stdout)
    for key in props:
        if not _KEY.fullmatch(key):
            raise IllegalArgument(f"Invalid character found for config key: {key}")
    return props


def _configs_to_be_deleted(args) -> list[str]:
    return [name.strip() for value in args.delete_config for name in value.split(",")]


# ---------------------------------------------------------------------------------------------- running

def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    argv = _tool_argv(args)
    try:
        if not argv:
            raise UsageError(_ABOUT)
        opts = Options(args)
        opts.check()
        for t in opts.entity_types:
            if t in _NOT_IMPLEMENTED:
                raise IllegalArgument(f"kafkalab configs does not implement --entity-type {t}: kafkalab's broker has "
                                      f"no {_NOT_IMPLEMENTED[t]}")
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        if args.alter and len(opts.entity_types) != len(opts.entity_names):
            raise IllegalArgument("An entity name must be specified for every entity type")
        with Admin(config) as admin:
            if args.alter:
                _alter(admin, opts, out)
            else:
                _describe(admin, opts, out)
        return 0
    except UsageError as e:
        print(e, file=err)
        print(args.configs_parser.format_usage(), end="", file=err)
        return 1
    except (IllegalArgument, InvalidConfiguration) as e:
        print(e, file=err)
        return 1
    except (ApiException, ConfigException, OSError) as e:
        print(f"Error while executing config command with args '{_printable_args(argv)}'", file=err)
        print(resources.java_exception(e), file=err)
        return 1


def _tool_argv(args) -> list[str]:
    """The tool's own arguments (what follows ``configs``), as Kafka prints them in its error line."""
    argv = list(getattr(args, "argv", None) or [])
    return argv[argv.index("configs") + 1:] if "configs" in argv else argv


def _printable_args(argv: list[str]) -> str:
    """The arguments, with the value of every SCRAM credential or password in ``--add-config`` hidden."""
    shown, hide_next = [], False
    for arg in argv:
        if hide_next:
            arg = _hidden_items(arg)
        elif arg.startswith("--add-config="):
            arg = "--add-config=" + _hidden_items(arg[len("--add-config="):])
        hide_next = arg == "--add-config"
        shown.append(arg)
    return " ".join(shown)


def _hidden_items(text: str) -> str:
    return ",".join(_hidden(item) for item in _SPLIT_ITEMS.split(text))


def _hidden(item: str) -> str:
    key, sep, _ = item.partition("=")
    secret = key.strip() in SCRAM_MECHANISMS or "password" in key.lower()
    return f"{key}{sep}[hidden]" if sep and secret else item


def _alter(admin: Admin, opts: Options, out) -> None:
    args = opts.args
    entity_type, name = opts.entity_types[0], opts.entity_names[0]
    added = parse_configs_to_be_added(args.add_config, args.add_config_file, out)
    deleted = _configs_to_be_deleted(args)
    if entity_type == "topics":
        resources.alter_topic(admin, name, added, deleted)
    elif entity_type == "brokers":
        resources.alter_broker(admin, name, added, deleted)
    else:
        _alter_user(admin, name, added, deleted)
    if name:
        print(f"Completed updating config for {entity_type[:-1]} {name}.", file=out)
    else:
        print(f"Completed updating default config for {entity_type} in the cluster.", file=out)


def _describe(admin: Admin, opts: Options, out) -> None:
    entity_type = opts.entity_types[0]
    name = opts.entity_names[0] if opts.entity_names else None
    if entity_type in ("topics", "brokers"):
        resources.describe(admin, entity_type, name, opts.args.all, out)
    elif name != "":        # SCRAM credentials: never of the default user
        _describe_users(admin, name, out)


# ---------------------------------------------------------------------------------------------- SCRAM users

def parse_scram_credentials(added: dict) -> list[UserScramCredentialUpsertion]:
    """``{"SCRAM-SHA-256": "iterations=8192,password=pw"}`` -> upsertions (user filled in later), with Kafka's
    checks; a message never repeats the password."""
    out = []
    for name, value in added.items():
        m = _CREDENTIAL.fullmatch(value)
        if m is None:
            raise IllegalArgument(f"Invalid credential property {name}=[hidden]")
        iterations = int(m[1]) if m[1] not in (None, "", "-1") else DEFAULT_SCRAM_ITERATIONS
        minimum = SCRAM_MECHANISMS[name].min_iterations
        if iterations < minimum:
            raise IllegalArgument(f"Iterations {iterations} is less than the minimum {minimum} required for {name}")
        out.append(UserScramCredentialUpsertion("", ScramCredentialInfo(name, iterations), m[2]))
    return out


def _alter_user(admin: Admin, user: str, added: dict, deleted: list[str]) -> None:
    unknown_added = [k for k in added if k not in SCRAM_MECHANISMS]
    if unknown_added:
        raise IllegalArgument(f"Only quota and SCRAM credential configs can be added for 'users' using "
                              f"--bootstrap-server. Unexpected config names: {', '.join(unknown_added)}")
    unknown_deleted = [k for k in deleted if k not in SCRAM_MECHANISMS]
    if unknown_deleted:
        raise IllegalArgument(f"Only quota and SCRAM credential configs can be deleted for 'users' using "
                              f"--bootstrap-server. Unexpected config names: {', '.join(unknown_deleted)}")
    if not user:
        raise IllegalArgument("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                              "Credentials using --bootstrap-server.")
    upserts = [u._replace(user=user) for u in parse_scram_credentials(added)]
    deletes = [UserScramCredentialDeletion(user, name) for name in deleted]
    results = admin.alter_user_scram_credentials(deletes + upserts)
    error = results.get(user)
    if error is not None:
        raise error


def _describe_users(admin: Admin, user: Optional[str], out) -> None:
    results = admin.describe_user_scram_credentials([user] if user else None)
    for name, description in results.items():
        if isinstance(description, Exception):
            print(f"Error retrieving SCRAM credential configs for user-principal '{name}': "
                  f"{type(description).__name__}: {description}", file=out)
            continue
        text = ", ".join(f"{i.mechanism}=iterations={i.iterations}" for i in description.credential_infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {text}", file=out)
