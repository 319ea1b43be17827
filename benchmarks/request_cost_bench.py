"""Broker instructions per request: single-record Produce, and a parked Fetch woken by it.

The latency rows of issue 32 lose from 10,000 records/s on: with ``linger.ms=0`` librdkafka
sends one Produce per record, and every append wakes the consumer's parked Fetch, so the
broker answers about two requests per record. This driver measures what one such request
costs the broker, in user-space instructions (``perf stat -e instructions:u -p <broker>``
over the measured part only), a figure a busy machine hardly changes, unlike wall time.

Against one ``kbroker serve`` (started here, one topic of one partition), three phases:

- ``produce-pipelined``: N Produce requests (one 1 KiB record each, acks=1) on one
  connection, ``--window`` of them in flight, as a linger.ms=0 producer keeps several;
- ``produce-serial``: N Produce requests, each sent after the previous answer;
- ``idle``: one second without a request (the broker's timers and sweeps), per second;
- ``fetch-behind``: N fetches, one after another, from the start of the log (a consumer
  catching up: each answer holds up to 1 MiB of the one-record batches written before);
  sessionless as librdkafka's, or with ``--fetch-session`` in an incremental fetch session
  as the Java consumer's (``--fetch-version 17``);
- ``burst-woken``: N one-record Produce requests in bursts of ``--window`` written at once,
  each burst behind a consumer's Fetch parked at the log end that then fetches until it has
  the burst's records (a linger.ms=0 producer ahead of its broker); per *record*, with the
  fetch answers it took (one per burst once a connection handles a burst before yielding);
- ``fetch-woken``: N rounds of a consumer's Fetch (one partition, at the log end,
  ``max_wait_ms`` 500, ``min_bytes`` 1, sessionless as librdkafka's) sent on its own
  connection and parked, then one single-record Produce on another connection that wakes it;
  the Fetch's share is the round less a ``produce-serial`` request;
- ``fetch-ready``: the same pair the other way round: the Produce is answered, then the
  Fetch finds its record and is answered at once. Against ``fetch-woken``, what parking,
  waking and answering the woken fetch first (readers first) cost.

Two more phases, not run by default, have the Java producer's request shape at 8 partitions
(``ProducerPerformance``, 1 KiB records, ``batch.size`` 16 KiB: one batch of 15 records per
partition, eight partitions per request, five requests in flight; issue 32's 8-partition
rows, benchmarks/README.md "The Java producer at 8 partitions"):

- ``produce-8p``: acks=1, batches without a producer id (the client with ``acks=1``);
- ``produce-8p-idem``: acks=all, idempotent batches (a producer id from InitProducerId,
  sequences per partition), what the Java client sends by default (``acks=all``).

Optionally ``--py-spy FILE`` records a py-spy profile of the broker over the measured phases
(``--idle`` left off: only time on the CPU). Prints a table; asserts nothing.

``--counter bytecodes`` counts the Python bytecodes the broker runs instead, per function
(a tracer switched on for each phase): exact like callgrind's instructions, and it says
where — after the table, each phase's bytecodes per request by layer (``kbroker.server``,
``kbroker.wire``, trio...) and its ``--top`` functions. Bytecodes are not equal in cost
(a call into C counts one), so the two counters answer different questions: how much, and
where in the Python.

``--counter timeline`` maps a ``fetch-woken`` round inside the broker instead: the broker
runs under a wrapper that marks, once per round, when the Produce reaches its handler, when
its append begins and returns, when its answer is encoded, when the woken Fetch's read
begins and returns, when its answer is encoded and when the ``sendmsg`` that writes it
begins and returns; after the table, each step's median time from the Produce's entry. The
wrappers add a call each (about a microsecond): where the round's time goes, not a speed.

    .venv/bin/python -m benchmarks.request_cost_bench [-n 2000] [--window 16]
        [--fetch-version 12] [--py-spy /tmp/broker.txt]
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from kbroker.wire import messages as M
from kbroker.wire import protocol
from kbroker.wire.records import build_batch

TOPIC = "reqcost"
VALUE = b"v" * 1024
PRODUCE_VERSION = 9
P = M.ProduceRequest
F = M.FetchRequest
_SIZE = struct.Struct(">i")


class Conn:
    """A blocking connection; frames are encoded before a measured phase."""

    def __init__(self, port: int, client_id: str):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.corr = 0
        self.buf = bytearray()

    def frame(self, api_key: int, version: int, body) -> bytes:
        self.corr += 1
        return protocol.encode_request(api_key, version, self.corr, self.client_id, body)

    def read_frame(self) -> bytes:
        while True:
            if len(self.buf) >= 4:
                size = _SIZE.unpack_from(self.buf, 0)[0]
                if len(self.buf) >= 4 + size:
                    payload = bytes(self.buf[4:4 + size])
                    del self.buf[:4 + size]
                    return payload
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buf += chunk

    def call(self, api_key: int, version: int, body):
        self.sock.sendall(self.frame(api_key, version, body))
        return protocol.decode_response(self.read_frame(), api_key, version)[1]


def produce_body() -> P:
    batch = build_batch([(None, VALUE, [], int(time.time() * 1000))])
    return P(acks=1, timeout_ms=30000, topic_data=[P.TopicProduceData(
        name=TOPIC, partition_data=[P.PartitionProduceData(index=0, records=batch)])])


TOPIC8 = "reqcost8"
BATCH_RECORDS = 15        # 1 KiB records in a 16 KiB batch.size


def produce_8p_frames(conn: Conn, n: int, *, producer_id: int = -1, epoch: int = -1) -> list[bytes]:
    """N Produce requests of one 15-record batch for each of 8 partitions; idempotent
    (sequences continuing per partition) when a producer id is given."""
    now = int(time.time() * 1000)
    records = [(None, VALUE, [], now)] * BATCH_RECORDS
    frames = []
    seq = [0] * 8
    for _ in range(n):
        parts = []
        for p in range(8):
            kw = {}
            if producer_id >= 0:
                kw = {"producer_id": producer_id, "producer_epoch": epoch, "base_sequence": seq[p]}
                seq[p] += BATCH_RECORDS
            parts.append(P.PartitionProduceData(index=p, records=build_batch(records, **kw)))
        body = P(acks=-1 if producer_id >= 0 else 1, timeout_ms=30000,
                 topic_data=[P.TopicProduceData(name=TOPIC8, partition_data=parts)])
        frames.append(conn.frame(0, PRODUCE_VERSION, body))
    return frames


def init_producer_id(conn: Conn) -> tuple[int, int]:
    I = M.InitProducerIdRequest
    r = conn.call(22, 4, I(transactional_id=None, transaction_timeout_ms=60000,
                             producer_id=-1, producer_epoch=-1))
    assert r.error_code == 0, r
    return r.producer_id, r.producer_epoch


def phase_produce_8p(port: int, n: int, window: int, idempotent: bool) -> int:
    conn = Conn(port, "reqcost-producer-8p")
    pid, epoch = init_producer_id(conn) if idempotent else (-1, -1)
    return _pipelined(conn, produce_8p_frames(conn, n, producer_id=pid, epoch=epoch), window)


TOPIC_ID = {}     # the topic's id, for Fetch v13+ (filled once the topic exists)


def fetch_body(offset: int, version: int = 12) -> F:
    topic = F.FetchTopic(topic=TOPIC, partitions=[F.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1048576,
        current_leader_epoch=-1, log_start_offset=-1)])
    if version >= 13:
        topic.topic_id = TOPIC_ID[TOPIC]
    return F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
             isolation_level=1, session_id=0, session_epoch=-1, topics=[topic])


def log_end(conn: Conn) -> int:
    """The partition's high watermark, from a fetch that does not wait."""
    body = fetch_body(0)
    body.max_wait_ms = 0
    body.topics[0].partitions[0].partition_max_bytes = 1
    return conn.call(1, 12, body).responses[0].partitions[0].high_watermark


class PerfCounter:
    """``perf stat -e instructions:u`` attached to the broker for one phase (needs a PMU;
    many virtual machines have none: then use ``--counter callgrind``)."""

    def __init__(self, pid: int):
        self.out = tempfile.NamedTemporaryFile(prefix="reqcost-perf-", suffix=".csv", delete=False)
        self.out.close()
        self.proc = subprocess.Popen(["perf", "stat", "-x,", "-e", "instructions:u", "-o",
                                      self.out.name, "-p", str(pid)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)        # attached before the phase starts

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)
        text = Path(self.out.name).read_text()
        os.unlink(self.out.name)
        for line in text.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions"):
                if not fields[0].isdigit():
                    raise SystemExit("perf cannot count instructions here (no PMU): "
                                     "use --counter callgrind")
                return int(fields[0])
        raise RuntimeError(f"perf stat gave no count:\n{text}")


class CallgrindCounter:
    """The broker runs under ``valgrind --tool=callgrind --instr-atstart=no``; a phase turns
    instrumentation on, and the dump taken at its end holds the instructions executed
    (user space, every thread), exactly and whatever the machine's load."""

    prefix_args = ["--tool=callgrind", "--instr-atstart=no"]

    def __init__(self, pid: int):
        self.pid = pid
        self._ctl("-z")
        self._ctl("-i", "on")

    def _ctl(self, *args: str) -> str:
        return subprocess.run(["callgrind_control", *args, str(self.pid)], check=True,
                              capture_output=True, text=True, timeout=600).stdout

    def stop(self) -> int:
        self._ctl("-i", "off")
        out = self._ctl("-d")
        return _last_dump_total(self.pid, out)


def _last_dump_total(pid: int, ctl_output: str) -> int:
    """``totals:`` of the newest callgrind dump of ``pid`` (its ``summary:`` line counts
    from the start of the program, zero with ``--instr-atstart=no``)."""
    dumps = sorted(Path(CALLGRIND_DIR).glob(f"callgrind.out.{pid}*"), key=os.path.getmtime)
    if not dumps:
        raise RuntimeError(f"no callgrind dump of {pid}: {ctl_output}")
    for line in dumps[-1].read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {dumps[-1]}")


class CpuCounter:
    """The broker's CPU time (user + system, /proc) for one phase, in nanoseconds: a
    fallback that a loaded machine does distort (caches, frequency), less than wall time."""

    def __init__(self, pid: int):
        self.pid = pid
        self.t0 = _cpu_ns(pid)
        self.system_share = 0.0

    def stop(self) -> int:
        user, system = (b - a for a, b in zip(self.t0, _cpu_ns(self.pid)))
        self.system_share = system / max(1, user + system)
        return user + system


def _cpu_ns(pid: int) -> tuple[int, int]:
    """(user, system) CPU time of ``pid`` in nanoseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * tick, int(fields[12]) * tick


CALLGRIND_DIR = tempfile.gettempdir()
# ``kbroker serve`` under cProfile; the stats are written when it ends (it leaves with
# os._exit after a clean stop, which skips cProfile's own writing)
_CPROFILE_WRAPPER = """
import cProfile, os, runpy, sys
out = sys.argv[1]
sys.argv = ["kbroker"] + sys.argv[2:]
prof = cProfile.Profile()
real_exit = os._exit
def _exit(code):
    prof.disable()
    prof.dump_stats(out)
    real_exit(code)
os._exit = _exit
prof.enable()
runpy.run_module("kbroker", run_name="__main__")
"""
# What the two signal-switched wrappers share: ``kbroker serve``'s command line after the
# output file, ``publish`` (the output written whole, then renamed into place), and
# ``start``/``stop`` (each wrapper's own) bound to SIGUSR1/SIGUSR2 before the broker runs.
_SIGNALLED_HEAD = """
import os, runpy, signal, sys
out = sys.argv[1]
sys.argv = ["kbroker"] + sys.argv[2:]
def publish(lines):
    with open(out + ".part", "w") as f:
        f.writelines(lines)
    os.replace(out + ".part", out)
"""
_SIGNALLED_TAIL = """
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
runpy.run_module("kbroker", run_name="__main__")
"""
# ``kbroker serve`` with a bytecode counter switched on by SIGUSR1 and off by SIGUSR2 (the
# counts, per code object, written to argv[1] then)
_BYTECODE_WRAPPER = _SIGNALLED_HEAD + """
import collections
counts = collections.Counter()
calls = collections.Counter()
def local(frame, event, arg):
    if event == "opcode":
        counts[frame.f_code] += 1
    return local
def tracer(frame, event, arg):
    calls[frame.f_code] += 1      # a call, or a generator or coroutine resumed
    frame.f_trace_opcodes = True
    frame.f_trace_lines = False
    return local
def start(signum, frame):
    counts.clear()
    calls.clear()
    sys.settrace(tracer)
def stop(signum, frame):
    sys.settrace(None)
    publish(f"{n}\\t{calls[code]}\\t{code.co_filename}:{code.co_firstlineno}:{code.co_name}\\n"
            for code, n in counts.most_common())
""" + _SIGNALLED_TAIL
BYTECODE_FILE = Path(tempfile.gettempdir()) / f"reqcost-bytecodes-{os.getpid()}.txt"


# ``kbroker serve`` with time marks along a round of a Produce that wakes a parked Fetch
# (``--counter timeline``): a few functions on that path are wrapped to note when they are
# entered or left, each mark once per round. A round starts when a Produce reaches its
# connection's handler and ends when the ``sendmsg`` after the woken Fetch's answer was
# encoded returns (a one-record answer goes out with ``sendmsg``).
TIMELINE_STEPS = ("Produce handler entered", "append begins", "append returns",
                  "Produce answer encoded", "Fetch read begins", "Fetch read returns",
                  "Fetch answer encoded", "sendmsg begins", "sendmsg returns")
_TIMELINE_WRAPPER = _SIGNALLED_HEAD + """
import statistics
from time import perf_counter_ns as now
import kbroker.replica.read as read
import kbroker.server.connection as connection
import kbroker.server.send as send
from kbroker.replica.manager import ReplicaManager
STEPS = %r
on = False
marks = {}
rounds = []

real_handle = connection.Connection._handle_request
async def handle_request(self, frame, out, decoded=None):
    if on and len(frame) >= 2 and frame[0] == 0 and frame[1] == 0:    # API key 0: Produce
        marks.clear()
        marks[STEPS[0]] = now()
    return await real_handle(self, frame, out, decoded)
connection.Connection._handle_request = handle_request

def timed(real, after, begin, end):
    def wrapped(*args, **kwargs):
        take = on and after in marks and begin not in marks
        if take:
            marks[begin] = now()
        result = real(*args, **kwargs)
        if take:
            marks[end] = now()
        return result
    return wrapped
ReplicaManager.append = timed(ReplicaManager.append, STEPS[0], STEPS[1], STEPS[2])
read.read_for_consumer = timed(read.read_for_consumer, STEPS[2], STEPS[4], STEPS[5])

real_encode = connection.encode_response
def encode_response(api_key, version, correlation_id, body):
    parts = real_encode(api_key, version, correlation_id, body)
    if on:
        if api_key == 0 and STEPS[0] in marks:
            marks.setdefault(STEPS[3], now())
        elif api_key == 1 and STEPS[5] in marks:
            marks.setdefault(STEPS[6], now())
    return parts
connection.encode_response = encode_response

real_sendmsg = send._sendmsg_all
async def sendmsg_all(sock, buffers):
    take = on and STEPS[6] in marks and STEPS[7] not in marks
    if take:
        marks[STEPS[7]] = now()
    await real_sendmsg(sock, buffers)
    if take:
        marks[STEPS[8]] = now()
        rounds.append(dict(marks))
        marks.clear()
send._sendmsg_all = sendmsg_all

def start(signum, frame):
    global on
    marks.clear()
    rounds.clear()
    on = True
def stop(signum, frame):
    global on
    on = False
    lines = [f"rounds\\t{len(rounds)}\\n"]
    for step in STEPS:
        at = [r[step] - r[STEPS[0]] for r in rounds if step in r]
        if at:
            lines.append(f"{step}\\t{statistics.median(at)}\\n")
    publish(lines)
""" % (TIMELINE_STEPS,) + _SIGNALLED_TAIL
TIMELINE_FILE = Path(tempfile.gettempdir()) / f"reqcost-timeline-{os.getpid()}.txt"


def _written(path: Path, what: str) -> str:
    """The text of ``path`` once the broker has written it (after its stop signal)."""
    deadline = time.monotonic() + 120
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the broker wrote no {what}")
        time.sleep(0.05)
    text = path.read_text()
    path.unlink()
    return text


class TimelineCounter:
    """Where a round of a Produce waking a parked Fetch spends its time inside the broker
    (the broker runs under ``_TIMELINE_WRAPPER``, switched on and off by signals): per step
    of ``TIMELINE_STEPS``, the median time from the Produce's handler entry, over the
    phase's complete rounds (``fetch-woken``; other phases have none). The wrappers add a
    call each (about a microsecond on this machine): a map of the round, not a benchmark."""

    def __init__(self, pid: int):
        self.pid = pid
        self.rounds = 0
        self.steps: list[tuple[str, float]] = []     # (step, median ns)
        TIMELINE_FILE.unlink(missing_ok=True)
        os.kill(pid, signal.SIGUSR1)

    def stop(self) -> float:
        """The median round, Produce handler entry to the Fetch's answer written, in ns
        (0 without a complete round)."""
        os.kill(self.pid, signal.SIGUSR2)
        for line in _written(TIMELINE_FILE, "timeline").splitlines():
            step, value = line.split("\t")
            if step == "rounds":
                self.rounds = int(value)
            else:
                self.steps.append((step, float(value)))
        return dict(self.steps).get(TIMELINE_STEPS[-1], 0.0)


def print_timelines(timelines: list[tuple[str, "TimelineCounter"]]) -> None:
    """Per phase with complete rounds: each step's median time from the Produce's entry."""
    for name, counter in timelines:
        if not counter.rounds:
            continue
        print(f"\n{name}: {counter.rounds:,} rounds")
        print("| step | at (µs from the Produce handler's entry, median) |\n|---|---:|")
        for step, ns in counter.steps:
            print(f"| {step} | {ns / 1000:,.1f} |")


class BytecodeCounter:
    """The Python bytecodes the broker's main thread runs during a phase, counted per
    function (``sys.settrace`` with opcode events, switched on and off by signals; the
    broker runs under ``_BYTECODE_WRAPPER``). Exact and repeatable like callgrind's count,
    and it says where: ``table`` holds (bytecodes, calls, function) of the phase. The
    tracer slows the broker tens of times: a count, never a time."""

    def __init__(self, pid: int):
        self.pid = pid
        self.table: list[tuple[int, int, str]] = []
        BYTECODE_FILE.unlink(missing_ok=True)
        os.kill(pid, signal.SIGUSR1)

    def stop(self) -> int:
        os.kill(self.pid, signal.SIGUSR2)
        for line in _written(BYTECODE_FILE, "bytecode counts").splitlines():
            n, calls, where = line.split("\t", 2)
            self.table.append((int(n), int(calls), where))
        return sum(n for n, _, _ in self.table)


def layer(where: str) -> str:
    """The part of the broker a function belongs to, from its ``file:line:name``."""
    path = where.rsplit(":", 2)[0]
    if path.startswith("<attrs generated methods "):     # attrs classes' own methods
        return path[len("<attrs generated methods "):].split(".")[0]
    if path.startswith("<kbroker codec") or path == "<string>":
        return "kbroker.wire (generated)"
    if "/kbroker/" in path:
        parts = path.split("/kbroker/", 1)[1].split("/")
        return "kbroker." + parts[0] if len(parts) > 1 else "kbroker"
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/")[0]
    return "python stdlib" if path.startswith(("/usr/lib/python", "<frozen")) else path


def print_bytecode_tables(tables: list[tuple[str, int, list]], top: int) -> None:
    """Per phase: bytecodes per request by layer, then the ``top`` functions."""
    for name, done, table in tables:
        total = sum(n for n, _, _ in table)
        print(f"\n{name}: {total / done:,.0f} bytecodes per request")
        layers: dict[str, int] = {}
        for n, _, where in table:
            key = layer(where)
            layers[key] = layers.get(key, 0) + n
        print("| layer | bytecodes / request | share |\n|---|---:|---:|")
        for key, n in sorted(layers.items(), key=lambda kv: -kv[1]):
            if n >= total / 1000:
                print(f"| {key} | {n / done:,.0f} | {n / total:.1%} |")
        print("| function | bytecodes / request | runs / request |\n|---|---:|---:|")
        for n, calls, where in table[:top]:
            print(f"| `{where.split('/kbroker/', 1)[-1].split('site-packages/', 1)[-1]}` "
                  f"| {n / done:,.1f} | {calls / done:,.2f} |")


COUNTERS = {"perf": PerfCounter, "callgrind": CallgrindCounter, "cpu": CpuCounter,
            "bytecodes": BytecodeCounter, "timeline": TimelineCounter}


def _run_under(broker, wrapper: str, out: str) -> None:
    """``broker`` started as ``python -c wrapper out serve ...`` instead of ``python -m kbroker
    serve ...``: the wrapper runs ``kbroker`` (its arguments after ``out``) under a profiler."""
    plain = broker.command
    broker.command = lambda: [plain()[0], "-c", wrapper, out, *plain()[3:]]


def phase_produce_pipelined(port: int, n: int, window: int) -> int:
    conn = Conn(port, "reqcost-producer")
    return _pipelined(conn, [conn.frame(0, PRODUCE_VERSION, produce_body()) for _ in range(n)],
                      window)


def _pipelined(conn: Conn, frames: list, window: int) -> int:
    """Send the Produce ``frames`` with up to ``window`` unanswered, read every answer; the
    first and the last must show no error on any partition."""
    n = len(frames)
    sent = answered = 0
    while answered < n:
        while sent < n and sent - answered < window:
            conn.sock.sendall(frames[sent])
            sent += 1
        payload = conn.read_frame()
        answered += 1
        if answered == 1 or answered == n:
            resp = protocol.decode_response(payload, 0, PRODUCE_VERSION)[1]
            codes = {p.error_code for p in resp.responses[0].partition_responses}
            assert codes == {0}, f"produce failed with errors {codes}"
    conn.sock.close()
    return n


def phase_produce_serial(port: int, n: int) -> int:
    conn = Conn(port, "reqcost-producer")
    frames = [conn.frame(0, PRODUCE_VERSION, produce_body()) for _ in range(n)]
    for f in frames:
        conn.sock.sendall(f)
        conn.read_frame()
    conn.sock.close()
    return n


def phase_fetch_woken(port: int, n: int, version: int, offset: int, park_s: float) -> tuple[int, int]:
    """N rounds; returns (rounds, fetches that came back without a record)."""
    consumer = Conn(port, "reqcost-consumer")
    producer = Conn(port, "reqcost-producer")
    produces = [producer.frame(0, PRODUCE_VERSION, produce_body()) for _ in range(n)]
    empty = 0
    for i in range(n):
        consumer.sock.sendall(consumer.frame(1, version, fetch_body(offset, version)))
        time.sleep(park_s)      # let the broker park it (not part of the broker's count)
        producer.sock.sendall(produces[i])
        producer.read_frame()
        resp = protocol.decode_response(consumer.read_frame(), 1, version)[1]
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0, f"fetch failed with error {part.error_code}"
        if not part.records:
            empty += 1
            # answered before the append reached it: fetch once more for the record
            resp = consumer.call(1, version, fetch_body(offset, version))
        offset += 1
    consumer.sock.close()
    producer.sock.close()
    return n, empty


def phase_fetch_ready(port: int, n: int, version: int, offset: int) -> int:
    """N rounds of the ``fetch-woken`` pair with the order reversed: the single-record Produce
    is answered first, then the consumer's Fetch finds the record there and is answered at
    once (nothing parks). Against ``fetch-woken`` this leaves the parking, the wake-up and
    the answers' order (readers first) as the difference."""
    consumer = Conn(port, "reqcost-consumer")
    producer = Conn(port, "reqcost-producer")
    produces = [producer.frame(0, PRODUCE_VERSION, produce_body()) for _ in range(n)]
    for i in range(n):
        producer.sock.sendall(produces[i])
        producer.read_frame()
        resp = consumer.call(1, version, fetch_body(offset, version))
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0 and part.records, f"fetch failed with error {part.error_code}"
        offset += 1
    consumer.sock.close()
    producer.sock.close()
    return n


def phase_burst_woken(port: int, n: int, window: int, version: int, offset: int,
                      park_s: float) -> tuple[int, int]:
    """A linger.ms=0 producer ahead of its broker: rounds of a consumer's Fetch parked at the
    log end, then ``window`` one-record Produce requests written at once (pipelined, as they
    wait in the socket); the consumer fetches until it has every record of the round.
    Returns (records, fetch answers): the answers a burst costs."""
    consumer = Conn(port, "reqcost-consumer")
    producer = Conn(port, "reqcost-producer")
    rounds = max(1, n // window)
    bursts = [b"".join(producer.frame(0, PRODUCE_VERSION, produce_body()) for _ in range(window))
              for _ in range(rounds)]
    answers = 0
    for burst in bursts:
        consumer.sock.sendall(consumer.frame(1, version, fetch_body(offset, version)))
        time.sleep(park_s)      # let the broker park it (not part of the broker's count)
        producer.sock.sendall(burst)
        for _ in range(window):
            producer.read_frame()
        got = 0
        while True:
            resp = protocol.decode_response(consumer.read_frame(), 1, version)[1]
            answers += 1
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, f"fetch failed with error {part.error_code}"
            got += _records_in(part.records)
            if got >= window:
                break
            consumer.sock.sendall(consumer.frame(1, version, fetch_body(offset + got, version)))
        offset += window
    consumer.sock.close()
    producer.sock.close()
    return rounds * window, answers


def _records_in(records) -> int:
    from kbroker.wire.records import iter_batches
    return sum(h.last_offset_delta + 1 for _, h in iter_batches(records or b""))


def phase_fetch_behind(port: int, n: int, version: int, first: int,
                       session: bool = False) -> int:
    """N fetches, one after another, from offsets ``first``, ``first + 1``... of a log of
    one-record batches: a consumer catching up, each answer up to 1 MiB (~900 batches).
    With ``session`` in an incremental fetch session as the Java consumer keeps one (KIP-227:
    the first fetch opens it with epoch 0, each next one names its id and the next epoch);
    without, sessionless as librdkafka's."""
    consumer = Conn(port, "reqcost-consumer")
    session_id = epoch = 0
    for i in range(n):
        body = fetch_body(first + i, version)
        if session:
            body.session_id, body.session_epoch = session_id, epoch
        resp = consumer.call(1, version, body)
        assert resp.error_code == 0, f"fetch-behind: session error {resp.error_code}"
        session_id, epoch = resp.session_id, epoch + 1
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0 and part.records, "fetch-behind found no record"
    assert not session or session_id, "fetch-behind: no session was opened"
    consumer.sock.close()
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="requests (or rounds) per phase")
    ap.add_argument("--window", type=int, default=16, help="produce requests in flight")
    ap.add_argument("--fetch-version", type=int, default=16,
                    help="16: what librdkafka 2.x sends to kbroker (topic ids)")
    ap.add_argument("--fetch-session", action="store_true",
                    help="fetch-behind in an incremental fetch session (the Java consumer's "
                         "shape, with --fetch-version 17) instead of sessionless (librdkafka's)")
    ap.add_argument("--park-ms", type=float, default=2.0,
                    help="how long a fetch is given to park before the append")
    ap.add_argument("--py-spy", metavar="FILE", help="record a py-spy profile of the broker")
    ap.add_argument("--phases",
                    default="idle,produce-pipelined,produce-serial,fetch-behind,fetch-woken",
                    help="which phases, in this order (comma-separated)")
    ap.add_argument("--keep-dumps", action="store_true",
                    help="keep the callgrind dumps (callgrind.out.<pid>.<n> in the temp dir)")
    ap.add_argument("--cprofile", metavar="FILE",
                    help="run the broker under cProfile (call counts; written at its stop)")
    ap.add_argument("--python", default=None, help="the broker's interpreter (default: this one)")
    ap.add_argument("--counter", choices=sorted(COUNTERS), default="perf",
                    help="perf: instructions:u (needs a PMU); callgrind: exact instruction "
                         "counts of the broker run under valgrind (slow); cpu: CPU ns; "
                         "bytecodes: Python bytecodes, with a table per phase of where; "
                         "timeline: where a fetch-woken round's time goes, step by step")
    ap.add_argument("--top", type=int, default=25,
                    help="functions listed per phase with --counter bytecodes")
    args = ap.parse_args(argv)
    needs = {"perf": "perf", "callgrind": "callgrind_control"}.get(args.counter)
    if needs and shutil.which(needs) is None:
        raise SystemExit(f"{needs} is not installed")
    Counter = COUNTERS[args.counter]
    from tests.support.broker_proc import BrokerProcess
    work = Path(tempfile.mkdtemp(prefix="reqcost-"))
    kw = {"python": args.python} if args.python else {}
    # answers written on the loop's thread, as on a quiet machine (a crowded one would turn
    # the answer writer on: kbroker/server/writer.py), so every step is counted and marked
    broker = BrokerProcess(work / "data", overrides={"num.partitions": 1,
                                                  "kbroker.network.answer.writer": "never"}, **kw)
    if args.cprofile:
        # deterministic call counts per request (cProfile slows the broker: no timings)
        _run_under(broker, _CPROFILE_WRAPPER, args.cprofile)
    if args.counter == "bytecodes":
        _run_under(broker, _BYTECODE_WRAPPER, str(BYTECODE_FILE))
    if args.counter == "timeline":
        _run_under(broker, _TIMELINE_WRAPPER, str(TIMELINE_FILE))
    if args.counter == "callgrind":
        broker.start_timeout = 300.0
        broker.prefix = ["valgrind", *CallgrindCounter.prefix_args,
                         f"--callgrind-out-file={CALLGRIND_DIR}/callgrind.out.%p"]
    broker.start()
    pid = broker.proc.pid
    rows = []
    tables: list = []
    timelines: list = []
    spy = None
    try:
        admin = Conn(broker.port, "reqcost-admin")
        C = M.CreateTopicsRequest
        r = admin.call(19, 7, C(timeout_ms=60000, topics=[C.CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=1)]))
        assert r.topics[0].error_code == 0, r
        TOPIC_ID[TOPIC] = r.topics[0].topic_id
        if any(ph.startswith("produce-8p") for ph in args.phases.split(",")):
            r = admin.call(19, 7, C(timeout_ms=60000, topics=[C.CreatableTopic(
                name=TOPIC8, num_partitions=8, replication_factor=1)]))
            assert r.topics[0].error_code == 0, r
            time.sleep(0.5)
            phase_produce_8p(broker.port, 50, 5, False)     # warm-up: leaders ready, code run
            phase_produce_8p(broker.port, 50, 5, True)
        # warm-up: the leader is ready, the code paths are compiled and cached
        for _ in range(100):
            code = admin.call(0, PRODUCE_VERSION, produce_body()).responses[0] \
                .partition_responses[0].error_code
            if code == 0:
                break
            time.sleep(0.1)
        phase_produce_pipelined(broker.port, 200, args.window)
        phase_produce_serial(broker.port, 200)
        phase_fetch_woken(broker.port, 50, args.fetch_version, log_end(admin), 0.002)
        if args.py_spy:
            spy_bin = shutil.which("py-spy") or str(Path(__file__).resolve().parents[1] / ".venv/bin/py-spy")
            spy = subprocess.Popen([spy_bin, "record", "-p", str(pid), "-f", "raw", "-r", "200",
                                    "-o", args.py_spy], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(1.0)
        for name in args.phases.split(","):
            counter = Counter(pid)
            t0 = time.perf_counter()
            if name == "idle":
                time.sleep(1.0)         # the broker's own timers: a cost per second, not per request
                done, note = 1, "per second with no client request"
            elif name == "produce-pipelined":
                done, note = phase_produce_pipelined(broker.port, args.n, args.window), ""
            elif name == "fetch-behind":
                done = phase_fetch_behind(broker.port, args.n, args.fetch_version, 0,
                                          args.fetch_session)
                note = "answers of up to 1 MiB of 1 KiB batches" + (
                    ", in a fetch session" if args.fetch_session else "")
            elif name in ("produce-8p", "produce-8p-idem"):
                done = phase_produce_8p(broker.port, args.n, 5, name.endswith("idem"))
                note = ("8 partitions × 15 records of 1 KiB, 5 in flight, "
                        + ("acks=all, idempotent" if name.endswith("idem") else "acks=1"))
            elif name == "produce-serial":
                done, note = phase_produce_serial(broker.port, args.n), ""
            elif name == "fetch-ready":
                done = phase_fetch_ready(broker.port, args.n, args.fetch_version, log_end(admin))
                note = "the Produce answered, then a Fetch of its record (nothing parks)"
            elif name == "burst-woken":
                done, fetches = phase_burst_woken(broker.port, args.n, args.window,
                                                  args.fetch_version, log_end(admin),
                                                  args.park_ms / 1000)
                note = (f"per record; {fetches:,} fetch answers for {done // args.window:,} "
                        f"bursts of {args.window}")
            else:
                done, empty = phase_fetch_woken(broker.port, args.n, args.fetch_version,
                                                log_end(admin), args.park_ms / 1000)
                note = f"{empty} fetches answered before their append"
            wall = time.perf_counter() - t0
            instructions = counter.stop()
            if isinstance(counter, CpuCounter):
                note = f"{note}; {counter.system_share:.0%} in the kernel".lstrip("; ")
            if isinstance(counter, TimelineCounter):
                timelines.append((name, counter))
                per_request = instructions      # a round's median, not a sum
            else:
                per_request = instructions / done
            rows.append((name, done, per_request, wall * 1e6 / done, note))
            if isinstance(counter, BytecodeCounter):
                tables.append((name, done, counter.table))
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        broker.stop(timeout=300)
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep_dumps:
            for dump in Path(CALLGRIND_DIR).glob(f"callgrind.out.{pid}*"):
                dump.unlink()
    per = {name: ins for name, _, ins, _, _ in rows}
    print(f"kbroker: one partition, 1 KiB records, acks=1, Produce v{PRODUCE_VERSION}, "
          f"Fetch v{args.fetch_version}, {args.n} per phase")
    unit = {"perf": "instructions:u / request", "callgrind": "instructions (callgrind Ir) / request",
            "cpu": "CPU ns / request", "bytecodes": "bytecodes / request",
            "timeline": "ns from a Produce to the woken Fetch's answer (median round)"}[args.counter]
    print(f"| phase | requests | broker {unit} | wall µs / request | note |")
    print("|---|---:|---:|---:|---|")
    for name, done, ins, wall, note in rows:
        print(f"| {name} | {done:,} | {ins:,.0f} | {wall:,.0f} | {note} |")
    # (the Fetch's share is a difference of per-request costs; a timeline's figures are times)
    if "fetch-woken" in per and "produce-serial" in per and not timelines:
        woken = per["fetch-woken"] - per["produce-serial"]
        print(f"| fetch woken (round − serial produce) | | {woken:,.0f} | | |")
    if "fetch-ready" in per and "produce-serial" in per and not timelines:
        ready = per["fetch-ready"] - per["produce-serial"]
        print(f"| fetch ready (round − serial produce) | | {ready:,.0f} | | |")
    if tables:
        print_bytecode_tables(tables, args.top)
    if timelines:
        print_timelines(timelines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
