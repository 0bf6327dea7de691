"""The labs' state machines are drawn from the coordinators' own transition tables."""
from kafkalab.coordinator.transaction.state import TRANSITIONS
from kafkalab.viz.state_diagram import state_machine_diagram, wrap_words

COLOURS = {"A": "#111111", "B": "#222222", "C": "#333333", "Dead": "#444444"}
TABLE = [("A", "B", "go on"), ("B", "C", "and on"), ("B", "B", "stay"), ("C", "Dead", "expire after a long time")]


def test_current_taken_left_out_and_dashed():
    d = state_machine_diagram("t", COLOURS, TABLE, COLOURS, caption="c.", current="B", taken=[("A", "B")],
                              dashed_to=("Dead",), dashed_label_width=10)
    src = d.source
    assert 'B [label="B\n(now)" color="#1971c2" fillcolor="#222222" penwidth=2.5]' in src
    assert 'A [label=A fillcolor="#111111"]' in src and 'C [label=C fillcolor="#ffffff"]' in src
    assert 'A -> B [label="go on" color="#1971c2"' in src and "B -> B" not in src       # self-loops not drawn
    assert 'C -> Dead [label="expire\nafter a\nlong time" constraint=false' in src and "style=dashed" in src
    hidden = state_machine_diagram("t", COLOURS, TABLE, COLOURS, caption="c.", leave_out=("Dead",)).source
    assert "Dead" not in hidden and d.caption == "c."


def test_every_transaction_transition_is_drawn():
    states = {str(a) for a, _, _ in TRANSITIONS} | {str(b) for _, b, _ in TRANSITIONS}
    src = state_machine_diagram("x", sorted(states), TRANSITIONS, {s: "#fff" for s in states}, caption="x.").source
    assert all(f"{a} -> {b}" in src for a, b, _ in TRANSITIONS if str(a) != str(b))


def test_wrap_words_never_cuts_a_word():
    assert wrap_words("a bb ccc dddddddddd e", 4) == "a bb\nccc\ndddddddddd\ne"
