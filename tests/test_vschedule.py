"""Alltoallv schedulers (aapcgen/alltoallv/schedule.py) and their independent checker (aapcgen/verify/alltoallv.py)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aapcgen.alltoallv.schedule import (
    alltoall_based,
    balanced,
    greedy,
    load_pattern,
    lower_bound,
    run_scheduler,
    table3_pattern,
)
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoallv import verify_vschedule
from tests.trees import figure1, make_topology, star_of_subtrees, switch_trees

ROOT = Path(__file__).resolve().parent.parent
KB, MB = 1024, 1024 * 1024
SCHEDULERS = ("greedy", "alltoall", "balanced")


def figure3() -> np.ndarray:
    p = np.zeros((6, 6), dtype=np.int64)
    for s, d, c in [(0, 1, MB), (1, 3, MB), (0, 2, 10 * KB), (2, 3, 100), (1, 5, 100), (2, 1, 100)]:
        p[s, d] = c
    return p


def grouping(sched) -> list[set[tuple[int, int]]]:
    return [{(s, d) for s, d, _, _ in phase} for phase in sched.phase_lists()]


def test_figure3_greedy_three_phases_as_in_the_paper():
    sched = greedy(make_topology([], [0] * 6), figure3(), 0)
    assert grouping(sched) == [{(0, 1), (1, 3)}, {(0, 2), (2, 3), (1, 5)}, {(2, 1)}]
    assert sched.contention_free.all()


def test_figure3_alltoall_two_phases_as_in_the_paper():
    sched = alltoall_based(make_topology([], [0] * 6), figure3(), 0)
    assert grouping(sched) == [{(0, 1), (2, 3), (1, 5)}, {(1, 3), (0, 2), (2, 1)}]


def test_figure3_threshold_puts_small_messages_in_one_marked_phase():
    topo = make_topology([], [0] * 6)
    sched = greedy(topo, figure3(), 20 * KB)
    assert sched.small.tolist() == [False, True]
    assert grouping(sched) == [{(0, 1), (1, 3)}, {(0, 2), (2, 3), (1, 5), (2, 1)}]
    assert sched.contention_free.tolist() == [True, False]  # 2->3 and 2->1 share 2's uplink
    assert verify_vschedule(topo, figure3(), sched).small_phases == 1
    with pytest.raises(VerificationError, match="contention in phase 1"):
        verify_vschedule(topo, figure3(), dataclasses.replace(sched, small=np.zeros(2, bool)))


def test_table3_pattern_shape():
    p = table3_pattern()
    values, counts = np.unique(p[~np.eye(16, dtype=bool)], return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == {100: 60, 16 * KB: 20, 64 * KB: 160}
    assert (np.diag(p) == 0).all()


@pytest.mark.parametrize("name", SCHEDULERS)
def test_table3_all_schedulers_verified(name):
    topo = make_topology([], [0] * 16)
    p = table3_pattern()
    sched = run_scheduler(name, topo, p)
    proof = verify_vschedule(topo, p, sched)
    assert proof.ratio == pytest.approx(sched.ratio)
    assert proof.bound == pytest.approx(lower_bound(topo, p))  # computed apart from the checker
    if name == "alltoall":
        assert sched.n_phases == 15  # as in seed 000 (N - 1 phases)
    if name == "balanced":
        assert sched.ratio <= 1.10


def _patterns(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 14, (n, n))
    hot[:, 0] *= 64
    return {
        "sparse": np.where(rng.random((n, n)) < 0.2, rng.integers(1, 1 << 20, (n, n)), 0),
        "dense": rng.integers(0, 1 << 20, (n, n)),
        "skewed": (rng.pareto(1.2, (n, n)) * 4096).astype(np.int64),
        "hotspot": hot,
    }


@pytest.mark.parametrize(
    "topo",
    [
        make_topology([], [0] * 16),
        star_of_subtrees([4, 4]),
        make_topology([0, 1, 2], [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4),
        figure1(),
    ],
    ids=["single-16", "two-switches", "chain-4x4", "paper-fig1"],
)
def test_balanced_within_ten_percent(topo):
    for name, p in _patterns(topo.n_machines, 7).items():
        sched = balanced(topo, p)
        proof = verify_vschedule(topo, p, sched)
        assert proof.ratio <= 1.10, name


@st.composite
def cases(draw):
    topo = draw(switch_trees(min_machines=2, max_machines=9))
    n = topo.n_machines
    sizes = st.one_of(st.just(0), st.integers(1, 300), st.integers(1, 70000))
    p = np.array(draw(st.lists(sizes, min_size=n * n, max_size=n * n)), dtype=np.int64).reshape(
        n, n
    )
    if draw(st.booleans()):
        p[draw(st.integers(0, n - 1)), :] = 0  # a zero row
    if draw(st.booleans()):
        p[:, draw(st.integers(0, n - 1))] = 0  # a zero column
    return topo, p, draw(st.sampled_from([0, 0, 200, 5000]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_patterns_every_schedule_verified(case):
    topo, p, threshold = case
    bound = lower_bound(topo, p)
    for name in SCHEDULERS:
        sched = run_scheduler(name, topo, p, threshold)
        proof = verify_vschedule(topo, p, sched)  # (it refuses a cost below its bound)
        assert proof.bound == pytest.approx(bound)
        # chunking exact: per pair, the lengths add up to the count
        sent = np.zeros_like(p)
        np.add.at(sent, (sched.src, sched.dst), sched.length)
        off = p.copy()
        np.fill_diagonal(off, 0)
        assert (sent == off).all()
        if name != "balanced" and threshold == 0:
            assert sched.contention_free.all()


def _base():
    topo = star_of_subtrees([3, 3])
    rng = np.random.default_rng(5)
    p = rng.integers(1, 5000, (6, 6))
    return topo, p, balanced(topo, p)


def _replace(sched, **arrays):
    return dataclasses.replace(sched, **arrays)


def test_mutation_dropped_byte():
    topo, p, s = _base()
    length = s.length.copy()
    length[0] -= 1
    with pytest.raises(VerificationError, match="gap|delivered"):
        verify_vschedule(topo, p, _replace(s, length=length))


def test_mutation_duplicated_piece():
    topo, p, s = _base()
    idx = np.r_[np.arange(len(s.src)), 0]
    dup = {k: getattr(s, k)[idx] for k in ("phase", "src", "dst", "offset", "length")}
    dup["phase"] = dup["phase"].copy()
    dup["phase"][-1] = s.n_phases - 1
    with pytest.raises(VerificationError, match="overlap|contention"):
        verify_vschedule(topo, p, _replace(s, **dup))


def test_mutation_contending_piece():
    topo, p, s = _base()
    # move one piece into a phase where its source already sends
    i = 0
    j = int(np.flatnonzero((s.src == s.src[i]) & (s.phase != s.phase[i]))[0])
    phase = s.phase.copy()
    phase[i] = s.phase[j]
    with pytest.raises(VerificationError, match="contention"):
        verify_vschedule(topo, p, _replace(s, phase=phase))


def test_mutation_wrong_cost_and_fake_small_phase():
    topo, p, s = _base()
    with pytest.raises(VerificationError, match="cost"):
        verify_vschedule(topo, p, _replace(s, cost=s.cost * 0.5))
    small = np.zeros(s.n_phases, dtype=bool)
    small[0] = True
    with pytest.raises(VerificationError, match="small-message phase"):
        verify_vschedule(topo, p, _replace(s, small=small))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("p.yaml", "[[0, 1], [2, 0]]\n", "must be 3x3"),
        ("p.yaml", "[[0, 1, 2], [3, 0, -4], [5, 6, 0]]\n", "row 1, column 2: negative"),
        (
            "p.yaml",
            "[[0, 1, 2.5], [3, 0, 4], [5, 6, 0]]\n",
            "row 0, column 2: 2.5 is not an integer",
        ),
        ("p.yaml", "[[0, 1, x], [3, 0, 4], [5, 6, 0]]\n", "'x' is not an integer"),
        ("p.yaml", "{a: 1}\n", "list of 3 rows"),
        ("p.yaml", "[[0, 1\n", "malformed YAML"),
        ("p.csv", "0,1,2\n3,0,4\n", "must be 3x3"),
        ("p.csv", "0,1,2\n3,0,4\n5,six,0\n", "row 2, column 1"),
        ("p.txt", "0\n", "unknown pattern format"),
    ],
)
def test_bad_pattern_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    topo = make_topology([], [0] * 3)
    with pytest.raises(InputError, match=message) as info:
        load_pattern(path, topo)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_pattern_formats_agree(tmp_path):
    topo = make_topology([], [0] * 3)
    p = np.array([[0, 1, 2], [3, 0, 4], [5, 6, 0]])
    (tmp_path / "p.yaml").write_text(str(p.tolist()))
    (tmp_path / "p.csv").write_text("\n".join(",".join(map(str, r)) for r in p.tolist()))
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "bad.npy", -p)
    for ext in ("yaml", "csv", "npy"):
        assert (load_pattern(tmp_path / f"p.{ext}", topo) == p).all()
    with pytest.raises(InputError, match="negative"):
        load_pattern(tmp_path / "bad.npy", topo)
    with pytest.raises(InputError, match="file not found"):
        load_pattern(tmp_path / "none.csv", topo)


def test_cli_vschedule(tmp_path):
    topo = str(ROOT / "topologies" / "paper-fig1.yaml")
    n = load_topology(topo).n_machines
    path = tmp_path / "p.csv"
    path.write_text("\n".join(",".join(["1000"] * n) for _ in range(n)))
    run = [sys.executable, "-m", "aapcgen", "vschedule", topo, str(path)]
    out = subprocess.run(run + ["--scheduler", "greedy"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "cost/bound" in out.stdout and "verified" in out.stdout
    out = subprocess.run(run + ["--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0 and '"cost_over_bound"' in out.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("[[1]]\n")
    out = subprocess.run(run[:-1] + [str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "bad.yaml" in out.stderr
