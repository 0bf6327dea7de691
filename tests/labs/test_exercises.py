"""kafkalab.labs: the ✓/✗ results, and lab 01's checks, fallbacks and picture.

Fast: nothing here starts a client (captures are replaced by a stub), so it runs in well under a second.
"""
from __future__ import annotations

import ast
import hashlib
import json
import struct
from pathlib import Path

import pytest

from kafkalab.labs import (NOT_ANSWERED, CheckResult, EvidenceFailed, Part, check, check_equal, check_parts, evidence,
                           lab01)
from kafkalab.protocol import (ApiKey, annotate_response, api_name, decode_request, encode_request, encode_response,
                               make_request, make_response, request_class, response_header_version)
from kafkalab.trace import ClientNotAvailable, ScriptedReplies

ROOT = Path(__file__).resolve().parents[2]


def metadata_wire(correlation_id: int = 299, client_id: str = "billing-svc", version: int = 12) -> bytes:
    cls = request_class(ApiKey.METADATA)
    body = cls(topics=(cls.MetadataRequestTopic(name="payments"),), allow_auto_topic_creation=False)
    return encode_request(make_request(body, api_version=version, correlation_id=correlation_id,
                                       client_id=client_id), size_prefix=True)


# -- the result objects -----------------------------------------------------------------------------------------------
def test_check_result_renders_text_and_html_deterministically():
    a = check("Exercise 9 · x", False, "42 is not right", hint="look <here> & there")
    b = check("Exercise 9 · x", False, "42 is not right", hint="look <here> & there")
    assert a.text() == b.text() == repr(a)
    assert a._repr_html_() == b._repr_html_()
    assert a.text().startswith("✗ Exercise 9 · x: 42 is not right")
    assert "Hint: look <here> & there" in a.text()
    assert "look &lt;here&gt; &amp; there" in a._repr_html_()       # escaped
    assert not a and not a.passed


def test_a_pass_hides_the_hint():
    r = check("E", True, "correct", hint="secret")
    assert r and r.passed
    assert "secret" not in r.text() and "secret" not in r._repr_html_()


def test_check_equal_pass_fail_and_not_answered():
    assert check_equal("E", 7, 7).status == "pass"
    assert check_equal("E", NOT_ANSWERED, 7).status == "todo"
    fail = check_equal("E", 8, 7, hint="generic")
    assert fail.status == "fail" and "generic" in fail.text()
    assert "7" not in fail.message                      # the expected value is never revealed


@pytest.mark.parametrize("answer", [True, "7", 7.0, b"\x07", None])
def test_check_equal_is_strict_about_types(answer):
    assert check_equal("E", answer, 7).status == "fail"


def test_check_equal_uses_the_specific_hint_when_there_is_one():
    r = check_equal("E", 3, 7, hint="generic", diagnose=lambda a: "specific" if a == 3 else None)
    assert "specific" in r.text() and "generic" not in r.text()


def test_check_parts_counts_and_marks_each_part():
    expected = {("A", 1): 0, ("B", 2): 1}
    assert check_parts("E", {("A", 1): 0, ("B", 2): 1}, expected).passed
    partial = check_parts("E", {("A", 1): 0, ("B", 2): ...}, expected)
    assert partial.status == "todo" and "1 of 2 correct, 1 not answered yet" in partial.message
    wrong = check_parts("E", {("A", 1): 1, ("B", 2): 1, ("C", 3): 0}, expected, label=lambda k: k[0])
    assert wrong.status == "fail" and "not asked: C" in wrong.message
    assert [p.status for p in wrong.parts] == ["fail", "pass"]
    assert check_parts("E", [0, 1], expected).status == "fail"
    assert check_parts("E", ..., expected).status == "todo"


def test_evidence_shows_each_claim_and_fails_the_cell_when_one_does_not_hold():
    shown = evidence("The ISR shrank", {"broker 2 left": True, "the answer came after": 3 > 2})
    assert shown.passed and shown.text().splitlines() == [
        "✓ The ISR shrank: all 2 claims hold", "   ✓ broker 2 left", "   ✓ the answer came after"]
    assert "True" not in shown.text() and "<code>broker 2 left</code>" in shown._repr_html_()
    with pytest.raises(EvidenceFailed) as failed:
        evidence("The ISR shrank", {"broker 2 left": True, "the answer came after": False})
    assert isinstance(failed.value, AssertionError)
    assert "✗ the answer came after" in str(failed.value) and "1 of 2 claims do not hold" in str(failed.value)
    assert evidence("One", {"it ran": True}).text().splitlines()[0] == "✓ One: it holds"
    with pytest.raises(ValueError):
        evidence("nothing", {})


def test_parts_render_in_html():
    r = CheckResult("E", "fail", "1 of 2", "h", (Part("A v1", "pass", "0"), Part("B v2", "fail", "why")))
    html = r._repr_html_()
    assert "<code>A v1</code>" in html and "why" in html


# -- lab 01's checks -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("corr", [0, 7, 299, 2**31 - 1, -5])
def test_correlation_id_check_computes_the_answer_from_the_bytes(corr):
    wire = metadata_wire(correlation_id=corr)
    assert lab01.check_correlation_id(struct.unpack(">i", wire[8:12])[0], wire).passed


def test_correlation_id_check_diagnoses_common_mistakes():
    wire = metadata_wire(correlation_id=299)
    little = int.from_bytes(wire[8:12], "little", signed=True)
    assert "little-endian" in lab01.check_correlation_id(little, wire).hint
    assert "size prefix" in lab01.check_correlation_id(len(wire) - 4, wire).hint
    assert "api_key and api_version" in lab01.check_correlation_id(struct.unpack(">i", wire[4:8])[0], wire).hint
    assert "int" in lab01.check_correlation_id("299", wire).hint


@pytest.mark.parametrize("text", ["a", "payments.eu-west-1", "ä-topic", "x" * 200])
def test_compact_length_check(text):
    n = len(text.encode("utf-8"))
    right = lab01.check_compact_length(n + 1, text)
    assert right.passed
    assert "N + 1" in lab01.check_compact_length(n, text).hint
    assert "not a bytes object" in lab01.check_compact_length(bytes([n + 1]), text).hint


@pytest.mark.parametrize("value", [0, -1, 1, -66, 250, -300, 2**31 - 1, -2**31])
def test_zigzag_check(value):
    from kafkalab.protocol import primitives as P
    data = P.write_varint(value)
    assert lab01.check_zigzag(value, data).passed
    if value not in (0,):
        unsigned = P.read_unsigned_varint(data, 0)[0]
        if unsigned != value:
            assert "zig-zag" in lab01.check_zigzag(unsigned, data).hint


def test_zigzag_check_notices_a_single_byte_reading():
    assert "several bytes" in lab01.check_zigzag(0x83 & 0x7F, bytes([0x83, 0x01])).hint
    assert "sign" in lab01.check_zigzag(66, bytes([0x83, 0x01])).hint


def test_response_header_check_follows_the_rule_and_the_exception():
    questions = [("Produce", 8), ("Produce", 9), ("ApiVersions", 3), ("ApiVersions", 0), ("Fetch", 12)]
    right = {(n, v): response_header_version(getattr(ApiKey, {"Produce": "PRODUCE", "ApiVersions": "API_VERSIONS",
                                                             "Fetch": "FETCH"}[n]), v) for n, v in questions}
    assert right[("ApiVersions", 3)] == 0 and right[("Produce", 9)] == 1
    assert lab01.check_response_header_versions(right, questions).passed
    wrong = {**right, ("ApiVersions", 3): 1}
    r = lab01.check_response_header_versions(wrong, questions)
    assert not r.passed and "exception" in [p for p in r.parts if p.label == "ApiVersions v3"][0].note
    wrong = {**right, ("Produce", 9): 0}
    note = [p for p in lab01.check_response_header_versions(wrong, questions).parts if p.label == "Produce v9"][0].note
    assert "flexible versions: 9+" in note


def test_client_id_range_check_and_its_hints():
    wire = metadata_wire(client_id="billing-svc")
    start, end = 12, 14 + len("billing-svc")
    assert lab01.check_client_id_range((start, end), wire).passed
    assert lab01.check_client_id_range([start, end], wire).passed
    assert "length prefix" in lab01.check_client_id_range((start + 2, end), wire).hint
    assert "exclusive end" in lab01.check_client_id_range((start, end - 1), wire).hint
    assert "size prefix included" in lab01.check_client_id_range((start - 4, end - 4), wire).hint
    assert "two ints" in lab01.check_client_id_range(12, wire).hint


def test_client_id_range_follows_the_data():
    wire = metadata_wire(client_id="a-much-longer-client-id")
    assert lab01.check_client_id_range((12, 14 + len("a-much-longer-client-id")), wire).passed


# -- decoding with a chosen header version ----------------------------------------------------------------------------
def _api_versions_reply() -> bytes:
    request = decode_request(lab01.recorded("confluent-kafka-ApiVersions-v3.bin"))
    return encode_response(make_response(ScriptedReplies().api_versions(request), api_version=3,
                                         correlation_id=request.correlation_id))


def test_annotate_response_as_with_the_right_header_matches_annotate_response():
    reply = _api_versions_reply()
    mine = lab01.annotate_response_as(reply, ApiKey.API_VERSIONS, 3, header_version=0)
    assert mine.error is None
    assert mine.rows == annotate_response(reply, ApiKey.API_VERSIONS, 3).rows


def test_annotate_response_as_with_the_wrong_header_shifts_by_one_byte():
    wrong = lab01.annotate_response_as(_api_versions_reply(), ApiKey.API_VERSIONS, 3, header_version=1)
    assert wrong.error is not None and wrong.error.offset == 7
    assert wrong.find("body.error_code").value == 7           # REQUEST_TIMED_OUT, read one byte late
    assert wrong.find("body").start == 5


# -- the picture ------------------------------------------------------------------------------------------------------------
def test_header_version_grid_marks_the_api_versions_exception():
    grid = lab01.header_version_grid([ApiKey.PRODUCE, ApiKey.API_VERSIONS])
    cells = grid.cells(ApiKey.API_VERSIONS)
    assert cells[3] == (2, 0, "exception") and cells[2] == (1, 0, "classic")
    assert grid.cells(ApiKey.PRODUCE)[0] == (1, 0, "classic") and grid.cells(ApiKey.PRODUCE)[9] == (2, 1, "flexible")
    assert grid.cells(ApiKey.API_VERSIONS)[5] is None                     # beyond what Kafka defines
    assert "2·0!" in repr(grid)
    assert grid._repr_html_() == lab01.header_version_grid([ApiKey.PRODUCE, ApiKey.API_VERSIONS])._repr_html_()


# -- recorded frames and fallbacks --------------------------------------------------------------------------------------
def test_recorded_frames_match_the_manifest_and_decode():
    manifest = json.loads((lab01.FRAMES / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["client_id"] == lab01.CLIENT_ID
    for entry in manifest["frames"]:
        data = (lab01.FRAMES / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        request = decode_request(data)
        assert (request.api_name, request.api_version) == (entry["api"], entry["api_version"])
        assert request.client_id == lab01.CLIENT_ID
    # both librdkafka builds put the same first bytes on the wire once given the same names
    assert lab01.recorded("kcat-ApiVersions-v3.bin") == lab01.recorded("confluent-kafka-ApiVersions-v3.bin")


def test_recorded_rejects_a_file_that_does_not_match(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_text(json.dumps({"frames": [{"file": "x.bin", "sha256": "0" * 64}]}))
    (tmp_path / "x.bin").write_bytes(b"abc")
    monkeypatch.setattr(lab01, "FRAMES", tmp_path)
    with pytest.raises(ValueError, match="sha256"):
        lab01.recorded("x.bin")
    with pytest.raises(KeyError):
        lab01.recorded("y.bin")


def test_first_request_falls_back_to_the_recording_when_a_client_is_missing(monkeypatch):
    def missing(*args, **kwargs):
        raise ClientNotAvailable("not here")
    monkeypatch.setattr(lab01, "capture", missing)
    assert lab01.first_request("kcat") == lab01.recorded("kcat-ApiVersions-v3.bin")
    assert lab01.SOURCES["kcat"] == "recorded"
    conversation = lab01.produce_conversation()
    assert [(f.connection, f.api_name) for f in conversation] == [
        (0, "ApiVersions"), (0, "Metadata"), (1, "ApiVersions"), (1, "Produce")]
    assert lab01.SOURCES["confluent-kafka produce"] == "recorded"


def test_first_request_warns_and_falls_back_when_a_capture_gets_nothing(monkeypatch):
    monkeypatch.setattr(lab01, "capture", lambda *a, **k: [])
    with pytest.warns(UserWarning, match="sent nothing"):
        assert lab01.first_request("aiokafka") == lab01.recorded("aiokafka-ApiVersions-v0.bin")


def test_hold_first_reply_waits_only_once(monkeypatch):
    slept = []
    monkeypatch.setattr(lab01.time, "sleep", slept.append)
    policy = lab01.HoldFirstReply()

    class Captured:
        def __init__(self, index):
            self.index, self.request, self.error, self.listener = index, None, ValueError("x"), ("h", 1)
    policy(Captured(0))
    policy(Captured(1))
    assert slept == [lab01.HoldFirstReply.hold_seconds]


def test_lab01_exercise_4_asks_about_apis_its_section_4_table_does_not_answer():
    """The header-version table and grid of section 4 show every version of the APIs in ``common``: an exercise
    about those would be a look-up. Only ApiVersions, the exception to the rule, may be asked again."""
    tree = ast.parse((ROOT / "labs" / "src" / "01_the_wire.py").read_text(encoding="utf-8"))
    values = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name)}
    shown = {api_name(getattr(ApiKey, e.attr)) for e in values["common"].elts}
    asked = {name for name, _ in ast.literal_eval(values["QUESTIONS"])}
    assert "ApiVersions" in asked and "Produce" in shown
    assert asked & shown == {"ApiVersions"}
