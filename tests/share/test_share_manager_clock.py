"""Share-partition acquisition locks across a step of the node's wall clock: the
SharePartitionManager times them on the broker clock's monotonic reading, as Kafka's
share-partitions do (``AcquisitionLockTimerTask`` on ``hiResClockMs``). A forward step does
not release every acquired record to the next member; a backward one does not keep records
locked past their lock duration.

The manager runs on a small stand-in broker (one partition of three records, no persister);
the clocks are numbers the test moves.
"""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
import trio

from kbroker.group.share.config import ShareGroupConfig
from kbroker.share.manager import SharePartitionManager
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

TID = uuid.UUID(int=11)
HOUR = 3_600_000
LOCK_MS = 30_000
ACCEPT = 1


class Clock:
    """A wall clock (``now_ms``) the test steps and a monotonic one it advances."""

    def __init__(self):
        self.wall, self.mono = 1_700_000_000_000, 5_000

    def now_ms(self) -> int:
        return self.wall

    def monotonic_ms(self) -> int:
        return self.mono


class Replicas:
    """Partition ``t``-0 holding one batch of three records at offsets 0-2."""

    def __init__(self):
        self.batch = bytes(wire_records.build_batch(
            [(None, f"v{i}".encode(), (), 0) for i in range(3)]))

    def get_partition(self, name, partition):
        return SimpleNamespace(leader_epoch=0)

    def list_offset(self, name, partition, ts, isolation_level=0):
        return (ts, 0, 0)

    def read_all(self, specs, max_bytes, isolation_level=0):
        (spec,) = specs
        data = self.batch if spec.fetch_offset < 3 else b""
        return [SimpleNamespace(error_code=0, log_start_offset=0, records=data, size=len(data),
                                aborted_transactions=None, last_stable_offset=3,
                                high_watermark=3, leader_epoch=0)]


def manager(clock: Clock) -> SharePartitionManager:
    broker = SimpleNamespace(config=SimpleNamespace(values={}), clock=clock,
                             replicas=Replicas(),
                             metadata=SimpleNamespace(topics_by_id={TID: SimpleNamespace(name="t")}))
    cfg = ShareGroupConfig(record_lock_duration_ms=LOCK_MS, auto_offset_reset="earliest")
    groups = SimpleNamespace(config_for=lambda gid: cfg)
    return SharePartitionManager(broker, groups, persister=None)


def acquired(mgr: SharePartitionManager, member: str) -> list[tuple[int, int]]:
    out = trio.run(lambda: mgr.fetch("g", member, [(TID, 0)], max_records=10, max_wait_ms=0,
                                     max_bytes=1 << 20))
    r = out[(TID, 0)]
    assert r.error == 0
    return [(a.first_offset, a.last_offset) for a in r.acquired]


def acknowledge(mgr: SharePartitionManager, member: str, first: int, last: int) -> int:
    return trio.run(lambda: mgr.acknowledge("g", member, TID, 0, [(first, last, [ACCEPT])]))


@pytest.mark.parametrize("step", [HOUR, -HOUR], ids=["forward", "back"])
def test_acquisition_locks_run_on_the_monotonic_clock(step):
    clock = Clock()
    mgr = manager(clock)
    assert acquired(mgr, "m1") == [(0, 2)]
    clock.wall += step
    clock.mono += LOCK_MS - 1
    assert acquired(mgr, "m2") == []                    # m1 still holds all three
    assert acknowledge(mgr, "m1", 0, 0) == E.NONE       # and may acknowledge them
    clock.mono += 1                                     # the lock duration has passed
    assert acquired(mgr, "m2") == [(1, 2)]              # released to the next member
    assert acknowledge(mgr, "m1", 1, 1) == E.INVALID_RECORD_STATE
    assert mgr.statistics()["lock_expiries"] == 1
