"""Capacity-aware phases (issue 18): switch links faster than the machine links carry several
messages per phase. The schedules come from the C scheduler (runtime_c/cluster/
aapc_cluster_capacity.c) through aapcgen/alltoall/capacity.py; the independent verifier
(aapcgen/verify/alltoall.py) checks every one of them."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sync import PAIRWISE
from test_sync import check as check_syncs
from trees import figure1, grouped_tree, make_topology

from aapcgen.alltoall.capacity import (
    capacity_model,
    phased_seconds_per_byte,
    schedule_phases,
)
from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Link, Topology
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoall import verify_schedule, verify_sync

ROOT = Path(__file__).resolve().parent.parent
TOPOS = ROOT / "topologies"
G = 125e6  # 1 Gbit/s in bytes/s


def two_level(sizes: list[int], ratio: float, machine: float = G) -> Topology:
    """A core switch with one leaf switch per entry of ``sizes``; uplinks ``ratio`` x machines."""
    t = make_topology([0] * len(sizes), [i + 1 for i, n in enumerate(sizes) for _ in range(n)])
    links = tuple(Link(ln.a, ln.b, ratio * machine) for ln in t.links)
    return dataclasses.replace(
        t, links=links, machine_bandwidth=(machine,) * t.n_machines, bandwidth=machine
    )


def bound(sizes: list[int], c: int) -> int:
    n = sum(sizes)
    return max([n - 1] + [math.ceil(m * (n - m) / min(c, m, n - m)) for m in sizes])


@pytest.mark.parametrize(
    "name, lower_bound, unit",
    [
        (
            "fat-4-4",
            7,
            16,
        ),  # 100 Mbit/s over 10 Mbit/s: c = min(10, 4, 4), every phase a permutation
        ("two-level-1024", 3175, 31744),  # 32 x 32, c = 10: ceil(32 * 992 / 10)
        ("three-level-4096", 45876, 1835008),  # agg uplinks 40 x 1G: ceil(512 * 3584 / 40)
        ("chain-4x4", 64, 64),  # one link speed: seed 002's L
        ("paper-fig1", 6, 6),
    ],
)
def test_lower_bounds_of_shipped_topologies(name, lower_bound, unit):
    tree = analyze(load_topology(TOPOS / f"{name}.yaml"))
    assert capacity_model(tree).lower_bound == lower_bound
    assert tree.load == unit


def test_one_link_speed_keeps_seed_002_and_table_4():
    """c = 1 everywhere: exactly today's optimal phases (seed 002 Table 4 on Figure 1)."""
    tree = analyze(figure1())
    assert capacity_model(tree).uniform
    a, b = schedule_phases(tree), build_phases(tree)
    assert np.array_equal(a.phase, b.phase) and np.array_equal(a.src, b.src)
    assert np.array_equal(a.dst, b.dst) and a.n_phases == 6


@pytest.mark.parametrize("name", ["fat-4-4", "two-level-1024"])
def test_shipped_fast_uplink_trees_reach_the_bound(name):
    topo = load_topology(TOPOS / f"{name}.yaml")
    tree = analyze(topo)
    sched = schedule_phases(tree)
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert proof.optimal and proof.max_capacity > 1
    assert "optimal" in proof.summary(name)
    # the time of the phases back to back against the bandwidth bound
    ratio = phased_seconds_per_byte(tree, sched) / max(x.seconds_per_byte for x in tree.links)
    assert ratio < 1.001


# (groups, edge switches per group (0: machines on the group's switch), machines per edge
# switch, core and aggregation links in machine links): trees whose root links set the bound,
# which aapc_cluster_groups.c schedules exactly (tests/test_vtables_contract.py checks that its
# streamed build takes them); the last is three-level-4096 scaled to 256 machines
GROUPED = [(3, 0, 5, 2, 4), (4, 1, 6, 2, 3), (5, 4, 3, 4, 2), (3, 3, 4, 2, 4), (4, 4, 6, 8, 4),
           (12, 0, 24, 16, 25), (6, 8, 24, 25, 25), (8, 4, 8, 10, 5)]  # fmt: skip


@pytest.mark.parametrize("shape", GROUPED)
def test_grouped_trees_reach_the_bound(shape):
    """k alike groups under a core whose links set the bound: the phases are optimal (the
    verifier proves them complete, contention-free and exactly the lower bound)."""
    k, e, m, core, agg = shape
    topo = grouped_tree(k, e, m, core * G, agg * G, G)
    tree = analyze(topo)
    n = k * (e or 1) * m
    group = n // k
    assert capacity_model(tree).lower_bound == -(-group * (n - group) // min(core, group)) > n - 1
    sched = schedule_phases(tree)
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert proof.optimal and proof.n_phases == capacity_model(tree).lower_bound


@pytest.mark.slow
def test_three_level_4096_is_exact():
    """The shipped three-level tree (8 x 16 x 32 machines, 40 and 10 Gbit/s over 1 Gbit/s): its
    45,876 phases (ceil(512 x 3584 / 40)), proved; the general scheduler took seconds and a
    gigabyte for them (docs/measurements/selection.md)."""
    topo = load_topology(TOPOS / "three-level-4096.yaml")
    tree = analyze(topo)
    sched = schedule_phases(tree)
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert proof.optimal and proof.n_phases == 45876 and proof.max_capacity == 40


def test_the_issue_trunk_tree():
    """Two switches of 8 machines at 20 Mbit/s, one 80 Mbit/s trunk: c = 4, bound 16 phases
    (64 / 4) against 15 messages per machine; the unit schedule needs 64."""
    topo = make_topology([0], [0] * 8 + [1] * 8, bandwidth=2.5e6)
    topo = dataclasses.replace(topo, links=(Link("s0", "s1", 10e6),))
    tree = analyze(topo)
    assert tree.load == 64 and capacity_model(tree).lower_bound == 16
    sched = schedule_phases(tree)
    assert verify_schedule(topo, sched.phase, sched.src, sched.dst).n_phases == 16


@pytest.mark.slow
def test_two_level_integer_ratios_link_bound_exact():
    """Uniform two-level trees where the uplinks set the bound with room to spare for the
    machines (bound >= machines + 1, so a machine may idle in two phases or more): the phases
    meet it exactly, whether or not c divides the leaf size."""
    cases = 0
    for k in range(2, 6):
        for n in range(2, 11):
            for c in range(1, n):
                sizes = [n] * k
                if bound(sizes, c) < k * n + 1:
                    continue  # (almost) every phase a full permutation: see the next test
                topo = two_level(sizes, float(c))
                s = schedule_phases(analyze(topo))
                assert verify_schedule(topo, s.phase, s.src, s.dst).optimal, (k, n, c)
                cases += 1
    assert cases > 100


@pytest.mark.slow
def test_two_level_full_permutation_regime_within_one_phase():
    """Where (almost) every phase must be a full permutation (bound <= machines, the uplinks
    bind too), the scheduler reaches the bound or misses it by one phase (docs/scheduling.md:
    3 of 275 uniform two-level trees up to 6 x 10 machines miss by one, all of this kind)."""
    exact = total = 0
    for k in range(2, 6):
        for n in range(3, 10):
            for c in range(2, n):
                sizes = [n] * k
                if bound(sizes, c) > k * n or math.ceil(n * (k - 1) * n / c) < k * n - 1:
                    continue
                topo = two_level(sizes, float(c))
                s = schedule_phases(analyze(topo))
                proof = verify_schedule(topo, s.phase, s.src, s.dst)
                assert proof.n_phases <= proof.lower_bound + 1, (k, n, c)
                exact += proof.optimal
                total += 1
    assert total > 10 and exact >= total - 2


@st.composite
def capacity_trees(draw: st.DrawFn) -> Topology:
    """Random trees (shapes as tests/trees.py) with random link and machine speeds."""
    n_switches = draw(st.integers(1, 10))
    parents = [draw(st.integers(0, i)) for i in range(n_switches - 1)]
    n = draw(st.integers(2, 28))
    used = draw(st.lists(st.integers(0, n_switches - 1), min_size=1, max_size=n_switches))
    machines = [draw(st.sampled_from(used)) for _ in range(n)]
    t = make_topology(parents, machines, bandwidth=G)
    speeds = st.sampled_from([0.5, 1, 1, 2, 2.5, 3, 4, 8, 10])
    links = tuple(Link(ln.a, ln.b, draw(speeds) * G) for ln in t.links)
    mspeed = tuple(draw(st.sampled_from([1.0, 1.0, 2.0])) * G for _ in range(n))
    return dataclasses.replace(t, links=links, machine_bandwidth=mspeed)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(capacity_trees())
def test_random_trees_with_random_speeds_verified(topo):
    tree = analyze(topo)
    model = capacity_model(tree)
    sched = schedule_phases(tree)
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert proof.lower_bound == model.lower_bound
    # within 2% of the bound, or one phase over it on the small full-permutation trees
    assert proof.n_phases <= max(1.02 * model.lower_bound, model.lower_bound + 1)
    assert sched.n_phases <= tree.load  # never worse than seed 002's unit phases


def test_verifier_rejects_an_over_capacity_phase():
    """Mutation: move a trunk message into a phase where its sender and receiver are idle but
    the trunk already carries its capacity (8 + 8 machines, trunk c = 2: 32 phases)."""
    topo = make_topology([0], [0] * 8 + [1] * 8, bandwidth=G)
    topo = dataclasses.replace(topo, links=(Link("s0", "s1", 2 * G),))
    s = schedule_phases(analyze(topo))
    phase, src, dst = s.phase.copy(), s.src.copy(), s.dst.copy()
    assert verify_schedule(topo, phase, src, dst).n_phases == 32
    busy_s = np.zeros((32, 16), dtype=bool)
    busy_r = np.zeros((32, 16), dtype=bool)
    busy_s[phase, src] = busy_r[phase, dst] = True
    up = (src < 8) & (dst >= 8)
    moved = next(
        (e, t)
        for e in np.flatnonzero(up)
        for t in range(32)
        if not busy_s[t, src[e]] and not busy_r[t, dst[e]] and (up & (phase == t)).sum() == 2
    )
    phase[moved[0]] = moved[1]
    with pytest.raises(VerificationError, match="capacity 2"):
        verify_schedule(topo, phase, src, dst)


def test_verifier_rejects_an_empty_phase_and_too_few_phases():
    topo = load_topology(TOPOS / "fat-4-4.yaml")
    s = schedule_phases(analyze(topo))
    with pytest.raises(VerificationError, match="carries no message"):
        verify_schedule(topo, np.where(s.phase >= 3, s.phase + 1, s.phase), s.src, s.dst)
    with pytest.raises(VerificationError):
        verify_schedule(topo, np.zeros_like(s.phase), s.src, s.dst)


def test_slow_switch_link_is_the_bound():
    """A switch link slower than the machines keeps capacity 1; the bound is its load."""
    topo = make_topology([0], [0, 0, 1, 1], bandwidth=G)
    topo = dataclasses.replace(topo, links=(Link("s0", "s1", G / 10),))
    tree = analyze(topo)
    assert capacity_model(tree).caps[0] == 1 and capacity_model(tree).lower_bound == 4
    s = schedule_phases(tree)
    assert verify_schedule(topo, s.phase, s.src, s.dst).optimal


@pytest.mark.parametrize("variant", PAIRWISE)
@pytest.mark.parametrize("name", ["fat-4-4", "trunk-8-8"])
def test_every_sync_variant_proved_on_fast_uplinks(name, variant):
    # scope "cross" (partial variants) orders every pair of blocks on an edge, lanes or not:
    # it made `aapcgen sync` (all variants) exit 1 on fast uplinks before
    topo = load_topology(TOPOS / f"{name}.yaml")
    assert not capacity_model(analyze(topo)).uniform
    _, _, plan, _ = check_syncs(topo, *variant, phases=schedule_phases)
    assert len(plan.frm) > 0


@pytest.mark.parametrize("variant", [("receiver-partial", 3), ("sender-all", None)])
def test_dropping_a_capacity_sync_is_caught(variant):
    topo = load_topology(TOPOS / "fat-4-4.yaml")
    sched, spec, plan, _ = check_syncs(topo, *variant, phases=schedule_phases)
    syncs = (plan.frm, plan.trigger, plan.to, plan.target)
    caught = 0
    for i in range(len(syncs[0])):
        fewer = tuple(np.delete(a, i) for a in syncs)
        try:
            verify_sync(
                topo, sched.phase, sched.src, sched.dst, spec.kind, spec.scope, spec.block_size,
                fewer,
            )  # fmt: skip
        except VerificationError as e:
            assert "insufficient" in str(e)
            caught += 1
    # each pair in another block must stay ordered: no sync of the cross scope is spare; with
    # lanes a dropped sync may leave at most c messages unordered, but not on every link
    assert caught == len(syncs[0]) if spec.scope == "cross" else caught > 0


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(capacity_trees(), st.sampled_from(PAIRWISE))
def test_random_fast_uplink_trees_syncs_proved(topo, variant):
    check_syncs(topo, *variant, phases=schedule_phases)
