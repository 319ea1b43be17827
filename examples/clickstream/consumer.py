"""Reads the job's output topic and prints the windowed counts as a table.

Each output record is `{"window_start_ms", "window_end_ms", "page", "count"}`; `read_counts`
returns them as {(window_start_ms, page): count}. Spark's Kafka sink is at-least-once, so a
(window, page) seen twice (after a failed micro-batch was retried) must carry the same count;
it is kept once.

Usage: python -m examples.clickstream.consumer --bootstrap 127.0.0.1:9092 --topic page-counts
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time


def read_counts(bootstrap: str, topic: str, idle_s: float = 2.0, timeout_s: float = 60.0
                ) -> dict[tuple[int, str], int]:
    """Every count in `topic` from the beginning up to its current end."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    counts: dict[tuple[int, str], int] = {}
    try:
        deadline = time.monotonic() + timeout_s
        parts = None
        while not parts and time.monotonic() < deadline:
            parts = consumer.partitions_for_topic(topic)
            time.sleep(0.1)
        tps = [TopicPartition(topic, p) for p in sorted(parts or [])]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topic} to its end in {timeout_s}s")
            for batch in consumer.poll(timeout_ms=int(idle_s * 1000)).values():
                for record in batch:
                    row = json.loads(record.value)
                    key = (row["window_start_ms"], row["page"])
                    if key in counts and counts[key] != row["count"]:
                        raise ValueError(f"two different counts for {key}: {counts[key]}, {row['count']}")
                    counts[key] = row["count"]
    finally:
        consumer.close()
    return counts


def follow(bootstrap: str, topic: str, stop, on_row) -> None:
    """Call `on_row(dict)` for each output record as it arrives, until `stop` (an Event) is
    set. For printing results live; read_counts() gives the complete, de-duplicated set."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        while not stop.is_set():
            for batch in consumer.poll(timeout_ms=200).values():
                for record in batch:
                    on_row(json.loads(record.value))
    finally:
        consumer.close()


def utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def table(counts: dict[tuple[int, str], int], window_ms: int = 10_000) -> str:
    """The counts as text, one line per (window, page): `window start | end | page | count`."""
    lines = [f"{'window start (UTC)':<19}  {'end':<8}  {'page':<16}  {'count':>5}"]
    for (start, page), n in sorted(counts.items()):
        lines.append(f"{utc(start):<19}  {utc(start + window_ms)[11:]:<8}  {page:<16}  {n:>5}")
    lines.append(f"{len(counts)} (window, page) counts, {sum(counts.values())} clicks")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--topic", default="page-counts")
    args = ap.parse_args(argv)
    print(table(read_counts(args.bootstrap, args.topic)))


if __name__ == "__main__":
    main()
