"""Which API versions the broker advertises and accepts: Kafka 3.9's table, or Kafka 4.0's floors (KIP-896).

Theory of operation
-------------------
A Kafka broker knows each API from some lowest to some highest version, and ApiVersions lists exactly that
range. Kafka 4.0 raised many lowest versions (KIP-896: clients older than Kafka 2.1 are no longer served):
ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0, OffsetForLeaderEpoch
v0-1, the ACL APIs, DescribeConfigs and DescribeLogDirs v0, WriteTxnMarkers v0, Fetch v0-3 and Produce v0-2 are
gone. kafkalab plays either broker, chosen by ``kafkalab.api.version.floors``:

``3.9`` (the default)
    what a ZooKeeper-mode Kafka 3.9 broker serves: every version 3.9 knows, old ones included.
``4.0``
    Kafka 4.0's ranges. One exception is kept as Kafka keeps it: ApiVersions still lists **Produce from v0**,
    because librdkafka up to 2.11.0 turns compression off unless Produce v0 is in the range, but a Produce
    v0-2 is refused like any other version below the floor (KAFKA-18659).

Each handler declares the versions kafkalab can serve (:mod:`kafkalab.server.apis.base`); the broker advertises
the part of that range the chosen release has (so a handler able to serve Metadata v13 advertises 12 as 3.9 and
13 as 4.0), and accepts the same range minus Produce's advertised-only versions. A request outside the accepted
range is refused where Kafka refuses it, in the socket server, before any handler runs: the connection is closed
without a response ("Received request api key PRODUCE with version 2 which is not enabled"), because the broker
cannot know how a client of a version it does not speak would read one. ApiVersions itself is the exception
(the v0-format UNSUPPORTED_VERSION reply, see :mod:`kafkalab.network.socket_server`).

The controller-to-broker requests of the ZooKeeper era (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown) are gone from Kafka 4.0 with ZooKeeper itself; kafkalab's cluster is ZooKeeper-based
under either table, its controller sends them, so they stay at 3.9's ranges.

Mirrors: ``clients/.../protocol/ApiKeys.java`` (``PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``),
``ApiVersionsResponse.collectApis``, ``SocketServer.parseRequestHeader`` and ``ApiVersionManager.isApiEnabled``.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple

__all__ = ["KAFKA_3_9", "KAFKA_4_0", "RELEASES", "ApiVersionTable", "api_version_table"]

#: API key -> (lowest, highest) valid version in Kafka 3.9's specs (apache/kafka branch 3.9; the early-access
#: share-group APIs, whose only version is unstable, are left out).
KAFKA_3_9: dict[int, tuple[int, int]] = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 9),
    9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
    18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4),
    27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
    36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1),
    45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 52: (0, 1), 53: (0, 1),
    54: (0, 1), 55: (0, 2), 56: (0, 3), 57: (0, 1), 58: (0, 0), 59: (0, 1), 60: (0, 1), 61: (0, 0), 62: (0, 4),
    63: (0, 1), 64: (0, 0), 65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0), 70: (0, 0), 71: (0, 0),
    72: (0, 0), 73: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0), 82: (0, 0),
}

#: The same for Kafka 4.0 (the 4.0 branch's specs): KIP-896's floors; keys 4-7 have no valid version left.
KAFKA_4_0: dict[int, tuple[int, int]] = {
    0: (3, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
    22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3),
    31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
    40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1),
    49: (0, 1), 50: (0, 0), 51: (0, 0), 52: (0, 2), 53: (0, 1), 54: (0, 1), 55: (0, 2), 56: (2, 3), 57: (0, 2),
    58: (0, 0), 59: (0, 1), 60: (0, 2), 61: (0, 0), 62: (0, 4), 63: (0, 1), 64: (0, 0), 65: (0, 0), 66: (0, 1),
    67: (0, 0), 68: (0, 1), 69: (0, 1), 70: (0, 0), 71: (0, 0), 72: (0, 0), 73: (0, 0), 74: (0, 0), 75: (0, 0),
    80: (0, 0), 81: (0, 0), 82: (0, 0),
}

#: The values of ``kafkalab.api.version.floors``.
RELEASES: dict[str, dict[int, tuple[int, int]]] = {"3.9": KAFKA_3_9, "4.0": KAFKA_4_0}

#: Versions a release advertises below its floor without serving them: Kafka 4.0's Produce from v0.
_ADVERTISED_FROM = {"4.0": {0: 0}}

#: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown: what kafkalab's ZooKeeper-era controller sends.
_CONTROLLER_TO_BROKER = frozenset({4, 5, 6, 7})


class ApiVersionTable(NamedTuple):
    """``advertised``: what ApiVersions lists; ``accepted``: the versions a request may have (API key ->
    (lowest, highest), inclusive)."""
    advertised: dict[int, tuple[int, int]]
    accepted: dict[int, tuple[int, int]]


def api_version_table(served: Mapping[int, tuple[int, int]], floors: str) -> ApiVersionTable:
    """The broker's table for ``floors`` (a key of :data:`RELEASES`), given the versions the handlers serve."""
    release = RELEASES[floors]
    advertised_from = _ADVERTISED_FROM.get(floors, {})
    advertised, accepted = {}, {}
    for key, (lo, hi) in sorted(served.items()):
        kafka = KAFKA_3_9.get(key) if key in _CONTROLLER_TO_BROKER else release.get(key)
        if kafka is None:
            continue
        low, high = max(lo, kafka[0]), min(hi, kafka[1])
        if low > high:
            continue
        accepted[key] = (low, high)
        advertised[key] = (max(lo, advertised_from[key]) if key in advertised_from else low, high)
    return ApiVersionTable(advertised, accepted)
