"""Readiness probe for a broker under test: a few hand-built Kafka frames over a blocking socket.

The harness must not depend on kbroker's own codec (that is the thing under test) nor on a
client library's internals, so the two requests it needs are spelled out here byte by byte:

* ApiVersions v0 (api key 18): header v1 (key, version, correlation id, client id), empty body.
  The answer is always in response header v0; its body starts with the error code.
* Metadata v1 (api key 3) with an empty topic array (v1+: "no topics", not "all topics"). Its
  answer lists the brokers; a KRaft Kafka broker answers with no brokers until it has
  registered with its controller, so "at least one broker" means the broker really serves.

Both are non-flexible versions every Kafka release since 0.10 understands.
"""

from __future__ import annotations

import socket
import struct
import time

API_VERSIONS = 18
METADATA = 3
CLIENT_ID = b"compat-probe"
MAX_FRAME = 1 << 20


class ProbeError(Exception):
    """The peer accepted the connection but did not answer like a Kafka broker."""


def _request(sock: socket.socket, api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _read_exactly(sock, 4))[0]
    if not 4 <= size <= MAX_FRAME:
        raise ProbeError(f"implausible response size {size}")
    payload = _read_exactly(sock, size)
    (got,) = struct.unpack_from(">i", payload, 0)
    if got != correlation_id:
        raise ProbeError(f"correlation id {got}, expected {correlation_id}")
    return payload[4:]


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ProbeError("connection closed by peer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def api_versions(sock: socket.socket) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 → {api_key: (min_version, max_version)}; raises unless error code 0."""
    body = _request(sock, API_VERSIONS, 0, 1, b"")
    error_code, count = struct.unpack_from(">hi", body, 0)
    if error_code != 0:
        raise ProbeError(f"ApiVersions error code {error_code}")
    if not 0 <= count <= 1000:
        raise ProbeError(f"implausible ApiVersions count {count}")
    out = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 6 + 6 * i)
        out[key] = (lo, hi)
    return out


def metadata_broker_count(sock: socket.socket) -> int:
    """Metadata v1 for no topics → number of brokers listed."""
    body = _request(sock, METADATA, 1, 2, struct.pack(">i", 0))
    (count,) = struct.unpack_from(">i", body, 0)
    return count


def probe(host: str, port: int, *, need_metadata: bool, timeout: float = 2.0) -> None:
    """One attempt: connect, ApiVersions, optionally Metadata. Raises OSError/ProbeError."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        versions = api_versions(sock)
        if API_VERSIONS not in versions:
            raise ProbeError("ApiVersions does not list itself")
        if need_metadata and metadata_broker_count(sock) < 1:
            raise ProbeError("Metadata lists no brokers yet")


def wait_until_serving(host: str, port: int, *, need_metadata: bool, deadline: float,
                       alive=lambda: True) -> None:
    """Poll `probe` until it succeeds; raise TimeoutError at `deadline` (time.monotonic()).

    `alive()` is checked between attempts so a process that died is reported at once
    instead of after the whole timeout.
    """
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise ProbeError(f"process exited before serving (last probe error: {last!r})")
        try:
            probe(host, port, need_metadata=need_metadata)
            return
        except (OSError, ProbeError, struct.error) as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{host}:{port} not serving before the deadline (last probe error: {last!r})")
