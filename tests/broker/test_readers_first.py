"""A Produce that wakes a parked consumer Fetch lets the fetch answer first (the connection's
"readers first", kbroker/server/connection.py), as Kafka queues a delayed fetch's answer
inside the append, before the produce's own.

Observed from outside: the client is a separate process (the broker's thread would
otherwise hold the interpreter while it writes both answers) with a consumer connection
whose Fetch is parked at the log end and a producer connection; after writing one Produce
it waits until the producer's answer is readable and looks, without waiting, whether the
consumer's answer is readable too. On loopback a write is in the peer's receive queue when
``sendmsg`` returns, so it is readable then exactly when the broker wrote the fetch's
answer first. The broker runs in the test's trio run, so the test waits for the fetch to
be parked (a condition on the partition) before it lets the client produce.
"""
from __future__ import annotations

import select
import socket
import subprocess
import sys
from pathlib import Path

import trio

from .raw import RawClient
from .raw_socket import fetch_frame, produce_frame, read_frame, until
from .test_metadata_raw import create

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 20


def client(port: int, topic: str, rounds: int) -> None:
    """The client process: per round, park a Fetch at the next offset, say so, wait for
    "go", produce one record and print which answer was readable first."""
    consumer = socket.create_connection(("127.0.0.1", port), timeout=30)
    producer = socket.create_connection(("127.0.0.1", port), timeout=30)
    for i in range(rounds):
        consumer.sendall(fetch_frame(i, topic, i, "readers-first", max_wait_ms=30_000))
        print("parked", flush=True)
        assert sys.stdin.readline().strip() == "go"
        producer.sendall(produce_frame(1000 + i, topic, b"r%d" % i, "readers-first"))
        readable, _, _ = select.select([producer], [], [], 30)
        assert readable, "no answer to the produce"
        fetch_ready = bool(select.select([consumer], [], [], 0)[0])
        read_frame(producer)
        read_frame(consumer)
        print("fetch-first" if fetch_ready else "produce-first", flush=True)


async def test_the_woken_fetch_is_answered_before_the_produce_that_woke_it(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "readers-first", 1)).error_code == 0
    part = broker_server.broker.replicas.get_partition("readers-first", 0)
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from tests.broker.test_readers_first import client; "
                               f"client({broker_server.port}, 'readers-first', {ROUNDS})"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seen = []
    try:
        for _ in range(ROUNDS):
            line = await trio.to_thread.run_sync(proc.stdout.readline)
            assert line.strip() == "parked", line
            await until(lambda: len(part.waiters) == 1)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            seen.append((await trio.to_thread.run_sync(proc.stdout.readline)).strip())
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()
    assert seen == ["fetch-first"] * ROUNDS, seen
