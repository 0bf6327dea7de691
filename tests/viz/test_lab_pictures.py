"""The pictures several labs share: SequenceDiagram and the API-version charts (deterministic, text twins)."""
import re

import pytest

from kafkalab.protocol import ApiKey
from kafkalab.viz import API_COLOURS, FAMILIES, ApiFamilies, CompatGrid, RangeChart, SequenceDiagram
from kafkalab.viz.textfit import check_svg


def _diagram() -> SequenceDiagram:
    seq = SequenceDiagram([("c", "client", "client_id a"), ("b", "broker 0", "")], title="one round trip")
    first = seq.message("c", "b", "Metadata v12 · corr=1", colour=API_COLOURS["Metadata"])
    seq.message("b", "c", "corr=1", dashed=True)
    seq.note("the connection drops")
    last = seq.message("c", "b", "Produce v9 · corr=2", lost=True)
    seq.span("b", first, last)
    return seq


def test_sequence_diagram_is_deterministic_and_has_a_text_twin():
    a, b = _diagram(), _diagram()
    assert a.svg() == b.svg() and a.svg().startswith("<svg") and "one round trip" in a.svg()
    assert "✗" in a.svg() and a._repr_html_().count("<svg") == 1
    assert repr(a).splitlines() == ["c -> b: Metadata v12 · corr=1", "b --> c: corr=1",
                                    "   ... the connection drops", "c --x b: Produce v9 · corr=2"]


def _many_lifelines(label_at: str) -> SequenceDiagram:
    lanes = [("p", "producer", "client_id checkout-1")] + [(f"b{i}", f"broker {i}", "leader") for i in range(5)]
    seq = SequenceDiagram(lanes, title="long labels between neighbours", column=100, label_at=label_at)
    seq.message("p", "b0", "InitProducerId(checkout, timeout 60000 ms) v5")
    seq.message("b1", "b2", "WriteTxnMarkers(COMMIT, __consumer_offsets-9) v1", note="side note")
    seq.message("b4", "b3", "an answer going left", dashed=True)
    return seq


def test_labels_set_from_the_arrows_start_keep_a_wide_diagram_narrow():
    middle, start = _many_lifelines("middle").svg(), _many_lifelines("start").svg()
    width = lambda svg: int(re.search(r'width="(\d+)"', svg).group(1))  # noqa: E731
    assert width(start) < 1000 < width(middle)            # the centred labels force ~360 px per column
    assert check_svg(start) == [] and check_svg(middle) == []
    diagram = _many_lifelines("start")
    diagram.svg()
    x = {key: diagram._x(key) for key, _, _ in diagram.lifelines}
    assert f'<text x="{x["p"] + 14}" y=' in start          # runs rightwards from just after the producer's line
    assert f'<text x="{x["b4"] - 14}" y=' in start and 'text-anchor="end"' in start   # leftwards: ends there
    assert SequenceDiagram([("a", "a", "")]).label_at == "middle"
    with pytest.raises(ValueError):
        SequenceDiagram([("a", "a", "")], label_at="end")


def test_range_chart_picks_the_highest_common_version():
    chart = RangeChart({ApiKey.METADATA: (0, 13), ApiKey.PRODUCE: (0, 2)},
                       {ApiKey.METADATA: (0, 12), ApiKey.PRODUCE: (3, 11)})
    chosen = {r["api"]: r["chosen"] for r in chart.rows()}
    assert chosen == {"Produce": None, "Metadata": 12}
    assert "no common version" in repr(chart) and chart._repr_html_() == chart._repr_html_()


def test_compat_grid_marks_a_step_down():
    grid = CompatGrid({"kcat": ({"Produce": 7}, {"Produce": 6})}, ["Produce"], names=("new", "old"))
    assert "v7 -> v6" in repr(grid) and "↘" in grid._repr_html_()


def test_api_families_cover_every_api_key_once():
    keys = [k for _, family in FAMILIES.values() for k in family]
    assert sorted(keys) == sorted(int(k) for k in ApiKey) and len(keys) == len(set(keys))
    families = ApiFamilies(served={ApiKey.API_VERSIONS: (0, 4)}, used={"ApiVersions"})
    assert "ApiVersions*" in repr(families) and "serves v0-4" in families._repr_html_()


#: px of a JupyterLab 4 output area in a 1280 px wide window with the file browser open (measured in headless
#: chromium); a wider picture is scaled down to it, and its text with it
NOTEBOOK_OUTPUT_PX = 813


def test_lab03_request_path_is_readable_in_a_laptop_notebook():
    """Graphviz sizes its SVG in points (4/3 px): the smallest text, once the picture is scaled down to the
    output area, must still be 11 px (the single-row layout was 1,665 px wide: 6 px text)."""
    from kafkalab.labs import lab03
    svg = lab03.request_path_diagram().svg()
    width_px = float(re.search(r'<svg width="([\d.]+)pt"', svg).group(1)) * 4 / 3
    smallest_px = min(float(size) for size in re.findall(r'font-size="([\d.]+)"', svg)) * 4 / 3
    shown_px = smallest_px * min(1.0, NOTEBOOK_OUTPUT_PX / width_px)
    assert shown_px >= 11, f"{width_px:.0f} px wide: text shown at {shown_px:.1f} px"
    assert check_svg(svg) == []
