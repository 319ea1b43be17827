"""``kbroker.common.pthread_lookup``: trio's lookup of ``pthread_setname_np``'s library is
answered from the libraries already mapped into the process, without starting a process
(``ctypes.util.find_library`` runs ``ldconfig -p`` in a child on Linux); every other name,
and the lookup once uninstalled, are the standard function's."""
from __future__ import annotations

import ctypes
import ctypes.util
import subprocess

import pytest

from kbroker.common import pthread_lookup

@pytest.fixture
def no_child_process(monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError(f"a child process was started: {args}")
    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def installed():
    pthread_lookup.install()
    yield
    pthread_lookup.uninstall()


def test_the_pthread_library_comes_from_the_mapped_ones(installed, no_child_process):
    path = ctypes.util.find_library("pthread")
    assert path is not None and hasattr(ctypes.CDLL(path), "pthread_setname_np")
    # trio's own construction of its thread-naming function finds it so
    from trio._core._thread_cache import get_os_thread_name_func
    assert get_os_thread_name_func() is not None


def test_other_names_and_the_uninstalled_lookup_are_the_standard_ones(monkeypatch):
    standard = ctypes.util.find_library
    asked = []
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: asked.append(name) or f"lib{name}.so.9")
    pthread_lookup.install()
    try:
        assert ctypes.util.find_library("ssl") == "libssl.so.9"
    finally:
        pthread_lookup.uninstall()
    assert asked == ["ssl"]
    assert ctypes.util.find_library("pthread") == "libpthread.so.9"      # the standard again
    monkeypatch.undo()
    assert ctypes.util.find_library is standard
