"""The clean-shutdown marker's broker epoch (KIP-966): written by ``LogManager.shutdown`` in
Kafka's format, read back at the next ``load()`` before the marker goes, and the epoch a
registration sends only when every log dir names the same one."""
from __future__ import annotations

import json

from kbroker.log import LogConfig, LogManager
from kbroker.log import clean_shutdown


def manager(dirs):
    mgr = LogManager(dirs, LogConfig(), lambda: 0)
    mgr.load()
    return mgr


def test_the_marker_remembers_the_broker_epoch(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    mgr = manager(dirs)
    assert mgr.previous_broker_epoch() == -1            # a first start proves nothing
    mgr.shutdown(broker_epoch=42)
    for d in dirs:
        assert json.loads((d / clean_shutdown.FILE_NAME).read_text()) == {"version": 0, "brokerEpoch": 42}
    mgr = manager(dirs)
    assert mgr.previous_broker_epoch() == 42
    assert not any((d / clean_shutdown.FILE_NAME).exists() for d in dirs)
    # a crash (no shutdown): the next start has no marker, so no epoch
    assert manager(dirs).previous_broker_epoch() == -1


def test_markers_that_disagree_or_are_not_kafkas_name_no_epoch(tmp_path):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager([d1, d2]).shutdown(broker_epoch=7)
    clean_shutdown.write(d2, 8)
    mgr = manager([d1, d2])
    assert mgr.previous_broker_epoch() == -1
    assert all(mgr.had_clean_shutdown.values())          # still clean for log recovery
    for body in (b"", b"{", b'{"version":0}', b'{"version":0,"brokerEpoch":"7"}', b"[7]"):
        manager([d1]).shutdown(broker_epoch=7)
        (d1 / clean_shutdown.FILE_NAME).write_bytes(body)
        mgr = manager([d1])
        assert mgr.had_clean_shutdown[d1] and mgr.previous_broker_epoch() == -1, body
    # Kafka's own marker (extra fields ignored) is read as Kafka reads it
    (d1 / clean_shutdown.FILE_NAME).write_bytes(b'{"version":0,"brokerEpoch":9,"other":1}')
    assert manager([d1]).previous_broker_epoch() == 9


def test_an_offline_dir_leaves_the_epoch_unknown():
    assert clean_shutdown.previous_broker_epoch([5, 5]) == 5
    assert clean_shutdown.previous_broker_epoch([5, 5], all_online=False) == -1
    assert clean_shutdown.previous_broker_epoch([5, None]) == -1
    assert clean_shutdown.previous_broker_epoch([]) == -1
