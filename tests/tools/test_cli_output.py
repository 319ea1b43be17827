"""What the command line prints for help, usage errors and ``--version``, byte for byte.

The expected texts in ``cli_output/`` were written by ``python -m tests.tools.test_cli_output``
from the command line as it was before its start-up was made cheaper (a formatter that asks
the terminal's width only when it formats); each case runs ``python -m kbroker`` in a child
with its standard streams on pipes, at the default width (no ``COLUMNS``: argparse's fallback
of 80 columns) and at two set widths. A deliberate change to the help is followed by running
the module again and reviewing the diff of ``cli_output/``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kbroker

EXPECTED = Path(__file__).with_name("cli_output")
REPO_ROOT = Path(__file__).resolve().parents[2]

# name -> (argv, COLUMNS or None); each name's expected exit code, stdout and stderr are in
# cli_output/<name>.txt
CASES = {
    "help": (["--help"], None),
    "help-narrow": (["--help"], "50"),
    "serve-help": (["serve", "--help"], None),
    "serve-help-narrow": (["serve", "-h"], "50"),
    "serve-help-wide": (["serve", "--help"], "200"),
    "topics-help": (["topics", "--help"], None),
    "topics-create-help": (["topics", "create", "--help"], None),
    "cluster-help": (["cluster", "--help"], None),
    "no-command": ([], None),
    "unknown-command": (["nonsense"], None),
    "serve-unknown-option": (["serve", "--bogus"], None),
    "serve-unknown-option-narrow": (["serve", "--bogus", "x"], "40"),
    "serve-bad-port": (["serve", "--port", "eighty"], None),
    "serve-missing-value": (["serve", "--config"], None),
    "serve-bad-log-level": (["serve", "--log-level", "LOUD"], None),
    "serve-listen-and-port": (["serve", "--listen", "127.0.0.1:1", "--port", "2"], None),
    "serve-bad-override": (["serve", "--override", "nokey"], None),
    "serve-bad-shutdown-timeout": (["serve", "--shutdown-timeout", "soon"], None),
    "version-with-more": (["--version", "serve"], None),
}


def run(argv: list[str], columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    r = subprocess.run([sys.executable, "-m", "kbroker", *argv], capture_output=True, text=True,
                       env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, timeout=60)
    return f"exit {r.returncode}\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_command_line_prints_what_it_printed(name):
    argv, columns = CASES[name]
    assert run(argv, columns) == (EXPECTED / f"{name}.txt").read_text(encoding="utf-8")


def test_version():
    out = run(["--version"], None)
    assert out == f"exit 0\n--- stdout\nkbroker {kbroker.__version__}\n--- stderr\n"


_BUILD_SERVE_PARSER = """
import gettext, sys
asked = []
dgettext = gettext.dgettext
def counting(domain, message):
    asked.append(message)
    return dgettext(domain, message)
gettext.dgettext = counting
from kbroker.tools.cli import _parser
args = _parser(serve_only=True, command="serve").parse_args(["serve", "--port", "9092"])
assert args.port == 9092
print(sorted(asked))
print("shutil" in sys.modules)
"""


def test_building_serve_s_parser_asks_neither_the_terminal_nor_gettext_twice():
    """What the start of ``kbroker serve`` saves: argparse's formatters, one per argument,
    are made without asking the terminal's width (nor importing ``shutil`` for it), and each
    of argparse's texts is looked up once, not once per parser."""
    r = subprocess.run([sys.executable, "-c", _BUILD_SERVE_PARSER], capture_output=True,
                       text=True, cwd=REPO_ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    asked, shutil_loaded = r.stdout.splitlines()
    assert asked == repr(sorted(["options", "positional arguments",
                                 "show this help message and exit"]))
    assert shutil_loaded == "False"


if __name__ == "__main__":
    EXPECTED.mkdir(exist_ok=True)
    for case, (args, cols) in CASES.items():
        (EXPECTED / f"{case}.txt").write_text(run(args, cols), encoding="utf-8")
