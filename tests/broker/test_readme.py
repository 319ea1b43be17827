"""README.md's API table is generated from the registry and must match it."""
import subprocess
import sys

from tests.support.broker_proc import REPO_ROOT


def test_readme_api_table_matches_registry():
    r = subprocess.run([sys.executable, "tools/gen_api_table.py", "--check"], cwd=REPO_ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
