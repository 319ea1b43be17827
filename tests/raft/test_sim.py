"""Seeded whole-cluster simulations (see tests/raft/sim.py for the fault model and invariants).

``make test`` runs a few hundred seeds; ``tools/raft_soak.py`` runs thousands. A failure names
the seed, the broken invariant, the last events and the command that replays it exactly.
"""
from __future__ import annotations

import pytest

from .sim import Scenario, SimFailure, Simulation, reproduce_command, run_seed

QUICK_SEEDS = range(0, 300)
SLOW_SEEDS = range(300, 500)   # thousands more: tools/raft_soak.py


def _run(seed: int, profile: str = "quick") -> Simulation:
    try:
        return run_seed(seed, profile)
    except SimFailure as exc:
        pytest.fail(f"{exc}\n\nreproduce with: {reproduce_command(seed, profile)}", pytrace=False)


@pytest.mark.parametrize("seed", QUICK_SEEDS)
def test_seed(seed):
    sim = _run(seed)
    assert sim.converged_at is not None


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
    for seed in range(0, 40):
        sim = run_seed(seed)
        shapes.add((len(sim.sc.voters), bool(sim.sc.observers), sim.sc.config.pre_vote))
        for key, value in sim.counters.items():
            totals[key] = totals.get(key, 0) + value
        for h in sim.hosts.values():
            for key in ("truncations", "snapshots_installed", "snapshots_created", "resignations",
                        "pre_vote_rounds", "elections_started"):
                totals[key] = totals.get(key, 0) + h.node.stats[key]
        totals["leader_epochs"] = totals.get("leader_epochs", 0) + len(sim.checker.leaders)
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
    sim = _run(seed, "dynamic")
    assert sim.converged_at is not None


# Seeds that once failed to converge: a removed voter that kept a stale high watermark
# campaigned without pre-votes (its latest set held one voter, not itself) and raised the
# epochs of observers above the real leader's.
DYNAMIC_REGRESSION_SEEDS = (1482, 2464, 2780)


@pytest.mark.parametrize("seed", DYNAMIC_REGRESSION_SEEDS)
def test_dynamic_quorum_regression_seed(seed):
    assert _run(seed, "dynamic").converged_at is not None


def test_dynamic_seeds_really_change_the_voter_set():
    changes, removed_leaders, grown = 0, 0, 0
    for seed in range(0, 20):
        sim = run_seed(seed, "dynamic")
        changes += sim.counters.get("reconfigurations", 0)
        for h in sim.hosts.values():
            if h.node_id in sim.sc.voters and not h.node.is_voter and h.node.stats["times_leader"]:
                removed_leaders += 1
        final = next(h.node.voters for h in sim.hosts.values() if h.node.role.value == "leader")
        grown += len(final) > len(sim.sc.voters)
    assert changes >= 20 and removed_leaders >= 1 and grown >= 1, (changes, removed_leaders, grown)


UPGRADE_SEEDS = range(0, 40)   # thousands more: tools/raft_soak.py --profile upgrade


@pytest.mark.parametrize("seed", UPGRADE_SEEDS)
def test_upgrade_seed(seed):
    """KAFKA-16538: a static quorum upgraded to kraft.version 1 under faults, then changed,
    with voters losing their disks (invariants I1-I9)."""
    sim = _run(seed, "upgrade")
    assert sim.converged_at is not None


def test_upgrade_seeds_really_upgrade_and_change_the_voters():
    upgraded = refused = changes = reformats = ended_dynamic = 0
    for seed in range(0, 25):
        sim = Simulation(seed, "upgrade")
        sim.history = __import__("collections").deque(maxlen=None)
        sim.run()
        upgraded += sim.counters.get("upgrades", 0)
        refused += sum(1 for ev in sim.history if ev[1] == "upgrade" and ev[-2] != 0)
        changes += sim.counters.get("reconfigurations", 0)
        reformats += sim.counters.get("reformats", 0)
        ended_dynamic += next(h.node.dynamic for h in sim.hosts.values() if h.node.role.value == "leader")
    assert upgraded >= 15 and refused >= 15 and changes >= 15 and reformats >= 3, \
        (upgraded, refused, changes, reformats)
    assert ended_dynamic >= 15
