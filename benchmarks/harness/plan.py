"""What the benchmark runs: scenarios and their sizes, for the full and the quick run.

Every scenario is run `reps` times per broker and its median is reported. The full run of
both brokers takes over 40 minutes on 2 cores with issue 32's rows; the quick one is meant to
take under 3 (`make bench-quick`, issue 32): every group of rows at its smallest size, and
one broker per kind shared by the start-up, load and scale rows (`Plan.shared_broker`,
benchmarks/harness/run.py), so Kafka's JVM starts four times instead of eleven.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class Produce:
    id: str
    record_size: int
    partitions: int
    acks: str            # "1" | "all"
    compression: str     # "none" | "lz4" | "zstd"
    bytes: int           # total payload per run
    client: str = "java"  # "java" (ProducerPerformance) | "rdkafka"

    @property
    def records(self) -> int:
        return max(1, self.bytes // self.record_size)

    @property
    def title(self) -> str:
        size = f"{self.record_size // KIB} KiB" if self.record_size >= KIB else f"{self.record_size} B"
        client = "ProducerPerformance" if self.client == "java" else "librdkafka"
        return (f"produce {size}, {self.partitions}p, acks={self.acks}, {self.compression} "
                f"({client})")


@dataclass
class Plan:
    name: str
    reps: int
    produce: list[Produce]
    consume_bytes: int             # pre-filled topic (1 KiB records, 1 partition)
    consume_reps: int
    e2e_records: int               # EndToEndLatency round trips
    latency_rate: int              # librdkafka fixed-rate latency: records/s ...
    latency_seconds: float         # ... for this long
    idle_settle_s: float           # wait after start before reading idle RSS
    warmup_bytes: int              # unmeasured produce load before the measured ones
    startup_partitions: int        # the "data dir with many partitions" start-up case
    metadata_partitions: int       # metadata scale: partitions created
    metadata_reps: int
    notes: list[str] = field(default_factory=list)
    security_bytes: int = 128 * MIB  # security group: per produce run
    # ... and per consume run: a pass over 128 MiB lasts ~0.25 s since the consume client
    # stopped waiting out librdkafka's queue backoff, too short a window to rate
    security_consume_bytes: int = 512 * MIB
    latency_rates: tuple[int, ...] = (1000, 10_000, 50_000)  # fixed-rate latency rows (latency.py)
    latency_cluster: bool = True     # the acks=all rows on three nodes
    scale: "Scale | None" = None     # scale rows (scale.py); None: not run
    # fresh starts (each followed by a restart) of the start-up rows; None: `reps`. A start
    # costs seconds (Kafka's ~2.5 s and its stop), and a ratio of ~0.05 moves with a few
    # milliseconds of either broker's median
    startup_reps: int | None = None
    # one broker per kind for start-up, partitions, loads and scale rows (run.py, quick plan);
    # False: every group of rows on a fresh broker of its own (the full plan)
    shared_broker: bool = False

    @property
    def startups(self) -> int:
        return self.startup_reps or self.reps


@dataclass(frozen=True)
class Scale:
    """Sizes of the scale rows (benchmarks/harness/scale.py); a size of 0 leaves its row out."""
    partitions: int = 100_000        # on one node: create, restart, RSS, full Metadata
    connections: int = 10_000        # idle client connections, each after one ApiVersions
    # classic consumer groups joining at once, one row per size (ascending, one broker)
    group_members: tuple[int, ...] = (100, 250, 500, 1000)
    producers: int = 1_000           # idempotent producers, one batch each

    def __post_init__(self):
        sizes = self.group_members
        sizes = (sizes,) if isinstance(sizes, int) else sizes
        sizes = tuple(sorted(int(m) for m in sizes if int(m) > 0))
        object.__setattr__(self, "group_members", sizes)


def _produce_full() -> list[Produce]:
    big, small = 160 * MIB, 64 * MIB
    return [
        Produce("p-1k-1p-a1", 1024, 1, "1", "none", big),
        Produce("p-1k-8p-a1", 1024, 8, "1", "none", big),
        Produce("p-1k-1p-aall", 1024, 1, "all", "none", big),
        Produce("p-1k-8p-aall", 1024, 8, "all", "none", big),
        Produce("p-100-1p-a1", 100, 1, "1", "none", small),
        Produce("p-100-8p-aall", 100, 8, "all", "none", small),
        Produce("p-1k-8p-a1-lz4", 1024, 8, "1", "lz4", big),
        Produce("p-1k-8p-a1-zstd", 1024, 8, "1", "zstd", big),
        Produce("r-1k-8p-a1", 1024, 8, "1", "none", big, client="rdkafka"),
        Produce("r-100-1p-a1", 100, 1, "1", "none", small, client="rdkafka"),
    ]


def full() -> Plan:
    return Plan(name="full", reps=3, produce=_produce_full(), consume_bytes=2 * GIB,
                consume_reps=3, e2e_records=3000, latency_rate=500, latency_seconds=8,
                idle_settle_s=5, warmup_bytes=256 * MIB, startup_partitions=1000, metadata_partitions=10_000,
                metadata_reps=1, scale=Scale(), startup_reps=5)


def quick() -> Plan:
    """Every group of rows at its smallest, one broker per kind for all but the security rows
    (`shared_broker`); the three-node latency rows are left to the full plan. The consume
    sizes stay well above 10 MiB: a pass of a few MiB lasts a few milliseconds, too short
    for its rate to mean anything (before `rdkafka_load consume` started its clock at the
    first record rather than after a first batch of up to 10,000, 8 MiB gave 6,600 MB/s)."""
    return Plan(
        name="quick", reps=1,
        produce=[Produce("p-1k-1p-a1", 1024, 1, "1", "none", 16 * MIB),
                 Produce("p-1k-8p-aall-lz4", 1024, 8, "all", "lz4", 16 * MIB),
                 Produce("r-1k-8p-a1", 1024, 8, "1", "none", 32 * MIB, client="rdkafka"),
                 Produce("r-100-1p-a1", 100, 1, "1", "none", 4 * MIB, client="rdkafka")],
        consume_bytes=64 * MIB, consume_reps=1, e2e_records=200, latency_rate=500,
        latency_seconds=2, idle_settle_s=2, warmup_bytes=16 * MIB, startup_partitions=200,
        metadata_partitions=200, metadata_reps=1, security_bytes=32 * MIB,
        security_consume_bytes=32 * MIB,
        latency_rates=(1000,), latency_cluster=False, shared_broker=True,
        scale=Scale(partitions=200, connections=200, group_members=(20,), producers=50),
        notes=["quick run: smaller sizes, one repetition, one broker per kind shared by the "
               "start-up, partitions, loads and scale rows; not for publication"])
