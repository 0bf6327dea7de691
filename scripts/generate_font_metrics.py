"""Print the advance widths of the DejaVu Sans faces as the table in kafkalab/viz/textfit.py.

Reads the TrueType files directly (``head``, ``hhea``, ``hmtx`` and a format-4 ``cmap``), so no font library is
needed. Usage: ``python scripts/generate_font_metrics.py [/usr/share/fonts/truetype/dejavu]``.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

CHARS = "".join(chr(c) for c in range(32, 127)) + "→←✕✗✓·–—…▾▸×≤≥"


def advance_widths(path: Path, chars: str) -> dict[str, int]:
    data = path.read_bytes()
    num_tables = struct.unpack_from(">H", data, 4)[0]
    tables = {}
    for i in range(num_tables):
        tag, _, offset, length = struct.unpack_from(">4sIII", data, 12 + 16 * i)
        tables[tag.decode()] = (offset, length)
    units = struct.unpack_from(">H", data, tables["head"][0] + 18)[0]
    n_metrics = struct.unpack_from(">H", data, tables["hhea"][0] + 34)[0]
    hmtx = tables["hmtx"][0]
    cmap = tables["cmap"][0]
    glyph_of: dict[int, int] = {}
    for i in range(struct.unpack_from(">H", data, cmap + 2)[0]):
        platform, encoding, sub = struct.unpack_from(">HHI", data, cmap + 4 + 8 * i)
        at = cmap + sub
        if platform == 3 and encoding == 1 and struct.unpack_from(">H", data, at)[0] == 4:
            segs = struct.unpack_from(">H", data, at + 6)[0] // 2
            ends = struct.unpack_from(f">{segs}H", data, at + 14)
            starts = struct.unpack_from(f">{segs}H", data, at + 16 + 2 * segs)
            deltas = struct.unpack_from(f">{segs}h", data, at + 16 + 4 * segs)
            ro_at = at + 16 + 6 * segs
            offsets = struct.unpack_from(f">{segs}H", data, ro_at)
            for ch in chars:
                c = ord(ch)
                for k in range(segs):
                    if starts[k] <= c <= ends[k]:
                        if offsets[k] == 0:
                            glyph_of[c] = (c + deltas[k]) & 0xFFFF
                        else:
                            g = struct.unpack_from(">H", data, ro_at + 2 * k + offsets[k] + 2 * (c - starts[k]))[0]
                            glyph_of[c] = (g + deltas[k]) & 0xFFFF if g else 0
                        break
            break
    out = {}
    for ch in chars:
        g = glyph_of.get(ord(ch))
        if not g:
            continue
        g = min(g, n_metrics - 1)
        out[ch] = round(struct.unpack_from(">H", data, hmtx + 4 * g)[0] * 1000 / units)
    return out


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/fonts/truetype/dejavu")
    for name, file in (("REGULAR", "DejaVuSans.ttf"), ("BOLD", "DejaVuSans-Bold.ttf")):
        widths = advance_widths(folder / file, CHARS)
        body = "".join(widths)
        print(f"_{name}_CHARS = {body!r}")
        print(f"_{name}_WIDTHS = {tuple(widths.values())!r}")


if __name__ == "__main__":
    main()
