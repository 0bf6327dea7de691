#!/usr/bin/env python3
"""Generate ``kafkalab/common/kafka_config_names.py``: the *names* of Kafka's broker and topic configs.

kafkalab refuses, at start-up, a broker key that is Kafka's but that kafkalab does not implement (silently
ignoring it would teach that it worked), while a key that is not Kafka's at all only gets Kafka's "isn't a
known config" warning. Telling the two apart needs Kafka's own list of keys, which this script reads from
Kafka's source -- names only, nothing else (no types, defaults or documentation).

Where the names come from (Kafka 3.9): ``KafkaConfig.configDef`` is
``server/src/main/java/org/apache/kafka/server/config/AbstractKafkaConfig.java``'s ``CONFIG_DEF``, a merge of
the ConfigDefs of ``ServerConfigs``, ``ZkConfigs``, ``KRaftConfigs``, ``SocketServerConfigs``,
``ReplicationConfigs``, ``GroupCoordinatorConfig``, ``CleanerConfig``, ``LogConfig.SERVER_CONFIG_DEF``,
``ShareGroupConfig``, ``TransactionLogConfigs``, ``TransactionStateManagerConfigs``, ``QuorumConfig``,
``MetricConfigs``, ``QuotaConfigs``, ``BrokerSecurityConfigs`` (the ``ssl.*``/``sasl.*`` keys),
``DelegationTokenManagerConfigs``, ``PasswordEncoderConfigs`` and ``RemoteLogManagerConfig.configDef()``. The
script reads that merge list, finds each ConfigDef's ``define(...)``/``defineInternal(...)`` calls and
evaluates their first argument: a Java constant expression (string literals, constants of this or another
class joined with ``+``, and ``ServerTopicConfigSynonyms.serverSynonym(...)``, whose table it reads too).
Topic configs are ``LogConfig``'s ``CONFIG`` (its ``static`` block). Listed with the broker's keys too:
the three that can only be set dynamically (``QuotaConfigs.brokerQuotaConfigs()``, which
``DynamicConfig.Broker`` adds: ``leader.replication.throttled.rate``...) and ``AbstractConfig``'s
``config.providers``, which every Kafka configuration accepts. The authorizers' keys (``super.users``,
``allow.everyone.if.no.acl.found``, ``AclAuthorizer``'s ``authorizer.zookeeper.*``) are read from the broker's
configuration outside its ConfigDef; they come from ``StandardAuthorizer.java`` and ``AclAuthorizer.scala``.

Usage (needs a git clone of apache/kafka; there is no network in CI, so the output is committed and this
script has no ``--check``; ``tests/server/test_kafka_config_names.py`` checks kafkalab's tables against it)::

    python scripts/generate_kafka_config_names.py --kafka /path/to/kafka [--ref 3.9.0-rc3]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kafkalab" / "common" / "kafka_config_names.py"
DEFAULT_REF = "3.9.0-rc3"        # the release candidate voted as Kafka 3.9.0
KAFKA_VERSION = "3.9.0"
MERGE_LIST = ("server/src/main/java/org/apache/kafka/server/config/AbstractKafkaConfig.java", "CONFIG_DEF")
TOPIC_CONFIG_DEF = ("LogConfig", "CONFIG")
ALSO_BROKER = (("AbstractConfig", "CONFIG_PROVIDERS_CONFIG"),)
#: the authorizers read their keys from the broker's configuration, outside KafkaConfig's ConfigDef
STANDARD_AUTHORIZER = ("StandardAuthorizer", ("SUPER_USERS_CONFIG", "ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG"))
ACL_AUTHORIZER = "core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala"
#: broker keys that can only be set dynamically (``DynamicConfig.Broker`` adds them to KafkaConfig's)
DYNAMIC_ONLY_BROKER = (("QuotaConfigs", "brokerQuotaConfigs"),)

_STRING = r'"(?:[^"\\]|\\.)*"'
_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*")


class KafkaSource:
    """Java files of one Kafka commit, read with ``git show`` (no work tree needed)."""

    def __init__(self, repo: Path, ref: str):
        self.repo, self.ref = repo, ref
        self.commit = self._git("rev-parse", f"{ref}^{{commit}}").strip()
        files = self._git("ls-tree", "-r", "--name-only", self.commit).splitlines()
        self.by_class: dict[str, list[str]] = {}
        for path in files:
            if path.endswith(".java") and "/src/main/java/" in path:
                self.by_class.setdefault(Path(path).stem, []).append(path)
        self._texts: dict[str, str] = {}
        self._constants: dict[str, dict[str, str]] = {}

    def _git(self, *args) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True,
                              text=True).stdout

    def path_of(self, cls: str, context: str | None = None) -> str:
        paths = self.by_class.get(cls, [])
        if len(paths) > 1 and context is not None:   # ambiguous simple name: follow the referring file's import
            text = self.text(context)
            imported = re.search(rf"^import\s+([\w.]+)\.{cls}\s*;", text, re.M)
            wanted = imported.group(1).replace(".", "/") if imported else str(Path(context).parent)
            paths = [p for p in paths if wanted in p] or paths
        if len(paths) != 1:
            raise SystemExit(f"cannot place class {cls} (candidates: {paths})")
        return paths[0]

    def text(self, path: str) -> str:
        if path not in self._texts:
            raw = self._git("show", f"{self.commit}:{path}")
            self._texts[path] = _strip_comments(raw)
        return self._texts[path]

    # ------------------------------------------------------------------------------------ constants
    def constant(self, path: str, name: str) -> str:
        """The value of ``static final String name`` in ``path`` (or a static import of it)."""
        text = self.text(path)
        m = re.search(rf"\bString\s+{re.escape(name)}\s*=", text)
        if m:
            return self.evaluate(path, _statement(text, m.end()))
        imported = re.search(rf"^import\s+static\s+[\w.]+\.(\w+)\.{re.escape(name)}\s*;", text, re.M)
        if imported:
            return self.constant(self.path_of(imported.group(1), path), name)
        parent = re.search(r"\bclass\s+\w+\s+extends\s+(\w+)", text)   # an inherited constant
        if parent and parent.group(1) in self.by_class:
            return self.constant(self.path_of(parent.group(1), path), name)
        raise SystemExit(f"no String constant {name} in {path}")

    def evaluate(self, path: str, expr: str) -> str:
        """A Java constant expression: literals and constants joined with ``+``, and ``serverSynonym(...)``."""
        parts = []
        for term in _split_top_level(expr, "+"):
            term = term.strip()
            while term.startswith("(") and term.endswith(")"):
                term = term[1:-1].strip()
            if re.fullmatch(_STRING, term):
                parts.append(bytes(term[1:-1], "utf-8").decode("unicode_escape"))
                continue
            call = re.fullmatch(r"(?:ServerTopicConfigSynonyms\s*\.\s*)?serverSynonym\((.*)\)", term, re.S)
            if call:
                parts.append(self.server_synonym(self.evaluate(path, call.group(1))))
                continue
            if not _IDENT.fullmatch(term):
                raise SystemExit(f"cannot evaluate {term!r} in {path}")
            *qualifier, name = [p.strip() for p in term.split(".")]
            target = self.path_of(qualifier[-1], path) if qualifier else path
            parts.append(self.constant(target, name))
        return "".join(parts)

    def server_synonym(self, topic_config: str) -> str:
        """``ServerTopicConfigSynonyms.serverSynonym``: the first broker synonym of a topic config, read from
        that class's ``ALL_TOPIC_CONFIG_SYNONYMS`` table."""
        path = self.path_of("ServerTopicConfigSynonyms")
        text = self.text(path)
        log, cleaner = self.constant(path, "LOG_PREFIX"), self.constant(path, "LOG_CLEANER_PREFIX")
        start = text.index("ALL_TOPIC_CONFIG_SYNONYMS")
        table = _statement(text, text.index("=", start) + 1)
        for helper, args in re.findall(r"\b(sameName|sameNameWithLogPrefix|sameNameWithLogCleanerPrefix|"
                                       r"singleWithLogPrefix|singleWithLogCleanerPrefix|listWithLogPrefix|single)"
                                       r"\(\s*(TopicConfig\.\w+[^()]*(?:\([^()]*\)[^()]*)*)\)", table):
            items = _split_top_level(args, ",")
            if self.evaluate(path, items[0]) != topic_config:
                continue
            if helper.startswith("sameName"):
                first = topic_config
            else:
                literal = re.search(_STRING, items[1])
                first = self.evaluate(path, literal.group(0))
            prefix = cleaner if "Cleaner" in helper else log if "Log" in helper else ""
            return prefix + first
        raise SystemExit(f"no server synonym for topic config {topic_config}")

    # ------------------------------------------------------------------------------------ ConfigDefs
    def defined_names(self, cls: str, member: str, context: str | None = None) -> set[str]:
        """The first arguments of every ``define``/``defineInternal`` of the ConfigDef ``cls.member`` (a field,
        or a method returning one)."""
        path = self.path_of(cls, context)
        text = self.text(path)
        segments = []
        method = re.search(rf"\bConfigDef\s+{re.escape(member)}\s*\(\s*\)\s*\{{", text)
        if method:
            segments.append(_block(text, method.end() - 1))
        else:
            field = re.search(rf"\b{re.escape(member)}\s*=", text)
            if field is None:
                raise SystemExit(f"no ConfigDef {member} in {path}")
            segments.append(_statement(text, field.end()))
            for later in re.finditer(rf"\b{re.escape(member)}\s*\.\s*define", text):   # static { X.define(...) }
                segments.append(_statement(text, later.start()))
        names = set()
        for segment in segments:
            for call in re.finditer(r"\bdefine(?:Internal)?\s*\(", segment):
                args = _split_top_level(_block(segment, call.end() - 1)[1:-1], ",")
                first = args[0].strip()
                if first.startswith("new ConfigKey") or first.startswith("key"):
                    raise SystemExit(f"a define(ConfigKey) in {path}: not handled")
                names.add(self.evaluate(path, first))
        return names

    def broker_names(self) -> set[str]:
        path, member = MERGE_LIST
        text = self.text(path)
        merged = _statement(text, re.search(rf"\b{member}\s*=", text).end())
        names = set()
        for cls, ref, _call in re.findall(r"\b([A-Z]\w*)\s*\.\s*([A-Za-z_]\w*)\s*(\(\s*\))?", merged):
            if cls in ("Utils", "Arrays"):
                continue
            names |= self.defined_names(cls, ref, path)
        for cls, member in DYNAMIC_ONLY_BROKER:
            names |= self.defined_names(cls, member)
        for cls, const in ALSO_BROKER:
            names.add(self.constant(self.path_of(cls, "clients/src/main/java/org/apache/kafka/common/config/x"),
                                    const))
        return names

    def authorizer_names(self) -> set[str]:
        """``StandardAuthorizer``'s two keys, and ``AclAuthorizer``'s own ZooKeeper client keys: its
        ``s"${configPrefix}..."`` values and ``authorizer.`` + each key of ``ZkConfigs``' ZooKeeper TLS map."""
        cls, constants = STANDARD_AUTHORIZER
        names = {self.constant(self.path_of(cls), c) for c in constants}
        scala = self._git("show", f"{self.commit}:{ACL_AUTHORIZER}")
        prefix = re.search(r'val\s+configPrefix\s*:\s*String\s*=\s*"([^"]*)"', scala).group(1)
        names |= {prefix + rest for rest in re.findall(r's"\$\{configPrefix\}([\w.]+)"', scala)}
        zk = self.path_of("ZkConfigs")
        names |= {prefix + self.constant(zk, c) for c in re.findall(r"\bzkSslConfigToSystemPropertyMap\.put\(\s*(\w+)",
                                                                        self.text(zk))}
        return names

    def topic_names(self) -> set[str]:
        return self.defined_names(*TOPIC_CONFIG_DEF)


def _strip_comments(text: str) -> str:
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            m = re.compile(_STRING).match(text, i)
            out.append(m.group(0))
            i = m.end()
        elif c == "'":
            m = re.compile(r"'(?:[^'\\]|\\.)*'").match(text, i)
            out.append(m.group(0))
            i = m.end()
        elif text.startswith("//", i):
            i = text.find("\n", i) if text.find("\n", i) >= 0 else n
        elif text.startswith("/*", i):
            i = text.index("*/", i + 2) + 2
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _scan(text: str, start: int, stop):
    """Yield (index, char) from ``start`` outside string literals, with the bracket depth before the char."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = re.compile(_STRING).match(text, i).end()
            continue
        if c == "'":
            i = re.compile(r"'(?:[^'\\]|\\.)*'").match(text, i).end()
            continue
        if stop(c, depth):
            return i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return n


def _statement(text: str, start: int) -> str:
    """From ``start`` to the next ``;`` outside brackets and strings."""
    return text[start:_scan(text, start, lambda c, d: c == ";" and d == 0)]


def _block(text: str, open_at: int) -> str:
    """The bracketed text starting at ``open_at`` (an opening bracket), brackets included."""
    end = _scan(text, open_at, lambda c, d: c in ")]}" and d == 1)
    return text[open_at:end + 1]


def _split_top_level(text: str, sep: str) -> list[str]:
    parts, last, pos = [], 0, 0
    while True:
        pos = _scan(text, pos, lambda c, d: c == sep and d == 0)
        if pos >= len(text):
            parts.append(text[last:])
            return parts
        parts.append(text[last:pos])
        pos += 1
        last = pos


def render(names: set[str], authorizer: set[str], topic_names: set[str], source: KafkaSource, ref: str) -> str:
    def frozen(values):
        return "frozenset({\n" + "".join(f"    {v!r},\n" for v in sorted(values)) + "})"

    return (
        "# Generated by scripts/generate_kafka_config_names.py from Kafka's source. Do not edit.\n"
        '"""The names of Apache Kafka\'s broker and topic configurations -- names only, as data.\n\n'
        "Theory of operation\n-------------------\n"
        "A key in this list is Kafka's: a broker given one that kafkalab does not implement refuses to start\n"
        "(:class:`kafkalab.server.KafkaConfig`), and a topic config likewise answers INVALID_CONFIG; a key in\n"
        "neither kafkalab's tables nor this list is not Kafka's at all and only gets Kafka's \"isn't a known\n"
        "config\" warning. Tests check that every key kafkalab's own ConfigDef tables define is in this list\n"
        "(or is one of kafkalab's ``kafkalab.*`` extensions), which catches typos in our own keys.\n\n"
        f"Source: apache/kafka {ref}, commit {source.commit}:\n"
        "``AbstractKafkaConfig.CONFIG_DEF`` and the ConfigDefs it merges, ``QuotaConfigs.brokerQuotaConfigs()`` and\n"
        "``config.providers`` for the broker; the keys ``StandardAuthorizer`` and ``AclAuthorizer`` read; ``LogConfig``'s\n"
        "``CONFIG`` for topics.\n"
        '"""\n\n'
        '__all__ = ["KAFKA_VERSION", "KAFKA_SOURCE_COMMIT", "BROKER_CONFIG_NAMES", "AUTHORIZER_CONFIG_NAMES",\n'
        '           "TOPIC_CONFIG_NAMES"]\n\n'
        f"KAFKA_VERSION = {KAFKA_VERSION!r}\n"
        f"KAFKA_SOURCE_COMMIT = {source.commit!r}\n\n"
        "#: Every key of Kafka's broker configuration (``KafkaConfig``), ZooKeeper and KRaft modes alike, plus the\n"
        "#: dynamic-only broker keys and ``config.providers``.\n"
        f"BROKER_CONFIG_NAMES = {frozen(names)}\n\n"
        "#: Keys the authorizers read from the broker's configuration (``StandardAuthorizer``, ``AclAuthorizer``).\n"
        f"AUTHORIZER_CONFIG_NAMES = {frozen(authorizer)}\n\n"
        "#: Every topic-level config (``LogConfig``).\n"
        f"TOPIC_CONFIG_NAMES = {frozen(topic_names)}\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka", required=True, type=Path, help="a git clone of apache/kafka")
    parser.add_argument("--ref", default=DEFAULT_REF, help=f"tag, branch or commit (default {DEFAULT_REF})")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    source = KafkaSource(args.kafka, args.ref)
    broker, authorizer, topic = source.broker_names(), source.authorizer_names(), source.topic_names()
    args.out.write_text(render(broker, authorizer, topic, source, args.ref), encoding="utf-8")
    print(f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: {len(broker)} broker "
          f"and {len(topic)} topic config names from {args.ref} ({source.commit[:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
