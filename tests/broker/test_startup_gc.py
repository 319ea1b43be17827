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
    yield
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
