"""Text that fits: the font metrics, wrapping, stacking, and the checker that every lab picture must pass."""
import json
from pathlib import Path

import pytest

from kafkalab.labs import lab06, lab08, lab11, lab13, lab15
from kafkalab.viz import SequenceDiagram
from kafkalab.viz.textfit import MIN_TEXT_PX, check_svg, stack_rows, svgs_in, text_width, wrap_text

LABS = Path(__file__).resolve().parents[2] / "labs"


def _svg(body: str, width: int = 200, height: int = 40) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="12" '
            f'font-family="DejaVu Sans">{body}</svg>')


def test_text_width_uses_the_fonts_own_advances():
    assert text_width("3376", 12) == 31                 # four digits of 0.636 em: 30.5 px, rounded up
    assert text_width("W", 12) > text_width("i", 12) * 2
    assert text_width("acknowledged", 11, bold=True) > text_width("acknowledged", 11)
    assert text_width("00000000000000000000.log", 12, mono=True) == 174
    assert text_width("✕ 日本", 10) >= 10 * 3 * 0.8      # unknown characters count as a whole em


def test_wrap_text_keeps_every_line_inside_the_width_and_never_cuts_a_word():
    lines = wrap_text("broker 2 stuck, 3 × acks=1", 60, 11)
    assert " ".join(lines) == "broker 2 stuck, 3 × acks=1" and len(lines) > 1
    assert all(text_width(line, 11) <= 60 for line in lines)
    assert wrap_text("supercalifragilistic", 10, 11) == ["supercalifragilistic"]


def test_stack_rows_puts_a_label_in_the_first_row_where_it_does_not_touch_another():
    assert stack_rows([(0, 50), (40, 90), (60, 100), (95, 120)], gap=4) == [0, 1, 0, 1]


def test_check_svg_finds_each_kind_of_defect():
    assert check_svg(_svg('<text x="10" y="20">fits</text>')) == []
    assert "below 11 px" in check_svg(_svg('<text x="10" y="20" font-size="9">tiny</text>'))[0]
    # lab 15's old batch plan: the end offset "3376" set 4 px after a bar ending 20 px from the right edge
    assert "leaves the picture" in check_svg(_svg('<text x="184" y="20">3376</text>'))[0]
    assert "overlaps" in check_svg(_svg('<text x="10" y="20">4 × acks=all</text>'
                                        '<text x="60" y="20">broker 2 stuck</text>', 300))[0]
    assert "runs out of its box" in check_svg(_svg('<rect x="5" y="5" width="30" height="20" fill="#ccc"/>'
                                                   '<text x="8" y="20">no leader</text>'))[0]
    # a narrow bar (a swatch, a busy span) is not a text box; a note may cross it
    assert check_svg(_svg('<rect x="50" y="0" width="10" height="40" fill="#ccc"/>'
                          '<text x="100" y="20" text-anchor="middle">a note across a bar</text>')) == []
    # inherited sizes and translated groups are followed; a tspan is a line of its own
    assert check_svg(_svg('<g font-size="10" transform="translate(5 5)"><text x="0" y="12">x</text></g>'))
    assert check_svg(_svg('<text x="10" y="14">one<tspan x="10" dy="14">two</tspan></text>')) == []


def _run_timeline() -> lab13.RunTimeline:
    class Op:
        def __init__(self, value, type_, offset=None, error=None):
            self.value, self.type, self.offset, self.error = value, type_, offset, error
    t = lab13.RunTimeline("run: acks=1, unclean.leader.election.enable=true")
    t.leader(0, 0)
    for i in range(12):
        t.send(Op(i, "ok", i), "before")
        if i in (3, 4, 5):
            t.fault(f"isolate broker {i % 3} from the others (fault {i})")
            t.leader(-1, 0)
            t.leader(i % 3, i)
    t.send(Op(99, "info", error="REQUEST_TIMED_OUT"), "after")
    t.mark_lost([1, 2])
    return t


def _replica_timeline() -> lab08.ReplicaTimeline:
    t = lab08.ReplicaTimeline([f"broker {b}" for b in range(3)])
    leo = 0
    for label in ("created", "4 × acks=all", "broker 2 stuck, 3 × acks=1", "ISR shrank, 1 × acks=all",
                  "ISR = {0}", "both back"):
        leo += 4
        t.add(label, [{"replica": f"broker {b}", "log_end_offset": leo - b, "high_watermark": leo - 2}
                      for b in range(3)])
    return t


def _segment_map() -> lab06.SegmentMap:
    """Index entries every 61 bytes of a 976-byte segment: their labels would touch on one line."""
    batches = tuple(lab06.BatchInfo(i * 61, 61, i * 3, i * 3 + 2, 0, 0, True) for i in range(16))
    index = tuple(lab06.IndexEntry(i * 3, i * 61) for i in range(1, 16))
    return lab06.SegmentMap([lab06.Segment(0, 976, batches, index, ())], highlight=20, title="one segment")


def _sequence() -> SequenceDiagram:
    seq = SequenceDiagram([("c", "client", "client_id a"), ("b", "broker 0", "")], title="one round trip")
    seq.message("c", "b", "Metadata v12 · corr=1")
    seq.message("b", "c", "corr=1", dashed=True, note="the answer to the first request, in order")
    seq.note("the broker unmutes the connection and reads the next request from the socket buffer")
    return seq


PICTURES = {
    "sequence diagram: whole-width notes and side notes widen the columns": lambda: _sequence().svg(),
    "lab 13 timeline: fault labels, leader bands, the lost-write legend": lambda: _run_timeline().svg(),
    "lab 08 replica timeline: step labels on the x-axis": lambda: _replica_timeline().svg(),
    "lab 06 segment map: index labels stacked, nothing below 11 px": lambda: _segment_map().svg(),
    "lab 11 log strip: offsets and cell labels at 11 px, measured legend": lambda: lab11.LogStrip(
        [(7, "data"), (None, "data"), (7, "data"), (8, "data"), (7, "COMMIT"), (9, "data"), (8, "ABORT")] * 2, 14,
        title="orders-0").svg(),
    "lab 15 batch plan: end offsets at the right edge": lambda: lab15.batch_slices_svg(
        [{"0": 1125, "1": 1100, "2": 1108}] * 3),
    "lab 15 batch plan, many batches: the legend wraps": lambda: lab15.batch_slices_svg([{"0": 10, "1": 12}] * 14),
}


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_the_pictures_the_issue_named_fit_their_text(name):
    svg = PICTURES[name]()
    assert check_svg(svg) == [], name


def test_lab15_batch_plan_shows_the_whole_end_offset():
    svg = lab15.batch_slices_svg([{"0": 1125, "1": 1100, "2": 1108}] * 3)
    assert ">3375<" in svg and check_svg(svg) == []


def _stored_svgs(notebook: Path) -> list[tuple[int, str]]:
    out = []
    for n, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        for output in cell.get("outputs", []):
            for mime in ("text/html", "image/svg+xml"):
                value = output.get("data", {}).get(mime)
                if value:
                    out += [(n, svg) for svg in svgs_in("".join(value) if isinstance(value, list) else value)]
    return out


NOTEBOOKS = sorted(LABS.glob("[0-9][0-9]_*.ipynb"))
#: Pictures not yet brought under the rule (they still hold text below 11 px): the test flips when fixed.
NOT_YET = {}


@pytest.mark.parametrize("notebook", [pytest.param(nb, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[nb.stem]))
                                      if nb.stem in NOT_YET else nb for nb in NOTEBOOKS], ids=lambda nb: nb.stem)
def test_every_picture_a_lab_stores_fits_its_text(notebook):
    problems = [f"cell {n}: {p}" for n, svg in _stored_svgs(notebook) for p in check_svg(svg)]
    assert problems == [], "\n".join(problems[:20])


def test_min_text_px_is_what_the_issue_asks():
    assert MIN_TEXT_PX == 11
