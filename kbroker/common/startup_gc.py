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

:func:`resume` also raises the young generation's threshold from CPython's 700 to
:data:`YOUNG_THRESHOLD`. A young collection starts once 700 more tracked containers were made
than freed; a node whose state grows in a burst (a 1,000-member group joining: members,
parked requests and their coroutine frames, answers queued; about 90 containers a member)
passes that over and over, and each collection walks the objects made since (every tenth
the middle generation's too), in vain: in that join (``benchmarks/group_join_cost_bench.py``,
callgrind) 127 young, 11 middle and 1 full collection found 13 objects and took 9.5 % of
the broker's instructions; with 10,000, 3 to 5 %. Cycles are still found, after at
most that many net allocations.

Only the CLI's serving path pauses: a broker started in process (tests, the pytest plugin)
leaves the collector as it finds it, and :func:`resume` without :func:`pause` does nothing.
"""
from __future__ import annotations

import gc

_paused = False

# the young generation's collection threshold of a serving node (CPython's default: 700)
YOUNG_THRESHOLD = 10_000


def pause() -> None:
    """Disable the collector if it is on (remembered for :func:`resume`)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists, raise the young generation's threshold and enable the collector
    again, if :func:`pause` disabled it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        young, middle, old = gc.get_threshold()
        gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
        gc.enable()
