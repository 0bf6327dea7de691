"""The Java exception class of each error code, as Kafka's tools print it (``Errors.java``)."""
from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

from kafkalab.protocol import ERRORS, ErrorCode, java_exception_class

MIRROR = pathlib.Path("/work/.mirror/apache+kafka/repo")


@pytest.mark.parametrize("code, expected", [
    (ErrorCode.GROUP_ID_NOT_FOUND, "org.apache.kafka.common.errors.GroupIdNotFoundException"),
    (ErrorCode.NON_EMPTY_GROUP, "org.apache.kafka.common.errors.GroupNotEmptyException"),
    (ErrorCode.REQUEST_TIMED_OUT, "org.apache.kafka.common.errors.TimeoutException"),
    (ErrorCode.INVALID_CONFIG, "org.apache.kafka.common.errors.InvalidConfigurationException"),
    (ErrorCode.KAFKA_STORAGE_ERROR, "org.apache.kafka.common.errors.KafkaStorageException"),
    (ErrorCode.INVALID_RECORD, "org.apache.kafka.common.InvalidRecordException"),
    (ErrorCode.OFFSET_OUT_OF_RANGE, "org.apache.kafka.common.errors.OffsetOutOfRangeException"),
])
def test_java_exception_class(code, expected):
    assert java_exception_class(code) == expected


def test_none_has_no_exception():
    assert java_exception_class(ErrorCode.NONE) is None


def _errors_java() -> str:
    if not (MIRROR / "HEAD").exists():
        pytest.skip("no local clone of Kafka's source")
    path = "clients/src/main/java/org/apache/kafka/common/protocol/Errors.java"
    return subprocess.run(["git", "-C", str(MIRROR), "show", f"3.9:{path}"], capture_output=True, text=True,
                          check=True).stdout


def test_every_class_matches_kafkas_errors_java():
    source = _errors_java()
    body = source[source.index("public enum Errors"):]
    starts = list(re.finditer(r"\n\s+([A-Z_0-9]+)\((-?\d+),", body))
    checked = 0
    for i, match in enumerate(starts):
        chunk = body[match.start():starts[i + 1].start() if i + 1 < len(starts) else len(body)]
        constructors = re.findall(r"([A-Za-z]+)::new", chunk)
        if not constructors:
            continue
        code = int(match.group(2))
        assert java_exception_class(code).rsplit(".", 1)[1] == constructors[-1], match.group(1)
        checked += 1
    assert checked > 100 and checked == len([e for e in ERRORS if e.code in {int(m.group(2)) for m in starts}]) - 1
