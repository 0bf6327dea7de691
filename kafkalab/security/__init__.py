"""Security: the authentication and authorization cores, sans-IO (imported by the broker and the clients).

Modules: ``principal`` (``KafkaPrincipal``), ``acl`` (resource patterns, ACL entries and bindings, filters:
Kafka's ``org.apache.kafka.common.acl`` and ``...resource``), ``authorizer`` (the decision core of Kafka's
``StandardAuthorizer``/``AclAuthorizer``). Import from the modules themselves.
"""
