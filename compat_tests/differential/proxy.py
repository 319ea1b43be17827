"""A recording TCP proxy for Kafka's wire protocol (threads, blocking sockets; a tool, not a broker).

Clients connect to the proxy, the proxy connects each of them to the real broker upstream and
copies frames both ways, keeping every request frame with its response frame. Two things are
changed on the way back, and only these:

* ApiVersions responses are cut to what both brokers serve: an API kbroker does not advertise
  is removed, the others keep the intersection of the two version ranges. Clients then send
  exactly what they would send to kbroker, so the corpus can be replayed against both.
* Nothing else: the upstream broker is started with `advertised.listeners` naming the proxy, so
  Metadata and FindCoordinator already send clients back through it.

Frames are recorded with a global event counter for the request's arrival and the response's
arrival (the replay orders by completion: a long-poll fetch answered after a produce on another
connection saw that produce). Connections opened by the broker itself (client ids starting with
`broker-`, e.g. its transaction-marker sender) are forwarded but not recorded.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
from dataclasses import dataclass, field

from kbroker.wire import protocol
from kbroker.wire.errors import WireError

API_VERSIONS = 18


@dataclass
class Exchange:
    scenario: str
    conn: int
    client_id: str | None
    api_key: int
    api_version: int
    correlation_id: int
    request: bytes                    # the frame without its size prefix
    request_event: int
    response: bytes | None = None     # ditto (as the client got it)
    response_event: int | None = None


@dataclass
class Recorder:
    """Collects exchanges of the current scenario (None: forward without recording)."""

    scenario: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    events: itertools.count = field(default_factory=itertools.count)

    def next_event(self) -> int:
        with self.lock:
            return next(self.events)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if not 0 <= size <= 200 * 1024 * 1024:
        raise ConnectionError(f"bad frame size {size}")
    return _read_exactly(sock, size)


def cut_api_versions(frame: bytes, version: int, ranges: dict[int, tuple[int, int]]) -> bytes:
    """An ApiVersions response frame (no size prefix) limited to `ranges` (kbroker's)."""
    try:
        correlation_id, body = protocol.decode_response(frame, API_VERSIONS, version)
    except WireError:
        return frame  # an UNSUPPORTED_VERSION answer in v0 format: pass it on as it is
    if body.error_code != 0:
        return frame
    kept = []
    for entry in body.api_keys:
        ours = ranges.get(entry.api_key)
        if ours is None:
            continue
        lo, hi = max(entry.min_version, ours[0]), min(entry.max_version, ours[1])
        if lo <= hi:
            entry.min_version, entry.max_version = lo, hi
            kept.append(entry)
    body.api_keys = kept
    parts = protocol.encode_response(API_VERSIONS, version, correlation_id, body)
    return b"".join(parts)[4:]


class RecordingProxy:
    """Listens on 127.0.0.1:`port`, forwards to `upstream` (host, port)."""

    def __init__(self, port: int, upstream: tuple[str, int], ranges: dict[int, tuple[int, int]],
                 recorder: Recorder):
        self.upstream = upstream
        self.ranges = ranges
        self.recorder = recorder
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.conn_ids = itertools.count()
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closed = True
        try:
            self.server.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, next(self.conn_ids)),
                             daemon=True).start()

    def _serve(self, client: socket.socket, conn: int) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=None)
        except OSError:
            client.close()
            return
        pending: dict[int, Exchange | tuple[int, bool]] = {}
        lock = threading.Lock()
        state = {"internal": None}

        def client_to_broker():
            try:
                while True:
                    frame = _read_frame(client)
                    if frame is None:
                        break
                    header, _ = protocol.decode_request_header(frame)
                    if state["internal"] is None:
                        state["internal"] = is_internal(header.client_id)
                    scenario = self.recorder.scenario
                    expects = not (header.api_key == 0 and _acks_zero(frame))
                    if scenario is not None and not state["internal"]:
                        exchange = Exchange(scenario, conn, header.client_id, header.api_key,
                                            header.api_version, header.correlation_id, frame,
                                            self.recorder.next_event())
                        with self.recorder.lock:
                            self.recorder.exchanges.append(exchange)
                        if expects:
                            with lock:
                                pending[header.correlation_id] = exchange
                    elif expects:
                        with lock:
                            pending[header.correlation_id] = (header.api_key, header.api_version)
                    upstream.sendall(struct.pack(">i", len(frame)) + frame)
            except (OSError, ConnectionError, WireError):
                pass
            finally:
                for s in (upstream, client):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def broker_to_client():
            try:
                while True:
                    frame = _read_frame(upstream)
                    if frame is None:
                        break
                    (correlation_id,) = struct.unpack_from(">i", frame, 0)
                    with lock:
                        item = pending.pop(correlation_id, None)
                    api_key, version = (item.api_key, item.api_version) \
                        if isinstance(item, Exchange) else (item or (None, None))
                    if api_key == API_VERSIONS:
                        frame = cut_api_versions(frame, version, self.ranges)
                    if isinstance(item, Exchange):
                        item.response = frame
                        item.response_event = self.recorder.next_event()
                    client.sendall(struct.pack(">i", len(frame)) + frame)
            except (OSError, ConnectionError):
                pass
            finally:
                for s in (upstream, client):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threads = [threading.Thread(target=client_to_broker, daemon=True),
                   threading.Thread(target=broker_to_client, daemon=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
        upstream.close()


def is_internal(client_id: str | None) -> bool:
    """Connections the broker opens to itself: its transaction-marker sender (`broker-N-...`),
    its KIP-890 partition verifier (`AddPartitionsManager-client-N`) and its share-partitions'
    persister talking to the share coordinator (`Persister-client-N`, KIP-932)."""
    cid = client_id or ""
    return (cid.startswith("broker-") or cid.startswith("AddPartitionsManager")
            or cid.startswith("Persister-client"))


def _acks_zero(frame: bytes) -> bool:
    """Produce with acks=0 gets no response at all."""
    try:
        _, body = protocol.decode_request(frame)
    except WireError:
        return False
    return body.acks == 0
