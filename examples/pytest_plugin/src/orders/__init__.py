"""A tiny order service: the code under test. Orders are JSON, keyed by customer so one
customer's orders stay in order on one partition."""
from __future__ import annotations

import json


def encode(order: dict) -> tuple[bytes, bytes]:
    return order["customer"].encode(), json.dumps(order, sort_keys=True).encode()


def decode(value: bytes) -> dict:
    return json.loads(value)


def total_by_customer(orders) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in orders:
        out[o["customer"]] = out.get(o["customer"], 0) + o["amount"]
    return out
