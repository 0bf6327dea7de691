"""kafkalab.network -- sockets to requests and back: listeners, processors, the request channel.

* :mod:`.endpoint` -- ``PLAINTEXT://host:port`` listeners and security protocols.
* :mod:`.request_channel` -- the bounded request queue, response actions, request timing, metrics and log.
* :mod:`.acceptor` -- one accept loop per listening socket, counting each connection before it is served.
* :mod:`.connection_quotas` -- max.connections (broker, listener), max.connections.per.ip, creation rate.
* :mod:`.socket_server` -- per-connection processors; Kafka's rules for bad input; memory-pool muting.
* :mod:`.response_send` -- writing a response: pieces in memory joined, log slices with sendfile or through TLS.

Mirrors ``core/src/main/scala/kafka/network/``. This room knows nothing about logs, partitions or clients.
"""
from kafkalab.network.endpoint import EndPoint, parse_listeners, parse_protocol_map
from kafkalab.network.request_channel import (ANONYMOUS, CloseConnectionResponse, NetworkRequest, NoOpResponse,
                                              RequestChannel, RequestContext, RequestLog, RequestMetrics,
                                              RequestRecord, SendResponse)
from kafkalab.network.response_send import SENDFILE_THRESHOLD, FileRegion, RecordsSlices
from kafkalab.network.socket_server import SocketServer

__all__ = ["EndPoint", "parse_listeners", "parse_protocol_map", "ANONYMOUS", "RequestChannel",
           "RequestContext", "NetworkRequest", "RequestLog", "RequestMetrics", "RequestRecord", "SendResponse",
           "NoOpResponse", "CloseConnectionResponse", "SocketServer", "FileRegion", "RecordsSlices",
           "SENDFILE_THRESHOLD"]
