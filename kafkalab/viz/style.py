"""The look of the frame view: one stylesheet, and the per-field rules that link bytes and tree.

Theory of operation
-------------------
Notebook outputs are shown in places that run no scripts: an untrusted notebook in JupyterLab, nbconvert's
HTML, GitHub. So the linking between the hex dump and the field tree is done in CSS alone:

* every element that can *start* a highlight (a run of bytes, a tree line, a header chip) carries the class
  ``s<N>`` of its field N; every element that should *light up* carries ``c<N>`` for each field it belongs
  to (a byte of ``topics[0].name`` lights up for ``name``, ``topics[0]``, ``topics`` and ``body``);
* one rule per field, scoped to the view's own class, says "when this view *has* a hovered ``s<N>``, light
  up every ``c<N>``" -- the ``:has()`` selector, in every current browser engine; while anything is
  hovered or pinned, the other bytes of the dump fade, so the lit ones stand out;
* clicking pins a field: each field has a hidden radio button, the bytes and tree lines are ``<label>``s for
  it, and a second rule lights up ``c<N>`` while radio N is checked. One radio group per view, so pinning
  another field releases the first.

The rules only set custom properties (outline width and colour, background, opacity); the base stylesheet
decides how a byte run or a tree line shows them. Field colours are inline ``style`` attributes, which
survive sanitizers that drop ``<style>`` elements (JupyterLab's, for untrusted outputs).
"""
from __future__ import annotations

__all__ = ["BASE_CSS", "field_rules", "shade", "MONO", "UI_FONT"]

MONO = 'ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace'
#: the inline ``style`` of a picture's text (quotes as entities: it sits inside a ``style="..."`` attribute)
UI_FONT = "font:13px/1.4 system-ui,-apple-system,&quot;Segoe UI&quot;,Roboto,sans-serif;color:#1f2328"

HOVER = "--kl-w:2px;--kl-c:#1971c2;--kl-bg:#d0ebff;--kl-op:1"
PINNED = "--kl-w:2px;--kl-c:#e8590c;--kl-bg:#ffe8cc;--kl-op:1"

#: A narrow output area (JupyterLab at 1024 px with the file browser open leaves a picture about 520-640 px): the
#: dump's bytes a little smaller (never below 11 px) so a row still fits, and in the field tree the value and
#: its note go to a line of their own instead of being cut to "…". A container query, so it follows the output
#: area, not the window. A query container is sized as if it were empty, so the frame takes the width it is given
#: (``width:100%``; in a flex row, a share of at least 44em, room for a dump's row): in a shrink-to-fit place -- two
#: frames side by side in a wrapping flex row, as lab 02 shows the Produce v6 and v10 responses -- it would otherwise
#: collapse to its padding, one word per line.
NARROW_CSS = """
.kl-frame{container-type:inline-size;width:100%;flex:1 1 44em}
@container (max-width:640px){
 .kl-frame pre.kl-dump{font-size:11px;padding:6px}
 .kl-frame .kl-l{grid-template-columns:minmax(8em,1fr) auto var(--kl-rw,5.5em)}
 .kl-frame .kl-v{grid-column:1/-1;padding-left:2.4em;white-space:normal;overflow-wrap:anywhere}
 .kl-frame .kl-note{grid-column:1/-1;padding-left:2.4em}
}
"""

BASE_CSS = f"""
.kl-frame{{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;
 background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 12px;box-sizing:border-box;
 max-width:100%;text-align:left}}
.kl-frame *{{box-sizing:border-box}}
.kl-frame .kl-nb{{display:none}}
.kl-frame .kl-head{{display:flex;flex-wrap:wrap;align-items:center;gap:6px 8px;margin:0 0 6px}}
.kl-frame .kl-title{{font-weight:650;font-size:15px;margin-right:4px}}
.kl-frame .kl-badge{{font:600 11px/1.2 system-ui,sans-serif;padding:2px 7px;border-radius:10px;
 background:#eef1f4;color:#424a53;letter-spacing:.02em}}
.kl-frame .kl-req{{background:#dbe4ff;color:#364fc7}}
.kl-frame .kl-resp{{background:#d3f9d8;color:#2b8a3e}}
.kl-frame .kl-ok{{background:#d3f9d8;color:#2b8a3e}}
.kl-frame .kl-bad{{background:#ffe3e3;color:#c92a2a}}
.kl-frame .kl-meta{{color:#656d76;font-size:12px}}
.kl-frame .kl-chips{{display:flex;flex-wrap:wrap;align-items:center;gap:4px;margin:0 0 8px}}
.kl-frame .kl-chips-label{{font:600 11px/1 system-ui,sans-serif;color:#656d76;text-transform:uppercase;
 letter-spacing:.06em;margin-right:2px}}
.kl-frame .kl-chip{{font:12px/1.3 {MONO};padding:2px 7px;border-radius:5px;cursor:pointer;
 border:1px solid rgba(0,0,0,.10);outline:var(--kl-w,0px) solid var(--kl-c,transparent);outline-offset:1px}}
.kl-frame .kl-chip b{{font-weight:600;color:#424a53;margin-right:4px;font-family:system-ui,sans-serif;
 font-size:11px}}
.kl-frame .kl-chip.kl-tb{{border-style:dashed;border-color:#868e96}}
.kl-frame .kl-err{{border-left:4px solid #e03131;background:#fff5f5;padding:6px 10px;margin:0 0 8px;
 border-radius:4px;color:#1f2328}}
.kl-frame .kl-err b{{color:#c92a2a}}
.kl-frame .kl-err code{{font-family:{MONO};font-size:12px;background:#ffe3e3;padding:0 3px;border-radius:3px}}
.kl-frame .kl-main{{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}}
.kl-frame .kl-left{{flex:0 0 auto;width:min-content;max-width:100%}}
.kl-frame pre.kl-dump{{margin:0;padding:8px 10px;background:#fbfcfd;border:1px solid #e1e4e8;border-radius:6px;
 font:12.5px/1.75 {MONO};overflow-x:auto;color:#1f2328;white-space:pre}}
.kl-frame .kl-o,.kl-frame .kl-ruler{{color:#8c959f}}
.kl-frame .kl-ruler{{font:inherit;color:#8c959f}}
.kl-frame .kl-gap{{color:#8c959f;font-style:italic}}
.kl-frame .kl-b{{border-radius:3px;cursor:pointer;padding:1px 0;opacity:var(--kl-op,1);
 outline:var(--kl-w,0px) solid var(--kl-c,transparent);outline-offset:0}}
.kl-frame .k-prefix{{font-weight:700}}
.kl-frame .k-tag{{color:#495057}}
.kl-frame .k-failing{{background:#ffe3e3;color:#c92a2a;text-decoration:underline wavy #e03131;
 text-underline-offset:3px}}
.kl-frame .k-undecoded{{color:#adb5bd;cursor:default}}
.kl-frame .k-missing{{color:#e03131;outline:1.5px dashed #e03131;border-radius:3px}}
.kl-frame .kl-x{{box-shadow:inset 0 0 0 2px #e03131;border-radius:3px;color:#c92a2a;font-weight:700}}
.kl-frame .kl-caret{{color:#e03131;font-weight:800}}
.kl-frame .kl-cmsg{{color:#c92a2a;font-weight:600}}
.kl-frame .kl-inspect{{margin-top:6px;min-height:2.6em;padding:5px 9px;border:1px solid #e1e4e8;
 border-radius:6px;background:#f6f8fa;font-size:12.5px;max-width:46em}}
.kl-frame .kl-i{{display:none}}
.kl-frame .kl-i code{{font-family:{MONO}}}
.kl-frame .kl-hint{{color:#656d76}}
.kl-frame .kl-unpin{{display:none;float:right;cursor:pointer;color:#e8590c;font-size:11.5px;margin-left:8px}}
.kl-frame .kl-legend{{display:flex;flex-wrap:wrap;gap:4px 12px;margin-top:6px;color:#656d76;font-size:11.5px}}
.kl-frame .kl-legend span.kl-sw{{vertical-align:-1px}}
.kl-frame .kl-tree{{flex:1 1 500px;min-width:min(500px,100%);max-height:42em;overflow:auto;border:1px solid #e1e4e8;
 border-radius:6px;padding:4px 0;font:12px/1.5 {MONO};background:#fff}}
.kl-frame .kl-tree details{{margin:0;padding:0}}
.kl-frame .kl-tree summary{{list-style:none;cursor:pointer;display:block;outline:none}}
.kl-frame .kl-tree summary::-webkit-details-marker{{display:none}}
.kl-frame .kl-l{{display:grid;align-items:baseline;
 grid-template-columns:minmax(9em,18em) minmax(6em,var(--kl-tw,10.5em)) var(--kl-rw,5.5em) minmax(6em,1fr);
 column-gap:8px;
 padding:1px 10px 1px 6px;cursor:pointer;background:var(--kl-bg,transparent);
 box-shadow:inset 3px 0 0 var(--kl-c,transparent)}}
.kl-frame .kl-l:hover{{background:var(--kl-bg,#f6f8fa)}}
.kl-frame .kl-n{{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}}
.kl-frame .kl-tw{{display:inline-block;width:1em;color:#8c959f;font-size:10px}}
.kl-frame details[open]>summary .kl-tw::before{{content:"▾"}}
.kl-frame details:not([open])>summary .kl-tw::before{{content:"▸"}}
.kl-frame .kl-sw{{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:5px;
 vertical-align:-.05em;border:1px solid rgba(0,0,0,.15)}}
.kl-frame .kl-t{{font-size:11px;color:#495057;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}}
.kl-frame .kl-t span{{background:#f1f3f5;border-radius:3px;padding:0 4px}}
.kl-frame .kl-l.kl-tag .kl-t span{{background:#fff;border:1px dashed #868e96}}
.kl-frame .kl-r{{color:#656d76;white-space:nowrap;text-align:right}}
.kl-frame .kl-v{{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}}
.kl-frame .kl-note{{grid-column:2/-1;color:#7048e8;font-size:11px;font-family:system-ui,sans-serif;
 white-space:normal;margin-top:-1px}}
.kl-frame .kl-l.kl-g .kl-n{{font-weight:650}}
.kl-frame .kl-l.kl-hdr .kl-n{{color:#364fc7}}
.kl-frame .kl-l.kl-fail{{background:var(--kl-bg,#fff5f5)}}
.kl-frame .kl-l.kl-fail .kl-n,.kl-frame .kl-l.kl-fail .kl-v,.kl-frame .kl-l.kl-fail .kl-note{{color:#c92a2a}}
.kl-frame .kl-l.kl-open .kl-v{{color:#c92a2a}}
.kl-frame .kl-more{{color:#8c959f;font-style:italic;padding:1px 10px}}
.kl-frame .kl-foot{{margin-top:6px;color:#656d76;font-size:11.5px}}
.kl-frame .kl-foot b{{color:#c92a2a;font-weight:600}}
{NARROW_CSS}"""


def field_rules(scope: str, indices) -> str:
    """The per-field linking rules for the view whose class and radio group are ``scope``."""
    pinned, hover, inspect = [], [], []
    for i in indices:
        on = f".{scope}:has(#{scope}-{i}:checked)"
        hv = f".{scope}:has(.s{i}:hover)"
        targets = f":is(.c{i},details:not([open]):has(.c{i})>summary)"
        pinned.append(f"{on} {targets}")
        hover.append(f"{hv} {targets}")
        inspect.append(f"{hv} .i{i},{on} .i{i}")
    if not pinned:
        return ""
    spotlight = f".{scope}:has(.kl-src:hover) .kl-b,.{scope}:has(.kl-rad:checked) .kl-b{{--kl-op:.38}}"
    out = [spotlight, ",\n".join(pinned) + "{" + PINNED + "}", ",\n".join(hover) + "{" + HOVER + "}",
           ",\n".join(inspect) + "{display:block!important}",
           f".{scope}:has(.kl-src:hover) .kl-hint,.{scope}:has(.kl-rad:checked) .kl-hint{{display:none}}",
           f".{scope}:has(.kl-rad:checked) .kl-unpin{{display:inline!important}}"]
    return "\n".join(out)


def shade(colour: str, amount: float = 0.18) -> str:
    """``colour`` (``#rrggbb``) darkened towards black by ``amount``: length prefixes use it."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    k = 1.0 - amount
    return f"#{int(r * k):02x}{int(g * k):02x}{int(b * k):02x}"
