"""ConfigDef: types, validators, defaults, synonyms, password masking, properties text, "did you mean", and
the broker, topic, group coordinator and client tables all declared against it."""
from __future__ import annotations

import logging

import pytest

from kafkalab.common.config import (INT_MAX, LONG_MAX, NO_DEFAULT_VALUE, AbstractConfig,
                                    CaseInsensitiveValidString, ConfigDef, ConfigException, ConfigKey, Dynamic,
                                    Importance, LambdaValidator, NonEmptyList, NonEmptyString, Password, Range,
                                    Synonym, Type, ValidList, ValidString, parse_key_value_args, parse_properties,
                                    suggest, to_string)


# -- types --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("type_, raw, parsed", [
    (Type.BOOLEAN, "TRUE", True), (Type.BOOLEAN, " false ", False), (Type.BOOLEAN, True, True),
    (Type.INT, " 42 ", 42), (Type.INT, 7, 7), (Type.INT, str(INT_MAX), INT_MAX),
    (Type.SHORT, "-32768", -32768), (Type.LONG, str(LONG_MAX), LONG_MAX),
    (Type.DOUBLE, "0.5", 0.5), (Type.DOUBLE, 2, 2.0),
    (Type.LIST, "a, b ,,c,", ["a", "b", "c"]), (Type.LIST, "", []), (Type.LIST, ("x ", "y"), ["x", "y"]),
    (Type.STRING, "  padded ", "padded"), (Type.STRING, 1, "1"), (Type.STRING, False, "false"),
    (Type.CLASS, " org.Foo ", "org.Foo"), (Type.CLASS, int, int),
    (Type.INT, None, None),
])
def test_parse_each_type(type_, raw, parsed):
    assert type_.parse("k", raw) == parsed


@pytest.mark.parametrize("type_, raw, message", [
    (Type.INT, "x", "Invalid value x for configuration k: Not a number of type INT"),
    (Type.INT, str(INT_MAX + 1), "Not a number of type INT"),
    (Type.SHORT, "32768", "Not a number of type SHORT"),
    (Type.LONG, "1.5", "Invalid value 1.5 for configuration k: Not a number of type LONG"),
    (Type.INT, True, "Not a number of type INT"),
    (Type.DOUBLE, "half", "Not a number of type DOUBLE"),
    (Type.BOOLEAN, "yes", "Invalid value yes for configuration k: Expected value to be either true or false"),
])
def test_type_errors_use_kafkas_words(type_, raw, message):
    with pytest.raises(ConfigException, match=message.replace(".", r"\.")):
        type_.parse("k", raw)


def test_types_compare_as_their_names_and_carry_describe_configs_ids():
    assert Type.INT == "int" and Type.LIST == "list" and str(Type.PASSWORD) == "PASSWORD"
    assert [t.id for t in Type] == list(range(1, 10))     # BOOLEAN=1 ... PASSWORD=9, as on the wire


def test_lenient_booleans_are_opt_in():
    assert Type.BOOLEAN.parse("k", "yes", lenient_booleans=True) is True
    assert Type.BOOLEAN.parse("k", "0", lenient_booleans=True) is False
    with pytest.raises(ConfigException, match="type BOOLEAN"):
        Type.BOOLEAN.parse("k", "maybe", lenient_booleans=True)


def test_config_exception_is_a_value_error_with_kafkas_format():
    e = ConfigException("retention.ms", [1, 2], "no lists here")
    assert isinstance(e, ValueError) and str(e) == "Invalid value 1,2 for configuration retention.ms: no lists here"
    assert (e.name, e.value) == ("retention.ms", [1, 2])
    assert str(ConfigException("free text")) == "free text"


def test_to_string_is_convert_to_string():
    assert [to_string(v) for v in (True, ["a", "b"], 0.5, 3, None)] == ["true", "a,b", "0.5", "3", None]


# -- validators ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("validator, value, message", [
    (Range.at_least(14), 10, "Value must be at least 14"),
    (Range.between(0, 1), 1.5, "Value must be no more than 1"),
    (Range.between(0, 1), -1, "Value must be at least 0"),
    (ValidString.in_("CreateTime", "LogAppendTime"), "createtime", "String must be one of: CreateTime, LogAppendTime"),
    (ValidList.in_("compact", "delete"), ["delete", "shred"], "Invalid value shred for configuration k"),
    (NonEmptyString(), "", "String may not be empty"),
    (NonEmptyList(), [], "Missing required configuration \"k\""),
    (LambdaValidator.with_(lambda v: v % 2 == 0, "even", "Value must be even"), 3, "Value must be even"),
])
def test_validators_reject(validator, value, message):
    with pytest.raises(ConfigException) as e:
        validator("k", value)
    assert message in str(e.value)


def test_validators_accept_and_describe_themselves():
    Range.at_least(1)("k", 1)
    Range.between(1, 3)("k", None)                               # unset keys are not checked
    CaseInsensitiveValidString.in_("PLAINTEXT", "SSL")("k", "ssl")
    ValidList.in_("range", "sticky", case_insensitive=True)("k", ["RANGE", "sticky"])
    assert (str(Range.at_least(1)), str(Range.between(0, 1)), str(ValidString.in_("a", "b"))) == \
        ("[1,...]", "[0,...,1]", "[a, b]")


# -- ConfigDef ----------------------------------------------------------------------------------------------------
def table() -> ConfigDef:
    return (ConfigDef()
            .define("a.ms", Type.LONG, 5, Range.at_least(0), Importance.HIGH, "A duration.")
            .define("a.list", Type.LIST, "x,y", None, Importance.LOW, "Some items.")
            .define("a.secret", Type.PASSWORD, None, None, Importance.HIGH, "A secret.")
            .define("a.required", Type.STRING, NO_DEFAULT_VALUE, None, Importance.HIGH, "Must be given.")
            .define("a.hours", Type.INT, 1, None, Importance.LOW, "In hours.", synonyms=[("a.ms", 3_600_000)],
                    dynamic=Dynamic.CLUSTER_WIDE, inert=True))


def test_define_parses_defaults_and_keeps_metadata():
    t = table()
    key = t["a.list"]
    assert isinstance(key, ConfigKey) and key.default == ["x", "y"] and key.doc == "Some items."
    assert t["a.hours"].synonyms == (Synonym("a.ms", 3_600_000),)
    assert t["a.hours"].dynamic == "cluster-wide" and t["a.ms"].dynamic is Dynamic.READ_ONLY
    assert t.inert_keys() == {"a.hours"} and t["a.ms"].valid_values == "[0,...]"
    assert t.default("a.list") is not t.default("a.list")        # a fresh list each time
    with pytest.raises(ConfigException, match="defined twice"):
        t.define("a.ms", Type.LONG, 1)
    with pytest.raises(ConfigException, match="Value must be at least 0"):
        ConfigDef().define("bad", Type.INT, -1, Range.at_least(0))


def test_parse_fills_defaults_and_requires_what_has_none():
    t = table()
    values = t.parse({"a.ms": "7", "a.required": "yes", "not.declared": 1})
    assert values == {"a.ms": 7, "a.list": ["x", "y"], "a.secret": None, "a.required": "yes", "a.hours": 1}
    assert t.unknown({"a.ms": 1, "not.declared": 1}) == ["not.declared"]
    with pytest.raises(ConfigException, match='Missing required configuration "a.required" which has no default'):
        t.parse({})
    with pytest.raises(ConfigException, match="Invalid value -1 for configuration a.ms: Value must be at least 0"):
        t.parse({"a.ms": -1, "a.required": "r"})


def test_bases_and_overridden_defaults():
    t = ConfigDef(table()).define("b", Type.BOOLEAN, False)
    assert list(t)[-1] == "b" and "a.ms" in t
    assert t.with_default("a.ms", "9").default("a.ms") == 9 and t.default("a.ms") == 5


def test_passwords_never_show():
    config = AbstractConfig(table(), {"a.secret": "hunter2", "a.required": "r"})
    secret = config["a.secret"]
    assert isinstance(secret, Password) and secret.value == "hunter2"
    for text in (repr(config), str(secret), repr(secret), f"{secret}", repr(config.values)):
        assert "hunter2" not in text
    assert "a.secret=[hidden]" in repr(config)
    e = ConfigException("a.secret", Password("hunter2"), "rejected")     # an error message hides it too
    assert str(e) == "Invalid value [hidden] for configuration a.secret: rejected"


def test_abstract_config_reports_unused_keys():
    config = AbstractConfig(table(), {"a.required": "r", "a.mss": "1"})
    assert config.unused() == ["a.mss"] and config.is_default("a.ms") and config.get("nope", 3) == 3


def test_did_you_mean():
    assert suggest("lingr.ms", ["linger.ms", "batch.size"]) == " Did you mean 'linger.ms'?"
    assert suggest("zzzz", ["linger.ms"]) == ""
    assert table().suggest("a.hour") == " Did you mean 'a.hours'?"


# -- properties text ----------------------------------------------------------------------------------------------
def test_properties_text_rules():
    text = "# comment\n! also a comment\na = 1\nb: 2\nc 3\nlist=x,\\\n    y\nkey\\ with\\ spaces=v\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "list": "x,y", "key with spaces": "v"}


def test_key_value_args():
    assert parse_key_value_args(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigException, match="expects key=value"):
        parse_key_value_args(["novalue"])


# -- the tables ---------------------------------------------------------------------------------------------------
def all_tables():
    from kafkalab.clients.config import ADMIN_CONFIGS, CONSUMER_CONFIGS, PRODUCER_CONFIGS
    from kafkalab.coordinator.group.coordinator_config import GROUP_COORDINATOR_CONFIGS
    from kafkalab.coordinator.transaction.transaction_config import TRANSACTION_COORDINATOR_CONFIGS
    from kafkalab.server.config import BROKER_CONFIGS, SERVER_CONFIGS
    from kafkalab.storage.log_config import TOPIC_CONFIGS
    from kafkalab.storage.server_log_configs import SERVER_LOG_CONFIGS
    return {"broker": BROKER_CONFIGS, "server": SERVER_CONFIGS, "group": GROUP_COORDINATOR_CONFIGS,
            "transaction": TRANSACTION_COORDINATOR_CONFIGS, "log": SERVER_LOG_CONFIGS, "topic": TOPIC_CONFIGS, "producer": PRODUCER_CONFIGS,
            "consumer": CONSUMER_CONFIGS, "admin": ADMIN_CONFIGS}


@pytest.mark.parametrize("name", list(all_tables()))
def test_every_table_is_a_config_def_with_typed_documented_keys(name):
    t = all_tables()[name]
    assert isinstance(t, ConfigDef) and len(t) > 5
    for key in t.values():
        assert isinstance(key, ConfigKey) and isinstance(key.type, Type) and isinstance(key.importance, Importance)
        assert key.documentation, key.name
        assert key.name == key.name.lower() and " " not in key.name


def test_broker_table_is_the_union_of_its_rooms():
    t = all_tables()
    rooms = ("server", "group", "transaction", "log")
    assert set(t["broker"]) == set().union(*(set(t[r]) for r in rooms))
    for i, a in enumerate(rooms):                       # each key defined in exactly one room
        for b in rooms[i + 1:]:
            assert not set(t[a]) & set(t[b]), (a, b, set(t[a]) & set(t[b]))


def test_topic_synonyms_name_declared_broker_keys():
    t = all_tables()
    for key in t["topic"].values():
        for syn in key.synonyms:
            assert syn.name in t["log"], (key.name, syn.name)
    assert [(s.name, s.factor) for s in t["topic"]["retention.ms"].synonyms] == [
        ("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)]
    # the broker default of a topic config, in its own unit, gives the topic default
    for key in t["topic"].values():
        if key.synonyms:
            last = key.synonyms[-1]
            broker_default = t["log"][last.name].default
            if broker_default is not None and last.factor != 1:
                assert broker_default * last.factor == key.default, key.name


def test_group_config_defaults_come_from_the_table():
    from kafkalab.coordinator.group import GroupConfig
    from kafkalab.coordinator.group.coordinator_config import GROUP_COORDINATOR_CONFIGS
    for field, default in GroupConfig._field_defaults.items():
        assert default == GROUP_COORDINATOR_CONFIGS.default(field.replace("_", "."))


def test_client_ignored_keys_are_the_inert_ones():
    from kafkalab.clients.config import ADMIN_CONFIGS, CONSUMER_CONFIGS, IGNORED, PRODUCER_CONFIGS
    assert IGNORED == PRODUCER_CONFIGS.inert_keys() | CONSUMER_CONFIGS.inert_keys() | ADMIN_CONFIGS.inert_keys()
    assert "buffer.memory" in IGNORED and "linger.ms" not in IGNORED
    assert ADMIN_CONFIGS.default("connections.max.idle.ms") == 300_000
    assert PRODUCER_CONFIGS.default("connections.max.idle.ms") == 540_000


def test_one_config_exception_everywhere():
    from kafkalab.clients import ConfigException as from_clients
    from kafkalab.network import endpoint
    assert from_clients is ConfigException
    with pytest.raises(ConfigException):
        endpoint.parse_listeners("PLAINTEXT://:9092,PLAINTEXT://:9093", endpoint.DEFAULT_SECURITY_PROTOCOL_MAP)


def test_broker_config_hides_passwords_in_its_repr(caplog):
    from kafkalab.server.config import KafkaConfig
    config = KafkaConfig({"broker.id": "1", "listener.name.x.ssl.key.password": Password("s3cret"),
                          "listener.name.y.ssl.keystore.password": "s3cret"})   # undeclared: treated as secret
    with caplog.at_level(logging.INFO):
        logging.getLogger("t").info("config: %s", config)
    assert "s3cret" not in repr(config) and "s3cret" not in caplog.text and "broker.id='1'" in repr(config)
