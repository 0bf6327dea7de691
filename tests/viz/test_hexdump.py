"""The annotated frame view: attribution of bytes, escaping, carets, caps, determinism, linking markup."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.protocol import annotate_request, annotate_response, size_prefixed
from kafkalab.viz import FrameView, field_table, reset_ids, show_frame

from .helpers import (api_versions_response, caret_column, check_html, deepest_row, dump_bytes, dump_text,
                      expected_column, metadata_request, metadata_request_no_topics, produce_request)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _records_hook():
    try:
        from kafkalab.records import annotate_records
    except ImportError:  # pragma: no cover - the records room is optional for these tests
        return None
    return annotate_records


def valid_views():
    yield "metadata-no-topics", show_frame(metadata_request_no_topics())
    yield "metadata-topics", show_frame(metadata_request())
    yield "metadata-size-prefix", show_frame(size_prefixed(metadata_request()), size_prefix=True)
    yield "api-versions-response", show_frame(api_versions_response(), kind="response", api_key=18, api_version=4)
    yield "produce", show_frame(produce_request(300))
    hook = _records_hook()
    for path in sorted(GOLDEN.glob("*.bin")):
        yield path.name, show_frame(path.read_bytes())
        if hook is not None and "Produce" in path.name:
            yield path.name + "+records", show_frame(path.read_bytes(), records_hook=hook)


VALID = list(valid_views())


@pytest.fixture(autouse=True)
def _fresh_ids():
    reset_ids()
    yield
    reset_ids()


# -- every byte belongs to exactly one field ---------------------------------------------------------------

@pytest.mark.parametrize("name,view", VALID, ids=[n for n, _ in VALID])
def test_every_byte_is_attributed_to_exactly_one_field(name, view):
    assert view.ok, view.error
    shown = dump_bytes(view)
    assert [b for _, _, b in shown] == list(view.data), "each byte once, in order"
    rows = view.annotation.rows
    leaves = view.annotation.leaves()
    for offset, (owner, kind, _) in enumerate(shown):
        assert owner is not None and kind in ("field", "prefix"), (offset, kind)
        covering = [leaf for leaf in leaves if leaf.start <= offset < leaf.end]
        assert len(covering) <= 1, (offset, covering)
        expected = covering[0] if covering else deepest_row(rows, offset)
        assert rows[owner] == expected, (offset, rows[owner], expected)


@pytest.mark.parametrize("name,view", VALID[:5], ids=[n for n, _ in VALID[:5]])
def test_html_is_well_formed_and_links_resolve(name, view):
    markup = view.html()
    checker = check_html(markup)
    ids = [a["id"] for t, a in checker.elements if "id" in a]
    assert len(ids) == len(set(ids)), "element ids are unique"
    radios = {a["id"] for t, a in checker.elements if t == "input"}
    labels = {a["for"] for t, a in checker.elements if t == "label"}
    assert labels <= radios, labels - radios
    css = re.search(r"<style>(.*?)</style>", markup, re.S).group(1)
    sources = {c for _, a in checker.elements for c in (a.get("class") or "").split() if re.fullmatch(r"s\d+", c)}
    for s in sources:
        assert f".{s}:hover" in css, f"no hover rule for {s}"
        assert f"#{view.view_id}-{s[1:]}:checked" in css, f"no pin rule for {s}"
    assert "<script" not in markup.lower()


def test_header_fields_are_called_out():
    view = show_frame(size_prefixed(metadata_request_no_topics()), size_prefix=True)
    markup = view.html()
    chips = re.search(r'<div class="kl-chips">(.*?)</div>', markup, re.S).group(1)
    for name in ("size", "request_api_key", "request_api_version", "correlation_id", "client_id",
                 "_tagged_fields"):
        assert f"<b>{name}</b>" in chips
    assert "3 (Metadata)" in chips and "TAG_BUFFER" in chips


def test_compact_lengths_and_tag_buffers_are_explained():
    view = show_frame(metadata_request(names=("abc",)))
    markup = view.html()
    assert "length byte 0x04 = 3 + 1" in markup
    assert "count byte 0x02 = 1 + 1 → 1 element" in markup
    assert "count byte 0x00 = no tagged fields" in markup
    assert "length INT16 0x0008 = 8" in markup          # client_id stays a classic string in header v2
    assert 'class="kl-l kl-src s' in markup and "kl-tag" in markup
    text = repr(view)
    assert "length byte 0x04 = 3 + 1" in text and "TAG_BUFFER" in text


# -- escaping ----------------------------------------------------------------------------------------------

def test_values_from_the_wire_are_escaped():
    evil = "<script>alert(1)</script>"
    view = show_frame(metadata_request(client_id=evil, names=('a"b\'c&d<e>',)))
    markup = view.html()
    assert "<script" not in markup.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert "b&#x27;c&amp;d&lt;e&gt;" in markup and "<e>" not in markup
    checker = check_html(markup)
    titles = [a.get("title", "") for _, a in checker.elements]
    assert f'header.client_id = "{evil}"' in titles      # attribute values survive the round trip intact
    assert evil in repr(view)                             # the text rendering shows the value as it is


def test_title_is_escaped():
    view = show_frame(metadata_request_no_topics(), title="<b>mine</b>")
    assert "&lt;b&gt;mine&lt;/b&gt;" in view.html()


# -- failures: the caret -----------------------------------------------------------------------------------

def _assert_caret(view, offset):
    markup = view.html()
    check_html(markup)
    lines = dump_text(markup)
    width = max(5, len(str(len(view.data))))           # the offset column
    i, col = caret_column(lines)
    assert col == expected_column(offset, width)
    above = lines[i - 1]
    assert above[:width].strip() == str(offset - offset % 16)
    cell = above[col:col + 2]
    assert cell == ("··" if offset == len(view.data) else f"{view.data[offset]:02x}")
    assert f"byte {offset}" in lines[i]
    # the same in the plain-text rendering
    text = repr(view).split("\n")
    j = next(k for k, line in enumerate(text) if line.strip().startswith("^"))
    assert text[j].index("^") == col
    assert text[j - 1][col:col + 2] == cell
    return markup


def test_caret_past_the_end_of_a_truncated_frame():
    frame = metadata_request_no_topics()[:-3]           # cut inside the body
    view = show_frame(frame)
    assert not view.ok and view.error.offset == len(frame)
    markup = _assert_caret(view, len(frame))
    assert "k-missing" in markup
    assert view.error.reason in markup and "body.allow_auto_topic_creation" in markup
    assert "✗ body.allow_auto_topic_creation (decode error)" in repr(view)


def test_caret_on_a_new_line_when_the_frame_ends_on_a_line_boundary():
    from kafkalab.protocol import encode_request, make_request, request_class
    full = encode_request(make_request(request_class(3)(topics=None), api_version=12, client_id="c" * 20))
    frame = full[:32]                                   # allow_auto_topic_creation would be byte 32
    view = show_frame(frame)
    assert not view.ok and view.error.offset == 32
    _assert_caret(view, 32)


def test_caret_under_an_invalid_string_length():
    frame = bytearray(metadata_request())
    frame[8:10] = b"\x00\x50"                            # client_id claims 80 bytes
    view = show_frame(bytes(frame))
    assert view.error.path == "header.client_id"
    markup = _assert_caret(view, view.error.offset)
    shown = dump_bytes(view)
    assert [k for _, k, _ in shown[8:10]] == ["failing", "failing"], "the length prefix is what failed"
    assert all(k == "undecoded" for _, k, _ in shown[view.error.offset + 1:])
    assert all(k in ("field", "prefix") for _, k, _ in shown[:8]), "bytes decoded so far keep their colours"
    assert "needs 80 bytes for a STRING" in markup


def test_caret_under_an_invalid_array_count():
    frame = bytearray(metadata_request_no_topics())
    assert frame[12] == 0x00
    frame[12] = 0x7F                                    # topics: 126 elements, 3 bytes left
    view = show_frame(bytes(frame))
    assert view.error.path == "body.topics" and view.error.offset == 12
    markup = _assert_caret(view, 12)
    assert "Tried to allocate a collection of size 126" in markup
    assert 'class="kl-x"' in markup


def test_size_prefix_mismatch_and_short_frames_render():
    bad = bytearray(size_prefixed(metadata_request_no_topics()))
    bad[3] += 5
    view = show_frame(bytes(bad), size_prefix=True)
    assert view.error.path == "size"
    _assert_caret(view, 0)
    for frame in (b"", b"\x00", b"\x00\x03\x00"):
        view = show_frame(frame)
        assert not view.ok
        check_html(view.html())
        assert "^" in repr(view)


def test_unknown_api_key_and_unsupported_version():
    view = show_frame(b"\x7f\x00" + metadata_request_no_topics()[2:])
    assert not view.ok and "unknown api key" in view.html()
    frame = bytearray(metadata_request_no_topics())
    frame[2:4] = b"\x00\x63"                            # Metadata v99
    view = show_frame(bytes(frame))
    assert not view.ok and view.error.path == "header.request_api_version"
    _assert_caret(view, view.error.offset)


def test_failure_in_a_response():
    frame = api_versions_response()[:-6]
    view = show_frame(frame, kind="response", api_key=18, api_version=4)
    assert not view.ok
    _assert_caret(view, view.error.offset)
    assert "ApiVersionsResponse" in view.title


# -- layout ----------------------------------------------------------------------------------------------------

def test_wire_type_column_fits_the_longest_type_shown():
    """COMPACT_NULLABLE_STRING (23 characters) was cut to "COMPACT_NULLABLE_STR…" by a fixed 10.5em column."""
    view = show_frame(metadata_request())
    types = {nd.row.wire_type for nd in view.model.nodes}
    longest = max(map(len, types))
    assert longest > 18, types
    widths = re.findall(r'class="kl-tree" style="[^"]*--kl-tw:max\(10\.5em,calc\(([\d.]+)ch \+ 10px\)\)', view.html())
    assert widths == [f"{longest * 11 / 12:.1f}"]
    assert "minmax(6em,var(--kl-tw,10.5em))" in view.html()


def test_frame_takes_the_width_it_is_given():
    """A query container is sized as if empty: without a width of its own a frame in a flex row (lab 02's Produce
    v6 and v10 responses side by side) collapsed to its padding."""
    assert re.search(r"\.kl-frame\{container-type:inline-size;width:100%;flex:1 1 44em\}", show_frame(metadata_request()).html())


# -- determinism -------------------------------------------------------------------------------------------

def test_same_input_gives_the_same_html():
    frame = metadata_request()
    view = show_frame(frame)
    first = view.html()
    assert view.html() == first and view._repr_html_() == first
    reset_ids()
    assert show_frame(frame).html() == first
    reset_ids()
    assert show_frame(annotate_request(frame)).html() == first, "an Annotation renders like its bytes"


def test_two_views_of_the_same_bytes_do_not_share_ids():
    frame = metadata_request()
    a, b = show_frame(frame), show_frame(frame)
    assert a.view_id != b.view_id
    assert a.html() != b.html()
    assert a.html().replace(a.view_id, "X") == b.html().replace(b.view_id, "X")


_SCRIPT = """
import hashlib
from kafkalab.viz import show_frame
from tests.viz.helpers import metadata_request, api_versions_response
views = [show_frame(metadata_request()), show_frame(metadata_request()[:-4]),
         show_frame(api_versions_response(), kind="response", api_key=18, api_version=4)]
print(hashlib.sha256("".join(v.html() + repr(v) for v in views).encode()).hexdigest())
"""


def test_html_does_not_depend_on_the_process():
    root = Path(__file__).resolve().parents[2]
    digests = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=root, env=env, capture_output=True, text=True,
                             check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


# -- caps --------------------------------------------------------------------------------------------------

def test_a_one_mebibyte_produce_request_is_capped():
    frame = produce_request(1 << 20)
    view = show_frame(frame, max_dump_lines=48)
    markup = view.html()
    assert len(frame) > 1 << 20
    assert len(markup) < 150_000
    lines = dump_text(markup)
    assert len(lines) <= 48 + 2
    assert any("not shown" in line for line in lines)
    assert "Capped:" in markup
    assert lines[-1].split()[0] == str((len(frame) - 1) // 16 * 16), "the last line is shown"
    text = repr(view)
    assert len(text) < 20_000 and "not shown" in text
    check_html(markup)


def test_a_failure_deep_inside_a_big_frame_keeps_the_caret_in_view():
    frame = bytearray(produce_request(200_000))
    records_at = show_frame(bytes(frame)).annotation.find("body.topic_data[0].partition_data[0].records").start
    frame = bytes(frame[:records_at + 100_000])         # records promise 200 000 bytes; 100 000 - 3 remain
    view = show_frame(frame)
    assert not view.ok
    _assert_caret(view, view.error.offset)


def test_the_tree_is_capped():
    names = tuple(f"topic-{i}" for i in range(3000))
    view = show_frame(metadata_request(names=names), max_tree_rows=200, max_children=40)
    markup = view.html()
    assert markup.count('class="kl-l ') <= 200
    assert "more entries" in markup and "Capped:" in markup
    assert "topic-2999" in markup, "the last entries of a long array are shown"
    check_html(markup)
    assert len(markup) < 400_000


# -- other entry points ------------------------------------------------------------------------------------

def test_field_table():
    frame = metadata_request_no_topics()
    table = field_table(annotate_request(frame))
    assert list(table.columns) == ["path", "start", "end", "wire_type", "value", "hex"]
    assert len(table) == len(annotate_request(frame).rows)
    row = table[table.path == "header.client_id"].iloc[0]
    assert (row.start, row.end, row.wire_type, row.value, row.hex) == (8, 11, "NULLABLE_STRING", "c", "00 01 63")
    big = field_table(show_frame(produce_request(10_000)))
    assert big.hex.str.len().max() < 200


def test_response_needs_its_api_key_and_version():
    with pytest.raises(ValueError, match="api_key"):
        show_frame(api_versions_response(), kind="response")
    with pytest.raises(ValueError):
        show_frame(b"", kind="sideways")
    annotation = annotate_response(api_versions_response(), 18, 4)
    view = show_frame(annotation)
    assert view.kind == "response" and isinstance(view, FrameView)


def test_text_rendering_layout():
    view = show_frame(metadata_request_no_topics())
    text = repr(view)
    lines = text.split("\n")
    assert lines[0].startswith("MetadataRequest v12 · request · 16 bytes")
    assert "    0  00 03 00 0c 00 00 00 07  00 01 63 00 00 01 00 00  |..........c.....|" in lines
    pretty = []

    class P:
        def text(self, s):
            pretty.append(s)
    view._repr_pretty_(P(), False)
    assert pretty == [text]


def test_view_digest_covers_the_options():
    frame = metadata_request_no_topics()
    assert show_frame(frame).view_id != show_frame(frame, title="other").view_id
    assert hashlib.sha256(show_frame(frame, view_id="mine").html().encode()).hexdigest()
    assert 'class="kl-frame mine"' in show_frame(frame, view_id="mine").html()
    with pytest.raises(ValueError, match="CSS identifier"):
        show_frame(frame, view_id='x"><script>')


def test_the_ruler_is_set_in_the_bytes_font_and_its_numbers_stand_over_their_bytes():
    """The ruler used to be 11 px over 12.5 px bytes: by byte 15 it had drifted two columns to the left."""
    from kafkalab.viz.style import BASE_CSS
    for selectors, body in re.findall(r"([^{}]*)\{([^{}]*)\}", BASE_CSS):
        if "kl-ruler" in selectors:
            assert "font-size" not in body and re.sub(r"font:inherit", "", body).count("font") == 0, body
    html = show_frame(metadata_request())._repr_html_()
    dump = re.search(r'<pre class="kl-dump">(.*?)</pre>', html, re.S).group(1)
    ruler, first = (re.sub(r"<[^>]+>", "", line) for line in dump.split("\n")[:2])
    hexes = re.findall(r"\b[0-9a-f]{2}\b", first[:first.index("|")])
    assert len(hexes) == 16
    for i in (0, 7, 8, 15):                                       # each ruler number sits over its byte
        col = ruler.index(f"{i:>2}", 6 + 3 * i - 1)
        assert first[col:col + 2] == hexes[i]


def test_only_an_api_versions_response_header_says_api_versions_answers_with_v0():
    """Response header v0 is also every non-flexible version's (Produce v6 ...): the ApiVersions remark
    belongs under an ApiVersions response only."""
    from kafkalab.protocol import encode_response, make_response, response_class
    P = response_class(0)
    produce = encode_response(make_response(P(responses=(P.TopicProduceResponse(name="t", partition_responses=(
        P.PartitionProduceResponse(index=0, error_code=0, base_offset=7),)),)), api_version=6, correlation_id=3))
    notes = {}
    for name, frame, key, version in [("ApiVersions", api_versions_response(), 18, 4), ("Produce", produce, 0, 6)]:
        view = show_frame(frame, kind="response", api_key=key, api_version=version)
        assert view.ok, name
        notes[name] = view.model.find("header").note
    assert notes == {"ApiVersions": "response header v0: correlation_id only (ApiVersions always answers with v0)",
                     "Produce": "response header v0: correlation_id only"}
