"""Transactions on a three-node kbroker cluster (not a test): N transactional producers
committing at once.

    python -m benchmarks.txn_cluster_bench [--producers 20] [--transactions 5]
        [--records 10] [--state-partitions 1] [--rounds 3]

A fresh cluster of three combined nodes (``benchmarks.controller_bench``'s start-up, kbroker
from this checkout) with ``__transaction_state`` of ``--state-partitions`` partitions,
replication factor 3 and ``min.insync.replicas`` 2 (one partition: every transactional id has
the same coordinator, the case a coordinator-wide lock serialises completely), and a topic
of ``--producers`` partitions, replication factor 3. ``--producers`` confluent-kafka
(librdkafka) transactional producers, one thread each, run ``init_transactions`` first;
then, released together, each runs ``--transactions`` transactions of ``--records``
records to its own partition (begin, produce, commit). Per round: the wall time from the
release to the last commit, committed transactions per second, and the transactional
requests the coordinator answered per second (AddPartitionsToTxn + EndTxn, the
coordinator's own writes). A read_committed consumer then checks that every committed
record is there. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from benchmarks.controller_bench import kbroker_cluster, start_all, wait_for  # noqa: E402
from tests.clients_txn.helpers import read_all  # noqa: E402


def run_round(bootstrap: str, topic: str, n: int, txns: int, records: int, tag: str) -> dict:
    producers = []
    for i in range(n):
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{tag}-{i}",
                      "linger.ms": 0, "transaction.timeout.ms": 60000})
        producers.append(p)
    inits = [threading.Thread(target=p.init_transactions, args=(60,)) for p in producers]
    for t in inits:
        t.start()
    for t in inits:
        t.join()
    start = threading.Barrier(n + 1)
    done: list[float] = []
    errors: list[BaseException] = []

    def work(i: int, p: Producer) -> None:
        start.wait()
        try:
            for t in range(txns):
                p.begin_transaction()
                for r in range(records):
                    p.produce(topic, value=f"{tag}-{i}-{t}-{r}".encode(), partition=i)
                p.commit_transaction(60)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        done.append(time.monotonic())

    threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(producers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join()
    elapsed = max(done) - t0
    if errors:
        raise RuntimeError(f"{len(errors)} producers failed: {errors[0]!r}")
    committed = n * txns
    return {"seconds": round(elapsed, 3), "commits_per_s": round(committed / elapsed, 1),
            # each transaction: AddPartitionsToTxn + EndTxn at the coordinator
            "coordinator_requests_per_s": round(2 * committed / elapsed, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--producers", type=int, default=20)
    ap.add_argument("--transactions", type=int, default=5)
    ap.add_argument("--records", type=int, default=10)
    ap.add_argument("--state-partitions", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="txn-cluster-bench-"))
    nodes = kbroker_cluster(root)
    for node in nodes.values():
        node.overrides.update({
            "transaction.state.log.num.partitions": str(args.state_partitions),
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2"})
    try:
        start_all(nodes)
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = "txn-bench"
        admin.create_topics([NewTopic(topic, args.producers, 3,
                                      config={"min.insync.replicas": "2"})])[topic].result(30)
        wait_for(lambda: len(admin.list_topics(topic, timeout=5).topics[topic].partitions)
                 == args.producers, 30)
        rounds = [run_round(bootstrap, topic, args.producers, args.transactions, args.records,
                            f"r{r}") for r in range(args.rounds)]
        expect = args.rounds * args.producers * args.transactions * args.records
        seen = len(read_all(bootstrap, topic, args.producers, isolation="read_committed",
                            expect=expect, timeout=60))
        print(json.dumps({"producers": args.producers, "transactions_each": args.transactions,
                          "records_each": args.records, "state_partitions": args.state_partitions,
                          "rounds": rounds, "read_committed": seen, "expected": expect}))
    finally:
        for node in nodes.values():
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
