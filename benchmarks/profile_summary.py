#!/usr/bin/env python3
"""Summarise a py-spy "raw" (collapsed stacks) profile: where kbroker's time goes.

    py-spy record --pid PID --format raw --output prof.txt      # or: bench.py --profile DIR
    .venv/bin/python benchmarks/profile_summary.py prof.txt [--top 30] [--filter produce]

Prints the functions with the most samples on top of the stack (self) and anywhere on it
(inclusive), as a share of all samples. Idle time (the trio loop waiting in epoll) shows as
``epoll``/``get_events``; subtract it to see the share of busy time.
"""
from __future__ import annotations

import argparse
import collections
import re
import sys

_LINE = re.compile(r"^(.*) (\d+)$")


def load(path: str):
    stacks = []
    with open(path) as f:
        for line in f:
            m = _LINE.match(line.rstrip("\n"))
            if m:
                frames = [fr for fr in m.group(1).split(";") if fr]
                stacks.append((frames, int(m.group(2))))
    return stacks


def short(frame: str) -> str:
    # "func (path/to/module.py:123)" -> "func (module.py:123)"
    m = re.match(r"^(.*) \((.*?)([^/]+\.py):(\d+)\)$", frame)
    if m:
        return f"{m.group(1)} ({m.group(3)})"
    return frame


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--filter", help="only stacks containing this substring")
    a = ap.parse_args(argv)
    stacks = load(a.profile)
    if a.filter:
        stacks = [(f, n) for f, n in stacks if any(a.filter in fr for fr in f)]
    total = sum(n for _, n in stacks) or 1
    idle = sum(n for f, n in stacks if f and ("epoll" in f[-1] or "get_events" in f[-1]))
    selfc: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    for frames, n in stacks:
        if not frames:
            continue
        selfc[short(frames[-1])] += n
        for fr in {short(fr) for fr in frames}:
            incl[fr] += n
    print(f"{total} samples, idle (epoll) {100 * idle / total:.1f} %")
    print(f"\n--- self (top {a.top}) ---")
    for fr, n in selfc.most_common(a.top):
        print(f"{100 * n / total:6.1f} %  {fr}")
    print(f"\n--- inclusive (top {a.top}) ---")
    for fr, n in incl.most_common(a.top):
        print(f"{100 * n / total:6.1f} %  {fr}")


if __name__ == "__main__":
    main(sys.argv[1:])
