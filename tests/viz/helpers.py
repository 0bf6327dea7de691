"""Frames and HTML readers shared by the viz tests."""
from __future__ import annotations

import html
import re
import uuid
from html.parser import HTMLParser

from kafkalab.protocol import (encode_request, encode_response, make_request, make_response, request_class,
                               response_class)

VOID = {"input", "br", "img", "hr", "meta", "link", "col", "wbr"}


def metadata_request(client_id="kafkalab", names=("orders", "payments"), correlation_id=42, version=12) -> bytes:
    M = request_class(3)
    topics = tuple(M.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=n) for n in names)
    return encode_request(make_request(M(topics=topics, allow_auto_topic_creation=False), api_version=version,
                                       correlation_id=correlation_id, client_id=client_id))


def metadata_request_no_topics() -> bytes:
    """The facade's example: 16 bytes, topics = null."""
    return encode_request(make_request(request_class(3)(topics=None), api_version=12, correlation_id=7,
                                       client_id="c"))


def api_versions_response() -> bytes:
    R = response_class(18)
    body = R(error_code=0, api_keys=(R.ApiVersion(api_key=0, min_version=0, max_version=11),
                                     R.ApiVersion(api_key=3, min_version=0, max_version=12),
                                     R.ApiVersion(api_key=18, min_version=0, max_version=4)),
             throttle_time_ms=0)
    return encode_response(make_response(body, api_version=4, correlation_id=42))


def produce_request(record_bytes: int) -> bytes:
    P = request_class(0)
    blob = (bytes(range(256)) * (record_bytes // 256 + 1))[:record_bytes]
    body = P(acks=-1, timeout_ms=30000, topic_data=(P.TopicProduceData(
        name="big", partition_data=(P.PartitionProduceData(index=0, records=blob),)),))
    return encode_request(make_request(body, api_version=9, correlation_id=5))


class Checker(HTMLParser):
    """Collects tags and checks that they nest properly (every opened element is closed in order)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list = []
        self.errors: list = []
        self.elements: list = []     # (tag, attrs dict)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()


def check_html(markup: str) -> Checker:
    c = Checker()
    c.feed(markup)
    c.close()
    assert not c.errors, c.errors[:5]
    assert not c.stack, f"unclosed: {c.stack}"
    return c


class DumpReader(HTMLParser):
    """Reads the hex side of the dump: one entry per byte run, with the field it is linked to."""

    def __init__(self, view_id: str):
        super().__init__(convert_charrefs=True)
        self.view_id = view_id
        self.in_dump = 0
        self.current = None          # [owner, text] of the open hex run
        self.depth = 0
        self.runs: list = []         # (owner index or None, kind, text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "pre" and "kl-dump" in cls:
            self.in_dump = 1
            return
        if not self.in_dump:
            return
        if self.current is not None:
            self.depth += 1
            return
        if "kl-hx" in cls:
            owner = None
            if tag == "label":
                prefix = self.view_id + "-"
                assert a["for"].startswith(prefix)
                owner = int(a["for"][len(prefix):])
            kind = next(c[2:] for c in cls if c.startswith("k-"))
            self.current = [owner, kind, ""]
            self.depth = 0

    def handle_endtag(self, tag):
        if tag == "pre" and self.in_dump:
            self.in_dump = 0
            return
        if self.current is not None:
            if self.depth:
                self.depth -= 1
            else:
                self.runs.append(tuple(self.current))
                self.current = None

    def handle_data(self, data):
        if self.current is not None:
            self.current[2] += data


def dump_bytes(view) -> list:
    """``[(owner_index | None, kind, byte), ...]`` for every byte the dump shows, in order."""
    reader = DumpReader(view.view_id)
    reader.feed(view.html())
    out = []
    for owner, kind, text in reader.runs:
        for cell in text.split():
            out.append((owner, kind, int(cell, 16)))
    return out


def dump_text(markup: str) -> list:
    """The lines of the ``<pre class="kl-dump">`` as plain text (what a reader sees)."""
    pre = re.search(r'<pre class="kl-dump">(.*?)</pre>', markup, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", pre)).split("\n")


def caret_column(lines: list) -> tuple:
    """(index of the caret line, column of ``^``)."""
    for i, line in enumerate(lines):
        if line.strip().startswith("^"):
            return i, line.index("^")
    raise AssertionError("no caret line")


def expected_column(offset: int, width: int) -> int:
    k = offset % 16
    return width + 2 + 3 * k + (1 if k >= 8 else 0)


def deepest_row(rows, offset: int):
    """The most specific row covering ``offset`` (greatest depth; the later one on a tie)."""
    best = None
    for r in rows:
        if r.start <= offset < r.end and (best is None or r.depth >= best.depth):
            best = r
    return best


class _Events(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events: list = []

    def handle_starttag(self, tag, attrs):
        self.events.append(("start", tag, tuple(sorted((k, v or "") for k, v in attrs))))

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag not in VOID:
            self.events.append(("end", tag))

    def handle_data(self, data):
        if self.events and self.events[-1][0] == "data":
            self.events[-1] = ("data", self.events[-1][1] + data)
        else:
            self.events.append(("data", data))


def html_events(markup: str) -> list:
    """Tags (attributes sorted, ``hidden`` == ``hidden=""``) and text: equal for equivalent serialisations."""
    p = _Events()
    p.feed(markup)
    p.close()
    return p.events


def embedded(view_markup: str, page: str) -> bool:
    """Whether ``page`` contains ``view_markup`` as the same elements, attributes and text."""
    mine = html_events(view_markup)
    theirs = html_events(page)
    first = mine[0]
    for i, event in enumerate(theirs):
        if event == first and theirs[i:i + len(mine)] == mine:
            return True
    return False
