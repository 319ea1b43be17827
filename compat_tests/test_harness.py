"""Self-test of the compat harness's known-difference rules and matrix (no brokers involved).

Runs an inner pytest session with compat_tests/conftest.py as a plugin on a generated test
module and ledger, and checks what the matrix and the exit status say.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CLIENT = "harness"
ROOT = Path(__file__).resolve().parent.parent

LEDGER = """\
# ledger
## F-900 — kbroker lacks the feature
- Status: open
- Opened: 2026-11-20
## F-901 — fixed long ago
- Status: closed 2026-11-20
- Opened: 2026-11-19
"""

INNER = """\
import pytest
CLIENT = "inner"

@pytest.mark.known_difference("F-900")
def test_known(target):
    assert target == "kafka", "kbroker does not do it yet"

@pytest.mark.known_difference("F-900")
def test_fixed(target):
    pass

@pytest.mark.known_difference("F-404")
def test_missing_entry(target):
    pass

@pytest.mark.known_difference("F-901")
def test_closed_entry(target):
    pass

def test_regression(target):
    assert target == "kafka"
"""


def run_inner(tmp_path: Path, select: str) -> tuple[int, str, str]:
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "FINDINGS.md").write_text(LEDGER)
    matrix = tmp_path / "matrix.md"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "compat_tests.conftest", "-p", "no:cacheprovider",
         "-q", "-rA", str(tmp_path / "test_inner.py"), "-k", select,
         "--targets", "kafka,kbroker", "--findings", str(tmp_path / "FINDINGS.md"),
         "--matrix", str(matrix), "--rootdir", str(tmp_path), "-c", "/dev/null"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr, matrix.read_text()


def row(matrix: str, test: str) -> list[str]:
    for line in matrix.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == test:
            return cells[2:]
    raise AssertionError(f"no row {test} in\n{matrix}")


def test_known_difference_rules(tmp_path):
    code, output, matrix = run_inner(tmp_path, "not nothing")
    assert code == 1, output
    assert row(matrix, "known") == ["pass", "known F-900"]
    assert row(matrix, "fixed") == ["pass", "FIXED? F-900"]
    assert "close the ledger entry" in output
    assert row(matrix, "missing_entry") == ["ERROR", "ERROR"]
    assert "names no entry" in output
    assert row(matrix, "closed_entry") == ["ERROR", "ERROR"]
    assert row(matrix, "regression") == ["pass", "FAIL"]
    assert "Regressions (Kafka passes, kbroker fails, not in FINDINGS.md): 1" in matrix


def test_only_known_differences_pass(tmp_path):
    code, output, matrix = run_inner(tmp_path, "test_known")
    assert code == 0, output
    assert "1 known" in output  # the kbroker run is reported as a known difference, not a pass
    assert row(matrix, "known") == ["pass", "known F-900"]
