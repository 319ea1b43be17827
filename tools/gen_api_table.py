"""Print or update the supported-API table in README.md from the handler registry.

    python tools/gen_api_table.py            # print the table
    python tools/gen_api_table.py --write    # rewrite it between the markers in README.md
    python tools/gen_api_table.py --check    # exit 1 if README.md is out of date

The table lives between ``<!-- api-table:start -->`` and ``<!-- api-table:end -->``. Each
row: API key, name, advertised versions, the lowest version actually served (when higher,
as for Produce) and the module; what each API leaves out is in its module's header.
``tests/broker/test_readme.py`` fails when the README and the registry disagree.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- api-table:start -->", "<!-- api-table:end -->"


def table() -> str:
    sys.path.insert(0, str(ROOT))
    from kbroker.api import import_all   # the modules themselves, not the lazy index
    registry = import_all()
    rows = ["| Key | API | Versions | Served from | Module |", "|---:|---|---|---|---|"]
    for key in sorted(registry):
        s = registry[key]
        module = s.handler.__module__.rsplit(".", 1)[-1]
        served = f"v{s.served_from}" if s.served_from != s.min_version else ""
        if not s.advertised:
            served = (served + " " if served else "") + "(not in ApiVersions)"
        rows.append(f"| {key} | {s.name} | v{s.min_version}–v{s.max_version} | {served} | "
                    f"`kbroker/api/{module}.py` |")
    return "\n".join(rows)


def replace(text: str, new_table: str) -> str:
    try:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
    except ValueError:
        raise SystemExit(f"README.md lacks the {START} / {END} markers") from None
    return f"{head}{START}\n{new_table}\n{END}{tail}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    t = table()
    if not (args.write or args.check):
        print(t)
        return 0
    current = README.read_text()
    updated = replace(current, t)
    if args.check:
        if updated != current:
            print("README.md API table is out of date: run python tools/gen_api_table.py --write",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
