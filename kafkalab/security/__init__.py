"""Security cores shared by the broker and the clients: principals, SASL, TLS (SSL) settings and certificates,
ACLs and the authorizer's decisions.

Everything here is sans-IO or builds plain objects (an ``ssl.SSLContext``, PEM bytes, a decision, the bytes of
the next SASL token): the socket server, the request handlers and the clients' connections decide when to use
them. Modules: ``principal`` (``KafkaPrincipal``); ``sasl_server``/``sasl_client``/``plain``/``scram``/
``scram_sasl``/``jaas`` (SASL); ``ssl_configs``/``ssl_factory``/``ssl_principal``/``certs`` (TLS); ``acl``
(resource patterns, ACL entries and bindings, filters: Kafka's ``org.apache.kafka.common.acl`` and
``...resource``), ``authorizer`` (the decision core of Kafka's ``StandardAuthorizer``/``AclAuthorizer``). Import
from the modules; this package exports nothing itself.
"""
