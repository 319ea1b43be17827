"""The session clean-up (``conftest.purge``) removes only what it may: what this session
made, and at start-up what a session whose process is gone left behind; never the
containers of another session still running on the same engine."""
import subprocess
import sys

from .conftest import IMAGE, LABEL, OWNER, project_name, purge


def _created(dk, owner: str):
    # created, never started: listed by the engine like any leftover, costs nothing to run
    return dk.containers.create(IMAGE, labels={LABEL: owner})


def _exists(dk, c) -> bool:
    return any(x.id == c.id for x in dk.containers.list(all=True, filters={"label": LABEL}))


def test_a_live_sessions_containers_survive_the_purge_and_a_dead_ones_do_not(dk):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        theirs = _created(dk, str(other.pid))
        old_style = _created(dk, "1")
        mine = _created(dk, OWNER)
        purge(dk, mine_only=True)            # a session's end: its own only
        assert not _exists(dk, mine)
        assert _exists(dk, theirs) and _exists(dk, old_style)
        purge(dk)                            # a session's start: the other one still runs
        assert _exists(dk, theirs)
        assert not _exists(dk, old_style)
    finally:
        other.kill()
        other.wait()
    purge(dk)                                # now its process is gone
    assert not _exists(dk, theirs)


def test_compose_project_names_carry_the_session():
    name = project_name()
    assert name.startswith("kbrokerdockertest" + OWNER + "x")
    assert project_name() != name
