"""Kafka's CamelCase field names become valid, unique-per-struct Python identifiers (snake_case)."""
from __future__ import annotations

import keyword

import pytest

from kafkalab.protocol import api_keys
from kafkalab.protocol.record_class import UNKNOWN_TAGGED_FIELDS
from kafkalab.protocol.schema import snake_case

from . import specs as S
from .test_conformance import _schema_for


def _structs(spec: dict):
    """(struct name, JSON fields) for the top level, every inline struct and every common struct."""
    out = [(spec["name"], spec.get("fields", []))]

    def walk(fields):
        for j in fields:
            if "fields" in j:
                out.append((j["type"].removeprefix("[]"), j["fields"]))
                walk(j["fields"])

    walk(spec.get("fields", []))
    for cs in spec.get("commonStructs", []):
        out.append((cs["name"], cs["fields"]))
        walk(cs["fields"])
    return out


@pytest.mark.parametrize("name,expected", [
    ("ThrottleTimeMs", "throttle_time_ms"), ("LeaderEpoch", "leader_epoch"), ("TopicId", "topic_id"),
    ("ISRState", "isr_state"), ("KRaftVersion", "kraft_version"), ("isKRaftController", "is_kraft_controller"),
    ("V0Host", "v0_host"), ("ResultsByTopicV3AndBelow", "results_by_topic_v3_and_below"),
    ("Enable2Pc", "enable2_pc"), ("ZkMigrationReady", "zk_migration_ready"), ("Index", "index"),
])
def test_snake_case_examples(name, expected):
    assert snake_case(name) == expected
    assert S.snake(name) == expected


@S.needs_specs
def test_every_field_name_in_the_specs():
    seen = set()
    for spec in S.effective().values():
        message = _schema_for(spec)
        for struct_name, fields in _structs(spec):
            attrs = [snake_case(j["name"]) for j in fields]
            where = f"{spec['name']}.{struct_name}"
            assert len(attrs) == len(set(attrs)), f"{where}: duplicate attributes {attrs}"
            for j, attr in zip(fields, attrs):
                seen.add(j["name"])
                assert attr == S.snake(j["name"]), (where, j["name"])
                assert attr.isidentifier() and not keyword.iskeyword(attr), (where, attr)
                assert not attr.startswith("_") and attr != UNKNOWN_TAGGED_FIELDS, (where, attr)
            cls = message.class_for(struct_name, message.fields) if struct_name == spec["name"] else None
            if cls is not None:
                assert cls._fields == tuple(attrs) + (UNKNOWN_TAGGED_FIELDS,)
    assert len(seen) > 400


@S.needs_specs
def test_struct_classes_are_reachable_by_kafka_name():
    """``MetadataResponse.MetadataResponsePartition`` etc., whatever was decoded or encoded first."""
    from kafkalab.protocol import codec
    for key in api_keys.ALL_API_KEYS:
        for spec, message in zip(S.api_pairs()[key], api_keys.messages_for(key)):
            codec.reader(message, message.valid_versions.hi)  # the codec builds classes first
            top = message.body_class
            for struct_name, fields in _structs(spec)[1:]:
                cls = getattr(top, struct_name)
                assert cls._fields == tuple(S.snake(j["name"]) for j in fields) + (UNKNOWN_TAGGED_FIELDS,)
