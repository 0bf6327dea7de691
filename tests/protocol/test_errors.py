"""Kafka's error-code table, API key names, and the header-version table."""
from __future__ import annotations

import pytest

from kafkalab import protocol as kp
from kafkalab.protocol import ERRORS, ApiException, ApiKey, ErrorCode, error_info, header_version_table

from . import specs as S


def test_codes_and_names_are_unique():
    codes = [e.code for e in ERRORS]
    names = [e.name for e in ERRORS]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    assert all(n == n.upper() and n.replace("_", "").isalnum() for n in names)


def test_table_is_complete_from_unknown_server_error_to_133():
    # Kafka 4.3 defines every code from -1 to 133 (99 is POSITION_OUT_OF_RANGE, used by FetchSnapshot).
    assert sorted(e.code for e in ERRORS) == list(range(-1, 134))


def test_none_is_zero():
    assert ErrorCode.NONE == 0 and ErrorCode(0).name == "NONE"
    assert not ErrorCode.NONE.retriable
    assert ErrorCode(-1).name == "UNKNOWN_SERVER_ERROR"


@pytest.mark.parametrize("code,name,retriable", [
    (1, "OFFSET_OUT_OF_RANGE", False),
    (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
    (6, "NOT_LEADER_OR_FOLLOWER", True),
    (7, "REQUEST_TIMED_OUT", True),
    (10, "MESSAGE_TOO_LARGE", False),
    (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True),
    (19, "NOT_ENOUGH_REPLICAS", True),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
    (25, "UNKNOWN_MEMBER_ID", False),
    (27, "REBALANCE_IN_PROGRESS", False),
    (33, "UNSUPPORTED_SASL_MECHANISM", False),
    (35, "UNSUPPORTED_VERSION", False),
    (42, "INVALID_REQUEST", False),
    (58, "SASL_AUTHENTICATION_FAILED", False),
    (79, "MEMBER_ID_REQUIRED", False),
    (87, "INVALID_RECORD", False),
    (99, "POSITION_OUT_OF_RANGE", False),
    (100, "UNKNOWN_TOPIC_ID", True),
    (133, "SHARE_SESSION_LIMIT_REACHED", True),
])
def test_spot_checks(code, name, retriable):
    assert ErrorCode[name] == code
    assert ErrorCode(code).name == name
    assert ErrorCode(code).retriable is retriable
    info = error_info(code)
    assert (info.code, info.name, info.retriable) == (code, name, retriable)
    assert info.message


def test_unknown_code():
    info = error_info(4242)
    assert info.code == 4242 and not info.retriable and "4242" in info.name
    err = kp.KafkaProtocolError(35)
    assert "UNSUPPORTED_VERSION" in str(err) and err.error_code == 35 and not err.retriable


def test_error_hierarchy():
    assert issubclass(kp.DecodeError, ValueError)
    assert issubclass(kp.UnsupportedVersionError, kp.DecodeError)
    assert issubclass(kp.InvalidReceiveError, kp.DecodeError)
    assert issubclass(kp.EncodeError, ValueError)
    e = kp.DecodeError("boom", path="body.topics[0]", offset=7)
    assert str(e) == "boom (field body.topics[0], byte 7)"



def test_api_exception_carries_a_code_a_message_and_retriable():
    e = kp.ApiException(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert e.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER and e.retriable
    assert str(e) == e.message == ErrorCode.NOT_LEADER_OR_FOLLOWER.message  # the table's message by default
    e = kp.ApiException(42, "why")
    assert e.error_code is ErrorCode.INVALID_REQUEST and str(e) == "why" and not e.retriable
    assert e.info.name == "INVALID_REQUEST"
    default = kp.ApiException()
    assert default.error_code is ErrorCode.UNKNOWN_SERVER_ERROR and str(default) == ErrorCode(-1).message
    unknown = kp.ApiException(4242)
    assert unknown.error_code == 4242 and not unknown.retriable and "4242" in unknown.info.name


def test_a_subclass_per_code_sets_it_as_a_class_attribute():
    class NotCoordinator(kp.ApiException):
        error_code = ErrorCode.NOT_COORDINATOR

    e = NotCoordinator(message="moved")
    assert e.error_code is ErrorCode.NOT_COORDINATOR and e.retriable and str(e) == "moved"
    assert NotCoordinator().message == ErrorCode.NOT_COORDINATOR.message


def test_kafka_protocol_error_is_an_api_exception_that_names_its_code():
    err = kp.KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "metadata for topic 't'")
    assert isinstance(err, kp.ApiException) and err.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert err.retriable and err.message == "metadata for topic 't'"
    assert str(err) == "[Error 3] UNKNOWN_TOPIC_OR_PARTITION: metadata for topic 't'"
    assert str(kp.KafkaProtocolError(4242)) == "[Error 4242] UNKNOWN_ERROR_CODE_4242: Unexpected error code: 4242."


def test_bad_bytes_are_not_api_exceptions():
    for cls in (kp.DecodeError, kp.UnsupportedVersionError, kp.InvalidReceiveError, kp.EncodeError):
        assert not issubclass(cls, kp.ApiException)


# -------------------------------------------------------------------------------------------- API keys
@S.needs_specs
def test_api_key_names_follow_kafka():
    for key, (req, _) in S.api_pairs().items():
        expected = S.snake(req["name"].removesuffix("Request")).upper()
        assert ApiKey(key).name == expected
        assert kp.api_name(key) == req["name"].removesuffix("Request")
    assert ApiKey.PRODUCE == 0 and ApiKey.API_VERSIONS == 18 and ApiKey.LIST_CONFIG_RESOURCES == 74
    assert kp.api_name(999) == "Unknown(999)"


# -------------------------------------------------------------------------------------------- header table
def _span_text(pairs: list[tuple[int, int]]) -> str:
    spans: dict[int, list[int]] = {}
    for version, hv in pairs:
        spans.setdefault(hv, []).append(version)
    out = []
    for hv in sorted(spans):
        lo, hi = min(spans[hv]), max(spans[hv])
        out.append(f"v{hv} (API v{lo})" if lo == hi else f"v{hv} (API v{lo}-{hi})")
    return ", ".join(out)


@S.needs_specs
def test_header_version_table_has_a_row_per_api():
    rows = {r.api_key: r for r in header_version_table()}
    assert sorted(rows) == list(range(93))
    for key, (req, _resp) in S.api_pairs().items():
        row = rows[key]
        versions = S.valid_versions(req)
        assert row.api_name == req["name"].removesuffix("Request")
        assert row.api_versions == req["validVersions"]
        assert row.flexible_from == (req.get("flexibleVersions", "none")
                                     if req.get("flexibleVersions", "none") != "none" else "never")
        assert row.request_header == _span_text([(v, S.request_header_version(key, v)) for v in versions])
        assert row.response_header == _span_text([(v, S.response_header_version(key, v)) for v in versions])


def test_header_version_table_spot_checks():
    rows = {r.api_key: r for r in header_version_table()}
    assert rows[18].response_header == "v0 (API v0-4)"
    assert rows[18].request_header == "v1 (API v0-2), v2 (API v3-4)"
    assert rows[7].request_header == "v0 (API v0), v1 (API v1-2), v2 (API v3)"
    assert rows[17].request_header == "v1 (API v0-1)" and rows[17].flexible_from == "never"
    assert rows[0].request_header == "v1 (API v0-8), v2 (API v9-13)"


@pytest.mark.parametrize("name", ["x" * 40_000, "\u00e9" * 20_000, "\U0001f600" * 9_000])
def test_an_error_message_is_cut_to_fit_a_kafka_string(name):
    """An error message quoting a 32,767-character name from the request could not be written into the
    response's ``error_message`` (an int16-length STRING): the broker closed the connection instead of answering."""
    message = ApiException(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.").message
    data = message.encode("utf-8")
    assert len(data) <= 0x7FFF and message.endswith("...") and message.startswith("The topic '")
    assert str(ApiException(ErrorCode.INVALID_REQUEST, "short")) == "short"


def test_fit_error_message_keeps_a_null_message_and_cuts_a_long_one():
    from kafkalab.protocol import fit_error_message

    assert fit_error_message(None) is None
    assert fit_error_message("short") == "short"
    cut = fit_error_message("é" * 20_000)
    assert len(cut.encode("utf-8")) <= 0x7FFF and cut.endswith("...")
