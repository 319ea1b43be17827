"""Clickstream generator: page views of a few users, as JSON records, into a Kafka topic.

Each record is keyed by user and its value is `{"user": "u07", "page": "/pricing",
"ts": 1767225600123}` — `ts` is the event time in epoch milliseconds, which is what the Spark
job windows on (not the Kafka record timestamp). The stream covers `seconds` of event time,
starting at a minute boundary, replayed `speedup` times faster than real time.

Event times arrive slightly out of order (up to `MAX_LATENESS_MS` behind the newest event),
always within the job's watermark delay, so no click is ever dropped as late and the expected
counts are simply "clicks per page per window". The last record is an end-of-stream marker
(page `END_PAGE`) far enough in the future to move the job's watermark past every window.

Usage: python -m examples.clickstream.generator --bootstrap 127.0.0.1:9092 --topic clicks
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass

PAGES = ["/", "/products", "/products/kafka", "/pricing", "/docs", "/signup"]
WEIGHTS = [30, 20, 15, 10, 15, 10]
USERS = [f"u{i:02d}" for i in range(25)]
MAX_LATENESS_MS = 2_000
END_PAGE = "__end__"
END_GAP_MS = 60_000  # the marker's event time is this far after the last click


@dataclass(frozen=True)
class Click:
    user: str
    page: str
    ts: int  # event time, epoch ms

    def value(self) -> bytes:
        return json.dumps({"user": self.user, "page": self.page, "ts": self.ts}).encode()


def clicks(start_ms: int, seconds: int = 60, per_second: int = 10, seed: int = 7) -> list[Click]:
    """The clicks in the order they are sent: event time follows the send order, minus a
    random lateness of up to MAX_LATENESS_MS."""
    rng = random.Random(seed)
    out = []
    for i in range(seconds * per_second):
        base = start_ms + i * 1000 // per_second
        late = rng.randrange(0, MAX_LATENESS_MS + 1) if rng.random() < 0.3 else 0
        out.append(Click(rng.choice(USERS), rng.choices(PAGES, WEIGHTS)[0], max(start_ms, base - late)))
    return out


def end_marker(events: list[Click]) -> Click:
    return Click("-", END_PAGE, max(c.ts for c in events) + END_GAP_MS)


def produce(bootstrap: str, topic: str, events: list[Click], speedup: float = 10.0,
            per_second: int = 10) -> None:
    """Send `events` (then the end marker), paced to `speedup` × real time; each tick is
    flushed before the next, so partitions never drift apart by more than a tick."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    tick = max(1, per_second)  # one event-time second per tick
    try:
        for i in range(0, len(events), tick):
            for c in events[i:i + tick]:
                producer.send(topic, key=c.user.encode(), value=c.value())
            producer.flush()
            time.sleep(1.0 / speedup)
        # Only after every click is acknowledged: a micro-batch that sees the marker then sees
        # all clicks too, so the watermark jump cannot make any click late.
        producer.send(topic, key=b"-", value=end_marker(events).value())
        producer.flush()
    finally:
        producer.close()


def minute_start(now_ms: int | None = None) -> int:
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return now - now % 60_000


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--topic", default="clicks")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--speedup", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    events = clicks(minute_start(), args.seconds, seed=args.seed)
    produce(args.bootstrap, args.topic, events, args.speedup)
    print(f"sent {len(events)} clicks to {args.topic}")


if __name__ == "__main__":
    main()
