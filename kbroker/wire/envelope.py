"""Envelope (key 58) payloads, sans I/O: how a broker wraps a client's request with the
client's principal and address (KIP-590), and how the answer is unwrapped.

``request_data`` is the inner request without its size prefix (header + body);
``request_principal`` is Kafka's version-prefixed ``DefaultPrincipalData`` (type, name,
token-authenticated: what Kafka's ``DefaultKafkaPrincipalBuilder`` serializes);
``client_host_address`` is the client's IP address bytes (4 or 16). The broker side (the
metadata layer's controller channel) wraps and unwraps; the controller side
(``kbroker/controller_server/envelope.py``) decodes and runs the inner request.
"""
from __future__ import annotations

import ipaddress
import struct

from kbroker.wire import messages
from kbroker.wire.errors import WireError
from kbroker.wire.protocol import decode_response, encode_request

PRINCIPAL_VERSION = 0

# client admin APIs a broker forwards inside an envelope (served by ``forwarded``)
FORWARDED = frozenset({19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 49, 51})
def encode_principal(principal: str, token_authenticated: bool = False) -> bytes:
    kind, _, name = principal.partition(":")
    data = messages.DefaultPrincipalData(type=kind, name=name, token_authenticated=token_authenticated)
    return struct.pack(">h", PRINCIPAL_VERSION) + data.encode(PRINCIPAL_VERSION)


def decode_principal(raw) -> tuple[str, bool]:
    view = memoryview(raw)
    if len(view) < 2:
        raise WireError("principal data too short")
    version = struct.unpack_from(">h", view)[0]
    d = messages.DefaultPrincipalData.decode(view, version, 2)
    return f"{d.type}:{d.name}", bool(d.token_authenticated)


def host_bytes(client_host: str) -> bytes:
    """The client's address as Kafka puts it in an Envelope (``InetAddress.getAddress()``).
    A connection whose peer address could not be read ("unknown") is sent as 0.0.0.0: like
    "unknown" on the broker, it matches only ACLs for every host ("*")."""
    try:
        return ipaddress.ip_address(client_host).packed
    except ValueError:
        return bytes(4)


def host_text(raw) -> str | None:
    """The client's address back as text; None when it is not 4 or 16 bytes."""
    raw = bytes(raw or b"")
    if len(raw) not in (4, 16):
        return None
    address = ipaddress.ip_address(raw)
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def wrap(api_key: int, version: int, body, principal: str, client_host: str, node_id: int,
         token_authenticated: bool = False, client_id: str | None = None):
    inner = encode_request(api_key, version, 0, client_id or f"broker-{node_id}", body)[4:]
    return messages.EnvelopeRequest(request_data=inner,
                                    request_principal=encode_principal(principal, token_authenticated),
                                    client_host_address=host_bytes(client_host))


def unwrap(api_key: int, version: int, resp):
    """The inner response of an EnvelopeResponse, or None when the envelope failed or the
    inner bytes do not decode (the caller routes again or gives up)."""
    if resp is None or resp.error_code or not resp.response_data:
        return None
    try:
        return decode_response(bytes(resp.response_data), api_key, version)[1]
    except WireError:
        return None
