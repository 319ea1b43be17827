"""Throughput of the record-batch hot paths (a script, not a test: it prints numbers).

    .venv/bin/python benchmarks/wire_records_bench.py [--seconds 0.5]

Produce path: ``validate_batches`` (header + CRC32C) and the offset/epoch patches.
Slow paths: ``decode_records`` per codec (compaction, conversion) and ``build_batch``.
"""

from __future__ import annotations

import argparse
import os
import time

from kbroker.wire.records import (
    build_batch,
    decode_records,
    parse_header,
    patch_base_offset,
    patch_partition_leader_epoch,
    validate_batches,
    verify_crc,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000


def sample(n: int, value_size: int) -> list:
    rnd_tail = os.urandom(value_size // 2)
    return [(b"key-%d" % i, b"v" * (value_size // 2) + rnd_tail, [("h", b"1")], T0 + i) for i in range(n)]


def bench(label: str, fn, seconds: float, *, items: int = 1, nbytes: int = 0) -> None:
    fn()  # warm up
    runs = 0
    start = time.perf_counter()
    while True:
        fn()
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    per = elapsed / runs
    line = f"{label:<44} {per * 1e6:10.1f} µs/op {items / per:14,.0f} items/s"
    if nbytes:
        line += f" {nbytes / per / 1e6:10.1f} MB/s"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--value-size", type=int, default=200)
    args = parser.parse_args()
    s = args.seconds
    recs = sample(args.records, args.value_size)

    print(f"{args.records} records/batch, {args.value_size}-byte values\n")
    plain = build_batch(recs)
    many = plain * 16
    bench("parse_header", lambda: parse_header(plain), s)
    bench("verify_crc (one batch)", lambda: verify_crc(plain), s, nbytes=len(plain))
    bench("validate_batches (16 batches)", lambda: validate_batches(many), s, items=16, nbytes=len(many))
    buf = bytearray(plain)
    bench("patch_base_offset + leader epoch", lambda: (patch_base_offset(buf, 0, 5), patch_partition_leader_epoch(buf, 0, 1)), s)
    print()
    for name, codec in CODECS.items():
        batch = build_batch(recs, compression=codec)
        bench(f"decode_records [{name}] ({len(batch)} B)", lambda b=batch: decode_records(b), s, items=len(recs))
    print()
    for name, codec in CODECS.items():
        bench(f"build_batch [{name}]", lambda c=codec: build_batch(recs, compression=c), s, items=len(recs))


if __name__ == "__main__":
    main()
