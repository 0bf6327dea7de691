"""Security cores shared by the broker and the clients: principals, TLS (SSL) settings and certificates.

Everything here is sans-IO or builds plain objects (an ``ssl.SSLContext``, PEM bytes): the socket server and
the clients' connections decide when to use them. Import from the modules (``kafkalab.security.ssl_factory``,
``kafkalab.security.certs``...); this package exports nothing itself.
"""
