"""A log write that fails with an I/O error: the partition answers KAFKA_STORAGE_ERROR,
nothing half-written stays in the log, and the broker halts naming the log dir
(kbroker/replica/log_dir_failure.py; the cluster fault test fills a real tmpfs)."""
from __future__ import annotations

import os

import pytest

from kbroker.replica import ReplicaError, log_dir_failure
from kbroker.wire.error_codes import ErrorCode

from .conftest import batch, decode_region


def test_failed_append_answers_storage_error_and_halts(replicas, cluster, monkeypatch, caplog):
    halts = []
    monkeypatch.setattr(log_dir_failure, "halt", halts.append)
    cluster.create("t", 1)
    replicas.append("t", 0, batch(b"a", b"b"), required_acks=1)
    part = replicas.get_partition("t", 0)
    seg = part.log.segments[-1]
    size = os.path.getsize(seg.log_path)
    # the segment's descriptor now refuses writes, as a failed disk does (EBADF here)
    ro = os.open(seg.log_path, os.O_RDONLY)
    os.dup2(ro, seg.fd)
    os.close(ro)
    with pytest.raises(ReplicaError) as e:
        replicas.append("t", 0, batch(b"c"), required_acks=1)
    assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert halts == [log_dir_failure.EXIT_CODE]
    assert any("log dir" in r.getMessage() and str(part.log.dir.parent) in r.getMessage()
               for r in caplog.records if r.levelname == "ERROR")
    assert os.path.getsize(seg.log_path) == size
    assert part.log_end_offset == 2
    assert [r.value for r in decode_region(part.log.read(0, 1 << 20))] == [b"a", b"b"]
