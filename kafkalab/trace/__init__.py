"""kafkalab.trace -- capturing and recording real Kafka client traffic.

Theory of operation
-------------------
Before building a broker, listen to the clients. This room holds the tools that put kafkalab at the other end
of a real client's socket and keep every frame it sends:

* :mod:`.capture` -- :class:`ScriptedListener` (a recorder on 127.0.0.1 that answers from a script) and
  :func:`capture` (run kcat, confluent-kafka, kafka-python or aiokafka against it, get the requests back);
* :mod:`.replies` -- the reply policies: :func:`first_request_only`, :class:`ScriptedReplies`;
* :mod:`.drivers` -- the small client scripts :func:`capture` runs in a subprocess;
* :mod:`.tap` -- :class:`Tap`, a transparent recording proxy between real clients and a real cluster (one tap
  port per broker, addresses rewritten by :mod:`.tap_rewrite`), exported as JSON lines or as a pcap file
  (:mod:`.pcap`: :func:`write_pcap`, :func:`read_pcap`);
* :mod:`.views` -- the tap's recording for notebooks: connections per client (:class:`ConnectionsTable`), the
  versions each client sent (:class:`VersionMatrix`), batching (:class:`BatchingTable`), one connection as a
  sequence diagram (:func:`sequence_diagram`), and :class:`TapRequestLogs`, the tap as the source of a
  :class:`~kafkalab.viz.live.LiveRequestLog`;
* :mod:`.raw` -- :class:`RawConnection`, the other direction: a bare connection *to* a broker that sends frames
  exactly as given and reads the replies (pipelining by hand, frames built byte by byte, a broker hanging up).

From a shell: ``python -m kafkalab.trace kafka-python produce`` (or ``... aiokafka --first``).

Nothing here is a broker: replies are scripted, nothing is stored. Mirrors the receiving side of Kafka's
``SocketServer`` (``core/src/main/scala/kafka/network/SocketServer.scala``).
"""
from kafkalab.trace.capture import (CLIENTS, CLOSE, DEFAULT_ADVERTISED, CapturedRequest, CaptureError,
                                    CaptureResult, ClientNotAvailable, ConnectionRecord, Fault, ScriptedListener,
                                    ScriptedReplies, available_clients, capture, client_version, count_records,
                                    first_request_only, topic_id_for)
from kafkalab.trace.pcap import PcapFrame, read_pcap, write_pcap
from kafkalab.trace.raw import RawConnection
from kafkalab.trace.tap import Tap, TapEvent, TapFrame
from kafkalab.trace.tap_rewrite import AddressChange
from kafkalab.trace.views import (BatchingTable, ConnectionsTable, TapRequestLogs, VersionMatrix,
                                  connection_summaries, produce_batching, sequence_diagram, versions_used)

__all__ = ["BatchingTable", "ConnectionsTable", "TapRequestLogs", "VersionMatrix", "connection_summaries", "produce_batching",
           "sequence_diagram", "versions_used", "AddressChange", "PcapFrame", "Tap", "TapEvent", "TapFrame", "read_pcap", "write_pcap", "CLIENTS", "CLOSE", "DEFAULT_ADVERTISED", "CapturedRequest", "CaptureError", "CaptureResult",
           "ClientNotAvailable", "ConnectionRecord", "Fault", "RawConnection", "ScriptedListener", "ScriptedReplies",
           "available_clients", "capture", "client_version", "count_records", "first_request_only",
           "topic_id_for"]
