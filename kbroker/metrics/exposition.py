"""Prometheus text exposition format 0.0.4 (what ``/metrics`` answers) — no I/O.

A :class:`Family` is one metric name with its ``# HELP``/``# TYPE`` lines and samples; label
values are escaped (backslash, double quote, newline) as the format requires, numbers are
written as Prometheus reads them (``+Inf``, integers without a fraction).
"""
from __future__ import annotations

import math
from typing import Iterable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def labels_text(labels: Iterable[tuple[str, object]]) -> str:
    inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels)
    return "{" + inner + "}" if inner else ""


class Family:
    """One metric family. ``add`` takes the sample's labels as keyword arguments; a
    histogram's samples are added with ``add_histogram``."""

    __slots__ = ("name", "type", "help", "lines")

    def __init__(self, name: str, type_: str, help_: str):
        self.name = name
        self.type = type_            # counter, gauge, histogram
        self.help = help_
        self.lines: list[str] = []

    def add(self, value, **labels) -> "Family":
        self.lines.append(f"{self.name}{labels_text(labels.items())} {format_value(value)}")
        return self

    def add_histogram(self, bounds, counts, total, **labels) -> "Family":
        """``counts`` are per bucket (not cumulative), one more than ``bounds`` (+Inf)."""
        running = 0
        base = list(labels.items())
        for bound, c in zip(list(bounds) + [math.inf], counts):
            running += c
            self.lines.append(f"{self.name}_bucket{labels_text(base + [('le', format_value(float(bound)))])} "
                              f"{running}")
        self.lines.append(f"{self.name}_sum{labels_text(base)} {format_value(float(total))}")
        self.lines.append(f"{self.name}_count{labels_text(base)} {running}")
        return self

    def render(self) -> str:
        head = f"# HELP {self.name} {escape_help(self.help)}\n# TYPE {self.name} {self.type}\n"
        return head + "".join(line + "\n" for line in self.lines)
