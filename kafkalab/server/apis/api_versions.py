"""ApiVersions: the first request of every connection -- "which versions of which APIs do you speak?".

Theory of operation
-------------------
Since Kafka 0.10 (KIP-35) clients and brokers of different ages talk by *negotiation*: the client asks
ApiVersions, the broker lists every API key it serves with the lowest and highest version, and the client
uses, per API, the highest version both sides know. Nothing is assumed, so a new client works with an old
broker and the other way round.

The answer is built from the handler registry (:mod:`kafkalab.server.apis.base`), so the broker advertises
only APIs it implements, each clipped to the ranges of the Kafka release ``kafkalab.api.version.floors`` names
(:mod:`kafkalab.server.api_version_floors`: 3.9's, or 4.0's floors). From v3 on the request carries the client's software name and version
(KIP-511); Kafka rejects names that do not match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` with
INVALID_REQUEST. The optional tagged fields of v3+ (supported and finalized features) are not sent: one of
the librdkafka versions in the wild (2.0.2, in Debian's kcat) misreads a response carrying several tagged
fields.

A request of a version the broker does not know never reaches this handler: the socket server answers it
in the v0 format with UNSUPPORTED_VERSION (see :mod:`kafkalab.network.socket_server`).

Mirrors: ``KafkaApis.handleApiVersionsRequest``, ``clients/.../requests/ApiVersionsRequest.java``.
"""
from __future__ import annotations

import re

from kafkalab.protocol import ApiKey, ErrorCode, response_class
from kafkalab.server.apis.base import handles

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
Response = response_class(ApiKey.API_VERSIONS)


def _advertised(broker) -> tuple:
    return tuple(Response.ApiVersion(api_key=key, min_version=lo, max_version=hi)
                 for key, (lo, hi) in sorted(broker.api_versions.advertised.items()))


def _error(request, code, message):
    # Kafka lists the supported API keys only in an UNSUPPORTED_VERSION reply (sent by the socket server).
    return Response(error_code=code, api_keys=(), throttle_time_ms=0)


@handles(ApiKey.API_VERSIONS, versions=(0, 4), error_response=_error)
def handle_api_versions(broker, request):
    body = request.body
    if request.context.api_version >= 3:
        name, version = body.client_software_name, body.client_software_version
        if not (_SOFTWARE.match(name or "") and _SOFTWARE.match(version or "")):
            return _error(request, ErrorCode.INVALID_REQUEST, None)
    return Response(error_code=ErrorCode.NONE, api_keys=_advertised(broker), throttle_time_ms=0)
