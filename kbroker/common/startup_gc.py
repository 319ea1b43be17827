"""The cyclic garbage collector held off while ``kbroker serve`` imports its modules.

Importing the broker creates some hundred thousand container objects (classes, functions,
dictionaries of modules, message specs) and nothing of it is garbage: every collection the
allocations trigger meanwhile walks all of them in vain (a few per cent of the start's
instructions). So the command line calls :func:`pause` before its first heavy import and
:func:`resume` once the API modules are loaded, before any data is read or any client
served; :func:`resume` also moves everything that exists by then into the permanent
generation (``gc.freeze``), so later collections of a running node do not walk the
imported code again either. Reference counting frees acyclic garbage all the while; only
cycles made during the paused phase (a bounded one: imports and the server's construction,
no I/O) wait until :func:`resume`.

Only the CLI's serving path pauses: a broker started in process (tests, the pytest plugin)
leaves the collector as it finds it, and :func:`resume` without :func:`pause` does nothing.
"""
from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Disable the collector if it is on (remembered for :func:`resume`)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists and enable the collector again, if :func:`pause` disabled it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
