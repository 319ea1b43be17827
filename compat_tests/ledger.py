"""The known-differences ledger, compat_tests/FINDINGS.md, read by the test harness.

An entry is a level-2 heading `## F-NNN — title` followed by a bullet list with at least
`- Status: open` (or `closed`) and `- Opened: YYYY-MM-DD`. A test marked
`@pytest.mark.known_difference("F-NNN")` must name an entry that exists and is open; see
conftest.py for what the marker does to the kbroker run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FINDINGS = Path(__file__).resolve().parent / "FINDINGS.md"
_HEADING = re.compile(r"^##\s+(F-\d{3,})\s+[—–-]+\s+(.+?)\s*$")
_FIELD = re.compile(r"^[-*]\s+([A-Za-z ]+):\s*(.*?)\s*$")


@dataclass
class Entry:
    id: str
    title: str
    status: str = ""
    opened: str = ""

    @property
    def open(self) -> bool:
        return self.status.lower().startswith("open")


def read_ledger(path: Path = FINDINGS) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    for line in path.read_text().splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = Entry(heading.group(1), heading.group(2))
            if current.id in entries:
                raise ValueError(f"{path.name}: {current.id} appears twice")
            entries[current.id] = current
            continue
        if line.startswith("#"):
            current = None
            continue
        field = _FIELD.match(line)
        if current and field:
            name = field.group(1).strip().lower()
            if name == "status":
                current.status = field.group(2)
            elif name == "opened":
                current.opened = field.group(2)
    return entries


def check_reference(finding_id: str, entries: dict[str, Entry]) -> str | None:
    """Why a marker's reference is invalid, or None when it names an open entry."""
    entry = entries.get(finding_id)
    if entry is None:
        return (f"known_difference({finding_id!r}) names no entry in compat_tests/FINDINGS.md; "
                f"add a dated `## {finding_id} — ...` entry with `- Status: open`")
    if not entry.open:
        return (f"known_difference({finding_id!r}): the ledger entry is {entry.status or 'without status'}"
                f"; remove the marker from this test")
    return None
