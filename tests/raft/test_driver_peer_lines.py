"""The driver's operator lines about a peer (``RaftDriver._peer_problem`` and
``_peer_answers``): a trouble is named once when it starts, not once per retry. A leader is
reached at two addresses -- its ``controller.quorum.voters`` entry (Vote, BeginQuorumEpoch)
and the endpoint it announced (Fetch) -- and an answer at one says nothing of the other: a
leader whose voters entry answers while its announced endpoint does not stays named once."""
from __future__ import annotations

import logging
from types import SimpleNamespace

from kbroker.raft.driver import _UNREACHABLE, RaftDriver

ENTRY = ("198.18.1.1", 9093)
ANNOUNCED = ("198.18.1.99", 9093)


def _driver() -> RaftDriver:
    d = RaftDriver.__new__(RaftDriver)
    d._problems = {}
    d.rpc = SimpleNamespace(endpoints={1: ENTRY}, last_error={ANNOUNCED: "no answer in time"})
    return d


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kbroker.raft"]


def test_the_announced_endpoint_stays_named_once_while_the_voters_entry_answers(caplog):
    caplog.set_level(logging.INFO, logger="kbroker.raft")
    d = _driver()
    for _ in range(3):       # fetch rounds: the announced endpoint fails, a vote round answers
        d._peer_problem(1, (_UNREACHABLE, ANNOUNCED), "Fetch", d._unreachable(1, ANNOUNCED))
        d._peer_answers(1, "Vote")                       # at the voters entry
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].startswith(
        "raft: cannot reach leader 1 at 198.18.1.99:9093, the endpoint it announced"), lines
    # an answer at the announced endpoint ends that trouble, with one line naming it
    d._peer_answers(1, "Fetch", 0, ANNOUNCED)
    assert _lines(caplog)[1:] == ["raft: voter 1 at 198.18.1.99:9093 answers again"]


def test_the_voters_entry_is_named_on_its_own(caplog):
    caplog.set_level(logging.INFO, logger="kbroker.raft")
    d = _driver()
    d._peer_problem(1, (_UNREACHABLE, None), "Vote", d._unreachable(1))
    d._peer_problem(1, (_UNREACHABLE, None), "Vote", d._unreachable(1))
    d._peer_answers(1, "Fetch", 0, ANNOUNCED)           # the other address: still unreachable
    d._peer_answers(1, "Vote")
    assert _lines(caplog) == [
        "raft: cannot reach voter 1 at 198.18.1.1:9093 (no answer): check that node 1 runs and "
        "that controller.quorum.voters names its controller listener",
        "raft: voter 1 at 198.18.1.1:9093 answers again"]
