#!/usr/bin/env python3
"""Instructions the TLS read path adds over plaintext: `python -m benchmarks.tls_recv_bench [SRC ...]`.

    .venv/bin/python -m benchmarks.tls_recv_bench [--mib 16] [--record 2048] [--request-kib 512] [SRC ...]

No broker: one process, one socket pair. A client ``SSLObject`` encrypts ``--mib`` MiB of
produce-sized requests up front, writing ``--record`` bytes per ``write`` (one TLS record
each; librdkafka's records over an 8-partition 1 KiB produce load average ~2.2 KB), and the
ciphertext is sent through the pair; the other end receives it with kbroker's
``TlsSocket.recv_into`` (``kbroker/server/tls.py``, the SSL listener's read path) into a
1 MiB buffer until every plaintext byte is there. A second run of the same program reads
the same ciphertext with a plain ``recv_into`` instead (what a PLAINTEXT listener does).
Both run under valgrind's callgrind, so the difference of their totals is exactly the
instructions (user space) the TLS read path adds: OpenSSL's decryption, the memory BIO's
copies, and the Python around them. Reported per source folder (a folder holding a
``kbroker/`` package, e.g. ``git archive <rev> kbroker | tar -x -C /tmp/old``; default this
checkout), per MiB and per record. The client's work and the start-up are the same in both
runs and cancel out (the totals repeat to within ~0.05 %).
"""
from __future__ import annotations

import argparse
import os
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness.callgrind import instructions  # noqa: E402


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    for s in (a, b):
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    return a, b


def child(src: Path, mode: str, pki: list[str], mib: int, record: int, request_kib: int) -> None:
    """One measured run: ``mode`` is ``tls`` (TlsSocket) or ``plain`` (the socket itself)."""
    sys.path.insert(0, str(src))
    from kbroker.server.buffers import BufferPool
    from kbroker.server.tls import TlsSocket
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_TICKET     # as kbroker's listeners
    cert, key, ca = pki
    sctx.load_cert_chain(cert, key)
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.load_verify_locations(ca)
    a, b = _pair()
    cin, cout = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = cctx.wrap_bio(cin, cout, server_hostname="localhost")
    server = TlsSocket(b, sctx, BufferPool())
    # the handshake, both ends stepped by hand (nothing here may block)
    while True:
        try:
            client.do_handshake()
            break
        except ssl.SSLWantReadError:
            pass
        if cout.pending:
            a.sendall(cout.read())
        try:
            server._fill()
        except BlockingIOError:
            pass
        try:
            server.obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        if server._out.pending:
            b.sendall(server._out.read())
        try:
            cin.write(a.recv(1 << 16))
        except BlockingIOError:
            pass
    payload = memoryview(os.urandom(request_kib * 1024))
    requests = mib * 1024 // request_kib
    parts = []
    for _ in range(requests):
        for i in range(0, len(payload), record):
            client.write(payload[i:i + record])
        parts.append(cout.read())
    cipher = memoryview(b"".join(parts))
    del parts
    want = requests * len(payload) if mode == "tls" else len(cipher)
    reader = server if mode == "tls" else b
    view = memoryview(bytearray(1 << 20))
    sent = got = 0
    while got < want:
        if sent < len(cipher):
            try:
                sent += a.send(cipher[sent:sent + (256 << 10)])
            except BlockingIOError:
                pass
        try:
            while True:
                n = reader.recv_into(view)
                if not n:
                    raise SystemExit("unexpected end of stream")
                got += n
        except BlockingIOError:
            pass
    print(f"{mode}: {got} bytes received", file=sys.stderr)


def _instructions(args: list[str]) -> int:
    return instructions(["-m", "benchmarks.tls_recv_bench", "--child", *args], cwd=ROOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", type=Path, help="folders holding a kbroker package")
    ap.add_argument("--mib", type=int, default=16, help="MiB of plaintext received per run")
    ap.add_argument("--record", type=int, default=2048, help="plaintext bytes per TLS record")
    ap.add_argument("--request-kib", type=int, default=512, help="request size (KiB)")
    ap.add_argument("--child", nargs=5, metavar=("SRC", "MODE", "CERT", "KEY", "CA"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(Path(a.child[0]), a.child[1], a.child[2:], a.mib, a.record, a.request_kib)
        return 0
    sources = [p.resolve() for p in (a.src or [ROOT])]
    for src in sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "kbroker")],
                       check=True, stdout=subprocess.DEVNULL)
    records = a.mib * 1024 * 1024 // a.record
    print(f"| source | TLS − plaintext instructions | per MiB | per record ({a.record} B) |")
    print("|---|---:|---:|---:|")
    from tests.security.certs import make_pki
    with tempfile.TemporaryDirectory(prefix="tls-recv-pki-") as d:
        pki = make_pki(Path(d))
        certs = [str(pki.server_cert), str(pki.server_key), str(pki.ca)]
        common = ["--mib", str(a.mib), "--record", str(a.record), "--request-kib", str(a.request_kib)]
        for src in sources:
            tls = _instructions([str(src), "tls", *certs, *common])
            plain = _instructions([str(src), "plain", *certs, *common])
            extra = tls - plain
            print(f"| {src} | {extra:,} | {extra // a.mib:,} | {extra // records:,} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
