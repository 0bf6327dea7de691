"""ApiVersions negotiation: which version of each API a client and one broker both speak.

Theory of operation
-------------------
Kafka never negotiates a protocol version for a whole connection. Instead, right after connecting, the client
sends ``ApiVersionsRequest`` and the broker lists, for every API it implements, the lowest and highest
version it accepts. From then on the client picks, **per request**, the highest version inside both its own
range and the broker's (Java's ``NodeApiVersions.latestUsableVersion``). When the ranges do not overlap the
API is unusable with that broker, and the error names the API and both ranges.

Two quirks make the first exchange work between any client and any broker (KIP-511):

* the ApiVersions *response* header is always v0, whatever version was asked, so it can be read before any
  version is known;
* a broker that does not know the requested ApiVersions version answers ``UNSUPPORTED_VERSION`` in the v0
  body format and lists the ApiVersions range it does support; the client retries with the highest version
  in that range (or v0 when the list is empty).

The client's own range per API is what kafkalab's codec can encode, narrowed by :data:`CLIENT_RANGES` where
the client's code depends on semantics of some versions (Produce below v3 cannot carry RecordBatch v2; Produce
v13 names topics by id, which this client does not track).

Mirrors: ``clients/src/main/java/org/apache/kafka/clients/{NodeApiVersions,ApiVersions}.java`` and the
ApiVersions part of ``NetworkClient.java``.
"""
from __future__ import annotations

from typing import Optional

from kafkalab.protocol import ApiException, ApiKey, ErrorCode, api_name, request_schema

__all__ = ["CLIENT_RANGES", "NodeApiVersions", "UnsupportedVersionError", "client_range", "latest_common_version",
           "version_span"]

#: (min, max) overrides of the codec's ranges, where the client's code relies on a version's semantics.
CLIENT_RANGES: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 12),               # magic 2 from v3; v13 names topics by id
    ApiKey.FETCH: (4, 12),                 # v13+ names topics by id
    ApiKey.METADATA: (1, 12),              # v0 has no "all topics" request
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.OFFSET_COMMIT: (2, 9),          # v10 names topics by id
    ApiKey.OFFSET_FETCH: (1, 9),           # v10 names topics by id
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),  # v4+ is the brokers' batched form (KIP-890 verification)
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 4),                # v5 bumps the epoch at every EndTxn (transaction.version 2)
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),      # v5 implies AddOffsetsToTxn (transaction.version 2)
}


class UnsupportedVersionError(ApiException):
    """No version of an API is usable with a broker (Java's ``UnsupportedVersionException``, an ``ApiException``
    for UNSUPPORTED_VERSION). The broker-side decoding error of the same name in :mod:`kafkalab.protocol` is a
    different thing: malformed input, not a failed negotiation."""

    error_code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self, message: str):
        super().__init__(None, message)


def latest_common_version(client_range: tuple[int, int],
                          broker_range: Optional[tuple[int, int]]) -> Optional[int]:
    """The rule itself: the highest version inside both ranges, or None when they do not overlap (or the broker
    does not serve the API at all)."""
    if broker_range is None:
        return None
    low, high = max(client_range[0], broker_range[0]), min(client_range[1], broker_range[1])
    return high if low <= high else None


def version_span(versions: tuple[int, int]) -> str:
    """``(3, 9)`` -> ``"3-9"``, ``(4, 4)`` -> ``"4"``: a range as Kafka's docs and tools write it."""
    return f"{versions[0]}" if versions[0] == versions[1] else f"{versions[0]}-{versions[1]}"


def client_range(api_key: int) -> tuple[int, int]:
    """The versions of ``api_key`` this client can send."""
    if api_key in CLIENT_RANGES:
        return CLIENT_RANGES[api_key]
    valid = request_schema(api_key).valid_versions
    return valid.lo, valid.hi


class NodeApiVersions:
    """What one broker advertised: ``{api_key: (min_version, max_version)}``."""

    def __init__(self, ranges: dict[int, tuple[int, int]], node: str = "broker"):
        self.ranges = dict(ranges)
        self.node = node

    @classmethod
    def from_response(cls, body, node: str = "broker") -> "NodeApiVersions":
        return cls({k.api_key: (k.min_version, k.max_version) for k in body.api_keys}, node)

    def supports(self, api_key: int) -> bool:
        return api_key in self.ranges

    def latest_usable_version(self, api_key: int, low: Optional[int] = None, high: Optional[int] = None) -> int:
        """The highest version in [client min, client max] ∩ [broker min, broker max] (optionally narrowed)."""
        cmin, cmax = client_range(api_key)
        if low is not None:
            cmin = max(cmin, low)
        if high is not None:
            cmax = min(cmax, high)
        name = api_name(api_key)
        if api_key not in self.ranges:
            raise UnsupportedVersionError(f"The {self.node} does not support {name} (API key {api_key})")
        bmin, bmax = self.ranges[api_key]
        usable = latest_common_version((cmin, cmax), (bmin, bmax))
        if usable is None:
            raise UnsupportedVersionError(
                f"The {self.node} supports {name} v{bmin}-{bmax} but kafkalab's client needs "
                f"{name} v{cmin}-{cmax}: no common version")
        return usable

    def table(self) -> list[dict]:
        """One row per API the broker advertised, with the version this client would use (or None)."""
        rows = []
        for key, (bmin, bmax) in sorted(self.ranges.items()):
            try:
                name = api_name(key)
            except (KeyError, ValueError):
                name = f"Unknown({key})"
            try:
                used = self.latest_usable_version(key)
            except (KeyError, ValueError, UnsupportedVersionError):
                used = None
            rows.append({"api_key": key, "api": name, "broker_min": bmin, "broker_max": bmax, "used": used})
        return rows

    def __repr__(self) -> str:
        return f"NodeApiVersions({self.node}, {len(self.ranges)} APIs)"
