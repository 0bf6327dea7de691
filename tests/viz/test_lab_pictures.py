"""The pictures several labs share: SequenceDiagram and the API-version charts (deterministic, text twins)."""
from kafkalab.protocol import ApiKey
from kafkalab.viz import API_COLOURS, FAMILIES, ApiFamilies, CompatGrid, RangeChart, SequenceDiagram


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
