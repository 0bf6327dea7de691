"""kafkalab.viz -- pictures of what is on the wire, for notebooks.

Theory of operation
-------------------
A Kafka frame is a few dozen bytes that mean nothing until you know where each field starts and ends. This
room turns the annotated decoder's rows (:func:`kafkalab.protocol.annotate_request` /
:func:`~kafkalab.protocol.annotate_response`) into views a learner can read:

* :func:`show_frame` -- the annotated frame view: a coloured hex dump and a field tree, linked both ways
  (hover or click a byte to find its field, a field to find its bytes), with the header fields called out,
  Kafka's ``N + 1`` lengths and ``TAG_BUFFER`` bytes labelled, and on a decode failure a caret under the
  failing byte. ``repr()`` of the view is the same as text, for terminals and logs.
* :func:`field_table` -- the same rows as a pandas DataFrame, for people who prefer tables.
* :class:`Diagram` / :func:`render_svg` -- Graphviz DOT to SVG through the ``graphviz-pure`` executable, so no
  system Graphviz is needed; :func:`frame_layout_diagram` draws a frame as ``size -> header -> body``.
* :class:`SequenceDiagram` -- who sent what to whom, in order (deterministic SVG), with :data:`API_COLOURS`;
* :class:`RangeChart`, :class:`CompatGrid`, :class:`ApiFamilies` -- API versions: a client's range against a
  broker's, the versions clients used against two brokers, every API key by family.
from kafkalab.viz.live import ClusterControls, ClusterDashboard, LiveRequestLog, progress

Three rules hold for everything here, because notebooks are checked by nbval and read on GitHub:

1. **Deterministic.** The same input gives the same HTML/SVG string; element ids come from a hash of the
   bytes and a per-process counter, never from ``id()``, clocks or randomness.
2. **No scripts.** Interactivity is CSS (``:hover``, ``:has()``, radio buttons behind ``<label>``s), so it
   works in nbconvert's HTML too; where even ``<style>`` is stripped the colours (inline styles), tooltips
   and the monospace layout still read correctly.
3. **Bounded.** Big frames are cut (first and last lines of the dump, a capped tree) and the view says so.

Usage::

    from kafkalab.protocol import encode_request, make_request, request_class
    from kafkalab.viz import show_frame
    frame = encode_request(make_request(request_class(3)(topics=None), api_version=12, correlation_id=7))
    show_frame(frame)                       # in a notebook cell
    show_frame(frame[:-3])                  # a truncated frame: the caret points past the last byte
    show_frame(reply, kind="response", api_key=3, api_version=12)    # responses do not name their API
    show_frame(produce, records_hook=kafkalab.records.annotate_records)   # expand record batches too

This room sits above :mod:`kafkalab.protocol` (and may use :mod:`kafkalab.records` to expand record
batches); nothing below imports it.
"""
from kafkalab.viz.diagram import Diagram, GraphvizNotFoundError, find_renderer, frame_layout_diagram, render_svg
from kafkalab.viz.hexdump import FrameView, field_table, reset_ids, show_frame
from kafkalab.viz.live import ClusterControls, ClusterDashboard, LiveRequestLog, progress
from kafkalab.viz.sequence import API_COLOURS, SequenceDiagram
from kafkalab.viz.versions import FAMILIES, ApiFamilies, CompatGrid, RangeChart

__all__ = ["show_frame", "FrameView", "field_table", "reset_ids", "Diagram", "render_svg", "find_renderer",
           "GraphvizNotFoundError", "frame_layout_diagram", "SequenceDiagram", "API_COLOURS", "RangeChart",
           "CompatGrid", "ApiFamilies", "FAMILIES", "ClusterDashboard", "ClusterControls", "LiveRequestLog", "progress"]
