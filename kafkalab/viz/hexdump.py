"""The annotated frame view: a coloured hex dump and a field tree, linked both ways.

Theory of operation
-------------------
``show_frame(frame)`` decodes a request or response with the annotated decoder and returns a
:class:`FrameView`. In a notebook its ``_repr_html_`` draws

* a header strip that calls out the fields every frame starts with (``size``, ``request_api_key``,
  ``request_api_version``, ``correlation_id``, ``client_id``, the header's ``TAG_BUFFER``);
* a hex dump, 16 bytes a line with decimal offsets (the offsets :class:`~kafkalab.protocol.DecodeError`
  reports) and an ASCII column, each field's bytes in its colour, length prefixes darker;
* the field tree: path, wire type, byte range, decoded value, and a note where the bytes are easy to misread
  ("length byte 0x04 = 3 + 1", "TAG_BUFFER: count byte 0x00 = no tagged fields").

Hovering a byte lights up its field in the tree and vice versa; a click pins the highlight (see
:mod:`kafkalab.viz.style` for how that works without JavaScript). If decoding failed, the bytes decoded so
far keep their colours, the bytes the decoder read of the failing field are red, a caret points at the
failing byte (one cell past the end when the frame is simply too short), and the rest is dimmed.

``repr(view)`` is the same information as plain text, in the spirit of the CodeCrafters Kafka tester's
failure output: a field tree, a hex dump, and a ``^`` under the failing byte.

Everything is deterministic: the HTML depends only on the bytes and the options, plus a counter of how many
views of the same bytes this process has made (so two views in one notebook never share element ids).
Big frames are capped: the dump shows its first and last lines (and the lines around a failure) and the tree
a bounded number of fields, and both say what they left out.
"""
from __future__ import annotations

import hashlib
import html
import re
import textwrap
from typing import Optional

from kafkalab.protocol import Annotation, annotate_request, annotate_response
from kafkalab.viz.fields import TAG_BUFFER_COLOUR, FrameModel, Segment
from kafkalab.viz.fields import byte_range as _range
from kafkalab.viz.style import BASE_CSS, field_rules, shade

__all__ = ["FrameView", "show_frame", "field_table", "reset_ids"]

_COUNTERS: dict[str, int] = {}
_NBSP = "\u00a0"
# Hidden until the stylesheet shows it: the attribute for renderers that keep no styles, the inline style for
# JupyterLab's sanitizer (untrusted outputs), which drops ``hidden`` but keeps ``display``.
_HIDE = 'hidden="hidden" style="display:none"'


def reset_ids() -> None:
    """Forget how many views were made (element ids start again from ``-0``); for tests."""
    _COUNTERS.clear()


def _next_id(digest: str) -> str:
    n = _COUNTERS.get(digest, 0)
    _COUNTERS[digest] = n + 1
    return f"kl{digest}-{n}"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _wire_type_text(wire_type: str) -> str:
    """What a field tree line shows in its wire-type column."""
    return "—" if wire_type == "DECODE_ERROR" else wire_type


def _ascii(b: bytes) -> str:
    return "".join(chr(x) if 0x20 <= x < 0x7F else "." for x in b)


def show_frame(data, *, kind: str = "request", api_key: Optional[int] = None, api_version: Optional[int] = None,
               size_prefix: bool = False, records_hook=None, title: Optional[str] = None,
               max_dump_lines: int = 48, max_tree_rows: int = 200, max_children: int = 40,
               view_id: Optional[str] = None) -> "FrameView":
    """Decode ``data`` (bytes, or an existing :class:`~kafkalab.protocol.Annotation`) and return a view.

    ``kind`` is ``"request"`` or ``"response"``; a response needs ``api_key`` and ``api_version`` (the bytes
    do not say what they answer). ``size_prefix=True`` when ``data`` starts with the int32 size. Decoding
    never raises: a failure is drawn.
    """
    if isinstance(data, FrameView):
        data = data.annotation
    if isinstance(data, Annotation):
        annotation = data
        if kind == "request" and data.rows and not any(r.path == "header.request_api_key" for r in data.rows) \
                and any(r.path == "header.correlation_id" for r in data.rows):
            kind = "response"
    elif kind == "request":
        annotation = annotate_request(data, size_prefix=size_prefix, records_hook=records_hook, strict=False)
    elif kind == "response":
        if api_key is None or api_version is None:
            raise ValueError("a response does not carry its API key or version: pass api_key= and api_version=")
        annotation = annotate_response(data, api_key, api_version, size_prefix=size_prefix,
                                       records_hook=records_hook, strict=False)
    else:
        raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")
    return FrameView(annotation, kind=kind, title=title, max_dump_lines=max_dump_lines,
                     max_tree_rows=max_tree_rows, max_children=max_children, view_id=view_id)


class FrameView:
    """An annotated frame, shown as HTML in notebooks and as text by ``repr``."""

    def __init__(self, annotation: Annotation, *, kind: str = "request", title: Optional[str] = None,
                 max_dump_lines: int = 48, max_tree_rows: int = 200, max_children: int = 40,
                 view_id: Optional[str] = None):
        self.annotation = annotation
        self.kind = kind
        self.model = FrameModel(annotation, kind)
        self.title = title or self.model.title()
        self.max_dump_lines = max(4, max_dump_lines)
        self.max_tree_rows = max(1, max_tree_rows)
        self.max_children = max(4, max_children)
        if view_id is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", view_id):
            raise ValueError(f"view_id must be a CSS identifier (letters, digits, '-', '_'), not {view_id!r}")
        h = hashlib.sha256(self.model.data)
        h.update(f"|{kind}|{self.title}|{len(annotation.rows)}|{annotation.error}".encode())
        self.view_id = view_id or _next_id(h.hexdigest()[:8])
        self._html: Optional[str] = None
        self._text: Optional[str] = None

    # -- facts ----------------------------------------------------------------------------------------
    @property
    def data(self) -> bytes:
        return self.model.data

    @property
    def error(self):
        return self.annotation.error

    @property
    def ok(self) -> bool:
        return self.annotation.error is None

    def table(self):
        """The rows as a pandas DataFrame (see :func:`field_table`)."""
        return field_table(self.annotation)

    # -- layout shared by HTML and text ---------------------------------------------------------------
    def _lines(self) -> list:
        """Line starts of the dump to show, with ``("gap", first_hidden, end_hidden)`` where lines are cut."""
        n = len(self.data)
        off = self.model.error_offset
        extra = 1 if off is not None and off >= n else 0
        total = max(1, (n + extra + 15) // 16)
        if total <= self.max_dump_lines:
            return list(range(total))
        keep = set(range(self.max_dump_lines * 2 // 3))
        keep.update(range(total - max(2, self.max_dump_lines // 6), total))
        if off is not None:
            centre = off // 16
            keep.update(k for k in range(centre - 2, centre + 3) if 0 <= k < total)
        out, prev = [], -1
        for k in sorted(keep):
            if k != prev + 1:
                out.append(("gap", prev + 1, k))
            out.append(k)
            prev = k
        return out

    def _tree_plan(self):
        """Depth-first ``[(node_index | ("more", entries, fields), level), ...]``: long child lists keep their
        first and last entries, and the whole tree stops after ``max_tree_rows`` lines."""
        nodes = self.model.nodes
        sizes = [1] * len(nodes)                  # fields in each subtree (children come after parents)
        for nd in reversed(nodes):
            sizes[nd.index] += sum(sizes[k] for k in nd.children)
        plan: list = []
        budget = self.max_tree_rows

        def more(items):
            return ("more", len(items), sum(sizes[k] for k in items))

        def walk(indices, level):
            nonlocal budget
            cap = self.max_children
            show = list(indices)
            if len(indices) > cap:
                show = indices[:cap - 4] + [more(indices[cap - 4:-2])] + indices[-2:]
            for pos, item in enumerate(show):
                if isinstance(item, tuple):
                    plan.append((item, level))
                    continue
                if budget <= 0:
                    plan.append((more([k for k in show[pos:] if not isinstance(k, tuple)]), level))
                    return
                budget -= 1
                plan.append((item, level))
                walk(nodes[item].children, level + 1)

        walk(self.model.roots, 0)
        return plan

    # -- text -----------------------------------------------------------------------------------------
    def text(self) -> str:
        if self._text is None:
            self._text = self._render_text()
        return self._text

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.text())

    def _render_text(self) -> str:
        m, data = self.model, self.data
        status = "decoded OK" if self.ok else "DECODE ERROR"
        out = [f"{self.title} · {self.kind} · {len(data):,} bytes · {status}"]
        chips = [f"{nd.row.path.replace('header.', '')}={nd.value_text}" for nd in m.header_nodes()]
        if chips:
            out.append("Header: " + "  ".join(chips))
        if not self.ok:
            out.append(f"✗ {m.error_summary()}")
        out.append("")
        out.append("Field tree:")
        for item, level in self._tree_plan():
            pad = "  " * (level + 1)
            if isinstance(item, tuple):
                out.append(f"{pad}… {item[1]:,} more entries ({item[2]:,} fields) not shown")
                continue
            nd = m.nodes[item]
            mark = "✗ " if nd.failing else ""
            name = f"{pad}{mark}{nd.name}"
            wt = nd.row.wire_type if nd.row.wire_type != "DECODE_ERROR" else "—"
            line = f"{name:<40} {wt:<24} {_range(nd.row.start, nd.row.end):>13}  {nd.value_text}"
            if nd.note:
                line += f"   [{nd.note}]"
            out.append(line.rstrip())
        out.append("")
        out.append("Hex dump (offsets in decimal):")
        w = max(5, len(str(len(data))))
        off = m.error_offset
        for item in self._lines():
            if isinstance(item, tuple):
                a, b = item[1] * 16, min(item[2] * 16, len(data))
                out.append(f"{'':>{w}}  ··· {b - a:,} bytes ({item[2] - item[1]:,} lines) not shown ···")
                continue
            start = item * 16
            chunk = data[start:start + 16]
            cells = [f"{x:02x}" for x in chunk]
            if off is not None and off == len(data) and start <= off < start + 16:
                cells.append("··")
            hexpart = " ".join(cells[:8]) + ("  " + " ".join(cells[8:]) if len(cells) > 8 else "")
            out.append(f"{start:>{w}}  {hexpart:<48}  |{_ascii(chunk)}|")
            if off is not None and start <= off < start + 16:
                col = w + 2 + 3 * (off - start) + (1 if off - start >= 8 else 0)
                what = f"byte {off}" + (f" (0x{data[off]:02x})" if off < len(data) else ": past the last byte")
                out.append(" " * col + f"^ {what}")
                out.extend(" " * (w + 2) + part for part in textwrap.wrap(self.error.reason, width=66))
        if not self.ok:
            out.append(f"✗ {m.nodes[m.failing_index].row.path} (decode error)")
        notes = self._cap_notes()
        if notes:
            out.append("Not shown: " + "; ".join(notes))
        return "\n".join(out)

    def _cap_notes(self) -> list:
        notes = []
        hidden_lines = [i for i in self._lines() if isinstance(i, tuple)]
        if hidden_lines:
            count = sum(min(b * 16, len(self.data)) - a * 16 for _, a, b in hidden_lines)
            notes.append(f"{count:,} of {len(self.data):,} bytes of the dump")
        more = [it for it, _ in self._tree_plan() if isinstance(it, tuple)]
        if more:
            notes.append(f"{sum(it[2] for it in more):,} of {len(self.model.nodes):,} fields of the tree")
        return notes

    # -- HTML -----------------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        if self._html is None:
            self._html = self._render_html()
        return self._html

    def html(self) -> str:
        return self._repr_html_()

    def _title_of(self, owner: int, kind: str) -> str:
        nd = self.model.nodes[owner]
        if kind == "prefix":
            return f"{nd.row.path}: {nd.note}"
        if kind == "failing":
            return f"{nd.row.path}: read before the failure ({self.error.reason})"
        return f"{nd.row.path} = {nd.value_text}" if nd.value_text else nd.row.path

    def _piece(self, seg: Segment, chunk_text: str, active: set, is_hex: bool) -> str:
        """One run of bytes of one field on one dump line: a label (hex side) or a span (ASCII side)."""
        m = self.model
        part = "kl-hx" if is_hex else "kl-as"
        if seg.kind in ("undecoded", "unknown") or seg.owner < 0:
            title = f' title="{"not decoded" if seg.kind == "undecoded" else "not covered by any field"}"'
            return f'<span class="kl-b {part} k-{seg.kind}"{title if is_hex else ""}>{chunk_text}</span>'
        nd = m.nodes[seg.owner]
        active.update(m.ancestors(seg.owner))
        targets = " ".join(f"c{a}" for a in m.ancestors(seg.owner))
        style = ""
        tag = ""
        if seg.kind != "failing":
            colour = nd.colour
            if seg.kind == "prefix":
                colour = shade(colour)
            style = f"background:{colour}"
            if nd.row.wire_type == "TAG_BUFFER":
                tag = " k-tag"
                style = f"background:{TAG_BUFFER_COLOUR};box-shadow:inset 0 0 0 1px #adb5bd"
            elif nd.band >= 0 and is_hex:
                edge = "rgba(0,0,0,.45)" if nd.band % 2 == 0 else "rgba(0,0,0,.18)"
                style += f";box-shadow:inset 0 -2px 0 {edge}"
        style = f' style="{style}"' if style else ""
        if not is_hex:   # the ASCII column lights up with the hex side but does not start a highlight
            return f'<span class="kl-b {part} k-{seg.kind}{tag} {targets}"{style}>{chunk_text}</span>'
        title = _e(self._title_of(seg.owner, seg.kind))
        return (f'<label for="{self.view_id}-{seg.owner}" class="kl-b {part} kl-src k-{seg.kind}{tag} '
                f's{seg.owner} {targets}"{style} title="{title}">{chunk_text}</label>')

    def _dump_line(self, k: int, w: int, active: set) -> list:
        m, data = self.model, self.data
        start = k * 16
        end = min(start + 16, len(data))
        off = m.error_offset
        cuts = {start, end, start + 8}
        if off is not None and start <= off < end:
            cuts.update((off, off + 1))
        hex_parts, asc_parts, col = [], [], 0
        for seg in m.segments_in(start, end):
            points = sorted(c for c in cuts if seg.start < c < seg.end)
            bounds = [seg.start, *points, seg.end]
            for a, b in zip(bounds, bounds[1:]):
                piece = Segment(a, b, seg.owner, seg.kind)
                chunk = data[a:b]
                text = " ".join(f"{x:02x}" for x in chunk)
                if off is not None and a == off:
                    text = f'<span class="kl-x">{text}</span>'
                lead = " " if a > start else ""
                if a - start == 8:
                    lead = "  "
                hex_parts.append(lead + self._piece(piece, text, active, True))
                asc_parts.append(self._piece(piece, _e(_ascii(chunk)), active, False))
                col = 3 * (b - start) - 1 + (1 if b - start > 8 else 0)
        if off is not None and off == len(data) and start <= off < start + 16:
            lead = " " if off > start else ""
            if off - start == 8:
                lead = "  "
            hex_parts.append(lead + '<span class="kl-b k-missing" title="the decoder needed more bytes here">'
                             '··</span>')
            col = 3 * (off - start + 1) - 1 + (1 if off - start >= 8 else 0)
        pad = " " * max(0, 48 - col)
        lines = [f'<span class="kl-o">{start:>{w}}</span>  {"".join(hex_parts)}{pad}  '
                 f'<span class="kl-o">|</span>{"".join(asc_parts)}<span class="kl-o">|</span>']
        if off is not None and start <= off < start + 16:
            caret_col = w + 2 + 3 * (off - start) + (1 if off - start >= 8 else 0)
            what = f"byte {off}" + (f" (0x{data[off]:02x})" if off < len(data) else ": past the last byte")
            lines.append(" " * caret_col + f'<span class="kl-caret">^</span> <span class="kl-cmsg">{what}</span>')
            for part in textwrap.wrap(self.error.reason, width=66):
                lines.append(" " * (w + 2) + f'<span class="kl-cmsg">{_e(part)}</span>')
        return lines

    def _render_dump(self, active: set) -> str:
        n = len(self.data)
        w = max(5, len(str(n)))
        ruler = " ".join(f"{i:>2}" for i in range(8)) + "  " + " ".join(f"{i:>2}" for i in range(8, 16))
        lines = [f'<span class="kl-ruler">{"":>{w}}  {ruler}</span>']
        for item in self._lines():
            if isinstance(item, tuple):
                a, b = item[1] * 16, min(item[2] * 16, n)
                lines.append(f'<span class="kl-gap">{"":>{w}}  ··· bytes {a:,}–{b - 1:,} not shown '
                             f'({b - a:,} bytes, {item[2] - item[1]:,} lines) ···</span>')
                continue
            lines.extend(self._dump_line(item, w, active))
        return '<pre class="kl-dump">' + "\n".join(lines) + "</pre>"

    def _tree_line(self, i: int, level: int, group: bool) -> str:
        nd = self.model.nodes[i]
        r = nd.row
        cls = ["kl-l", "kl-src", f"s{i}", f"c{i}"]
        if group:
            cls.append("kl-g")
        if nd.is_header:
            cls.append("kl-hdr")
        if r.wire_type == "TAG_BUFFER":
            cls.append("kl-tag")
        if nd.failing:
            cls.append("kl-fail")
        if nd.in_progress:
            cls.append("kl-open")
        twisty = '<span class="kl-tw"></span>' if group else '<span class="kl-tw"> </span>'
        mark = "✗ " if nd.failing else ""
        wt = _wire_type_text(r.wire_type)
        rng = _range(r.start, r.end)
        note = f'<span class="kl-note"><span class="kl-nb"> — </span>{_e(nd.note)}</span>' if nd.note else ""
        indent = f"padding-left:{level * 0.9:.1f}em"
        return (f'<label for="{self.view_id}-{i}" class="{" ".join(cls)}" title="{_e(r.path)}">'
                f'<span class="kl-n" style="{indent}"><span class="kl-nb">{_NBSP * 3 * level}</span>'
                f'{twisty}<span class="kl-sw" style="background:{nd.colour}">'
                f'</span>{_e(mark + nd.name)}</span> <span class="kl-t"><span>{_e(wt)}</span></span> '
                f'<span class="kl-r">{_e(rng)}</span> <span class="kl-v">{_e(nd.value_text)}</span>{note}</label>')

    def _render_tree(self, active: set) -> str:
        plan = self._tree_plan()
        nodes = self.model.nodes
        out = []
        stack: list[int] = []     # levels with an open <details>
        longest = 0               # the longest wire type shown
        for item, level in plan:
            while stack and stack[-1] >= level:
                out.append("</div></details>")
                stack.pop()
            if isinstance(item, tuple):
                out.append(f'<div class="kl-more" style="padding-left:{level * 0.9 + 1.6:.1f}em">… {item[1]:,} '
                           f'more entries ({item[2]:,} fields) not shown</div>')
                continue
            active.add(item)
            longest = max(longest, len(_wire_type_text(nodes[item].row.wire_type)))
            nd = nodes[item]
            if nd.children:
                folded = (len(nd.children) > 16 and "ARRAY" in nd.row.wire_type) or level >= 5
                is_open = "" if folded and not nd.in_progress else " open"
                out.append(f'<details{is_open}><summary>{self._tree_line(item, level, True)}</summary><div>')
                stack.append(level)
            else:
                out.append(f"<div>{self._tree_line(item, level, False)}</div>")
        out.extend("</div></details>" for _ in stack)
        width = max(5.5, 0.62 * (2 * len(f"{len(self.data):,}") + 1))
        # the wire-type column fits the longest type shown (COMPACT_NULLABLE_STRING, SaslAuthenticateResponse),
        # never narrower than its usual 10.5em: 11-px text in the tree's 12-px font is 11/12 ch a character, plus
        # the 8 px of the type's padding
        type_width = f"max(10.5em,calc({longest * 11 / 12:.1f}ch + 10px))"
        return (f'<div class="kl-tree" style="--kl-rw:{width:.1f}em;--kl-tw:{type_width}">' + "".join(out)
                + "</div>")

    def _render_chips(self, active: set) -> str:
        chips = []
        for nd in self.model.header_nodes():
            active.add(nd.index)
            name = nd.row.path.replace("header.", "")
            tb = " kl-tb" if nd.row.wire_type == "TAG_BUFFER" else ""
            value = nd.value_text
            if nd.row.wire_type == "TAG_BUFFER":
                value = "TAG_BUFFER · " + ("none" if nd.row.value == 0 else nd.value_text)
            chips.append(f'<label for="{self.view_id}-{nd.index}" class="kl-chip kl-src{tb} s{nd.index} '
                         f'c{nd.index}" style="background:{nd.colour}" title="{_e(nd.row.wire_type)} · bytes '
                         f'{_range(nd.row.start, nd.row.end)}"><b>{_e(name)}</b><span class="kl-nb">=</span>'
                         f'{_e(value)}</label> ')
        if not chips:
            return ""
        return '<div class="kl-chips"><span class="kl-chips-label">header:</span> ' + "".join(chips) + "</div>"

    def _inspector(self, active: list) -> str:
        m = self.model
        items = []
        for i in active:
            nd = m.nodes[i]
            r = nd.row
            size = r.end - r.start
            wt = "—" if r.wire_type == "DECODE_ERROR" else r.wire_type
            hexs = self.data[r.start:min(r.end, r.start + 12)].hex(" ")
            if size > 12:
                hexs += " …"
            note = f" — {_e(nd.note)}" if nd.note else ""
            value = f" = {_e(nd.value_text)}" if nd.value_text else ""
            items.append(f'<div class="kl-i i{i}" {_HIDE}><b>{_e(r.path)}</b> · <code>{_e(wt)}</code> · bytes '
                         f'{_e(_range(r.start, r.end))} ({size:,} B) · <code>{_e(hexs)}</code>{value}{note}</div>')
        hint = ('<span class="kl-hint">Hover or click a byte, a field or a header chip: the two views light '
                'up together. Hover a byte for its field\'s details; a click pins the highlight.</span>')
        unpin = f'<label for="{self.view_id}-none" class="kl-unpin" {_HIDE}>✕ unpin</label>'
        return f'<div class="kl-inspect">{unpin}{hint}{"".join(items)}</div>'

    def _legend(self) -> str:
        def sw(style):
            return f'<span class="kl-sw" style="{style}"></span>'
        parts = [f"{sw('background:#74c0fc')}field", f"{sw('background:' + shade('#74c0fc'))}<b>length/count "
                 f"prefix</b> (darker)", f"{sw('background:' + TAG_BUFFER_COLOUR + ';border:1px solid #adb5bd')}"
                 f"TAG_BUFFER", f"{sw('background:#fff;box-shadow:inset 0 -2px 0 rgba(0,0,0,.45)')}"
                 f"array elements (alternating underline)"]
        if not self.ok:
            parts += [f"{sw('background:#ffe3e3;border-color:#e03131')}read of the failing field",
                      f"{sw('background:#fff;border-color:#ced4da')}not decoded"]
        return '<div class="kl-legend">' + '<span class="kl-nb"> · </span>'.join(f"<span>{p}</span>"
                                                                                for p in parts) + "</div>"

    def _render_html(self) -> str:
        m, vid = self.model, self.view_id
        active: set = set()
        chips = self._render_chips(active)
        dump = self._render_dump(active)
        tree = self._render_tree(active)
        ordered = sorted(active)
        kind_cls = "kl-req" if self.kind == "request" else "kl-resp"
        status = ('<span class="kl-badge kl-ok">✓ decoded</span>' if self.ok
                  else '<span class="kl-badge kl-bad">✗ decode error</span>')
        head = (f'<div class="kl-head"><span class="kl-title">{_e(self.title)}</span> '
                f'<span class="kl-badge {kind_cls}">{_e(self.kind)}</span> {status} '
                f'<span class="kl-meta">{len(self.data):,} bytes · {len(m.rows):,} fields</span></div>')
        err = ""
        if not self.ok:
            off = m.error_offset
            failing = m.nodes[m.failing_index].row.path
            decoded = f"bytes 0–{off - 1} decoded" if off > 0 else "nothing decoded"
            err = (f'<div class="kl-err"><b>✗ Decode error</b> in <code>{_e(failing)}</code> at byte '
                   f'<code>{off}</code>: {_e(self.error.reason)}<br><span class="kl-meta">{decoded}; the caret '
                   f'<b>^</b> marks the byte where decoding stopped'
                   f'{" (one past the last byte: the frame is too short)" if off >= len(self.data) else ""}; '
                   f'dimmed bytes were not decoded.</span></div>')
        radios = "".join(f'<input type="radio" class="kl-rad" name="{vid}" id="{vid}-{i}" {_HIDE}>'
                         for i in ordered)
        radios += f'<input type="radio" name="{vid}" id="{vid}-none" {_HIDE}>'
        notes = self._cap_notes()
        foot = (f'<div class="kl-foot"><b>Capped:</b> not shown: {_e("; ".join(notes))}. '
                f'Use <code>field_table(view.annotation)</code> for every row.</div>' if notes else "")
        css = BASE_CSS.strip() + "\n" + field_rules(vid, ordered)
        return (f'<div class="kl-frame {vid}"><style>{css}</style>{radios}{head}{chips}{err}'
                f'<div class="kl-main"><div class="kl-left">{dump}{self._inspector(ordered)}{self._legend()}'
                f'</div>{tree}</div>{foot}</div>')


def field_table(annotation, max_hex_bytes: int = 32):
    """Every row of ``annotation`` (or of a :class:`FrameView`) as a pandas DataFrame.

    Columns: ``path, start, end, wire_type, value, hex`` (``end`` exclusive; ``hex`` cut after
    ``max_hex_bytes`` bytes).
    """
    import pandas as pd

    if isinstance(annotation, FrameView):
        annotation = annotation.annotation
    data = annotation.data
    records = []
    for r in annotation.rows:
        raw = bytes(data[r.start:min(r.end, r.start + max_hex_bytes)]).hex(" ")
        if r.end - r.start > max_hex_bytes:
            raw += f" … ({r.end - r.start:,} bytes)"
        records.append({"path": r.path, "start": r.start, "end": r.end, "wire_type": r.wire_type,
                        "value": r.value, "hex": raw})
    return pd.DataFrame.from_records(records, columns=["path", "start", "end", "wire_type", "value", "hex"])
