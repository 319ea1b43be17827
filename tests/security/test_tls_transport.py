"""The TLS read and write path of a connection (kbroker/server/tls.py) with real clients:
records larger than the receive buffer and fetches larger than one encryption chunk
round-trip byte for byte; requests pipelined into one TLS record or split over many records
are answered in order; a corrupted record closes the connection with one log line while the
listener keeps serving."""
from __future__ import annotations

import hashlib
import socket
import ssl
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.wire import messages
from kbroker.wire.protocol import encode_request


def _ssl_conf(s) -> dict:
    return {"bootstrap.servers": s.ssl, "security.protocol": "SSL",
            "ssl.ca.location": str(s.pki.ca),
            "ssl.certificate.location": str(s.pki.client_cert),
            "ssl.key.location": str(s.pki.client_key)}


def _api_versions(correlation_id: int) -> bytes:
    return encode_request(18, 3, correlation_id, "tls-test", messages.ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))


def _read_frames(sock, count: int) -> list[bytes]:
    data = b""
    frames = []
    while len(frames) < count:
        while len(data) < 4 or len(data) - 4 < int.from_bytes(data[:4], "big"):
            chunk = sock.recv(65536)
            assert chunk, f"closed after {len(frames)} of {count} answers"
            data += chunk
        size = int.from_bytes(data[:4], "big")
        frames.append(data[4:4 + size])
        data = data[4 + size:]
    return frames


def _correlation(frame: bytes) -> int:
    return int.from_bytes(frame[:4], "big", signed=True)


def test_large_records_and_fetches_round_trip_over_ssl(secured):
    """Produce frames far larger than the 256 KiB receive buffer and small ones in between,
    then read them back over TLS: fetch answers larger than one 256 KiB encryption chunk."""
    conf = _ssl_conf(secured)
    topic = f"tls-big-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
    sizes = [10, 700_000, 1000, 300_000, 5, 900_000] + [1024] * 2000
    values = [hashlib.sha256(str(i).encode()).digest() * (n // 32) + b"x" * (n % 32)
              for i, n in enumerate(sizes)]
    p = Producer({**conf, "linger.ms": 20, "message.max.bytes": 1_000_000})
    for i, v in enumerate(values):
        p.produce(topic, v, key=str(i).encode(), partition=i % 3)
    assert p.flush(60) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False,
                  "fetch.max.bytes": 8 * 1024 * 1024, "max.partition.fetch.bytes": 4 * 1024 * 1024})
    c.assign([TopicPartition(topic, part, 0) for part in range(3)])
    got: dict[int, bytes] = {}
    try:
        deadline = time.monotonic() + 60
        while len(got) < len(values) and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                assert not m.error(), m.error()
                got[int(m.key())] = m.value()
    finally:
        c.close()
    assert len(got) == len(values)
    assert all(got[i] == v for i, v in enumerate(values))


def _tls_client(secured):
    """A TLS connection to the SSL listener (client certificate required there)."""
    host, port = secured.ssl.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
    ctx.load_cert_chain(str(secured.pki.client_cert), str(secured.pki.client_key))
    raw = socket.create_connection((host, int(port)), timeout=15)
    return ctx.wrap_socket(raw, server_hostname=host)


def test_pipelined_and_split_requests_over_tls(secured):
    """Three requests in one TLS record get three answers in order; a request written one
    byte per TLS record is answered as well."""
    with _tls_client(secured) as s:
        s.sendall(_api_versions(1) + _api_versions(2) + _api_versions(3))
        answers = _read_frames(s, 3)
        assert [_correlation(f) for f in answers] == [1, 2, 3]
        frame = _api_versions(4)
        for i in range(len(frame)):
            s.send(frame[i:i + 1])          # one TLS record per byte
        (answer,) = _read_frames(s, 1)
        assert _correlation(answer) == 4
        assert messages.ApiVersionsResponse.decode(memoryview(answer), 3, 4).error_code == 0


def test_corrupted_record_closes_the_connection_with_a_log_line(secured):
    """A TLS record whose ciphertext was changed on the way fails its authentication tag:
    the broker closes that connection and says why, and the listener keeps serving."""
    host, port = secured.sasl_ssl.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=host)
    log_start = len(secured.proc.log_text())
    with socket.create_connection((host, int(port)), timeout=15) as raw:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(outgoing.read())
                chunk = raw.recv(65536)
                assert chunk, "closed during the handshake"
                incoming.write(chunk)
        raw.sendall(outgoing.read())
        obj.write(_api_versions(7))
        record = bytearray(outgoing.read())
        record[-5] ^= 0x01                  # inside the authentication tag
        raw.sendall(bytes(record))
        rest = b""
        try:
            while chunk := raw.recv(65536):
                rest += chunk
        except ConnectionResetError:
            pass
    # nothing decrypts to a Kafka answer: at most the session tickets and an alert
    incoming.write(rest)
    try:
        assert obj.read(65536) == b""
    except ssl.SSLError:
        pass
    deadline = time.monotonic() + 10
    while "TLS error" not in secured.proc.log_text()[log_start:] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "TLS error" in secured.proc.log_text()[log_start:]
    with _tls_client(secured) as s:
        s.sendall(_api_versions(8))
        assert _correlation(_read_frames(s, 1)[0]) == 8
