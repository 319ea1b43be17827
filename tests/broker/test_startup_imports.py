"""What ``kbroker serve`` imports before it is ready and up to its first acknowledged produce
(start-up cost, issue 32): a real ``python -v -m kbroker serve`` process, whose import log
names every module it loads. Module names only, never times.

Up to the ready line a plain single node loads no client command, no ``importlib.metadata``
(the version lookup is for ``--version``; CRC32C is loaded without its package's
``__init__``), none of the consumer, share and streams group types and, without SASL
listeners, no SASL mechanism. Up to its first acknowledged produce (a librdkafka producer:
ApiVersions, Metadata with the topic's auto-creation, Produce) it loads no API handler but
those it was asked for (the registry imports a handler's module on the API's first
request): no share-group, streams-group, transaction, ACL, SCRAM, quota, delegation-token
or raft-voter handler, no share-partition manager (started with the first share request) and
no group coordinator shard (made with the first group request). A later request of such an
API loads its module then and is answered. Every API stays advertised: the ApiVersions tests
and ``test_api_index.py`` keep the registry complete."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading

import pytest

from kbroker.wire import messages, protocol
from tests.support.broker_proc import free_port

# ``python -v`` names every module as it is loaded (``-X importtime`` misses those loaded
# through importlib.import_module, as the API registry loads its modules)
_IMPORT = re.compile(r"^import '([\w.]+)' #")

# the transaction coordinator and what it imports: a node that leads no partition of
# __transaction_state makes it with the first transactional request (kbroker/txn/service.py)
_TXN_MACHINERY = {"kbroker.txn." + m for m in (
    "coordinator", "metadata", "records", "markers", "verification", "expiry", "offsets")}

# the group coordinator's shard (GroupManager) and what it imports: the classic group type,
# offsets, records, timers and group settings. A node that leads no partition of
# __consumer_offsets makes it with the first group or offset request (kbroker/group/service.py)
_GROUP_MANAGER = {"kbroker.group." + m for m in (
    "manager", "base", "config", "offsets", "records", "record_base", "timers",
    "classic.protocol", "classic.state", "consumer.topics")}

# handler modules a plain node serving Produce, Fetch and Metadata has no use for, the
# transaction coordinator and the group manager
_NOT_BEFORE_FIRST_USE = {
    "kbroker.api." + m for m in (
        "share_fetch", "share_acknowledge", "share_group_heartbeat", "share_group_describe",
        "read_share_group_state", "write_share_group_state", "initialize_share_group_state",
        "streams_group_heartbeat", "streams_group_describe", "consumer_group_heartbeat",
        "add_partitions_to_txn", "add_offsets_to_txn", "end_txn", "txn_offset_commit",
        "write_txn_markers", "list_transactions", "describe_transactions",
        "create_acls", "describe_acls", "delete_acls",
        "alter_user_scram_credentials", "describe_user_scram_credentials",
        "alter_client_quotas", "describe_client_quotas", "create_delegation_token",
        "add_raft_voter", "remove_raft_voter", "describe_quorum", "sasl_handshake",
        "sasl_authenticate", "elect_leaders", "alter_partition_reassignments")} | {
    # the share-partition manager, its persister and the share front: started with the
    # first share request (kbroker/share/service.py)
    "kbroker.share.manager", "kbroker.share.persister", "kbroker.share.partition",
    "kbroker.share.dlq", "kbroker.group.share.coordinator"} | _TXN_MACHINERY | _GROUP_MANAGER


# ``kbroker serve``, reporting each kbroker dataclass made without a docstring: dataclasses
# then writes one from ``inspect.signature`` (54 such classes were ~19 M instructions of a
# start, 2.6 %)
_SERVE = r'''
import dataclasses, sys
_process_class = dataclasses._process_class
def _reporting(cls, *args, **kw):
    if cls.__doc__ is None and cls.__module__.startswith("kbroker"):
        print(f"dataclass without a docstring: {cls.__module__}.{cls.__qualname__}",
              file=sys.stderr, flush=True)
    return _process_class(cls, *args, **kw)
dataclasses._process_class = _reporting
def _audit(event, args):
    if event == "subprocess.Popen":
        print(f"child process started: {args[1]!r}", file=sys.stderr, flush=True)
sys.addaudithook(_audit)
sys.argv[0] = "kbroker"
from kbroker.tools.cli import main
sys.exit(main())
'''
_UNDOCUMENTED = re.compile(r"^dataclass without a docstring: ([\w.]+)$")
_CHILD = re.compile(r"^child process started: (.*)$")


class ServeProcess:
    """``python -v -m kbroker serve`` with a thread collecting the modules it imports (and
    the dataclasses it makes without a docstring)."""

    def __init__(self, tmp_path, entry=("-c", _SERVE), extra=()):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-v", *entry, "serve", "--data-dir", str(tmp_path / "data"),
             "--listen", f"127.0.0.1:{self.port}", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.names: list[str] = []
        self.undocumented: list[str] = []
        self.children: list[str] = []            # subprocesses started (their argv)
        self.at_ready: set[str] | None = None
        self.lines: list[str] = []                # the process's other lines
        self.children_at_ready: list[str] | None = None
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self._changed:
                m = _IMPORT.match(line)
                if m:
                    self.names.append(m.group(1))
                elif m := _UNDOCUMENTED.match(line):
                    self.undocumented.append(m.group(1))
                elif m := _CHILD.match(line):
                    self.children.append(m.group(1))
                elif "kbroker ready" in line and self.at_ready is None:
                    self.at_ready = set(self.names)
                    self.children_at_ready = list(self.children)
                elif not line.startswith("#"):       # python -v's other lines
                    self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, predicate, timeout: float = 120.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate() or self.proc.poll() is not None,
                                          timeout) and predicate()

    def loaded(self) -> set[str]:
        with self._changed:
            return set(self.names)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    node = ServeProcess(tmp_path_factory.mktemp("startup-imports"))
    try:
        assert node.wait_for(lambda: node.at_ready is not None), "the broker never logged ready"
        yield node
    finally:
        node.stop()


# the handler modules a librdkafka producer's first produce loads
_FIRST_PRODUCE = {"kbroker.api.api_versions", "kbroker.api.metadata", "kbroker.api.produce"}


def _first_ack(port: int) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 3,
                         "message.timeout.ms": 120_000})
    result: list = []
    producer.produce("first", b"x", on_delivery=lambda err, msg: result.append(err))
    producer.flush(120)
    assert result == [None], f"first produce not acknowledged: {result}"


def _request(port: int, api_key: int, version: int, body):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(protocol.encode_request(api_key, version, 5, "startup-imports", body))
        size = struct.unpack(">i", _recv(s, 4))[0]
        corr, resp = protocol.decode_response(_recv(s, size), api_key, version)
    assert corr == 5
    return resp


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def test_a_plain_single_node_imports_neither_client_commands_nor_package_metadata(serving):
    names = serving.at_ready
    assert "kbroker.server" in names and "kbroker.api" in names   # the probe works
    assert "importlib.metadata" not in names
    assert not {n for n in names if n.startswith("kafka")}, "a Kafka client library was loaded"
    commands = {n for n in names if n.startswith("kbroker.tools.")} - {"kbroker.tools.cli"}
    assert not commands, f"client command modules loaded by serve: {sorted(commands)}"
    # consumer (KIP-848), share (KIP-932) and streams (KIP-1071) group types load on first use
    group_types = {n for n in names if n.startswith(("kbroker.group.consumer.protocol",
                                                     "kbroker.group.consumer.state",
                                                     "kbroker.group.streams",
                                                     "kbroker.group.share.state",
                                                     "kbroker.group.share.protocol"))}
    assert not group_types, f"group types loaded before any group was used: {sorted(group_types)}"
    # no SASL listener: neither the SASL state machine nor its mechanisms
    assert not names & {"kbroker.security.authenticator", "kbroker.security.mechanisms"}
    # no request yet, so no API handler module (the registry lists them from its index)
    handlers = {n for n in names if n.startswith("kbroker.api.")} - {"kbroker.api._index"}
    assert not handlers, f"API handler modules loaded before any request: {sorted(handlers)}"


# standard-library modules a plain start has no use for, each once imported for one call:
# ``decimal`` (``java_double``'s scientific notation), ``concurrent.futures`` (the clean
# stop's thread pool), the ``idna`` codec with ``stringprep`` (a text host given to
# ``getaddrinfo``)
_STDLIB_NOT_AT_START = {"decimal", "_decimal", "concurrent.futures", "encodings.idna",
                        "stringprep"}
# kbroker's own, loaded by their first use: the log cleaner (a compacted log's first pass),
# the fetch sessions (a consumer's first Fetch, or a follower's fetcher), the client side of
# node-to-node security (a node with peers), leader elections (ElectLeaders, a due rebalance),
# TLS contexts, JAAS text and SCRAM (a listener that uses them, the first SCRAM login)
_KBROKER_NOT_AT_START = {"kbroker.log.cleaner", "kbroker.replica.fetch_session",
                         "kbroker.replica.fetch_session_handler", "kbroker.security.client",
                         "kbroker.metadata.elect", "kbroker.security.tls",
                         "kbroker.security.jaas", "kbroker.security.scram"}


def test_a_start_loads_no_module_it_does_not_use(serving):
    names = serving.at_ready
    assert "kbroker.server" in names and "kbroker.config.broker" in names   # the probe works
    assert "kbroker.log.manager" in names and "kbroker.replica.fetcher" in names
    unused = names & (_STDLIB_NOT_AT_START | _KBROKER_NOT_AT_START)
    assert not unused, sorted(unused)


def test_a_start_waits_for_no_child_process(serving):
    """trio looks up ``pthread_setname_np``'s library at import: answered from the mapped
    libraries (``kbroker.common.pthread_lookup``), not by ``ldconfig -p`` in a child."""
    assert serving.children_at_ready == [], serving.children_at_ready


def test_handlers_load_with_the_first_request_of_their_api(serving):
    _first_ack(serving.port)
    # what the producer asked for was loaded, and served (the import lines were written
    # before the answers; the reader thread may not have taken them from the pipe yet)
    assert serving.wait_for(lambda: _FIRST_PRODUCE <= set(serving.names))
    names = serving.loaded()
    unused = names & _NOT_BEFORE_FIRST_USE
    assert not unused, f"handlers loaded by a plain produce: {sorted(unused)}"
    # an API nobody asked for yet is still served: its module loads with the request
    resp = _request(serving.port, 66, 0, messages.ListTransactionsRequest())
    assert resp.error_code == 0 and resp.transaction_states == []
    assert serving.wait_for(lambda: "kbroker.api.list_transactions" in serving.names)


@contextlib.contextmanager
def _fresh_node(tmp_path, not_yet: set[str]):
    """A ``kbroker serve`` on a new data directory in ``tmp_path`` that has acknowledged a
    first produce with none of ``not_yet`` loaded; stopped at the end."""
    node = ServeProcess(tmp_path)
    try:
        assert node.wait_for(lambda: node.at_ready is not None), "the broker never logged ready"
        _first_ack(node.port)
        assert node.wait_for(lambda: _FIRST_PRODUCE <= set(node.names))
        assert not node.loaded() & not_yet, "made before its first use"
        yield node
    finally:
        node.stop()


@contextlib.contextmanager
def _restarted_node(tmp_path):
    """``kbroker serve`` started again on the data directory in ``tmp_path``, once ready;
    stopped at the end."""
    node = ServeProcess(tmp_path)
    try:
        assert node.wait_for(lambda: node.at_ready is not None), "the restart never logged ready"
        yield node
    finally:
        node.stop()


def test_the_first_transactional_request_after_ready_makes_the_transaction_coordinator(tmp_path):
    """A node that leads no partition of ``__transaction_state`` makes its transaction
    coordinator with the first transactional request (kbroker/txn/service.py): a librdkafka
    transactional producer, started after the node's first acknowledged produce, runs a whole
    transaction and aborts a second one. A restart, with ``__transaction_state`` on disk,
    makes the coordinator before ready and loads the id's state from it."""
    from confluent_kafka import Producer

    from tests.clients_txn.helpers import read_all

    with _fresh_node(tmp_path, _TXN_MACHINERY) as node:
        bootstrap = f"127.0.0.1:{node.port}"
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "after-ready",
                             "log_level": 3})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("first", b"committed")
        producer.commit_transaction(60)
        producer.begin_transaction()
        producer.produce("first", b"aborted")
        producer.flush(60)
        producer.abort_transaction(60)
        assert read_all(bootstrap, "first", 1, isolation="read_committed", expect=2) == \
            [b"x", b"committed"]
        assert "kbroker.txn.coordinator" in node.loaded()
    with _restarted_node(tmp_path) as node:
        assert _TXN_MACHINERY - {"kbroker.txn.offsets"} <= node.at_ready   # made, and loaded
        resp = _request(node.port, 65, 0, messages.DescribeTransactionsRequest(
            transactional_ids=["after-ready"]))
        (state,) = resp.transaction_states
        assert (state.error_code, state.transaction_state) == (0, "CompleteAbort")
        assert state.producer_id >= 0


def test_a_first_group_request_after_ready_makes_the_group_manager_and_is_answered(tmp_path):
    """A node that leads no partition of ``__consumer_offsets`` makes its group coordinator's
    shard with the first group request (kbroker/group/service.py): a consumer's commit
    (FindCoordinator creating ``__consumer_offsets``, OffsetCommit), its read back
    (OffsetFetch) and a listing of groups, after the node's first acknowledged produce. A
    restart, with ``__consumer_offsets`` on disk, makes the shard before ready and loads the
    committed offset from it."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    def consumer(port: int) -> Consumer:
        return Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "late",
                         "enable.auto.commit": False, "log_level": 3})

    def committed(port: int) -> list:
        c = consumer(port)
        try:
            got = c.committed([TopicPartition("first", 0)], timeout=60)
        finally:
            c.close()
        return [(tp.topic, tp.partition, tp.offset, tp.error) for tp in got]

    with _fresh_node(tmp_path, _GROUP_MANAGER) as node:
        c = consumer(node.port)
        try:
            c.commit(offsets=[TopicPartition("first", 0, 1)], asynchronous=False)
        finally:
            c.close()
        assert committed(node.port) == [("first", 0, 1, None)]
        # held in a variable: dropped before its answer came, it once listed no group
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{node.port}"})
        listed = admin.list_consumer_groups().result(60)
        assert [g.group_id for g in listed.valid] == ["late"]
        assert _GROUP_MANAGER <= node.loaded()
    with _restarted_node(tmp_path) as node:
        assert "kbroker.group.manager" in node.at_ready          # made, and loaded
        assert committed(node.port) == [("first", 0, 1, None)]


def test_serve_parser_alone_and_version_on_demand():
    """``serve`` builds only its own parser; ``--version`` still answers on stdout."""
    out = subprocess.run([sys.executable, "-m", "kbroker", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and re.fullmatch(r"kbroker \S+\n", out.stdout), out
    out = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--data-dir" in out.stdout
    out = subprocess.run([sys.executable, "-m", "kbroker", "topics", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "list" in out.stdout


def test_no_dataclass_a_start_makes_lacks_a_docstring(serving):
    """A dataclass without a docstring gets one written from ``inspect.signature`` when it is
    made (CPython 3.11's ``dataclasses._process_class``), at every start."""
    _first_ack(serving.port)
    # the probe works: the produce handler's import line (written after the dataclasses its
    # module made were reported) has reached the reader thread
    assert serving.wait_for(lambda: "kbroker.api.produce" in serving.names)
    assert serving.undocumented == []


def _imported_by(*argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    out = subprocess.run([sys.executable, "-v", "-m", "kbroker", *argv],
                         capture_output=True, text=True, timeout=60)
    return out, {m.group(1) for m in map(_IMPORT.match, out.stderr.splitlines()) if m}


def test_the_command_line_loads_no_http_client_before_a_command_needs_one():
    """``kbroker --help`` builds every command's parser: ``kbroker schemas`` imports
    ``urllib.request`` (with ``http.client``, ``email`` and ``ssl``) only to send a request."""
    out, names = _imported_by("--help")
    assert out.returncode == 0 and "schemas" in out.stdout, out
    assert "kbroker.tools.schemas" in names                   # the probe works
    assert not names & {"urllib.request", "http.client", "email.parser"}


def test_a_command_builds_only_its_own_parser():
    """``kbroker topics ...`` builds the ``topics`` parser (beside ``serve``'s), not every
    command's; ``kbroker --version`` none of them."""
    others = {f"kbroker.tools.{m}" for m in ("groups", "consume", "schemas", "acls", "storage",
                                             "local_cluster")}
    out, names = _imported_by("topics", "--help")
    assert out.returncode == 0 and "alter-config" in out.stdout, out
    assert "kbroker.tools.topics" in names
    assert not names & others, sorted(names & others)
    out, names = _imported_by("--version")
    assert out.returncode == 0 and out.stdout.startswith("kbroker "), out
    assert not names & (others | {"kbroker.tools.topics"}), sorted(names)


_EVERY_MODULE = r'''
import dataclasses, importlib, pkgutil
_process_class = dataclasses._process_class
def _reporting(cls, *args, **kw):
    if cls.__doc__ is None and cls.__module__.startswith("kbroker"):
        print(f"{cls.__module__}.{cls.__qualname__}")
    return _process_class(cls, *args, **kw)
dataclasses._process_class = _reporting
import kbroker
for m in pkgutil.walk_packages(kbroker.__path__, "kbroker."):
    importlib.import_module(m.name)
print("imported", flush=True)
'''


def test_no_kbroker_dataclass_lacks_a_docstring():
    """Beyond serve's start: every kbroker module imported, no dataclass made without a
    docstring (a group type, the share manager or the REST gateway pays it on first use)."""
    out = subprocess.run([sys.executable, "-c", _EVERY_MODULE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1:] == ["imported"], out.stdout      # the probe walked the whole package
    assert lines[:-1] == []


def test_a_plain_start_runs_no_openssl_up_to_its_first_ack(tmp_path):
    """``kbroker serve`` (its real entry, ``python -m kbroker``) imports ``ssl``, ``hmac`` and
    ``hashlib`` (trio's and kbroker's security modules do) but runs their bodies at their
    first use (``kbroker.common.deferred``): a node with a PLAINTEXT listener loads neither
    of OpenSSL's extension modules up to its first acknowledged produce. The TLS and SCRAM
    listeners of ``tests/security`` use them, in a start of the same kind."""
    node = ServeProcess(tmp_path, entry=("-m", "kbroker"), extra=("--log-level", "DEBUG"))
    try:
        assert node.wait_for(lambda: any("not yet run:" in line for line in node.lines)), \
            "the broker never logged its module image's line"
        assert {"ssl", "hmac", "hashlib"} <= node.at_ready        # imported (trio imports them)
        (line,) = [line for line in node.lines if "not yet run:" in line]
        pending = line.rsplit("not yet run:", 1)[1].strip().split(", ")
        assert {"ssl", "hmac", "hashlib"} <= set(pending), line
        _first_ack(node.port)
        assert node.wait_for(lambda: _FIRST_PRODUCE <= set(node.names))
        assert not node.loaded() & {"_ssl", "_hashlib"}
    finally:
        node.stop()
