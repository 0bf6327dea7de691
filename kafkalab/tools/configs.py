"""``kafkalab configs``: kafka-configs.sh for SCRAM users, through the admin protocol.

Theory of operation
-------------------
Kafka's ``kafka-configs.sh --bootstrap-server`` creates and removes SCRAM credentials with
AlterUserScramCredentials and lists them with DescribeUserScramCredentials; the password is salted and hashed
by the tool (PBKDF2) before anything is sent::

    kafkalab configs --bootstrap-server localhost:9092 --command-config admin.properties \\
        --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' \\
        --entity-type users --entity-name alice
    Completed updating config for user alice.

    kafkalab configs --bootstrap-server localhost:9092 --command-config admin.properties \\
        --describe --entity-type users --entity-name alice
    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192

``--command-config`` is a properties file with the admin client's settings (``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config``), as for Kafka's tools. ``--delete-config SCRAM-SHA-512`` removes a
credential. Only SCRAM credentials of users are handled here (quotas and topic configs are not).

Mirrors: ``core/src/main/scala/kafka/admin/ConfigCommand.scala`` (``alterUserScramCredentialConfigs``,
``describeResourceConfig`` for users).
"""
from __future__ import annotations

import re
import sys

from kafkalab.clients import Admin, ScramCredentialInfo, UserScramCredentialDeletion, UserScramCredentialUpsertion
from kafkalab.common.config import ConfigException, load_properties
from kafkalab.protocol import ApiException
from kafkalab.security.scram import SCRAM_MECHANISMS

__all__ = ["add_parser", "run", "parse_add_config"]

DEFAULT_SCRAM_ITERATIONS = 4096
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)")


def add_parser(sub) -> None:
    p = sub.add_parser("configs", help="kafka-configs.sh for SCRAM users (--alter/--describe --entity-type users)",
                       description="Add, delete and describe SCRAM credentials of users, as kafka-configs.sh does.")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", help="properties file with the admin client's settings (SASL, ...)")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    p.add_argument("--entity-type", required=True, choices=("users",))
    p.add_argument("--entity-name")
    p.add_argument("--add-config", default="", help="'SCRAM-SHA-256=[iterations=8192,password=...]'")
    p.add_argument("--delete-config", default="", help="SCRAM-SHA-512 (comma separated)")
    p.set_defaults(run=lambda args: run(args))


def _split_top_level(text: str) -> list[str]:
    """``a=[x,y],b=z`` -> ``["a=[x,y]", "b=z"]`` (commas inside brackets belong to the value)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        current += ch
    if current:
        parts.append(current)
    return [p for p in (x.strip() for x in parts) if p]


def parse_add_config(text: str) -> list[UserScramCredentialUpsertion]:
    """``SCRAM-SHA-256=[iterations=8192,password=pw]`` -> upsertions (user filled in later); Kafka's messages."""
    out = []
    for item in _split_top_level(text):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"Invalid entity config: all configs to be added must be in the format \"key=val\". "
                             f"Found: {item}")
        if name not in SCRAM_MECHANISMS:
            raise ValueError(f"Only quota and SCRAM credential configs can be added for 'users' using "
                             f"--bootstrap-server. Unexpected config names: {name}")
        value = value[1:-1] if value.startswith("[") and value.endswith("]") else value
        m = _CREDENTIAL.fullmatch(value)
        if m is None:
            raise ValueError(f"Invalid credential property {name}=[hidden]")
        iterations = int(m[1]) if m[1] not in (None, "", "-1") else DEFAULT_SCRAM_ITERATIONS
        minimum = SCRAM_MECHANISMS[name].min_iterations
        if iterations < minimum:
            raise ValueError(f"Iterations {iterations} is less than the minimum {minimum} required for {name}")
        out.append(UserScramCredentialUpsertion("", ScramCredentialInfo(name, iterations), m[2]))
    return out


def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        config = dict(load_properties(args.command_config)) if args.command_config else {}
        config["bootstrap.servers"] = args.bootstrap_server
        with Admin(config) as admin:
            if args.describe:
                return _describe(admin, args.entity_name, out)
            return _alter(admin, args, out, err)
    except (ValueError, ConfigException, ApiException) as e:
        print(f"Error while executing config command with args '{_safe_args(args)}'", file=err)
        print(f"{type(e).__name__}: {e}", file=err)
        return 1


def _safe_args(args) -> str:
    """The arguments for an error message, without the password of --add-config."""
    return f"--entity-type {args.entity_type} --entity-name {args.entity_name}"


def _alter(admin: Admin, args, out, err) -> int:
    if not args.entity_name:
        raise ValueError("an entity name must be specified with --alter of users")
    upserts = [u._replace(user=args.entity_name) for u in parse_add_config(args.add_config)]
    deletes = []
    for name in (n.strip() for n in args.delete_config.split(",") if n.strip()):
        if name not in SCRAM_MECHANISMS:
            raise ValueError(f"Only quota and SCRAM credential configs can be deleted for 'users' using "
                             f"--bootstrap-server. Unexpected config names: {name}")
        deletes.append(UserScramCredentialDeletion(args.entity_name, name))
    if not upserts and not deletes:
        raise ValueError("At least one of --add-config or --delete-config must be specified with --alter")
    results = admin.alter_user_scram_credentials(deletes + upserts)
    error = results.get(args.entity_name)
    if error is not None:
        raise error
    print(f"Completed updating config for user {args.entity_name}.", file=out)
    return 0


def _describe(admin: Admin, user, out) -> int:
    results = admin.describe_user_scram_credentials([user] if user else None)
    for name, description in results.items():
        if isinstance(description, Exception):
            print(f"Error retrieving SCRAM credential configs for user-principal '{name}': "
                  f"{type(description).__name__}: {description}", file=out)
            continue
        text = ", ".join(f"{i.mechanism}=iterations={i.iterations}" for i in description.credential_infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {text}", file=out)
    return 0
