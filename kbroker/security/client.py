"""The client side of a secured listener, for node-to-node connections.

Replica fetchers use the inter-broker listener (``inter.broker.listener.name``, else the
first client listener) and the metadata quorum / controller channel use the controller
listener (``controller.listener.names``); when that listener is SSL, SASL_PLAINTEXT or
SASL_SSL, ``secure_stream`` turns a fresh TCP stream into an authenticated one, as
Kafka's own inter-broker clients do:

- TLS with the listener's ``ssl.*`` keys (its truststore verifies the peer, its keystore
  answers ``ssl.client.auth``, ``ssl.endpoint.identification.algorithm=https`` checks the
  host name);
- SASL with ``sasl.mechanism.inter.broker.protocol`` / ``sasl.mechanism.controller.protocol``
  (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): SaslHandshake v1, then SaslAuthenticate v2 tokens;
  the credentials are the ``username``/``password`` options of the listener's JAAS entry
  for that mechanism (Kafka's broker JAAS serves both sides).

A failure raises ``SecureConnectError``; the RPC client counts it as a failed call (the
callers retry), so a misconfigured peer is loud in the logs and never silently plaintext.
"""
from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field

import trio

from kbroker.wire import messages
from kbroker.wire.protocol import FrameDecoder, decode_response, encode_request

from .jaas import parse_jaas
from .listeners import MECHANISMS, ListenerKeys, SecurityConfigError
from .scram import ScramClient, ScramError
from .tls import TlsConfigError, client_context

MAX_FRAME = 1 << 20


class SecureConnectError(OSError):
    pass


@dataclass
class ClientSecurity:
    """TLS and SASL settings a node uses to connect to a listener of another node."""
    listener: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)


def client_security(values: dict, listener: str, protocol: str, mechanism_key: str) -> ClientSecurity | None:
    """The client settings for connecting to ``listener``; None for PLAINTEXT.
    ``mechanism_key``: ``sasl.mechanism.inter.broker.protocol`` or
    ``sasl.mechanism.controller.protocol``."""
    if protocol == "PLAINTEXT":
        return None
    keys = ListenerKeys(values, listener)
    sec = ClientSecurity(listener, protocol)
    if protocol in ("SSL", "SASL_SSL"):
        try:
            sec.ssl_context = client_context(keys.get)
        except TlsConfigError as e:
            raise SecurityConfigError(keys.key_of(e.key), str(e).split(": ", 1)[1]) from None
    if protocol.startswith("SASL"):
        mech = values.get(mechanism_key) or "GSSAPI"
        if mech not in MECHANISMS or mech == "OAUTHBEARER":
            raise SecurityConfigError(mechanism_key, f"{mech} is not supported for node-to-node "
                                      "connections (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
        jaas_key, text = keys.jaas(mech)
        module = parse_jaas(text)[0] if text else None
        if module is None or "username" not in module.options or "password" not in module.options:
            raise SecurityConfigError(jaas_key, f"the {mech} login module needs username and password "
                                      f"options for {listener} connections between nodes")
        sec.mechanism, sec.username, sec.password = mech, module.options["username"], module.options["password"]
    return sec


async def _call(stream, decoder: FrameDecoder, api_key: int, version: int, body, corr: int):
    await stream.send_all(encode_request(api_key, version, corr, "kbroker-internal", body))
    frames: list = []
    while not frames:
        data = await stream.receive_some(65536)
        if not data:
            raise SecureConnectError(f"peer closed the connection during SASL (api key {api_key})")
        frames = decoder.feed(data)
    got, resp = decode_response(frames[0], api_key, version)
    if got != corr:
        raise SecureConnectError("correlation id mismatch during SASL")
    return resp


async def secure_stream(stream, sec: ClientSecurity, host: str):
    """TLS and/or SASL on a connected stream; returns the stream to use."""
    if sec.ssl_context is not None:
        stream = trio.SSLStream(stream, sec.ssl_context, server_hostname=host)
        try:
            await stream.do_handshake()
        except trio.BrokenResourceError as e:
            raise SecureConnectError(f"SSL handshake with {host} failed: {e.__cause__ or e}") from None
    if sec.mechanism is None:
        return stream
    decoder = FrameDecoder(MAX_FRAME)
    hs = await _call(stream, decoder, 17, 1, messages.SaslHandshakeRequest(mechanism=sec.mechanism), 1)
    if hs.error_code:
        raise SecureConnectError(f"SaslHandshake {sec.mechanism} refused by {host}: error {hs.error_code}")
    corr = 2

    async def token(data: bytes) -> bytes:
        nonlocal corr
        corr += 1
        r = await _call(stream, decoder, 36, 2, messages.SaslAuthenticateRequest(auth_bytes=data), corr)
        if r.error_code:
            raise SecureConnectError(f"SASL authentication with {host} failed: {r.error_message}")
        return bytes(r.auth_bytes or b"")

    if sec.mechanism == "PLAIN":
        await token(f"\0{sec.username}\0{sec.password}".encode())
        return stream
    client = ScramClient(sec.mechanism, sec.username, sec.password, nonce=os.urandom(18).hex())
    try:
        server_first = await token(client.first())
        client.verify(await token(client.final(server_first)))
    except ScramError as e:
        raise SecureConnectError(f"SCRAM with {host} failed: {e}") from None
    return stream
