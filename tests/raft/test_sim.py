"""Seeded whole-cluster simulations (see tests/raft/sim.py for the fault model and invariants).

``make test`` runs a few hundred seeds; ``tools/raft_soak.py`` runs thousands. A failure names
the seed, the broken invariant, the last events and the command that replays it exactly.
"""
from __future__ import annotations

import collections

import pytest

from .sim import Scenario, SimFailure, Simulation, reproduce_command, run_seed

QUICK_SEEDS = range(0, 300)
SLOW_SEEDS = range(300, 500)   # thousands more: tools/raft_soak.py


# The tests that check what the seeds exercise read the counts of seeds the parametrised
# tests run too: each (seed, profile) is simulated once per process, whichever test comes
# first, and the numbers those checks need are kept (the simulation itself is dropped).
COVERAGE_SEEDS = {"quick": range(0, 40), "dynamic": range(0, 20), "upgrade": range(0, 25)}
_summaries: dict[tuple[int, str], dict] = {}


def _summarize(sim: Simulation) -> dict:
    """What the coverage tests below read of one finished simulation."""
    out = {
        "converged": sim.converged_at is not None,
        "shape": (len(sim.sc.voters), bool(sim.sc.observers), sim.sc.config.pre_vote),
        "counters": dict(sim.counters),
        "node_stats": [dict(h.node.stats) for h in sim.hosts.values()],
        "leader_epochs": len(sim.checker.leaders),
    }
    if sim.profile in ("dynamic", "upgrade"):
        leader = next(h.node for h in sim.hosts.values() if h.node.role.value == "leader")
        out["removed_leaders"] = sum(1 for h in sim.hosts.values()
                                     if h.node_id in sim.sc.voters and not h.node.is_voter
                                     and h.node.stats["times_leader"])
        out["grown"] = len(leader.voters) > len(sim.sc.voters)
        out["ended_dynamic"] = leader.dynamic
    if sim.profile == "upgrade":    # upgrades the leader refused (the whole history is kept)
        out["refused"] = sum(1 for ev in sim.history if ev[1] == "upgrade" and ev[-2] != 0)
    return out


def _summary(seed: int, profile: str = "quick") -> dict:
    """The summary of one seed's simulation, run here unless a test of this process already
    ran it; an invariant broken raises SimFailure."""
    key = (seed, profile)
    if key not in _summaries:
        sim = Simulation(seed, profile)
        if profile == "upgrade":
            sim.history = collections.deque(maxlen=None)
        _summaries[key] = _summarize(sim.run())
    return _summaries[key]


def _run(seed: int, profile: str = "quick") -> dict:
    try:
        if seed in COVERAGE_SEEDS.get(profile, ()):
            return _summary(seed, profile)
        sim = run_seed(seed, profile)
        return {"converged": sim.converged_at is not None}
    except SimFailure as exc:
        pytest.fail(f"{exc}\n\nreproduce with: {reproduce_command(seed, profile)}", pytrace=False)


@pytest.mark.parametrize("seed", QUICK_SEEDS)
def test_seed(seed):
    assert _run(seed)["converged"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_seed_more(seed):
    _run(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(0, 5))
def test_seed_long_profile(seed):
    _run(seed, "long")


def test_a_seed_replays_exactly():
    a, b = run_seed(42), run_seed(42)
    assert a.events == b.events and a.converged_at == b.converged_at
    assert a.checker.committed == b.checker.committed
    assert list(a.history) == list(b.history)


def test_seeds_cover_the_fault_model():
    """The seed range used by ``make test`` really exercises what the invariants guard."""
    totals: dict[str, int] = {}
    shapes = set()
    for seed in COVERAGE_SEEDS["quick"]:
        sim = _summary(seed)
        shapes.add(sim["shape"])
        for key, value in sim["counters"].items():
            totals[key] = totals.get(key, 0) + value
        for stats in sim["node_stats"]:
            for key in ("truncations", "snapshots_installed", "snapshots_created", "resignations",
                        "pre_vote_rounds", "elections_started"):
                totals[key] = totals.get(key, 0) + stats[key]
        totals["leader_epochs"] = totals.get("leader_epochs", 0) + sim["leader_epochs"]
    for key in ("crashes", "partitions", "truncations", "snapshots_installed", "snapshots_created",
                "resignations", "pre_vote_rounds", "elections_started", "dropped"):
        assert totals[key] > 0, (key, totals)
    assert totals["leader_epochs"] > 40 * 2
    assert len(shapes) >= 6


def test_failure_report_names_the_seed_and_the_command():
    sim = Simulation(7, scenario=Scenario.from_seed(7))
    sim.sc.converge_bound_ms = 0   # impossible bound: must fail and say how to replay
    sim.sc.chaos_ms = 100
    with pytest.raises(SimFailure) as info:
        sim.run()
    text = str(info.value)
    assert "seed 7" in text and reproduce_command(7) in text


DYNAMIC_SEEDS = range(0, 60)   # thousands more: tools/raft_soak.py --profile dynamic


@pytest.mark.parametrize("seed", DYNAMIC_SEEDS)
def test_dynamic_quorum_seed(seed):
    """KIP-853: voters added and removed (the leader too) under crashes, partitions, drops."""
    assert _run(seed, "dynamic")["converged"]


# Seeds that once failed to converge: a removed voter that kept a stale high watermark
# campaigned without pre-votes (its latest set held one voter, not itself) and raised the
# epochs of observers above the real leader's.
DYNAMIC_REGRESSION_SEEDS = (1482, 2464, 2780)


@pytest.mark.parametrize("seed", DYNAMIC_REGRESSION_SEEDS)
def test_dynamic_quorum_regression_seed(seed):
    assert _run(seed, "dynamic")["converged"]


def test_dynamic_seeds_really_change_the_voter_set():
    changes, removed_leaders, grown = 0, 0, 0
    for seed in COVERAGE_SEEDS["dynamic"]:
        sim = _summary(seed, "dynamic")
        changes += sim["counters"].get("reconfigurations", 0)
        removed_leaders += sim["removed_leaders"]
        grown += sim["grown"]
    assert changes >= 20 and removed_leaders >= 1 and grown >= 1, (changes, removed_leaders, grown)


UPGRADE_SEEDS = range(0, 40)   # thousands more: tools/raft_soak.py --profile upgrade


@pytest.mark.parametrize("seed", UPGRADE_SEEDS)
def test_upgrade_seed(seed):
    """KAFKA-16538: a static quorum upgraded to kraft.version 1 under faults, then changed,
    with voters losing their disks (invariants I1-I9)."""
    assert _run(seed, "upgrade")["converged"]


def test_upgrade_seeds_really_upgrade_and_change_the_voters():
    upgraded = refused = changes = reformats = ended_dynamic = 0
    for seed in COVERAGE_SEEDS["upgrade"]:
        sim = _summary(seed, "upgrade")
        upgraded += sim["counters"].get("upgrades", 0)
        refused += sim["refused"]
        changes += sim["counters"].get("reconfigurations", 0)
        reformats += sim["counters"].get("reformats", 0)
        ended_dynamic += sim["ended_dynamic"]
    assert upgraded >= 15 and refused >= 15 and changes >= 15 and reformats >= 3, \
        (upgraded, refused, changes, reformats)
    assert ended_dynamic >= 15
