"""The recording workload: real confluent-kafka clients in threads, every invocation and
completion written to a history (``model``'s format) as it happens.

Clients (each a *process* of the history; a client whose op ends ``info`` -- outcome
unknown -- goes on under a fresh process id, as Jepsen does after a crash):

- ``Producers``: idempotent, acks=all; one op sends 1-3 values to random partitions and
  flushes (``ok`` with the acknowledged offsets, ``info`` if any delivery failed);
- ``Transactions``: a transactional producer with its own read_committed assign-mode
  consumer; one op polls and/or sends inside one transaction, then commits (``ok``, with
  ``commit_time``) or aborts (a fifth on purpose, or when the commit needs it: ``fail``);
- ``GroupConsumer``: a member of a consumer group (``classic`` or ``consumer`` protocol,
  KIP-848), read_committed; polls, and commits its positions synchronously every few polls;
- ``AssignConsumer``: assign mode from the beginning of every partition;
- ``final_read``: after the faults, one reader of every partition up to its high watermark.

Keys are partitions (``str(partition)``), values unique integers. This module is the only
part of the history package besides ``run`` that talks to brokers.
"""
from __future__ import annotations

import json
import random
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition


class Recorder:
    """Appends ops to a JSON-lines file; hands out op indexes, process ids and values."""

    def __init__(self, path):
        self.f = open(path, "w")
        self.lock = threading.Lock()
        self.index = 0
        self.t0 = time.monotonic_ns()
        self._process = 0
        self._value = 0
        self.completed = 0

    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    def process(self) -> int:
        with self.lock:
            self._process += 1
            return self._process

    def value(self) -> int:
        with self.lock:
            self._value += 1
            return self._value

    def _write(self, process, type_, f, value, extra):
        with self.lock:
            d = {"index": self.index, "time": self.now(), "process": process, "type": type_,
                 "f": f, "value": value, **extra}
            self.index += 1
            self.f.write(json.dumps(d) + "\n")
            if type_ != "invoke":
                self.completed += 1

    def invoke(self, process, f, value):
        self._write(process, "invoke", f, value, {})

    def complete(self, process, type_, f, value, **extra):
        self._write(process, type_, f, value, extra)

    def close(self):
        with self.lock:
            self.f.close()


def _base(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "topic.metadata.refresh.interval.ms": 1000, "log_level": 0,
            "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 1000}


def _grouped(msgs) -> dict:
    """Messages of one consume() as ``{key: [[offset, value], ...]}`` (errors dropped)."""
    out: dict = {}
    for m in msgs:
        if m.error() is None:
            out.setdefault(str(m.partition()), []).append([m.offset(), int(m.value())])
    return out


class Client(threading.Thread):
    def __init__(self, rec: Recorder, bootstrap: str, topic: str, partitions: int, seed):
        super().__init__(daemon=True)
        self.rec, self.bootstrap, self.topic, self.partitions = rec, bootstrap, topic, partitions
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.process = rec.process()
        self.errors: list = []
        self.exc: BaseException | None = None

    def crashed(self):
        """After an ``info`` op: the client goes on as a new process."""
        self.process = self.rec.process()

    def keys(self) -> list[int]:
        return self.rng.sample(range(self.partitions), self.rng.randint(1, min(3, self.partitions)))

    def run(self):
        try:
            self.body()
        except BaseException as e:  # noqa: BLE001 - reported by the runner
            self.exc = e


class Producers(Client):
    def body(self):
        p = Producer({**_base(self.bootstrap), "acks": "all", "enable.idempotence": True,
                      "linger.ms": 2, "message.timeout.ms": 30000, "request.timeout.ms": 10000,
                      "error_cb": self.errors.append})
        while not self.stop.is_set():
            sends = [(k, self.rec.value()) for k in self.keys()]
            self.rec.invoke(self.process, "send", [["send", str(k), v] for k, v in sends])
            got: dict = {}

            def report(err, msg, got=got):
                got[int(msg.value())] = err or msg.offset()
            for k, v in sends:
                p.produce(self.topic, partition=k, value=str(v).encode(), on_delivery=report)
            left = p.flush(40)
            if left == 0 and all(isinstance(got.get(v), int) for _, v in sends):
                self.rec.complete(self.process, "ok", "send",
                                  [["send", str(k), [got[v] if got[v] >= 0 else None, v]] for k, v in sends])
            else:
                self.rec.complete(self.process, "info", "send",
                                  [["send", str(k), v] for k, v in sends],
                                  error=repr([got.get(v) for _, v in sends]))
                self.crashed()
            time.sleep(self.rng.uniform(0, 0.05))
        p.flush(30)


class Transactions(Client):
    def __init__(self, *a, txn_id: str, **kw):
        super().__init__(*a, **kw)
        self.txn_id = txn_id

    def _producer(self):
        p = Producer({**_base(self.bootstrap), "transactional.id": self.txn_id, "linger.ms": 2,
                      "transaction.timeout.ms": 20000, "message.timeout.ms": 20000,
                      "request.timeout.ms": 10000, "error_cb": self.errors.append})
        _retry(lambda: p.init_transactions(30), self.stop)
        return p

    def body(self):
        c = Consumer({**_base(self.bootstrap), "group.id": f"{self.txn_id}-reader",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "fetch.wait.max.ms": 100})
        keys = list(range(self.partitions))
        self.rec.invoke(self.process, "assign", [str(k) for k in keys])
        c.assign([TopicPartition(self.topic, k, OFFSET_BEGINNING) for k in keys])
        self.rec.complete(self.process, "ok", "assign", [str(k) for k in keys])
        p = self._producer()
        try:
            while not self.stop.is_set():
                p = self._one(p, c)
                time.sleep(self.rng.uniform(0, 0.1))
        finally:
            c.close()

    def _one(self, p, c):
        plan = []
        if self.rng.random() < 0.6:
            plan.append(("poll",))
        plan += [("send", k, self.rec.value()) for k in self.keys()]
        if self.rng.random() < 0.3:
            plan.append(("poll",))
        self.rec.invoke(self.process, "txn",
                        [["poll"] if m[0] == "poll" else ["send", str(m[1]), m[2]] for m in plan])
        got: dict = {}
        done = []

        def report(err, msg):
            got[int(msg.value())] = err or msg.offset()
        abort = self.rng.random() < 0.2
        try:
            p.begin_transaction()
            for m in plan:
                if m[0] == "poll":
                    done.append(["poll", _grouped(c.consume(50, 0.2))])
                else:
                    p.produce(self.topic, partition=m[1], value=str(m[2]).encode(), on_delivery=report)
                    done.append(m)
            if abort:
                p.abort_transaction(30)
                self.rec.complete(self.process, "fail", "txn", self._sends(done, got), aborted="on purpose")
                return p
            commit_time = self.rec.now()
            _retry(lambda: p.commit_transaction(30), self.stop, deadline=60)
            self.rec.complete(self.process, "ok", "txn", self._sends(done, got), commit_time=commit_time)
            return p
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort() and not err.fatal():
                try:
                    p.abort_transaction(30)
                    self.rec.complete(self.process, "fail", "txn", self._sends(done, got), error=str(err))
                    return p
                except KafkaException as e2:
                    err = e2.args[0]
            self.rec.complete(self.process, "info", "txn", self._sends(done, got), error=str(err))
            self.crashed()
            # an unknown end: a new producer with the same transactional id fences the old one
            # (its transaction is aborted or completed by the coordinator)
            return self._producer() if err.fatal() or not err.retriable() else p

    @staticmethod
    def _sends(done, got):
        out = []
        for m in done:
            if m[0] == "poll":
                out.append(m)
            else:
                o = got.get(m[2])
                out.append(["send", str(m[1]), [o if isinstance(o, int) and o >= 0 else None, m[2]]])
        return out


def _retry(fn, stop: threading.Event, deadline: float = 120.0):
    end = time.monotonic() + deadline
    while True:
        try:
            return fn()
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > end:
                raise
            time.sleep(0.2)


class GroupConsumer(Client):
    def __init__(self, *a, group: str, protocol: str = "classic", **kw):
        super().__init__(*a, **kw)
        self.group, self.protocol = group, protocol

    def body(self):
        conf = {**_base(self.bootstrap), "group.id": self.group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100, "group.protocol": self.protocol}
        if self.protocol == "classic":
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        c = Consumer(conf)
        moved = threading.Event()
        self.rec.invoke(self.process, "subscribe", [self.topic])
        c.subscribe([self.topic], on_assign=lambda *_: moved.set(), on_revoke=lambda *_: moved.set(),
                    on_lost=lambda *_: moved.set())
        self.rec.complete(self.process, "ok", "subscribe", [self.topic])
        pos: dict = {}
        n = 0
        try:
            while not self.stop.is_set():
                self.rec.invoke(self.process, "poll", [["poll"]])
                moved.clear()
                try:
                    msgs = c.consume(50, 0.3)
                except KafkaException as e:
                    self.rec.complete(self.process, "info", "poll", [["poll"]], error=str(e))
                    self.crashed()
                    continue
                extra = {"rebalanced": True} if moved.is_set() else {}
                got = _grouped(msgs)
                self.rec.complete(self.process, "ok", "poll", [["poll", got]], **extra)
                for k, recs in got.items():
                    pos[k] = recs[-1][0] + 1
                n += 1
                if n % 5 == 0 and pos:
                    self._commit(c, pos)
        finally:
            c.close()

    def _commit(self, c, pos):
        assigned = {str(tp.partition) for tp in c.assignment()}
        offs = {k: o for k, o in pos.items() if k in assigned}
        if not offs:
            return
        self.rec.invoke(self.process, "commit", offs)
        try:
            done = c.commit(offsets=[TopicPartition(self.topic, int(k), o) for k, o in offs.items()],
                            asynchronous=False)
            bad = [tp for tp in done or () if tp.error is not None]
            if bad:
                self.rec.complete(self.process, "info", "commit", offs, error=str(bad[0].error))
            else:
                self.rec.complete(self.process, "ok", "commit", offs)
        except KafkaException as e:
            self.rec.complete(self.process, "info", "commit", offs, error=str(e))


class AssignConsumer(Client):
    def body(self):
        c = Consumer({**_base(self.bootstrap), "group.id": "history-assign-unused",
                      "enable.auto.commit": False, "isolation.level": "read_committed",
                      "fetch.wait.max.ms": 100})
        keys = [str(k) for k in range(self.partitions)]
        self.rec.invoke(self.process, "assign", keys)
        c.assign([TopicPartition(self.topic, k, OFFSET_BEGINNING) for k in range(self.partitions)])
        self.rec.complete(self.process, "ok", "assign", keys)
        try:
            while not self.stop.is_set():
                self.rec.invoke(self.process, "poll", [["poll"]])
                try:
                    msgs = c.consume(50, 0.3)
                except KafkaException as e:
                    self.rec.complete(self.process, "info", "poll", [["poll"]], error=str(e))
                    self.crashed()
                    continue
                self.rec.complete(self.process, "ok", "poll", [["poll", _grouped(msgs)]])
        finally:
            c.close()


def final_read(rec: Recorder, bootstrap: str, topic: str, partitions: int, timeout: float = 120.0) -> bool:
    """Read every partition from the beginning up to its high watermark (once every open
    transaction has ended, read_committed gets there); True if it got there."""
    process = rec.process()
    c = Consumer({**_base(bootstrap), "group.id": "history-final-unused", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "fetch.wait.max.ms": 100})
    keys = [str(k) for k in range(partitions)]
    rec.invoke(process, "assign", keys)
    c.assign([TopicPartition(topic, k, OFFSET_BEGINNING) for k in range(partitions)])
    rec.complete(process, "ok", "assign", keys)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            rec.invoke(process, "poll", [["poll"]])
            msgs = c.consume(200, 0.5)
            rec.complete(process, "ok", "poll", [["poll", _grouped(msgs)]])
            if msgs:
                continue
            marks = {k: c.get_watermark_offsets(TopicPartition(topic, k), timeout=10, cached=False)
                     for k in range(partitions)}
            at = {tp.partition: tp.offset for tp in c.position([TopicPartition(topic, k) for k in range(partitions)])}
            if all(at.get(k, -1) >= hi or lo == hi for k, (lo, hi) in marks.items()):
                return True
        return False
    finally:
        c.close()
