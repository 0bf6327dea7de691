"""A coordinator's state machine drawn from its transition table (Graphviz), with where it is now and where it went.

Theory of operation
-------------------
kafkalab's state machines are tables that the code reads (the group coordinator's
``kafkalab/coordinator/group/state.py``, the transaction coordinator's ``kafkalab/coordinator/transaction/state.py``:
``(from, to, why)`` triples). The labs draw the same tables, so a picture cannot drift from the code:
:func:`state_machine_diagram` makes one box per state and one labelled edge per transition. The current state is
outlined (and marked "now"); states and edges already taken are filled and drawn blue, so a learner can follow a
group or a transaction through the machine step by step.

Labels are wrapped at a number of characters (Graphviz sizes the boxes from the font, DejaVu Sans, that the
browser draws: :data:`kafkalab.viz.textfit.GRAPHVIZ_FONT`). Edges into a "sink" state (Dead) may be drawn dashed and
left out of the ranking, so they do not stretch the picture; states a lab does not teach may be left out.

Mirrors no Kafka class: Kafka's state machines are Scala/Java enums with their valid previous states
(``GroupState``, ``TransactionState``), which the tables copy.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

from kafkalab.viz.diagram import Diagram
from kafkalab.viz.textfit import GRAPHVIZ_FONT

__all__ = ["state_machine_diagram", "wrap_words"]

TAKEN_EDGE = {"color": "#1971c2", "penwidth": "2", "fontcolor": "#1864ab"}


def wrap_words(text: str, width: int) -> str:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word keeps a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines)


def state_machine_diagram(name: str, states: Iterable[str], transitions: Iterable, colours: Mapping[str, str], *,
                          caption: str, current: Optional[str] = None, taken: Iterable[tuple[str, str]] = (),
                          leave_out: Iterable[str] = (), dashed_to: Iterable[str] = (), label_width: int = 22,
                          dashed_label_width: int = 30, nodesep: str = "0.6", ranksep: str = "1.1",
                          body: Iterable[str] = ()) -> Diagram:
    """The machine of ``transitions`` (``(from, to, why)``; self-loops are not drawn) over ``states``, left to right.

    ``current`` is outlined and marked "(now)"; states reached by an edge in ``taken`` get their colour from
    ``colours``, the others stay white; edges in ``taken`` are blue. States in ``leave_out`` and their edges are
    not drawn; edges into a state of ``dashed_to`` are dashed and do not constrain the ranks. ``body`` adds raw
    Graphviz statements (e.g. ``{rank=same; "A"; "B"}``)."""
    import graphviz

    taken = {(str(a), str(b)) for a, b in taken}
    visited = {a for a, _ in taken} | {b for _, b in taken}
    leave_out, dashed_to = set(leave_out), set(dashed_to)
    g = graphviz.Digraph(name, graph_attr={"rankdir": "LR", "bgcolor": "transparent", "nodesep": nodesep,
                                           "ranksep": ranksep, "fontname": GRAPHVIZ_FONT},
                         node_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "12", "shape": "box",
                                    "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#868e96"},
                         edge_attr={"fontname": GRAPHVIZ_FONT, "fontsize": "9", "color": "#868e96",
                                    "fontcolor": "#495057", "arrowsize": "0.6"})
    for state in states:
        state = str(state)
        if state in leave_out:
            continue
        if current is not None and state == str(current):
            g.node(state, f"{state}\n(now)", fillcolor=colours[state], color="#1971c2", penwidth="2.5")
        else:
            g.node(state, state, fillcolor=colours[state] if state in visited else "#ffffff")
    g.body.extend(body)
    for a, b, why in transitions:
        a, b = str(a), str(b)
        if a == b or a in leave_out or b in leave_out:
            continue
        style = dict(TAKEN_EDGE) if (a, b) in taken else {}
        if b in dashed_to:
            style.update(style="dashed", fontsize="9", constraint="false")
        g.edge(a, b, label=wrap_words(why, dashed_label_width if b in dashed_to else label_width), **style)
    return Diagram(g, caption=caption)
