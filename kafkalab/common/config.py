"""One way to declare a configuration: every key's type, default, validator, importance, documentation,
synonyms and dynamic-update mode -- and one way to parse values, properties files and typos against it.

Theory of operation
-------------------
Kafka never reads a configuration map directly. Each component declares its keys once in a ``ConfigDef``:
``define("linger.ms", LONG, 5, atLeast(0), MEDIUM, "...")``. ``AbstractConfig`` then parses the user's map
against that declaration: strings from a properties file become typed values (``"5"`` -> 5, ``"true"`` ->
True, ``"a, b"`` -> ["a", "b"]), missing keys get their default, and a value of the wrong type or out of range
is a :class:`ConfigException` worded ``Invalid value X for configuration K: <reason>``. Because the declaration
is data, the same table also produces the documentation, the DescribeConfigs answer (type, default, source,
synonyms) and the "did you mean" hint for a misspelt key. The broker (``KafkaConfig``), the topic configs
(``LogConfig``) and the clients (``ProducerConfig``...) are all such tables.

Pieces, with Kafka's names:

* :class:`Type` -- BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD. The ids are the ones
  DescribeConfigs puts on the wire. A PASSWORD value is wrapped in :class:`Password`, which prints as
  ``[hidden]`` in every repr, str, error message and log line; only ``.value`` reveals it.
* validators -- :class:`Range` (``at_least``, ``between``), :class:`ValidString` (``in_``), the case-insensitive
  :class:`CaseInsensitiveValidString`, :class:`ValidList` (each item), :class:`NonEmptyString`,
  :class:`NonEmptyList` and :class:`LambdaValidator` for one-off rules. Each knows how to describe itself.
* :class:`Importance` (HIGH, MEDIUM, LOW) and :class:`Dynamic`: whether a broker key can change while the
  broker runs and at which scope (``read-only``, ``per-broker``, ``cluster-wide``, as ``DynamicBrokerConfig``
  classifies them).
* :class:`Synonym` -- another key that stands for the same setting, with the factor between their units:
  the topic config ``retention.ms`` defaults from the broker's ``log.retention.ms``, else
  ``log.retention.minutes`` (x 60000), else ``log.retention.hours`` (x 3600000).
* :func:`parse_properties` / :func:`load_properties` -- Java's ``.properties`` rules (``#``/``!`` comments,
  ``=``/``:``/space separators, a trailing ``\\`` continues the line, escapes) -- and
  :func:`parse_key_value_args` for ``--override key=value``.

Mirrors: ``clients/src/main/java/org/apache/kafka/common/config/ConfigDef.java``, ``AbstractConfig.java``,
``ConfigException.java``, ``types/Password.java``, ``java.util.Properties.load`` and
``core/src/main/scala/kafka/server/DynamicBrokerConfig.scala`` (the three update modes).
"""
from __future__ import annotations

import difflib
import enum
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Optional

__all__ = ["ConfigException", "Type", "Importance", "Dynamic", "Password", "Synonym", "ConfigKey", "ConfigDef",
           "AbstractConfig", "NO_DEFAULT_VALUE", "Range", "ValidString", "CaseInsensitiveValidString", "ValidList",
           "NonEmptyString", "NonEmptyList", "LambdaValidator", "suggest", "parse_properties", "load_properties",
           "parse_key_value_args", "to_string", "INT_MAX", "LONG_MAX"]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_LIMITS = {"SHORT": 2**15 - 1, "INT": INT_MAX, "LONG": LONG_MAX}


class ConfigException(ValueError):
    """A configuration problem: an unknown or missing key, a value of the wrong type or out of range, or
    settings that contradict each other. ``ConfigException(name, value, reason)`` words it as Kafka does."""

    def __init__(self, name_or_message: str, value: Any = ..., reason: Optional[str] = None):
        if value is ...:
            super().__init__(name_or_message)
            self.name = self.value = None
        else:
            text = f"Invalid value {to_string(value)} for configuration {name_or_message}"
            super().__init__(text if reason is None else f"{text}: {reason}")
            self.name, self.value = name_or_message, value


class Password:
    """A secret: ``str``/``repr`` say ``[hidden]``; read it with ``.value``."""

    __slots__ = ("value",)
    HIDDEN = "[hidden]"

    def __init__(self, value: str):
        self.value = value

    def __repr__(self) -> str:
        return self.HIDDEN

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def to_string(value: Any) -> Optional[str]:
    """``ConfigDef.convertToString``: how Kafka prints a typed value (lists comma-joined, booleans lower case)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Type(str, enum.Enum):
    """``ConfigDef.Type``. A member equals its lower-case name (``Type.INT == "int"``); ``.id`` is the
    ``config_type`` DescribeConfigs puts on the wire."""

    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"

    @property
    def id(self) -> int:
        return _TYPE_IDS[self.name]

    def __str__(self) -> str:
        return self.name

    def parse(self, name: str, value: Any, *, lenient_booleans: bool = False) -> Any:
        """``ConfigDef.parseType``: a string (trimmed) or an already typed value -> this type's Python value."""
        if value is None:
            return None
        if self is Type.BOOLEAN:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower() if isinstance(value, (str, int)) else None
            if lenient_booleans:
                if text in ("true", "yes", "1") or text in ("false", "no", "0"):
                    return text in ("true", "yes", "1")
                raise ConfigException(name, value, "Not a value of type BOOLEAN: use true or false (or yes/no, 1/0)")
            if text in ("true", "false"):
                return text == "true"
            raise ConfigException(name, value, "Expected value to be either true or false")
        if self in (Type.INT, Type.SHORT, Type.LONG):
            if isinstance(value, str):
                try:
                    number = int(value.strip())
                except ValueError:
                    raise ConfigException(name, value, f"Not a number of type {self.name}") from None
            elif isinstance(value, int) and not isinstance(value, bool):
                number = value
            else:
                raise ConfigException(name, value, f"Not a number of type {self.name}")
            limit = _LIMITS[self.name]
            if not -limit - 1 <= number <= limit:
                raise ConfigException(name, value, f"Not a number of type {self.name}")
            return number
        if self is Type.DOUBLE:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            try:
                return float(str(value).strip())
            except ValueError:
                raise ConfigException(name, value, "Not a number of type DOUBLE") from None
        if self is Type.LIST:
            items = value.split(",") if isinstance(value, str) else list(value)
            return [s for s in (str(v).strip() for v in items) if s]    # kafkalab drops empty items ("a,,b,")
        if self is Type.PASSWORD:
            return value if isinstance(value, Password) else Password(str(value).strip())
        if self is Type.CLASS:
            return value.strip() if isinstance(value, str) else value   # a class name, or a Python class
        return to_string(value).strip() if not isinstance(value, str) else value.strip()


_TYPE_IDS = {t.name: i for i, t in enumerate(Type, start=1)}


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Dynamic(str, enum.Enum):
    """May the key change while the broker runs (IncrementalAlterConfigs on a BROKER resource), and where?"""

    READ_ONLY = "read-only"        # only in server.properties; a restart applies it
    PER_BROKER = "per-broker"      # for one broker (resource name = its id)
    CLUSTER_WIDE = "cluster-wide"  # for one broker, or as the default of all (resource name "")

    def __str__(self) -> str:
        return self.value


class Synonym(NamedTuple):
    """Another key standing for the same setting; ``factor`` turns its unit into ours (hours -> ms: 3600000)."""

    name: str
    factor: int = 1


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT_VALUE"


#: The default of a required key: parsing fails with "Missing required configuration" when it is not given.
NO_DEFAULT_VALUE: Any = _NoDefault()


# ------------------------------------------------------------------------------------------------ validators

class Validator:
    """A validator is called as ``validator(name, value)`` and raises :class:`ConfigException`; ``str()`` says
    what it accepts (the "Valid Values" column of Kafka's documentation). ``None`` values are not checked."""

    def __call__(self, name: str, value: Any) -> None:
        raise NotImplementedError


class Range(Validator):
    def __init__(self, low=None, high=None):
        self.low, self.high = low, high

    @classmethod
    def at_least(cls, low) -> "Range":
        return cls(low, None)

    @classmethod
    def between(cls, low, high) -> "Range":
        return cls(low, high)

    def __call__(self, name, value):
        if value is None:
            return
        if self.low is not None and value < self.low:
            raise ConfigException(name, value, f"Value must be at least {self.low}")
        if self.high is not None and value > self.high:
            raise ConfigException(name, value, f"Value must be no more than {self.high}")

    def __str__(self) -> str:
        return f"[{self.low},...]" if self.high is None else f"[{self.low},...,{self.high}]"


class ValidString(Validator):
    case_insensitive = False

    def __init__(self, choices: Iterable[str]):
        self.choices = tuple(choices)

    @classmethod
    def in_(cls, *choices: str):
        return cls(choices)

    def accepts(self, value) -> bool:
        if self.case_insensitive:
            return str(value).lower() in {c.lower() for c in self.choices}
        return value in self.choices

    def __call__(self, name, value):
        if value is not None and not self.accepts(value):
            raise ConfigException(name, value, f"String must be one of: {', '.join(self.choices)}")

    def __str__(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


class CaseInsensitiveValidString(ValidString):
    case_insensitive = True


class ValidList(Validator):
    """Every item of a LIST must be one of the choices (the error names the bad item)."""

    def __init__(self, items: ValidString):
        self.items = items

    @classmethod
    def in_(cls, *choices: str, case_insensitive: bool = False):
        return cls((CaseInsensitiveValidString if case_insensitive else ValidString)(choices))

    def __call__(self, name, value):
        for item in value or ():
            self.items(name, item)

    def __str__(self) -> str:
        return str(self.items)


class NonEmptyString(Validator):
    def __call__(self, name, value):
        if value is not None and not value:
            raise ConfigException(name, value, "String may not be empty")

    def __str__(self) -> str:
        return "non-empty string"


class NonEmptyList(Validator):
    def __init__(self, message: Optional[str] = None):
        self.message = message

    def __call__(self, name, value):
        if not value:
            raise ConfigException(self.message or f"Missing required configuration \"{name}\": the list is empty")

    def __str__(self) -> str:
        return "non-empty list"


class LambdaValidator(Validator):
    """``LambdaValidator.with_(check, "[1,...,9] or -1", "Value must be ...")``: ``check(value)`` says ok."""

    def __init__(self, check: Callable[[Any], bool], description: str, reason: str):
        self.check, self.description, self.reason = check, description, reason

    @classmethod
    def with_(cls, check, description: str, reason: str):
        return cls(check, description, reason)

    def __call__(self, name, value):
        if value is not None and not self.check(value):
            raise ConfigException(name, value, self.reason)

    def __str__(self) -> str:
        return self.description


# ------------------------------------------------------------------------------------------------- the keys

@dataclass(frozen=True)
class ConfigKey:
    """One declared key. ``default`` is already parsed to the key's type. ``inert`` keys are accepted (so
    configs written for Kafka load unchanged) but nothing in kafkalab acts on them yet; the table says so. The
    broker and topic tables accept an inert key only at its default (:meth:`ConfigDef.inert_overrides`)."""

    name: str
    type: Type
    default: Any
    validator: Optional[Callable[[str, Any], None]] = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    synonyms: tuple = ()
    dynamic: Dynamic = Dynamic.READ_ONLY
    inert: bool = False

    @property
    def doc(self) -> str:
        return self.documentation

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT_VALUE

    @property
    def valid_values(self) -> str:
        return "" if self.validator is None else str(self.validator)


class ConfigDef(Mapping):
    """An ordered table of :class:`ConfigKey` by name. Read it as a mapping (``definition["acks"]``)."""

    def __init__(self, *bases: "ConfigDef", lenient_booleans: bool = False):
        self._keys: dict[str, ConfigKey] = {}
        self.lenient_booleans = lenient_booleans
        for base in bases:
            self._keys.update(base._keys)

    # -------------------------------------------------------------------------------------------- declare
    def define(self, name: str, type: Type, default: Any = NO_DEFAULT_VALUE, validator=None,
               importance: Importance = Importance.MEDIUM, documentation: str = "", *, synonyms=(),
               dynamic: Dynamic = Dynamic.READ_ONLY, inert: bool = False) -> "ConfigDef":
        """Declare a key (chainable). The default is parsed and validated now, as Kafka's ``define`` does."""
        if name in self._keys:
            raise ConfigException(f"Configuration {name} is defined twice.")
        syns = tuple(s if isinstance(s, Synonym) else Synonym(*s) if isinstance(s, tuple) else Synonym(s)
                     for s in synonyms)
        if default is not NO_DEFAULT_VALUE:
            default = type.parse(name, default, lenient_booleans=self.lenient_booleans)
            if validator is not None:
                validator(name, default)
        self._keys[name] = ConfigKey(name, type, default, validator, importance, documentation, syns,
                                     Dynamic(dynamic), inert)
        return self

    def define_key(self, key: ConfigKey) -> "ConfigDef":
        self._keys[key.name] = key
        return self

    def with_default(self, name: str, default: Any) -> "ConfigDef":
        """A copy in which ``name`` has another default (the admin client's ``connections.max.idle.ms``)."""
        copy = ConfigDef(self, lenient_booleans=self.lenient_booleans)
        key = copy._keys[name]
        copy._keys[name] = replace(key, default=key.type.parse(name, default))
        return copy

    # ---------------------------------------------------------------------------------------------- read
    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def default(self, name: str) -> Any:
        """The parsed default of a key (a fresh list for LIST keys)."""
        value = self._keys[name].default
        return list(value) if isinstance(value, list) else value

    def inert_keys(self) -> frozenset:
        return frozenset(k.name for k in self._keys.values() if k.inert)

    def inert_overrides(self, props: Mapping[str, Any]) -> list[str]:
        """``name=value`` of each inert key ``props`` sets to something other than its default: a value asking for
        behaviour kafkalab does not implement (``remote.storage.enable=true``), which its owner refuses."""
        given = []
        for name in sorted(n for n in props if n in self._keys and self._keys[n].inert):
            value = self.parse_value(name, props[name])
            if value != self._keys[name].default:
                given.append(f"{name}={to_string(value)}")
        return given

    def suggest(self, name: str) -> str:
        return suggest(name, self._keys)

    # --------------------------------------------------------------------------------------------- parse
    def parse_value(self, name: str, value: Any) -> Any:
        """Parse and validate one value of a declared key."""
        key = self._keys[name]
        parsed = key.type.parse(name, value, lenient_booleans=self.lenient_booleans)
        if key.validator is not None:
            key.validator(name, parsed)
        return parsed

    def parse(self, props: Optional[Mapping[str, Any]] = None) -> dict:
        """Every declared key -> its typed value (given, else the default). Undeclared keys are ignored here;
        callers decide whether they are an error (clients, topics) or just reported (the broker)."""
        props = props or {}
        values = {}
        for name, key in self._keys.items():
            if name in props:
                values[name] = self.parse_value(name, props[name])
            elif not key.has_default:
                raise ConfigException(f"Missing required configuration \"{name}\" which has no default value.")
            else:
                values[name] = self.default(name)
        return values

    def unknown(self, props: Mapping[str, Any]) -> list:
        return [name for name in props if name not in self._keys]

    def __repr__(self) -> str:
        return f"ConfigDef({len(self._keys)} keys)"


def suggest(name: str, valid: Iterable[str]) -> str:
    """`` Did you mean 'linger.ms'?`` for the closest valid names (``difflib``), or ``""``."""
    close = difflib.get_close_matches(str(name), list(valid), n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


class AbstractConfig:
    """A parsed configuration: ``values`` (every declared key, typed), ``originals`` (what was given) and the
    table it was parsed against. Passwords stay :class:`Password` objects, so printing a config hides them."""

    def __init__(self, definition: ConfigDef, originals: Optional[Mapping[str, Any]] = None):
        self.definition = definition
        self.originals: dict = dict(originals or {})
        self.values: dict = definition.parse(self.originals)

    def __getitem__(self, name: str) -> Any:
        return self.values[name] if name in self.values else self.originals[name]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def is_default(self, name: str) -> bool:
        return name not in self.originals

    def unused(self) -> list:
        """Given keys nobody declared (``AbstractConfig.unused``; the broker logs them as unknown)."""
        return sorted(self.definition.unknown(self.originals))

    def is_sensitive(self, name: str) -> bool:
        """Is ``name`` a PASSWORD key (whose value must never be shown)?"""
        key = self.definition.get(name)
        return key is not None and key.type is Type.PASSWORD

    def _shown(self) -> str:
        items = []
        for k, v in sorted(self.originals.items()):
            hidden = self.is_sensitive(k) or isinstance(v, Password)
            items.append(f"{k}={Password.HIDDEN if hidden else repr(v)}")
        return ", ".join(items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._shown()})"


# ------------------------------------------------------------------------------------------ properties files

_WS = " \t\f"


def load_properties(path) -> dict:
    """Read a Java ``.properties`` file (see :func:`parse_properties`)."""
    return parse_properties(Path(path).read_text(encoding="utf-8"))


def parse_properties(text: str) -> dict:
    """Parse ``.properties`` text as ``java.util.Properties.load`` does: ``key=value`` / ``key: value`` /
    ``key value``; ``#`` and ``!`` comment lines; a line ending in an odd number of backslashes continues on the
    next (whose leading whitespace is dropped); escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` -> ``x`` in keys and
    values (so ``\\=``, ``\\:`` and ``\\ `` put separators into a key, and ``C:\\\\kafka`` is ``C:\\kafka``). Values
    are trimmed, as Kafka's ``ConfigDef`` trims every value it parses. The last value of a key wins."""
    props: dict = {}
    for line in _logical_lines(text):
        key, value = _split_property(line)
        props[key] = value
    return props


def _logical_lines(text: str):
    pending: Optional[str] = None
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(_WS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending:
        yield pending


def _split_property(line: str) -> tuple:
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" + _WS:
        i += 2 if line[i] == "\\" else 1
    key_end = min(i, n)
    while i < n and line[i] in _WS:
        i += 1
    if i < n and line[i] in "=:":
        i += 1
    while i < n and line[i] in _WS:
        i += 1
    return _unescape(line[:key_end]), _unescape(line[i:]).strip()


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:   # a lone backslash at the very end of the file
            break
        c = text[i + 1]
        if c == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigException("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(c, c))
        i += 2
    return "".join(out)


def parse_key_value_args(items: Iterable[str]) -> dict:
    """``["log.dirs=/data", "a=b=c"]`` -> ``{"log.dirs": "/data", "a": "b=c"}`` (``CommandLineUtils
    .parseKeyValueArgs``: split at the first ``=``; keys and values trimmed)."""
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigException(f"expects key=value, got {item!r}")
        props[key.strip()] = value.strip()
    return props

