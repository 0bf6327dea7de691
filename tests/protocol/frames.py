"""Valid request and response frames for many APIs, built with the JSON reference encoder (``wire.py``)."""
from __future__ import annotations

import functools
import struct

from . import specs as S
from . import wire as W


def request_frame(api_key: int, version: int, *, nulls: bool = False, correlation_id: int = 5,
                  client_id: bytes = b"kafkalab") -> bytes:
    req, _ = S.api_pairs()[api_key]
    body = W.encode_struct(req, req.get("fields", []), version, W.sample(req, version, nulls=nulls))
    hv = S.request_header_version(api_key, version)
    head = struct.pack(">hhi", api_key, version, correlation_id)
    if hv >= 1:
        head += struct.pack(">h", len(client_id)) + client_id
    if hv == 2:
        head += b"\x00"
    return head + body


def response_frame(api_key: int, version: int, *, nulls: bool = False, correlation_id: int = 5) -> bytes:
    _, resp = S.api_pairs()[api_key]
    body = W.encode_struct(resp, resp.get("fields", []), version, W.sample(resp, version, nulls=nulls))
    rv = S.response_header_version(api_key, version)
    return struct.pack(">i", correlation_id) + (b"\x00" if rv == 1 else b"") + body


@functools.cache
def corpus(versions_per_key: str = "edges") -> tuple:
    """``(kind, api_key, version, frame)`` for every API key: its lowest, first flexible and highest versions."""
    out = []
    for key, (req, _) in S.api_pairs().items():
        valid = S.valid_versions(req)
        picks = {valid[0], valid[-1]}
        flex = [v for v in valid if S.flexible(req, v)]
        if flex:
            picks.add(flex[0])
        if versions_per_key == "all":
            picks = set(valid)
        for v in sorted(picks):
            for nulls in (False, True):
                out.append(("request", key, v, request_frame(key, v, nulls=nulls)))
                out.append(("response", key, v, response_frame(key, v, nulls=nulls)))
    return tuple(out)
