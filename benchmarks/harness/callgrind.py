"""Instructions a Python child process executes, counted by valgrind's callgrind.

The instruction-count benchmarks (append_cost_bench, handler_cost_bench, tls_recv_bench)
run their measured work in a child of this interpreter under callgrind and read the total
it prints ("Collected : N"): a count the machine's load does not move."""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

_COLLECTED = re.compile(r"Collected : ([\d,]+)")


def instructions(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> int:
    """Instructions executed by ``python args...`` (this interpreter) from start to exit."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as out:
        res = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p",
                              sys.executable, *args], cwd=cwd, env=env,
                             capture_output=True, text=True)
    found = _COLLECTED.search(res.stderr)
    if res.returncode != 0 or found is None:
        raise RuntimeError(f"no callgrind total for {args}:\n{res.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))
