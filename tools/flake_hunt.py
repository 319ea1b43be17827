"""Run the suite (or a part of it) N times, each on a fresh clone, and list every test that
failed at least once.

    python tools/flake_hunt.py --runs 5                       # `make test` in 5 fresh clones
    python tools/flake_hunt.py --runs 10 --tests tests/cluster   # a part, 10 times

Each run clones the repository's committed HEAD into its own folder under ``--workdir``
(default ``.cache/flake-hunt``), so nothing of this checkout (uncommitted edits, its venv, its
data) takes part: the clone sets itself up exactly as CI's does. With ``--tests`` the clone
runs ``make test-fast``'s set-up and then pytest on the given paths (one pytest session, on
``--workers`` xdist workers); without, the whole ``make test``.

A test failed when pytest's summary names it (``FAILED`` or ``ERROR`` lines), or the run
itself failed without naming one (its exit code is reported then). The report lists each
such test with how many runs it failed in; the exit code is 1 when anything failed. A flaky
test found this way is a bug to fix at its cause: nothing here retries or skips a test.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)")


def run_once(index: int, workdir: Path, tests: list[str], workers: int) -> tuple[int, set[str], float, Path]:
    clone = workdir / f"run-{index}"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    log = workdir / f"run-{index}.log"
    if tests:
        protocol = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(clone), "print-protocol"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        cmd = (f"make -s test-fast-setup && .venv/bin/python -m pytest -q {' '.join(tests)} "
               f"--kafka-protocol={protocol} -n {workers} --dist loadfile")
    else:
        cmd = "make test"
    started = time.monotonic()
    # the environment make gives what it runs (the Makefile unexports PYTHONDONTWRITEBYTECODE):
    # pytest run here directly must see the same, or its tests differ from CI's
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with open(log, "w") as out:
        rc = subprocess.run(["bash", "-c", cmd], cwd=clone, stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env).returncode
    elapsed = time.monotonic() - started
    failed = set()
    for line in log.read_text(errors="replace").splitlines():
        m = SUMMARY.match(line)
        if m:
            failed.add(m.group(2))
    if rc != 0 and not failed:
        failed.add(f"(run failed with exit code {rc} and named no test: see {log})")
    return rc, failed, elapsed, log


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", "-n", type=int, default=5)
    p.add_argument("--tests", nargs="*", default=[], help="test paths or node ids (default: make test)")
    p.add_argument("--workers", type=int, default=4, help="xdist workers with --tests")
    p.add_argument("--workdir", type=Path, default=ROOT / ".cache" / "flake-hunt")
    p.add_argument("--keep", action="store_true", help="keep each run's clone")
    args = p.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    what = " ".join(args.tests) if args.tests else "make test"
    print(f"flake-hunt: {args.runs} fresh clone(s) of {head}, each running {what}", flush=True)
    failures: collections.Counter[str] = collections.Counter()
    for i in range(1, args.runs + 1):
        rc, failed, elapsed, log = run_once(i, args.workdir, args.tests, args.workers)
        failures.update(failed)
        verdict = "passed" if not failed else f"{len(failed)} failed"
        print(f"run {i}/{args.runs}: exit {rc}, {verdict}, {elapsed:.0f} s (log {log})", flush=True)
        for name in sorted(failed):
            print(f"    {name}", flush=True)
        if not args.keep:
            shutil.rmtree(args.workdir / f"run-{i}", ignore_errors=True)
    print()
    if not failures:
        print(f"flake-hunt: no test failed in {args.runs} run(s)")
        return 0
    print(f"flake-hunt: {len(failures)} test(s) failed at least once in {args.runs} run(s):")
    for name, count in failures.most_common():
        print(f"  {count}/{args.runs}  {name}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
