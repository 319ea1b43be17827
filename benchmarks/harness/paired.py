"""The order of measurements: one broker after the other, or both brokers paired.

A group of load rows is described, per broker, as *stages*: a generator that does the
unmeasured work of the group on its own broker (start, warm-up, pre-fill, peak RSS) and
yields, between those pieces, lists of `Block`s, the measured rows. Run in turn
(`run_stages`), every block's repetitions follow each other on the one broker, as the
sessions always ran. Paired (`run_paired`), the stages of both brokers advance in step (both
started, both warmed up, then the rows, then both pre-filled, ...) and the repetitions of
each row alternate between the brokers in the `abba` order, so the two measurements of a
repetition are seconds apart, on two warm brokers, and neither broker always goes first.

While one broker is measured the other is idle but alive; its CPU seconds during each
measurement are kept beside the row (`Results.add_idle`), to show what the idle neighbour
costs. Before each measurement the brokers of the row are let quiet down (`wait_quiet`):
the one measured just before may still be busy with the tail of its load, which would fall
on the next broker's measurement (in a check without the wait, idle Kafka used 18 % of a
core during a 1.3 s kbroker run that directly followed its own TLS produce run, 2-3 %
otherwise). After each stage's unmeasured work the first wait is longer (2 s windows).
"""
from __future__ import annotations

import time
from contextlib import ExitStack, closing
from dataclasses import dataclass
from typing import Callable, Iterator

from .brokers import cpu_seconds


@dataclass
class Block:
    """Rows measured on one broker (process `pid`), `reps` repetitions of them. In turn, each
    repetition runs every step in order (the rows of one block share their repetitions, as
    EndToEndLatency and the librdkafka latency row always did); paired, each step (row) has
    its repetitions alternated with the other broker's before the next step."""
    pid: int
    reps: int
    steps: list[tuple[str, Callable[[], None]]]   # (scenario id, one repetition of it)


Stages = Iterator[list[Block]]

QUIET_SHARE = 0.05      # of one core, over ...
QUIET_WINDOW_S = 0.5    # ... this window, for every broker of the row (10 ms /proc ticks)
QUIET_TIMEOUT_S = 10.0  # then the measurement starts anyway
# after a stage's unmeasured work (start, warm-up, pre-fill) a longer window first: a JVM
# can look quiet for 0.5 s and still be compiling (idle Kafka used 31 % of a core in the
# first kbroker repetition after the security rows' warm-ups with the short window alone)
STAGE_QUIET_WINDOW_S = 2.0
STAGE_QUIET_TIMEOUT_S = 30.0


def wait_quiet(pids: list[int], share: float = QUIET_SHARE, window: float = QUIET_WINDOW_S,
               timeout: float = QUIET_TIMEOUT_S) -> float:
    """Wait until every process of `pids` used at most `share` of one core over `window`
    seconds, at most `timeout` seconds; return the seconds waited."""
    t0 = time.monotonic()
    while True:
        before = [cpu_seconds(pid) for pid in pids]
        time.sleep(window)
        used = [cpu_seconds(pid) - c for pid, c in zip(pids, before)]
        waited = time.monotonic() - t0
        if all(u <= share * window for u in used) or waited >= timeout:
            return waited


def abba(names: list[str], reps: int, start: int = 0) -> list[tuple[str, ...]]:
    """The brokers' order in each of `reps` repetitions: as given, then reversed, then as
    given... (A B, B A, A B, ...); from `start` on in that sequence, so that the rows of a
    run continue it (with an odd `reps`, a row beginning A B is followed by one beginning
    B A, and over the rows neither broker goes first more often)."""
    fwd = tuple(names)
    return [fwd if (start + i) % 2 == 0 else fwd[::-1] for i in range(reps)]


def run_blocks(blocks: list[Block]) -> None:
    for block in blocks:
        for _ in range(block.reps):
            for _, step in block.steps:
                step()


def run_stages(stages: Stages) -> None:
    """One broker's stages, every block measured as soon as it is yielded."""
    with closing(stages):
        for blocks in stages:
            run_blocks(blocks)


def run_paired(results, stages: dict[str, Stages]) -> None:
    """The stages of several brokers (name → stages) in step, each row's repetitions in the
    `abba` order of the names. The stages must yield the same rows in the same order."""
    names = list(stages)
    measured = 0          # repetitions so far: where the next row's abba order begins
    with ExitStack() as stack:
        for it in stages.values():
            stack.enter_context(closing(it))
        while True:
            # the unmeasured work of the next stage, broker after broker, in the names' order
            got = {name: next(stages[name], None) for name in names}
            if all(v is None for v in got.values()):
                return
            if any(v is None for v in got.values()):
                raise RuntimeError(f"stages out of step: {sorted(n for n, v in got.items() if v is None)} ended first")
            wait_quiet([b.pid for blocks in got.values() for b in blocks],
                       window=STAGE_QUIET_WINDOW_S, timeout=STAGE_QUIET_TIMEOUT_S)
            for row in zip(*(got[n] for n in names), strict=True):
                measured = measure_row(results, dict(zip(names, row)), measured)


def measure_row(results, blocks: dict[str, Block], start: int = 0) -> int:
    """One block of every broker: step by step, the step's repetitions in the abba order
    from `start` on; every measurement with the other brokers' CPU seconds while they
    waited. Returns where the abba order goes on."""
    names = list(blocks)
    first = blocks[names[0]]
    for name, block in blocks.items():
        if [sid for sid, _ in block.steps] != [sid for sid, _ in first.steps] or block.reps != first.reps:
            raise RuntimeError(f"{name}'s rows differ from {names[0]}'s: "
                               f"{[s for s, _ in block.steps]} x{block.reps}")
    for j, (sid, _) in enumerate(first.steps):
        for order in abba(names, first.reps, start):
            for name in order:
                idle = {n: blocks[n].pid for n in names if n != name}
                settle = wait_quiet([b.pid for b in blocks.values()])
                before = {n: cpu_seconds(pid) for n, pid in idle.items()}
                t0 = time.monotonic()
                blocks[name].steps[j][1]()
                wall = time.monotonic() - t0
                results.add_idle(sid, name, wall,
                                 {n: cpu_seconds(pid) - before[n] for n, pid in idle.items()},
                                 settle)
        start += first.reps
    return start
