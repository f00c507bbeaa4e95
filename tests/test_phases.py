"""The scheduler: Table 4 exactly, the rotate pattern as published, optimality on random trees."""

from __future__ import annotations

import dataclasses
from math import gcd

import numpy as np
import pytest
from hypothesis import given, settings
from trees import figure1, star_of_subtrees, switch_trees

from aapcgen.alltoall.capacity import phased_seconds_per_byte
from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.core.model import Link
from aapcgen.verify.alltoall import verify_schedule

# seed 002 Table 4 with m0,0=n0, m0,1=n1, m1,0=n3, m1,1=n4, m2,0=n2
TABLE_4 = [
    {("n0", "n3"), ("n3", "n2"), ("n2", "n1"), ("n1", "n0")},
    {("n1", "n4"), ("n4", "n2"), ("n2", "n0"), ("n0", "n1")},
    {("n1", "n3"), ("n3", "n0")},
    {("n0", "n4"), ("n3", "n1"), ("n4", "n3")},
    {("n0", "n2"), ("n4", "n1"), ("n2", "n3"), ("n3", "n4")},
    {("n1", "n2"), ("n4", "n0"), ("n2", "n4")},
]


def test_figure1_root_and_subtrees():
    tree = analyze(figure1())
    assert tree.root == "s3"
    assert tree.subtrees == ((0, 1), (3, 4), (2,))
    assert tree.load == 6


def test_table4_reproduced_exactly():
    topo = figure1()
    sched = build_phases(analyze(topo))
    names = topo.machines
    got = [{(names[s], names[d]) for s, d in phase} for phase in sched.phase_lists()]
    assert got == TABLE_4


def literal_rotate(mi: int, mj: int, receivers: list[int]) -> list[tuple[int, int]]:
    """Section 4.3.1 word for word: repeat the base sequence b times, then at every multiple of
    a*b*D rotate it by the smallest n that yields a message not seen before."""
    d = gcd(mi, mj)
    b = mj // d
    period = mi * b  # a * b * D
    seen: set[tuple[int, int]] = set()
    out = []
    rotation = 0
    for p in range(mi * mj):
        if p % period == 0 and p:
            rotation = next(n for n in range(mi) if ((0 + n) % mi, receivers[p]) not in seen)
        msg = ((p % mi + rotation) % mi, receivers[p])
        seen.add(msg)
        out.append(msg)
    return out


@pytest.mark.parametrize(
    "sizes",
    [
        [6, 4, 3],
        [6, 4, 4, 2],
        [6, 4, 2, 1],
        [3, 2, 2, 2],
        [5, 3, 3],
        [6, 5, 3, 1],
        [8, 6, 4, 2],
        [1, 1, 1],
    ],
)
def test_step1_is_the_published_rotate_pattern(sizes):
    tree = analyze(star_of_subtrees(sizes))
    assert [len(t) for t in tree.subtrees] == sizes
    sched = build_phases(tree)
    load = tree.load
    t0 = tree.subtrees[0]
    for j in range(1, len(sizes)):
        tj = tree.subtrees[j]
        mask = np.isin(sched.src, t0) & np.isin(sched.dst, tj)
        phases = sched.phase[mask]
        order = np.argsort(phases)
        got = [
            (t0.index(int(s)), tj.index(int(d)))
            for s, d in zip(sched.src[mask][order], sched.dst[mask][order])
        ]
        first = int(phases.min())
        receivers = [(first + q - load) % sizes[j] for q in range(sizes[0] * sizes[j])]  # step 1.a
        assert got == literal_rotate(sizes[0], sizes[j], receivers)


def test_table1_rotate_example():
    """Table 1: |Mi| = 6, |Mj| = 4, receivers m_j,0..3 repeating."""
    got = literal_rotate(6, 4, [p % 4 for p in range(24)])
    assert got[:6] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 0), (5, 1)]
    assert got[12:18] == [(1, 0), (2, 1), (3, 2), (4, 3), (5, 0), (0, 1)]
    assert len(set(got)) == 24


@pytest.mark.parametrize(
    "parents, machines",
    [
        ([], [0, 0]),  # two machines, one switch
        ([0], [0, 1]),  # two machines, two switches
        ([], [0, 0, 0]),
        ([0], [0, 0, 0, 0, 1, 1, 1, 1]),  # two switches 4+4: tie on the middle link
        ([0, 1, 2], [i // 4 for i in range(16)]),  # chain 4 x 4
        ([0, 1], [0, 2, 0, 2]),  # machine-less middle switch, 2/2 split
    ],
)
def test_small_cases_verify(parents, machines):
    from trees import make_topology

    topo = make_topology(parents, machines)
    sched = build_phases(analyze(topo))
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert proof.n_phases == proof.lower_bound


@settings(max_examples=300, deadline=None)
@given(switch_trees())
def test_random_trees_are_verified_optimal(topo):
    tree = analyze(topo)
    assert all(2 * len(t) <= topo.n_machines for t in tree.subtrees)  # Lemma 1
    sched = build_phases(tree)
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    assert sched.n_phases == tree.load == proof.lower_bound
    assert proof.n_messages == topo.n_machines * (topo.n_machines - 1)
    # sorted by (phase, src), as documented
    key = sched.phase.astype(np.int64) * topo.n_machines + sched.src
    assert (np.diff(key) > 0).all()
    # one link speed everywhere: phases back to back meet the bandwidth bound exactly
    bound = max(link.seconds_per_byte for link in tree.links)
    assert phased_seconds_per_byte(tree, sched) == pytest.approx(bound, rel=1e-9)


def test_phases_take_longer_than_the_bound_when_the_bottleneck_is_faster():
    """2+2 machines at 1 Gbit/s joined by a 10 Gbit/s link: 4 phases, each with a message that
    crosses a 1 Gbit/s machine link, so 4 / 1G s per byte; the bound is a machine link's 3
    messages / 1G (the middle link's 4 / 10G is less). Slow the middle link to 0.1 Gbit/s and it
    is both the slowest link of every phase and the bound."""
    from trees import make_topology

    g = 125e6
    base = make_topology([0], [0, 0, 1, 1], bandwidth=g)
    fast = dataclasses.replace(base, links=(Link("s0", "s1", 10 * g),))
    tree = analyze(fast)
    assert phased_seconds_per_byte(tree, build_phases(tree)) == pytest.approx(4 / g)
    assert max(link.seconds_per_byte for link in tree.links) == pytest.approx(3 / g)
    slow = dataclasses.replace(base, links=(Link("s0", "s1", g / 10),))
    tree = analyze(slow)
    assert phased_seconds_per_byte(tree, build_phases(tree)) == pytest.approx(4 / (g / 10))
    assert max(link.seconds_per_byte for link in tree.links) == pytest.approx(4 / (g / 10))
