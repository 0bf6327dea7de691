"""kafkalab.security -- authentication (and authorization) cores, sans-IO: imported by the broker and the clients.

Modules: :mod:`.principal` (``KafkaPrincipal``), :mod:`.errors` (the SASL error codes as exceptions),
:mod:`.jaas` (Kafka's ``sasl.jaas.config`` syntax, parsed and never executed), :mod:`.plain` (SASL/PLAIN),
:mod:`.scram` and :mod:`.scram_sasl` (SCRAM-SHA-256/512), :mod:`.sasl_server` (the broker's
``SaslServerAuthenticator`` as a state table) and :mod:`.sasl_client` (the client's half).
No socket is opened here: each core is fed bytes and answers with bytes and decisions.
"""
