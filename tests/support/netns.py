"""The project's own test hosts: one network namespace per node, a bridge between them, cuts
made by each host's packet filter (issue 19: network partitions on real processes).

    with TestNet(3) as net:                     # hosts 1..3 on 198.18.<slot>.0/24
        node.host = net.address(1)               # listen, advertise and announce this address
        cmd = net.enter(1) + cmd                 # run the node inside host 1
        net.block(1, 2)                          # host 1 can no longer reach host 2
        net.isolate(3)                           # host 3 cut off from every other host
        net.heal()                               # every cut gone
        net.can_connect(1, (net.address(2), port))   # a probe from inside host 1
        net.dropped(1)                           # packets host 1's filter dropped so far

Why hosts and not proxies. A node of Kafka 4.3 (and kbroker, which does the same) fetches
from the controller endpoint its leader *announces* (KIP-853: BeginQuorumEpoch v1
``LeaderEndpoints``, the ``NodeEndpoints`` of Vote/Fetch answers), not from the address its own
``controller.quorum.voters`` names. A TCP proxy per link that the voter lists point at is then
bypassed: the follower reaches the leader's real port around it, and a "partition" cuts
nothing (the compatibility suite's partition scenario passed that way on Kafka). Here every node
is a host with its own address, so every address it can learn -- the voter list, an announced
endpoint, a Metadata answer's advertised listener -- is the one address the cut applies to.
The packets are really lost: no proxy thread copies bytes, peers see silence (no reset, no
refusal) and notice the cut only through their own timeouts, and a connection that stays idle
through a cut is still there afterwards, as on a real network.

Layout (``<S>`` is this net's slot, see below):

- host ``i`` is the namespace ``kbroker-net<S>-h<i>`` with ``eth0`` at ``198.18.<S>.<i>/24``
  (RFC 2544's benchmarking range, which nothing else here routes) and ``lo`` up;
- the hosts' other veth ends and the test's own ``uplink`` hang on a bridge ``br0`` in the
  namespace ``kbroker-net<S>-sw`` -- the switch lives in its own namespace so that the root
  namespace's firewall (Docker's ``FORWARD DROP`` policy, applied to bridged frames by
  ``br_netfilter``) never sees the hosts' traffic;
- the test process stays in the root namespace and reaches every host through ``kbnet<S>``
  at ``198.18.<S>.254``: clients, probes and Kafka's command-line tools stand for the
  operators' network, which no cut touches.

Cuts. Every host loads, before anything runs in it, an nftables table with one output rule:
packets toward an address in its set ``unreachable`` are dropped if they belong to a
connection this host opened (conntrack's *original* direction; conntrack tracks the host's
connections from their first packet because the rule is there first). So

- ``block(i, j)`` -- "node i cannot reach node j": every connection i opens toward j, new or
  established, goes silent; the connections j opens toward i still work. This is the one-way
  cut of the seeded fault test (``one_way``): i's fetches from j fail while j's requests to i
  are answered, as behind a stateful firewall that lets only one side open connections;
- ``isolate(i)`` blocks both directions between i and every other host: its peers and it lose
  each other entirely (a whole partition); the test still reaches it;
- flapping is ``isolate``/``heal`` in a loop; each call is one ``nft`` run per host touched.

Slots and cleanup. A net takes the first free slot 1..250, owned through an exclusive
``flock`` on ``/run/kbroker-testnet/<S>.lock`` held while the net lives (so pytest-xdist
workers and concurrent sessions never share names or a subnet, and a crashed owner's lock
is released by the kernel). Taking a slot first deletes whatever a dead owner left under its
names; ``close()`` (also run at exit) deletes the namespaces and the root-side link. Needs root
(or CAP_NET_ADMIN and CAP_SYS_ADMIN), ``ip`` (iproute2), ``nft`` (nftables) and ``nsenter``
(util-linux); ``make netns`` installs the Debian packages.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
import sys
import weakref
from pathlib import Path

LOCK_DIR = Path("/run/kbroker-testnet")
SLOTS = range(1, 251)
PREFIX = "kbroker-net"
ROOT_HOST = 254          # the test's own address in every net

_RULESET = """\
table inet kbroker {
    set unreachable { type ipv4_addr; }
    chain output {
        type filter hook output priority filter; policy accept;
        ip daddr @unreachable ct direction original counter drop
    }
}
"""

_LIVE: "weakref.WeakSet[TestNet]" = weakref.WeakSet()


class TestNetError(RuntimeError):
    """The hosts cannot be made here (not root, tools missing, no free slot)."""


def _run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(args, input=input, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise TestNetError(f"{' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


class TestNet:
    """``hosts`` namespaces on one bridge; host ids are 1..``hosts``. One instance owns its
    slot until ``close()``; cuts are kept as a set of (from, to) pairs."""

    __test__ = False     # not a pytest test class

    def __init__(self, hosts: int):
        if os.geteuid() != 0:
            raise TestNetError("network namespaces need root (the tests run as root here and in CI)")
        for tool in ("ip", "nft", "nsenter"):
            if _run("sh", "-c", f"command -v {tool}", check=False).returncode:
                raise TestNetError(f"{tool} is missing: `make netns` installs it")
        self.hosts = list(range(1, hosts + 1))
        self._blocked: set[tuple[int, int]] = set()
        self._lock_fd: int | None = None
        self.slot = self._claim_slot()
        self.subnet = f"198.18.{self.slot}"
        self.switch = f"{PREFIX}{self.slot}-sw"
        self.uplink = f"kbnet{self.slot}"
        _LIVE.add(self)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ addresses
    def namespace(self, i: int) -> str:
        return f"{PREFIX}{self.slot}-h{i}"

    def address(self, i: int) -> str:
        """Host ``i``'s address: what its node binds, advertises and announces."""
        self._check(i)
        return f"{self.subnet}.{i}"

    @property
    def root_address(self) -> str:
        """The test process's own address on this net (never cut)."""
        return f"{self.subnet}.{ROOT_HOST}"

    def enter(self, i: int) -> list[str]:
        """The prefix that runs a command inside host ``i``: only the network namespace
        changes (same files, mounts, environment and pid; signals reach the process itself)."""
        self._check(i)
        return ["nsenter", f"--net=/run/netns/{self.namespace(i)}", "--"]

    # ------------------------------------------------------------------ cuts
    def block(self, i: int, j: int) -> None:
        """Host ``i`` can no longer reach host ``j``: connections i opened toward j go silent."""
        self._apply({(i, j)}, set())

    def unblock(self, i: int, j: int) -> None:
        self._apply(set(), {(i, j)})

    def isolate(self, i: int) -> None:
        """Cut host ``i`` off from every other host, both ways."""
        pairs = {(i, j) for j in self.hosts if j != i} | {(j, i) for j in self.hosts if j != i}
        self._apply(pairs, set())

    def heal(self) -> None:
        """Remove every cut."""
        self._apply(set(), set(self._blocked))

    @property
    def blocked(self) -> frozenset:
        return frozenset(self._blocked)

    def can_connect(self, i: int, addr: tuple[str, int], timeout: float = 1.0) -> bool:
        """Can a process in host ``i`` open a TCP connection to ``addr`` (within ``timeout``)?
        A probe sharing the host's network with its node: what it cannot reach, the node cannot
        either, whichever address the node learnt."""
        probe = ("import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), "
                 "timeout=float(sys.argv[3])).close()")
        r = subprocess.run(self.enter(i) + [sys.executable, "-c", probe, addr[0], str(addr[1]), str(timeout)],
                           capture_output=True, timeout=timeout + 30)
        return r.returncode == 0

    def dropped(self, i: int) -> int:
        """Packets host ``i``'s filter has dropped since the net was made (its rule's counter):
        proof that a cut met traffic."""
        out = _run(*self.enter(i), "nft", "list", "chain", "inet", "kbroker", "output").stdout
        for line in out.splitlines():
            words = line.split()
            if "drop" in words and "packets" in words:
                return int(words[words.index("packets") + 1])
        raise TestNetError(f"no drop counter in host {i}'s filter:\n{out}")

    def _apply(self, add: set, remove: set) -> None:
        for i, j in add | remove:
            self._check(i)
            self._check(j)
        add = add - self._blocked
        remove = remove & self._blocked
        for i in sorted({i for i, _ in add | remove}):
            lines = []
            gone = sorted(self.address(j) for a, j in remove if a == i)
            new = sorted(self.address(j) for a, j in add if a == i)
            if gone:
                lines.append(f"delete element inet kbroker unreachable {{ {', '.join(gone)} }}")
            if new:
                lines.append(f"add element inet kbroker unreachable {{ {', '.join(new)} }}")
            _run(*self.enter(i), "nft", "-f", "-", input="\n".join(lines) + "\n")
        self._blocked = (self._blocked - remove) | add

    def _check(self, i: int) -> None:
        if i not in self.hosts:
            raise ValueError(f"no host {i} (hosts {self.hosts})")

    # ------------------------------------------------------------------ making and removing
    def _claim_slot(self) -> int:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for slot in SLOTS:
            fd = os.open(LOCK_DIR / f"{slot}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _remove_slot(slot)          # whatever a dead owner of this slot left behind
            if _run("ip", "-4", "-o", "addr", "show", "to", f"198.18.{slot}.0/24").stdout.strip():
                os.close(fd)            # someone else's network uses this subnet
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._lock_fd = fd
            return slot
        raise TestNetError(f"no free test-net slot in {LOCK_DIR}")

    def _build(self) -> None:
        sw = self.switch
        _run("ip", "netns", "add", sw)
        _run("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", sw, "link", "set", "dev", "br0", "up")
        _run("ip", "link", "add", self.uplink, "type", "veth", "peer", "name", "uplink", "netns", sw)
        _run("ip", "-n", sw, "link", "set", "dev", "uplink", "master", "br0", "up")
        _run("ip", "addr", "add", f"{self.root_address}/24", "dev", self.uplink)
        _run("ip", "link", "set", "dev", self.uplink, "up")
        for i in self.hosts:
            ns = self.namespace(i)
            _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", "name", "eth0", "netns", ns, "type", "veth",
                 "peer", "name", f"h{i}", "netns", sw)
            _run("ip", "-n", sw, "link", "set", "dev", f"h{i}", "master", "br0", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "dev", "eth0", "up")
            _run("ip", "-n", ns, "link", "set", "dev", "lo", "up")
            _run(*self.enter(i), "nft", "-f", "-", input=_RULESET)

    def close(self) -> None:
        """Delete the namespaces and the root-side link; release the slot. Processes still
        running inside a host lose their network (stop them first)."""
        if self._lock_fd is None:
            return
        try:
            _remove_slot(self.slot)
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> "TestNet":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TestNet slot {self.slot}: hosts {self.hosts} on {self.subnet}.0/24, cuts {sorted(self._blocked)}>"


def _remove_slot(slot: int) -> None:
    """Delete every namespace and the root link named for ``slot`` (ours, or a dead owner's)."""
    names = _run("ip", "netns", "list", check=False).stdout.split("\n")
    for line in names:
        name = line.split(" ")[0]
        if name.startswith(f"{PREFIX}{slot}-"):
            _run("ip", "netns", "del", name, check=False)
    # deleting the switch namespace destroys its veth ends only when the kernel gets to it:
    # remove the root-side end now, so that the slot's names are free at once
    _run("ip", "link", "del", f"kbnet{slot}", check=False)


@atexit.register
def _close_all() -> None:
    for net in list(_LIVE):
        net.close()
