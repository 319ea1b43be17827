"""A broker with two log dirs, one a small tmpfs that fills up (KIP-858 JBOD failure in
KRaft): the write that hits the full disk answers KAFKA_STORAGE_ERROR, the directory goes
offline (its partitions keep answering KAFKA_STORAGE_ERROR, DescribeLogDirs lists it with
that error and no replicas), and the partitions of the other directory still take writes;
the broker keeps running. Same answers from kbroker and Kafka 4.3.1."""
from __future__ import annotations

from compat_tests.helpers import wait_until
from kbroker.wire.error_codes import ErrorCode as E
from tests.cluster.test_log_dir_offline import TMPFS_MB, create_topic, log_dirs, produce_raw
from tests.support.tmpfs import fill, mount, umount


def test_full_log_dir_goes_offline_and_the_other_serves(target, broker_factory, tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    mount(bad, TMPFS_MB)
    try:
        broker = broker_factory(**{"log.dirs": f"{good},{bad}"})
        port = broker.port
        create_topic(port, "jbod", 4, 1)

        def placed():
            dirs = log_dirs(port)
            parts = {d: sorted(p for (t, p) in v[1] if t == "jbod") for d, v in dirs.items()}
            return parts if parts.get(str(bad)) and parts.get(str(good)) else None
        parts = wait_until(placed, timeout=60, what="partitions in both log dirs")
        on_bad, on_good = parts[str(bad)], parts[str(good)]
        for p in range(4):
            wait_until(lambda: produce_raw(port, "jbod", p, b"before") == E.NONE, timeout=30,
                       what=f"a first write to jbod-{p}")
        fill(bad / "filler")
        assert produce_raw(port, "jbod", on_bad[0], b"x" * 8192) == E.KAFKA_STORAGE_ERROR
        for p in on_bad:
            assert produce_raw(port, "jbod", p, b"later") == E.KAFKA_STORAGE_ERROR
        for p in on_good:
            assert produce_raw(port, "jbod", p, b"after") == E.NONE
        dirs = wait_until(lambda: (lambda d: d if d[str(bad)][0] else None)(log_dirs(port)),
                          timeout=30, what="DescribeLogDirs naming the failed dir")
        assert dirs[str(bad)] == (E.KAFKA_STORAGE_ERROR, {})
        assert dirs[str(good)][0] == E.NONE
        assert {p for (t, p) in dirs[str(good)][1] if t == "jbod"} == set(on_good)
        assert broker.is_running()
    finally:
        umount(bad)
