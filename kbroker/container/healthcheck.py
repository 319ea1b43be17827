"""The image's HEALTHCHECK: is this node serving clients as a member of its cluster?

    python -m kbroker.container.healthcheck [--bootstrap HOST:PORT] [--config FILE] [--timeout S]

Connects to the node's first client listener (from the configuration the entrypoint wrote; a
wildcard host is probed on 127.0.0.1), asks ApiVersions (the broker answers at all) and then
Metadata for no topics: healthy when the node's own ``node.id`` is among the brokers and a
controller is known — a registered, unfenced broker, not just an open port. Prints one line;
exit 0 healthy, 1 not. Uses kbroker's own wire codecs, no client library.

A node with the HTTP listener (``kbroker.http.listen``, on by default in the image for nodes
with the broker role) is asked ``GET /ready`` instead: healthy on 200 — the broker's own view
of serving (listeners bound, registered and unfenced, not shutting down).
"""
from __future__ import annotations

import argparse
import socket
import struct
import sys

from kbroker.wire import messages
from kbroker.wire.protocol import decode_response, encode_request

CONFIG_PATHS = ("/opt/kbroker/config/server.properties", "/tmp/server.properties")
API_VERSIONS, METADATA = 18, 3
WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def target_of(props: dict[str, str]) -> tuple[str, int, int]:
    """(host, port, node id) of the first non-controller listener of a server.properties."""
    controller = {n.strip().upper() for n in props.get("controller.listener.names", "").split(",")
                  if n.strip()}
    for entry in props.get("listeners", "PLAINTEXT://127.0.0.1:9092").split(","):
        name, sep, rest = entry.strip().partition("://")
        if not sep or name.upper() in controller:
            continue
        host, _, port = rest.rpartition(":")
        host = host.strip("[]") if host not in WILDCARDS else "127.0.0.1"
        return host, int(port), int(props.get("node.id", props.get("broker.id", "1")))
    raise ValueError("no client listener in listeners")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def _call(sock, api_key: int, version: int, corr: int, body):
    sock.sendall(encode_request(api_key, version, corr, "kbroker-healthcheck", body))
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    if size < 4 or size > 16 << 20:
        raise ConnectionError(f"bad response size {size}")
    got, resp = decode_response(_recv_exact(sock, size), api_key, version)
    if got != corr:
        raise ConnectionError(f"correlation id {got}, expected {corr}")
    return resp


def probe(host: str, port: int, node_id: int, timeout: float) -> tuple[bool, str]:
    where = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            av = _call(sock, API_VERSIONS, 3, 1, messages.ApiVersionsRequest(
                client_software_name="kbroker-healthcheck", client_software_version="1"))
            if av.error_code != 0:
                return False, f"ApiVersions error {av.error_code} from {where}"
            md = _call(sock, METADATA, 12, 2, messages.MetadataRequest(
                topics=[], allow_auto_topic_creation=False))
    except (OSError, ConnectionError, ValueError) as e:
        return False, f"{where}: {e}"
    brokers = sorted(b.node_id for b in md.brokers)
    if node_id not in brokers:
        return False, f"node {node_id} is not among the live brokers {brokers} ({where})"
    if md.controller_id < 0:
        return False, f"no active controller known to {where}"
    return True, f"node {node_id} serves on {where} (brokers {brokers}, controller {md.controller_id})"


def probe_ready(listen: str, timeout: float) -> tuple[bool, str]:
    """``GET /ready`` on the node's HTTP listener (a wildcard host is asked on 127.0.0.1)."""
    import urllib.error
    import urllib.request
    host, _, port = listen.strip().rpartition(":")
    host = "127.0.0.1" if host in WILDCARDS else host.strip("[]")
    url = f"http://{host}:{port}/ready"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200, f"{url}: {resp.status} {resp.read(200).decode().strip()}"
    except urllib.error.HTTPError as e:
        return False, f"{url}: {e.code} {e.read(200).decode(errors='replace').strip()}"
    except (OSError, ValueError) as e:
        return False, f"{url}: {e}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kbroker.container.healthcheck")
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="probe this address instead")
    p.add_argument("--node-id", type=int, help="expected node id (default: from the config)")
    p.add_argument("--config", metavar="FILE", help="server.properties to read the listener from")
    p.add_argument("--timeout", type=float, default=3.0)
    a = p.parse_args(argv)
    from kbroker.config.broker import parse_properties
    props: dict[str, str] = {}
    for path in ([a.config] if a.config else CONFIG_PATHS):
        try:
            with open(path) as f:
                props = parse_properties(f.read())
            break
        except OSError:
            continue
    if props.get("kbroker.http.listen") and not a.bootstrap:
        ok, msg = probe_ready(props["kbroker.http.listen"], a.timeout)
        print(("healthy: " if ok else "unhealthy: ") + msg)
        return 0 if ok else 1
    try:
        host, port, node_id = target_of(props)
    except ValueError as e:
        print(f"unhealthy: {e}")
        return 1
    if a.bootstrap:
        h, _, pt = a.bootstrap.rpartition(":")
        host, port = h or "127.0.0.1", int(pt)
    if a.node_id is not None:
        node_id = a.node_id
    ok, msg = probe(host, port, node_id, a.timeout)
    print(("healthy: " if ok else "unhealthy: ") + msg)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
