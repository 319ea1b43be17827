"""Brokers for other projects' test suites: the machinery behind ``kbroker.testing.pytest_plugin``.

- :class:`KbrokerProcess` — one ``python -m kbroker serve`` child process on free loopback
  ports (client port 0, read back from the ``kbroker ready:`` line), its data in a given
  folder, its log in ``<folder>.log``; ``stop()`` is a graceful SIGTERM.
- :class:`KbrokerCluster` — N combined nodes (every node a broker and a voter of the KRaft
  quorum), started together; ``stop_node``/``start_node`` for failure tests.
- :class:`ExternalBroker` — a broker someone else runs (``--kbroker-bootstrap``): the same
  admin calls against any Kafka-protocol broker, e.g. Apache Kafka.
- :class:`Admin` — the few admin requests fixtures need (create/delete/list topics, list
  and delete groups), spoken with kbroker's own schema-driven wire codec so the plugin
  depends on no Kafka client library; any Kafka broker understands them.

Why child processes and not a broker thread inside pytest: start-up costs the same (about
a second, dominated by imports and the broker's own start; a thread saves only the
interpreter start, ~0.1-0.2 s, measured on the development VM), while a process has its own
GIL (the broker does not steal the test's CPU, nor the other way round), its own signal
handlers and logging configuration, cannot be wedged by a test's event loop and can be
killed cleanly — the isolation a test fixture wants.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

_READY = re.compile(r"kbroker ready: listening on PLAINTEXT://([^:,\s]*):(\d+)")
_HTTP = re.compile(r"http listener on http://([^\s]+) ")
INTERNAL_PREFIX = "__"

# Test-friendly defaults (what local-development tools set): the first consumer of a new
# group does not wait Kafka's 3 s initial rebalance delay.
DEFAULT_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


class KafkaAdminError(RuntimeError):
    def __init__(self, what: str, code: int, message: str | None = None):
        super().__init__(f"{what}: error {code}" + (f" ({message})" if message else ""))
        self.code = code


# Listener ports chosen before a process binds them. Under pytest-xdist each worker takes its
# ports, in turn, from its own block below the kernel's ephemeral range (ip_local_port_range,
# 32768 and up by default): between the moment a port is picked and the moment a broker binds
# it, neither another worker nor the local end of some client's connection (a node of the same
# cluster connecting to a voter already up, say) can take it. KBROKER_PORT_BLOCK=N gives a
# process outside xdist block N (make test's late files of tests/, which run beside the
# compatibility suite's workers). Otherwise, outside xdist: the kernel's choice.
# One implementation per process: tests/support/broker_proc.py hands out ports from here too.
_PORT_BLOCK = 2000
_FIRST_PORT = 12000
_next_port: int | None = None


def _worker_block() -> tuple[int, int] | None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        index = int(worker[2:])
    elif os.environ.get("KBROKER_PORT_BLOCK", "").isdigit():
        index = int(os.environ["KBROKER_PORT_BLOCK"])
    else:
        return None
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    blocks = (ephemeral - _FIRST_PORT) // _PORT_BLOCK
    if blocks < 1:
        return None
    start = _FIRST_PORT + (index % blocks) * _PORT_BLOCK
    return start, start + _PORT_BLOCK


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int = 1) -> int:
    """The first of ``count`` consecutive loopback ports that are free now."""
    import random
    global _next_port
    block = _worker_block()
    if block is None:
        for _ in range(50):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                base = s.getsockname()[1]
            if all(_bindable(p) for p in range(base + 1, base + count)):
                return base
        raise RuntimeError("no free port range")
    lo, hi = block
    if _next_port is None:
        _next_port = lo + random.randrange(_PORT_BLOCK)
    for _ in range(_PORT_BLOCK):
        base = _next_port if _next_port + count <= hi else lo
        _next_port = base + count
        if all(_bindable(p) for p in range(base, base + count)):
            return base
    raise RuntimeError(f"no {count} free ports in {lo}-{hi}")


def free_port() -> int:
    return free_ports(1)


# ------------------------------------------------------------------------------ admin

# request versions every Kafka 4.x broker (and kbroker) serves
_VERSIONS = {"Metadata": 4, "CreateTopics": 4, "DeleteTopics": 4, "ListGroups": 3,
             "DeleteGroups": 1}
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
GROUP_ID_NOT_FOUND = 69


class _Connection:
    """One blocking connection speaking the Kafka protocol, one request at a time."""

    def __init__(self, host: str, port: int, timeout: float):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation_id = 0

    def request(self, name: str, **fields):
        from kbroker.wire import messages
        from kbroker.wire.protocol import decode_response, encode_request
        cls = messages.get(name + "Request")
        version = _VERSIONS[name]
        self.correlation_id += 1
        api_key = cls._message.api_key
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, "kbroker-pytest",
                                         cls(**fields)))
        size = struct.unpack(">i", self._read(4))[0]
        if not 0 <= size <= 64 * 1024 * 1024:
            raise KafkaAdminError(name, -1, f"bad response size {size}")
        corr, body = decode_response(self._read(size), api_key, version)
        if corr != self.correlation_id:
            raise KafkaAdminError(name, -1, "response out of order")
        return body

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


class Admin:
    """Topic and group administration against ``bootstrap_servers`` (``host:port,...``)."""

    def __init__(self, bootstrap_servers: str, timeout: float = 30.0):
        self.bootstrap = [(h, int(p)) for h, _, p in
                          (a.strip().rpartition(":") for a in bootstrap_servers.split(",") if a.strip())]
        self.timeout = timeout

    def _connect(self, addr=None) -> _Connection:
        last = None
        for host, port in ([addr] if addr else self.bootstrap):
            try:
                return _Connection(host, port, self.timeout)
            except OSError as e:
                last = e
        raise ConnectionError(f"no broker reachable at {self.bootstrap}: {last}")

    def _call(self, name: str, addr=None, **fields):
        conn = self._connect(addr)
        try:
            return conn.request(name, **fields)
        finally:
            conn.close()

    def metadata(self, topics: list[str] | None = None, addr=None):
        from kbroker.wire import messages
        req_topic = messages.get("MetadataRequest").MetadataRequestTopic
        wanted = None if topics is None else [req_topic(name=t) for t in topics]
        return self._call("Metadata", addr, topics=wanted, allow_auto_topic_creation=False)

    def brokers(self) -> list[tuple[int, str, int]]:
        return [(b.node_id, b.host, b.port) for b in self.metadata([]).brokers]

    def list_topics(self, *, internal: bool = False) -> list[str]:
        return sorted(t.name for t in self.metadata().topics
                      if t.error_code == 0 and (internal or not t.name.startswith(INTERNAL_PREFIX)))

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: dict | None = None, *, wait: bool = True) -> str:
        from kbroker.wire import messages
        req = messages.get("CreateTopicsRequest")
        topic = req.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=replication_factor,
            assignments=[], configs=[req.CreatableTopicConfig(name=k, value=str(v))
                                     for k, v in (config or {}).items()])
        resp = self._call("CreateTopics", topics=[topic], timeout_ms=int(self.timeout * 1000),
                          validate_only=False)
        for t in resp.topics:
            if t.error_code:
                raise KafkaAdminError(f"create topic {name}", t.error_code, t.error_message)
        if wait:
            self.wait_topic(name, partitions)
        return name

    def wait_topic(self, name: str, partitions: int) -> None:
        """Until every broker's metadata lists the topic with a leader for each partition
        (clients may ask any of them first)."""
        deadline = time.monotonic() + self.timeout
        pending = None
        while time.monotonic() < deadline:
            nodes = pending or [(h, p) for _, h, p in self.brokers()]
            pending = []
            for addr in nodes:
                md = self.metadata([name], addr)
                ok = [t for t in md.topics if t.name == name and t.error_code == 0
                      and len(t.partitions) == partitions
                      and all(p.leader_id >= 0 and p.error_code == 0 for p in t.partitions)]
                if not ok:
                    pending.append(addr)
            if not pending:
                return
            time.sleep(0.02)
        raise TimeoutError(f"topic {name} not ready on {pending} after {self.timeout} s")

    def delete_topics(self, names: list[str], *, wait: bool = True) -> None:
        if not names:
            return
        resp = self._call("DeleteTopics", topic_names=list(names),
                          timeout_ms=int(self.timeout * 1000))
        for r in resp.responses:
            if r.error_code and r.error_code != UNKNOWN_TOPIC_OR_PARTITION:
                raise KafkaAdminError(f"delete topic {r.name}", r.error_code)
        if wait:
            deadline = time.monotonic() + self.timeout
            while set(names) & set(self.list_topics()):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topics {names} still listed after {self.timeout} s")
                time.sleep(0.02)

    def list_groups(self) -> dict[str, tuple[str, int]]:
        """Every group of every broker: ``{group id: (host, port) of its coordinator}``."""
        out = {}
        for _, host, port in self.brokers():
            resp = self._call("ListGroups", (host, port))
            if resp.error_code:
                raise KafkaAdminError("list groups", resp.error_code)
            for g in resp.groups:
                out[g.group_id] = (host, port)
        return out

    def delete_groups(self, groups: list[str] | None = None) -> dict[str, int]:
        """Delete ``groups`` (default: all); returns the error code per group (0 = deleted;
        68 NON_EMPTY_GROUP for a group that still has members)."""
        where = self.list_groups()
        wanted = list(where) if groups is None else list(groups)
        by_coordinator: dict = {}
        for g in wanted:
            if g in where:
                by_coordinator.setdefault(where[g], []).append(g)
        out = {g: GROUP_ID_NOT_FOUND for g in wanted if g not in where}
        for addr, names in by_coordinator.items():
            resp = self._call("DeleteGroups", addr, groups_names=names)
            for r in resp.results:
                out[r.group_id] = r.error_code
        return out

    def reset(self) -> None:
        """Delete every non-internal topic and every group: a clean broker for the next test."""
        self.delete_groups()
        self.delete_topics(self.list_topics())


# ------------------------------------------------------------------------------ brokers

class _BrokerBase:
    bootstrap_servers: str
    admin_timeout = 30.0

    @property
    def admin(self) -> Admin:
        return Admin(self.bootstrap_servers, self.admin_timeout)

    def create_topic(self, name: str | None = None, partitions: int = 1,
                     replication_factor: int = 1, config: dict | None = None) -> str:
        return self.admin.create_topic(name or unique_name(), partitions, replication_factor, config)

    def delete_topics(self, names) -> None:
        self.admin.delete_topics(list(names))

    def list_topics(self) -> list[str]:
        return self.admin.list_topics()

    def reset(self) -> None:
        """Delete every user topic and every group."""
        self.admin.reset()


def unique_name(hint: str = "topic") -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", hint).strip("-.")[:180] or "topic"
    return f"{base}-{uuid.uuid4().hex[:8]}"


class ExternalBroker(_BrokerBase):
    """A broker (or cluster) someone else runs."""

    metrics_url = None      # unknown: someone else's broker
    log_path = None

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers

    def stop(self) -> None:
        pass


class KbrokerProcess(_BrokerBase):
    """One ``kbroker serve`` child process. ``overrides`` are broker settings
    (``server.properties`` keys); the client listener and the HTTP listener get free ports."""

    def __init__(self, data_dir, overrides: dict | None = None, *, log_level: str = "INFO",
                 start_timeout: float = 60.0, python: str = sys.executable, http: bool = True):
        self.data_dir = Path(data_dir)
        self.overrides = {**DEFAULT_OVERRIDES, **(overrides or {})}
        if http:
            self.overrides.setdefault("kbroker.http.listen", "127.0.0.1:0")
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.python = python
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".log")
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.http_address: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError("the broker is not running")
        return f"{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        return f"http://{self.http_address}/metrics" if self.http_address else None

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve", "--log-level", self.log_level]
        overrides = dict(self.overrides)
        # a restart keeps the client port the first start got, so bootstrap addresses stay valid
        port = self.port or 0
        if "listeners" not in overrides:
            cmd += ["--listen", f"127.0.0.1:{port}"]
        elif port:
            for key in ("listeners", "advertised.listeners"):
                if key in overrides:
                    overrides[key] = overrides[key].replace("PLAINTEXT://127.0.0.1:0",
                                                            f"PLAINTEXT://127.0.0.1:{port}")
        overrides.setdefault("log.dirs", str(self.data_dir))
        for k, v in overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd

    def start(self) -> "KbrokerProcess":
        if self.running:
            raise RuntimeError("already running")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            offset = log.tell()
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=_child_env())
        deadline = time.monotonic() + self.start_timeout
        while True:
            text = self.log_text(offset)
            m = _READY.search(text)
            if m:
                self.host, self.port = m.group(1) or "127.0.0.1", int(m.group(2))
                h = _HTTP.search(text)
                self.http_address = h.group(1) if h else None
                return self
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                raise RuntimeError(f"kbroker exited with {rc} during start-up; its log "
                                   f"({self.log_path}):\n{text[-4000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"kbroker not ready after {self.start_timeout} s; its log "
                                   f"({self.log_path}):\n{text[-4000:]}")
            # the start takes a few tenths of a second: a coarser poll adds half its period to
            # every session's start (reading the short log again costs next to nothing)
            time.sleep(0.005)

    def log_text(self, offset: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """Graceful stop (SIGTERM, then SIGKILL after ``timeout``); the exit code."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill(self) -> None:
        """A crash: SIGKILL."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


class KbrokerCluster(_BrokerBase):
    """``nodes`` combined nodes (broker + KRaft voter each) on loopback; internal topics get
    replication factor ``min(3, nodes)`` as in ``kbroker cluster``."""

    def __init__(self, root, nodes: int = 3, overrides: dict | None = None, *,
                 log_level: str = "INFO", start_timeout: float = 90.0):
        from kbroker.config.broker import new_cluster_id
        self.root = Path(root)
        self.cluster_id = new_cluster_id()
        rf = str(min(3, nodes))
        self.controller_ports = {i: free_port() for i in range(1, nodes + 1)}
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.controller_ports.items())
        self.nodes: dict[int, KbrokerProcess] = {}
        for i, cport in self.controller_ports.items():
            node_overrides = {
                "node.id": str(i), "process.roles": "broker,controller",
                "listeners": f"PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{cport}",
                "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
                "controller.listener.names": "CONTROLLER", "controller.quorum.voters": voters,
                "cluster.id": self.cluster_id, "offsets.topic.replication.factor": rf,
                "transaction.state.log.replication.factor": rf,
                "transaction.state.log.min.isr": str(min(2, nodes)),
                "log.dirs": str(self.root / f"node-{i}"),
                **(overrides or {})}
            self.nodes[i] = KbrokerProcess(self.root / f"node-{i}", node_overrides,
                                           log_level=log_level, start_timeout=start_timeout)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap_servers for n in self.nodes.values() if n.port is not None)

    def start(self) -> "KbrokerCluster":
        """Start every node at once (a voter waits for the others' votes), then wait for all,
        and until each one's metadata lists every node: a node is ready once the active
        controller has unfenced it, and the others learn that by replicating the metadata
        log, so a topic created in between on another node (the schema registry's
        ``_schemas``, replicated to as many brokers as that node knows) could get fewer
        replicas than the cluster has."""
        import threading
        errors: list[BaseException] = []

        def run(node):
            try:
                node.start()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(n,)) for n in self.nodes.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.stop()
            raise errors[0]
        try:
            self._wait_every_broker_seen()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_every_broker_seen(self) -> None:
        want = set(self.nodes)
        deadline = time.monotonic() + max(n.start_timeout for n in self.nodes.values())
        for node_id, node in self.nodes.items():
            while {b[0] for b in node.admin.brokers()} != want:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"node {node_id}'s metadata does not list every node "
                                       f"{sorted(want)}: {node.admin.brokers()}")
                time.sleep(0.02)

    def stop_node(self, node_id: int) -> None:
        self.nodes[node_id].stop()

    def start_node(self, node_id: int) -> None:
        self.nodes[node_id].start()

    def stop(self) -> None:
        for n in self.nodes.values():
            if n.running:
                n.proc.send_signal(signal.SIGTERM)
        for n in self.nodes.values():
            n.stop()


def _child_env() -> dict:
    """The child imports the same kbroker as this process (an editable or a source tree
    first on ``sys.path`` stays first)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in parts and Path(here).name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join([here, *parts])
    return env
