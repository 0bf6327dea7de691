"""``sasl.jaas.config``: Kafka's JAAS line, parsed as data and never executed.

Theory of operation
-------------------
Kafka configures SASL credentials with a JAAS entry, on the broker per listener and mechanism
(``listener.name.sasl_plaintext.plain.sasl.jaas.config``) and on a client as ``sasl.jaas.config``::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

That is ``<login module> <control flag> (<key>=<value>)* ;`` -- words or quoted strings, ``//`` and
``/* */`` comments allowed. The Java client *loads the class it names*; that is how CVE-2023-25194 (a JNDI
login module in Kafka Connect) became remote code execution. kafkalab never loads anything: the module name
is looked up in :data:`LOGIN_MODULES`, an allow-list mapping the two names Kafka ships for PLAIN and SCRAM
to the mechanisms they serve, and any other name is a configuration error.

Worked example::

    >>> entry = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...                           'username="admin" password="s3cret" user_alice="a-pass";')
    >>> entry.control_flag, entry.options["username"], entry.users()
    ('REQUIRED', 'admin', {'alice': 'a-pass'})

Mirrors: ``clients/.../security/JaasConfig.java`` (its ``StreamTokenizer`` grammar and messages) and
``JaasContext.java`` (one login module per entry).
"""
from __future__ import annotations

import dataclasses
import re

from kafkalab.common.config import ConfigException

__all__ = ["JaasEntry", "parse_jaas_config", "LOGIN_MODULES", "PLAIN_LOGIN_MODULE", "SCRAM_LOGIN_MODULE",
           "jaas_line"]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: login module -> the SASL mechanisms it serves. Nothing outside this table is accepted (nor ever loaded).
LOGIN_MODULES = {PLAIN_LOGIN_MODULE: ("PLAIN",), SCRAM_LOGIN_MODULE: ("SCRAM-SHA-256", "SCRAM-SHA-512")}
_CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<line_comment>//[^\n]*) | (?P<block_comment>/\*.*?\*/)
  | (?P<word>[A-Za-z_$\-\u0080-\uffff][A-Za-z0-9_$.\-\u0080-\uffff]*)
  | (?P<number>[0-9.][0-9.]*) | (?P<quoted>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<char>.)""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


@dataclasses.dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: dict

    def __repr__(self) -> str:  # options hold passwords: never print them
        return f"JaasEntry({self.login_module} {self.control_flag}, keys={sorted(self.options)})"

    def users(self) -> dict:
        """PLAIN's broker-side user table: every ``user_<name>="<password>"`` option."""
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_")}

    @property
    def mechanisms(self) -> tuple:
        return LOGIN_MODULES[self.login_module]


def _tokens(text: str):
    """(kind, value) pairs: ``word``, ``quoted`` (unescaped), ``number`` (no string value, as in Java) or a
    single character; whitespace and comments dropped."""
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("space", "line_comment", "block_comment"):
            continue
        value = m.group()
        if kind == "quoted":
            value = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), value[1:-1])
        yield kind, value


def parse_jaas_config(text: str, *, mechanism: str = "") -> JaasEntry:
    """Parse one JAAS entry. Raises :class:`ConfigException` with Kafka's messages; an unknown login module,
    or one that does not serve ``mechanism`` (when given), is refused without being loaded."""
    if text is None:
        raise ConfigException("Login module not specified in JAAS config")
    tokens = list(_tokens(text))
    entries = []
    i = 0
    while i < len(tokens):
        module = tokens[i][1] if tokens[i][0] in ("word", "quoted") else None
        i += 1
        if i >= len(tokens):
            raise ConfigException("Login module control flag not specified in JAAS config")
        flag = tokens[i][1] if tokens[i][0] in ("word", "quoted") else None
        if flag is None:
            raise ConfigException("Login module control flag is not available in the JAAS config")
        if flag.upper() not in _CONTROL_FLAGS:
            raise ConfigException(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 1
        options: dict = {}
        while i < len(tokens) and tokens[i] != ("char", ";"):
            key = tokens[i][1]
            if (i + 2 >= len(tokens) or tokens[i + 1] != ("char", "=")
                    or tokens[i + 2][0] not in ("word", "quoted")):
                raise ConfigException(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigException("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append(JaasEntry(module, flag.upper(), options))
    if not entries:
        raise ConfigException("Login module not specified in JAAS config")
    if len(entries) != 1:
        raise ConfigException(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    entry = entries[0]
    if entry.login_module not in LOGIN_MODULES:
        raise ConfigException(f"Login module {entry.login_module!r} is not one kafkalab knows "
                              f"({', '.join(sorted(LOGIN_MODULES))}); no class named in configuration is loaded")
    if mechanism and mechanism not in entry.mechanisms:
        raise ConfigException(f"Login module {entry.login_module} does not serve SASL mechanism {mechanism}")
    return entry


def jaas_line(mechanism: str, username: str, password: str, **users: str) -> str:
    """A JAAS line for ``mechanism`` (for tests, labs and the Cluster): ``jaas_line("PLAIN", "admin", "pw",
    alice="a")``; quotes and backslashes are escaped."""
    module = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE

    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    extra = "".join(f" user_{name}={q(pw)}" for name, pw in users.items())
    return f"{module} required username={q(username)} password={q(password)}{extra};"
