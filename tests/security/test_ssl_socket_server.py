"""The socket server's SSL listeners on their own (a test plays the request handlers): the TLS handshake, the
certificate principal, and bad input at the TLS layer -- a plaintext client, garbage instead of a ClientHello,
a handshake that never finishes, a thousand failed handshakes -- which only ever cost the connection that
brought them."""
from __future__ import annotations

import asyncio
import logging
import ssl
import struct

import pytest

from kafkalab.common.config import ConfigDef
from kafkalab.network.endpoint import EndPoint
from kafkalab.network.request_channel import RequestChannel, SendResponse
from kafkalab.network.socket_server import SocketServer
from kafkalab.protocol import ApiKey, decode_response, encode_request, make_request, request_class, response_class
from kafkalab.security.ssl_configs import define_broker_ssl_configs, define_client_ssl_configs
from kafkalab.security.ssl_factory import CLIENT, SERVER, SslFactory

from ._pki import KEY_PASSWORD, make_pki

Metadata = request_class(ApiKey.METADATA)
MetadataResponse = response_class(ApiKey.METADATA)
ENABLED = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 12)}
BROKER_TABLE = define_broker_ssl_configs(ConfigDef())
CLIENT_TABLE = define_client_ssl_configs(ConfigDef())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_factory(pki, **overrides) -> SslFactory:
    return SslFactory(SERVER, BROKER_TABLE.parse({**pki.broker_configs(), **overrides}), listener_name="SSL")


def client_context(pki, *, certificate: bool = False, **overrides) -> ssl.SSLContext:
    configs = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.broker_files.ca)}
    if certificate:
        configs.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.alice_files.keystore)})
    return SslFactory(CLIENT, CLIENT_TABLE.parse({**configs, **overrides})).context


def metadata_frame(correlation_id: int) -> bytes:
    return encode_request(make_request(Metadata(topics=None), api_version=12, correlation_id=correlation_id,
                                       client_id="t"), size_prefix=True)


class Harness:
    """A SocketServer with one SSL listener; every request is answered with an empty Metadata response and
    kept in ``handled``."""

    def __init__(self, factory: SslFactory, **options):
        self.channel = RequestChannel()
        self.server = SocketServer([EndPoint("SSL", "127.0.0.1", 0, "SSL")], self.channel, ENABLED,
                                   ssl_factories={"SSL": factory}, **options)
        self.handled = []
        self._handler = None

    async def __aenter__(self) -> "Harness":
        await self.server.start()

        async def handler():
            while True:
                request = await self.channel.receive_request()
                self.handled.append(request)
                self.channel.send_response(request, SendResponse(MetadataResponse()))
        self._handler = asyncio.ensure_future(handler())
        return self

    async def __aexit__(self, *exc) -> None:
        self._handler.cancel()
        await self.server.stop()

    @property
    def port(self) -> int:
        return self.server.bound_port("SSL")

    async def metadata_over_tls(self, context: ssl.SSLContext, correlation_id: int = 1):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, ssl=context,
                                                       server_hostname="localhost")
        try:
            writer.write(metadata_frame(correlation_id))
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            return decode_response(await reader.readexactly(size), ApiKey.METADATA, 12)
        finally:
            writer.close()


async def closed_by_server(reader: asyncio.StreamReader, timeout: float = 3.0) -> bool:
    try:
        while await asyncio.wait_for(reader.read(1 << 16), timeout):
            pass
        return True
    except (ConnectionResetError, ssl.SSLError):
        return True


def run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


# -- principals ----------------------------------------------------------------------------------------------------
def test_without_client_authentication_the_principal_is_anonymous(pki):
    async def main():
        async with Harness(server_factory(pki)) as h:
            response = await h.metadata_over_tls(client_context(pki, certificate=True))
            assert response.correlation_id == 1
            assert h.handled[0].context.principal == "User:ANONYMOUS"
            assert h.handled[0].context.security_protocol == "SSL"
    run(main())


def test_a_client_certificate_becomes_the_principal_as_kafka_prints_its_distinguished_name(pki):
    async def main():
        async with Harness(server_factory(pki, **{"ssl.client.auth": "required"})) as h:
            await h.metadata_over_tls(client_context(pki, certificate=True))
            principal = h.handled[0].context.principal
            assert principal == "User:CN=alice,OU=eng,O=acme"
            assert (principal.principal_type, principal.name) == ("User", "CN=alice,OU=eng,O=acme")
    run(main())


def test_principal_mapping_rules_rewrite_the_name(pki):
    rules = "RULE:^CN=([a-z]+),OU=.*$/$1/U,DEFAULT"
    async def main():
        async with Harness(server_factory(pki, **{"ssl.client.auth": "requested",
                                                  "ssl.principal.mapping.rules": rules})) as h:
            await h.metadata_over_tls(client_context(pki, certificate=True))
            assert h.handled[0].context.principal == "User:ALICE"
            await h.metadata_over_tls(client_context(pki), correlation_id=2)   # requested: none sent is fine
            assert h.handled[1].context.principal == "User:ANONYMOUS"
    run(main())


def test_a_certificate_no_rule_maps_is_refused(pki):
    async def main():
        async with Harness(server_factory(pki, **{"ssl.client.auth": "required",
                                                  "ssl.principal.mapping.rules": "RULE:^CN=bob,.*$/bob/"})) as h:
            with pytest.raises((ConnectionError, asyncio.IncompleteReadError, ssl.SSLError)):
                await h.metadata_over_tls(client_context(pki, certificate=True))
            assert h.handled == []
    run(main())


def test_required_client_authentication_refuses_a_client_without_a_trusted_certificate(pki):
    async def main():
        async with Harness(server_factory(pki, **{"ssl.client.auth": "required"})) as h:
            stranger = client_context(pki, **{"ssl.keystore.type": "PEM",
                                              "ssl.keystore.location": str(pki.stranger_files.keystore)})
            for context in (client_context(pki), stranger):
                with pytest.raises((ConnectionError, asyncio.IncompleteReadError, ssl.SSLError)):
                    await h.metadata_over_tls(context)
            assert h.handled == []
            assert (await h.metadata_over_tls(client_context(pki, certificate=True))).correlation_id == 1
    run(main())


def test_an_ssl_listener_is_never_served_without_its_ssl_context():
    with pytest.raises(ValueError, match="no SSL context for listener"):
        SocketServer([EndPoint("SSL", "127.0.0.1", 0, "SSL")], RequestChannel(), ENABLED)


# -- bad input at the TLS layer ----------------------------------------------------------------------------------
def test_a_plaintext_client_on_a_tls_port_is_closed_and_others_are_served(pki):
    async def main():
        async with Harness(server_factory(pki)) as h:
            reader, writer = await asyncio.open_connection("127.0.0.1", h.port)
            writer.write(metadata_frame(7))
            assert await closed_by_server(reader)
            writer.close()
            assert h.handled == []
            assert (await h.metadata_over_tls(client_context(pki))).correlation_id == 1
    run(main())


def test_garbage_instead_of_a_client_hello_is_closed(pki):
    async def main():
        async with Harness(server_factory(pki)) as h:
            for garbage in (b"\x16\x03\x01\xff\xff" + b"\x00" * 64, b"GET / HTTP/1.1\r\n\r\n", bytes(range(256))):
                reader, writer = await asyncio.open_connection("127.0.0.1", h.port)
                writer.write(garbage)
                assert await closed_by_server(reader)
                writer.close()
            assert h.handled == [] and h.server.connection_ids == []
    run(main())


def test_a_handshake_that_never_completes_is_dropped_after_connections_max_idle_ms(pki):
    async def main():
        async with Harness(server_factory(pki), connections_max_idle_ms=300) as h:
            reader, writer = await asyncio.open_connection("127.0.0.1", h.port)
            writer.write(b"\x16\x03\x01")          # the start of a ClientHello, then silence
            start = asyncio.get_running_loop().time()
            assert await closed_by_server(reader, timeout=5.0)
            assert asyncio.get_running_loop().time() - start < 4.0
            writer.close()
    run(main())


def test_a_thousand_failed_handshakes_neither_crash_nor_slow_other_connections_nor_log_secrets(pki, caplog):
    caplog.set_level(logging.DEBUG)
    errors = []

    async def garbage_connection():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return
        writer.write(b"\x16\x03\x01\x00\x05hello" + bytes(32))
        try:
            await closed_by_server(reader)
        finally:
            writer.close()

    async def main():
        nonlocal port
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        async with Harness(server_factory(pki)) as h:
            port = h.port
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(pki),
                                                           server_hostname="localhost")
            loop = asyncio.get_running_loop()
            storm = asyncio.ensure_future(asyncio.gather(*(bounded(garbage_connection) for _ in range(1000))))
            slowest, answered = 0.0, 0
            while not storm.done() or answered < 5:
                start = loop.time()
                writer.write(metadata_frame(answered))
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                assert decode_response(await reader.readexactly(size), ApiKey.METADATA, 12).correlation_id == answered
                slowest, answered = max(slowest, loop.time() - start), answered + 1
            await storm
            writer.close()
            assert slowest < 2.0, slowest          # generous: the broker is not frozen by the storm
            assert len(h.handled) == answered
    semaphore = None

    async def bounded(fn):
        nonlocal semaphore
        semaphore = semaphore or asyncio.Semaphore(50)
        async with semaphore:
            await fn()
    port = 0
    run(main(), timeout=120)
    assert errors == []
    text = caplog.text
    assert "PRIVATE KEY" not in text and KEY_PASSWORD not in text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
