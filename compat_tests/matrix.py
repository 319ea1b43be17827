"""The compatibility matrix: one row per (test, client), one column per broker target.

conftest.py feeds it every test report; at session end it prints the matrix and writes it as
Markdown (compat_tests/results/matrix.md by default, ignored by git). Cell values:

  pass            the test passed
  FAIL            the test body failed
  ERROR           set-up or tear-down failed (e.g. the broker did not start)
  known F-NNN     kbroker failed as recorded in FINDINGS.md (only in the kbroker column)
  FIXED? F-NNN    kbroker passed a test marked as a known difference: close the entry
  -               not run

A *regression* is a row where Kafka passes and kbroker shows FAIL or ERROR.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path

TARGET_ORDER = ("kafka", "kbroker")


@dataclass
class Cell:
    outcome: str = "-"
    detail: str = ""


@dataclass
class Matrix:
    targets: list[str]
    rows: dict[tuple[str, str], dict[str, Cell]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def record(self, test: str, client: str, target: str, outcome: str, detail: str = "",
               duration: float = 0.0) -> None:
        row = self.rows.setdefault((test, client), {})
        cell = row.setdefault(target, Cell())
        # The worst phase wins: an ERROR in tear-down after a pass is still an ERROR.
        if _rank(outcome) >= _rank(cell.outcome):
            cell.outcome, cell.detail = outcome, detail
        self.seconds[target] = self.seconds.get(target, 0.0) + duration

    def regressions(self) -> list[tuple[str, str, str]]:
        out = []
        for (test, client), row in sorted(self.rows.items()):
            kafka, kbroker = row.get("kafka"), row.get("kbroker")
            if kafka and kbroker and kafka.outcome == "pass" and kbroker.outcome in ("FAIL", "ERROR"):
                out.append((test, client, kbroker.outcome))
        return out

    def markdown(self, kafka_version: str) -> str:
        cols = [t for t in TARGET_ORDER if t in self.targets] + \
               [t for t in self.targets if t not in TARGET_ORDER]
        head = [f"# Compatibility matrix",
                "",
                f"Run {_dt.datetime.now().isoformat(timespec='seconds')}, Apache Kafka {kafka_version}, "
                f"targets: {', '.join(cols)}.",
                "",
                "| test | client | " + " | ".join(cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        body = []
        for (test, client), row in sorted(self.rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            body.append(f"| {test} | {client} | " +
                        " | ".join(row.get(t, Cell()).outcome for t in cols) + " |")
        tail = ["", "## Summary", ""]
        for t in cols:
            counts: dict[str, int] = {}
            for row in self.rows.values():
                outcome = row.get(t, Cell()).outcome.split(" ")[0]
                counts[outcome] = counts.get(outcome, 0) + 1
            summary = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
            tail.append(f"- {t}: {summary} ({self.seconds.get(t, 0.0):.0f} s)")
        regs = self.regressions()
        tail += ["", f"Regressions (Kafka passes, kbroker fails, not in FINDINGS.md): {len(regs)}"]
        tail += [f"- {test} / {client}: {outcome}" for test, client, outcome in regs]
        details = [(test, client, t, c.detail) for (test, client), row in sorted(self.rows.items())
                   for t, c in row.items() if c.detail and c.outcome != "pass"]
        if details:
            tail += ["", "## Failure details (first line)", ""]
            tail += [f"- {test} / {client} / {t}: {d}" for test, client, t, d in details]
        return "\n".join(head + body + tail) + "\n"

    def text(self) -> str:
        cols = [t for t in TARGET_ORDER if t in self.targets] + \
               [t for t in self.targets if t not in TARGET_ORDER]
        rows = [(test, client, *[row.get(t, Cell()).outcome for t in cols])
                for (test, client), row in sorted(self.rows.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
        header = ("test", "client", *cols)
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        fmt = "  ".join("{:<%d}" % w for w in widths)
        return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths)),
                          *(fmt.format(*r) for r in rows)])

    def write(self, path: Path, kafka_version: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.markdown(kafka_version))


def _rank(outcome: str) -> int:
    word = outcome.split(" ")[0]
    return {"-": 0, "pass": 1, "known": 2, "FIXED?": 3, "FAIL": 4, "ERROR": 5}.get(word, 4)
