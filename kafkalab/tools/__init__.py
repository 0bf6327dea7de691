"""kafkalab.tools -- command-line tools named after the Kafka tools they mirror.

Theory of operation
-------------------
Kafka ships admin and debugging scripts (``bin/kafka-*.sh``) that work directly on a broker's files or speak
the protocol. kafkalab keeps their names, flags and output shapes so that what a learner sees here is what
the real tool prints on a real cluster. Each tool is a module with ``main(argv)`` (and ``add_parser`` so the
``kafkalab`` CLI can mount it as a sub-command):

* :mod:`.dump_log` -- ``kafka-dump-log.sh``: print segment, index, snapshot and checkpoint files.
  ``python -m kafkalab.tools.dump_log --files ...``; ``kafkalab dump-log`` once mounted. Its
  ``--offsets-decoder`` and ``--transaction-log-decoder`` parsers are :mod:`.record_decoders`.
* :mod:`.replay` -- send a JSON-lines event file to a topic at a chosen rate, keys and event times kept (the
  way ``data/clickstream/events.jsonl`` gets into the labs' topics): ``replay(path, topic, bootstrap)`` or
  ``kafkalab replay FILE --bootstrap-server ... --topic ...``. Like Kafka's producer tools it speaks through the
  clients (``kafkalab.clients``), never the broker's rooms.
* :mod:`.configs` -- ``kafka-configs.sh`` for SCRAM users (``kafkalab configs``).
* :mod:`.transactions` -- ``kafka-transactions.sh`` (``kafkalab transactions list|describe|describe-producers|
  find-hanging|abort``), through the admin client's transaction operations.
* :mod:`.producer_perf`, :mod:`.consumer_perf` -- ``kafka-producer-perf-test.sh`` and
  ``kafka-consumer-perf-test.sh`` (``kafkalab producer-perf-test`` / ``consumer-perf-test``), through the clients;
  :mod:`.throughput_throttler` paces ``--throughput`` as Kafka's ``ThroughputThrottler``.
* :mod:`.topics` -- ``kafka-topics.sh`` (``kafkalab topics --create|--list|--describe|--alter|--delete``).
* :mod:`.console_consumer` -- ``kafka-console-consumer.sh`` (``kafkalab console-consumer``) and Kafka's
  ``DefaultMessageFormatter``, through kafkalab's consumer.
* :mod:`.console_producer` -- ``kafka-console-producer.sh`` (``kafkalab console-producer``) and its
  ``LineMessageReader``, through kafkalab's producer.
* :mod:`.consumer_groups` -- ``kafka-consumer-groups.sh`` (``kafkalab consumer-groups --list|--describe|--delete|
  --reset-offsets|--delete-offsets``), through the admin client's group operations and ListOffsets.
* :mod:`.get_offsets` -- ``kafka-get-offsets.sh`` (``kafkalab get-offsets``: ``topic:partition:offset`` lines).
* :mod:`.delete_records` -- ``kafka-delete-records.sh`` (``kafkalab delete-records --offset-json-file F``).
* :mod:`.log_dirs` -- ``kafka-log-dirs.sh`` (``kafkalab log-dirs --describe``: the brokers' log directories as JSON).

Mirrors: ``core/src/main/scala/kafka/tools/`` and ``tools/src/main/java/org/apache/kafka/tools/``.
"""
