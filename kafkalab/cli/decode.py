"""``kafkalab decode``: the annotated field tree and hex dump of one frame, in a terminal.

Give the frame as hex (spaces and colons allowed) or as a file of raw bytes (``-`` reads stdin). A request
needs nothing else: its header names the API. A response does not carry its API key or version, so pass
``--response API_KEY VERSION``, exactly as a client must remember what it asked.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("decode", help="decode one request or response frame and show every byte",
                       description=__doc__.splitlines()[0])
    p.add_argument("frame", help="hex bytes, a file of raw bytes, or - for stdin")
    p.add_argument("--response", nargs=2, type=int, metavar=("API_KEY", "VERSION"),
                   help="decode a response to this API key and version")
    p.add_argument("--size-prefix", action="store_true", help="the frame starts with its int32 size")
    p.add_argument("--records", action="store_true", help="also decode record batches inside the frame")
    p.set_defaults(run=run)


def read_frame(arg: str) -> bytes:
    if arg == "-":
        return sys.stdin.buffer.read()
    path = Path(arg)
    if path.is_file():
        return path.read_bytes()
    text = re.sub(r"[\s:|]", "", arg)
    if text.startswith(("0x", "0X")):
        text = text[2:]
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise SystemExit(f"kafkalab decode: {arg!r} is neither a file nor hex bytes") from None


def run(args) -> int:
    from kafkalab.viz import show_frame

    data = read_frame(args.frame)
    hook = None
    if args.records:
        from kafkalab.records import annotate_records as hook
    if args.response:
        view = show_frame(data, kind="response", api_key=args.response[0], api_version=args.response[1],
                          size_prefix=args.size_prefix, records_hook=hook)
    else:
        view = show_frame(data, size_prefix=args.size_prefix, records_hook=hook)
    print(view.text())
    return 0 if view.ok else 1
