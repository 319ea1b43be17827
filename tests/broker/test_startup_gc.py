"""The cyclic collector during ``kbroker serve``'s start (``kbroker.common.startup_gc``):
off while the modules load, on again -- with the loaded objects frozen out of later
collections -- once the server is built; a broker started in process (tests, the pytest
plugin) never has it touched."""
from __future__ import annotations

import gc

import pytest

from kbroker.common import startup_gc


@pytest.fixture
def restore_gc():
    enabled = gc.isenabled()
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    startup_gc._paused = False
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_pause_then_resume_freezes_what_exists_and_enables_again(restore_gc):
    gc.enable()
    startup_gc.pause()
    assert not gc.isenabled()
    frozen_before = gc.get_freeze_count()
    kept = [[] for _ in range(1000)]      # containers made while paused
    startup_gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(kept)
    startup_gc.resume()                   # a second resume changes nothing
    assert gc.isenabled()


def test_a_serving_node_collects_its_young_generation_a_tenth_as_often(restore_gc):
    """State that grows in a burst (members, parked requests) made a young collection every
    700 containers; after resume, every 10,000."""
    gc.set_threshold(700, 10, 10)
    gc.enable()
    startup_gc.pause()
    startup_gc.resume()
    assert gc.get_threshold() == (startup_gc.YOUNG_THRESHOLD, 10, 10)
    young = []

    def count(phase, info):
        if phase == "start" and info["generation"] == 0:
            young.append(1)
    gc.collect()
    gc.callbacks.append(count)
    try:
        kept = [[i] for i in range(50_000)]
    finally:
        gc.callbacks.remove(count)
    assert len(kept) == 50_000
    assert 0 < len(young) <= 50_000 // startup_gc.YOUNG_THRESHOLD + 1      # 71 at 700


def test_resume_without_pause_leaves_the_collector_alone(restore_gc):
    gc.disable()
    frozen_before = gc.get_freeze_count()
    startup_gc.resume()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == frozen_before
    # a collector someone else turned off is not turned on by pause/resume either
    startup_gc.pause()
    startup_gc.resume()
    assert not gc.isenabled()
