"""kafkalab.server -- the broker: configuration, request handling (KafkaApis), partitions and the replica manager.

* :mod:`.config` -- ``server.properties`` with Kafka's names and start-up validation.
* :mod:`.broker` -- :class:`KafkaServer`: start-up and shutdown in Kafka's order.
* :mod:`.request_handler` -- the ``num.io.threads`` workers on the request queue.
* :mod:`.apis` -- one module per API family; the registry doubles as the ApiVersions advertisement.
* :mod:`.metadata_cache`, :mod:`.partition`, :mod:`.replica_manager`, :mod:`.admin_manager`.

Mirrors ``core/src/main/scala/kafka/server/``. The broker never imports kafkalab's clients.
"""
from kafkalab.server.broker import KafkaServer
from kafkalab.server.config import KafkaConfig

__all__ = ["KafkaServer", "KafkaConfig"]
