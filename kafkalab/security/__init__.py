"""Security cores shared by the broker and the clients: principals, TLS (SSL) settings and certificates.

Everything here is sans-IO or builds plain objects (an ``ssl.SSLContext``, PEM bytes): the socket server and
the clients' connections decide when to use them. Import from the modules (``kafkalab.security.ssl_factory``,
``kafkalab.security.certs``...); this package exports nothing itself.

SASL: :mod:`.errors` (codes 33, 34, 58 as exceptions), :mod:`.jaas` (Kafka's ``sasl.jaas.config`` syntax,
parsed as data, never executed), :mod:`.plain` (SASL/PLAIN), :mod:`.scram` and :mod:`.scram_sasl`
(SCRAM-SHA-256/512), :mod:`.sasl_server` (the broker's ``SaslServerAuthenticator`` as a state table) and
:mod:`.sasl_client` (the client's half): each is fed bytes and answers with bytes and decisions.
"""
