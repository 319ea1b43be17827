"""The test hosts of ``tests/support/netns.py`` cut what they say, with plain sockets: a TCP
server in every host, clients run inside hosts (``enter``) and from the test process.

- a one-way cut ``block(1, 2)`` silences the connections host 1 opens toward host 2 -- new
  ones and one already established -- while host 2 still reaches host 1 and the test still
  reaches both; ``heal`` brings the established connection back;
- ``isolate(3)`` cuts host 3 off from both others, both ways, and not from the test;
- the filter's counter shows the dropped packets; two nets at once take different slots;
  ``close`` leaves no namespace behind.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time

from tests.support.netns import TestNet

from .support import wait_for

PORT = 7070
# an echo server: answers every line it reads with the same line
SERVER = """
import socket, sys, threading
s = socket.create_server((sys.argv[1], int(sys.argv[2])))
def serve(c):
    f = c.makefile("rwb", buffering=0)
    for line in f:
        f.write(line)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""
# a client that keeps one connection and echoes a line whenever the test writes one to it
HOLDER = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1.0)
c.settimeout(None)      # an echo held up by a cut waits for the heal
for line in sys.stdin:
    try:
        c.sendall(line.encode())
        print("ok" if c.recv(64) == line.encode() else "fail", flush=True)
    except OSError:
        print("fail", flush=True)
"""


def reach(net: TestNet, src: int, dst: int) -> bool:
    """Can host ``src`` open a connection to host ``dst``?"""
    return net.can_connect(src, (net.address(dst), PORT))


def reach_from_test(net: TestNet, dst: int) -> bool:
    with socket.create_connection((net.address(dst), PORT), timeout=2.0) as c:
        c.sendall(b"y\n")
        return c.recv(2) == b"y\n"


def test_cuts_are_per_direction_and_heal():
    net = TestNet(3)
    servers = []
    try:
        for i in net.hosts:
            servers.append(subprocess.Popen(net.enter(i) + [sys.executable, "-c", SERVER, net.address(i), str(PORT)]))
        deadline = time.monotonic() + 20
        while not all(_try(reach_from_test, net, i) for i in net.hosts):
            assert time.monotonic() < deadline, "servers not up"
            time.sleep(0.1)
        assert all(reach(net, i, j) for i in net.hosts for j in net.hosts if i != j)
        holder = subprocess.Popen(net.enter(1) + [sys.executable, "-c", HOLDER, net.address(2), str(PORT)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert _echo(holder) == "ok"
            before = net.dropped(1)

            net.block(1, 2)
            assert not reach(net, 1, 2), "host 1 still opens connections to host 2"
            assert reach(net, 2, 1), "the one-way cut also cut host 2's connections to host 1"
            assert reach(net, 1, 3) and reach(net, 3, 2)
            assert reach_from_test(net, 1) and reach_from_test(net, 2)
            sent = net.dropped(1)
            holder.stdin.write("z\n")
            holder.stdin.flush()
            # the held connection's data meets the cut: host 1's filter drops it
            wait_for(lambda: net.dropped(1) > sent, timeout=30,
                     what="host 1's filter dropping the held connection's data")
            assert net.dropped(1) > before
            net.heal()
            # the established connection was silenced, not broken: TCP retransmits after the heal
            assert holder.stdout.readline().strip() == "ok"
            assert reach(net, 1, 2)
        finally:
            holder.kill()
            holder.wait()

        net.isolate(3)
        assert not reach(net, 3, 1) and not reach(net, 3, 2)
        assert not reach(net, 1, 3) and not reach(net, 2, 3)
        assert reach(net, 1, 2) and reach(net, 2, 1)
        assert reach_from_test(net, 3), "a cut must not separate a host from the test"
        net.heal()
        assert reach(net, 3, 1) and reach(net, 1, 3)

        other = TestNet(2)
        try:
            assert other.slot != net.slot and other.address(1) != net.address(1)
        finally:
            other.close()
        assert not [n for n in _namespaces() if n.startswith(f"kbroker-net{other.slot}-")]
    finally:
        for s in servers:
            s.kill()
            s.wait()
        net.close()
    assert not [n for n in _namespaces() if n.startswith(f"kbroker-net{net.slot}-")]


def _echo(holder) -> str:
    holder.stdin.write("w\n")
    holder.stdin.flush()
    return holder.stdout.readline().strip()


def _try(fn, *args) -> bool:
    try:
        return fn(*args)
    except OSError:
        return False


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split(" ")[0] for line in out.splitlines()]
