"""The run-time scheduler in C (runtime_c/cluster) gives exactly the phases of the Python
pipeline on the job tree (aapcgen/alltoall/job.py), for any subset of a cluster's machines, any
rank order and any number of ranks per machine; the independent verifier proves them."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trees import MBIT100, star_of_subtrees, switch_trees

from aapcgen.alltoall.capacity import capacity_model, schedule_phases
from aapcgen.alltoall.cjob import job_phases
from aapcgen.alltoall.job import job_topology
from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.core.errors import InputError
from aapcgen.core.model import Link, Topology
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoall import verify_schedule

ROOT = Path(__file__).resolve().parent.parent
TOPOS = ROOT / "topologies"
SMALL = sorted(p.stem for p in TOPOS.glob("*.yaml") if load_topology(p).n_machines <= 256)


def python_phases(topo: Topology, rank_machine: list[int]):
    """The pipeline's phases on the job tree: seed 002's in Python, or the capacity-aware phases
    of the C scheduler given the job tree as a cluster (its own numbering of nodes and links)."""
    return schedule_phases(analyze(job_topology(topo, rank_machine)))


def assert_same(topo: Topology, rank_machine: list[int], verify: bool = True) -> None:
    """C's job phases equal the pipeline's. With one link speed the pipeline is seed 002's
    phases in Python; with capacities it is the C scheduler itself (C against C), so the
    independent verifier always checks C's phases then; ``verify``: also with one speed."""
    job = job_topology(topo, rank_machine)
    c, py = job_phases(topo, rank_machine), python_phases(topo, rank_machine)
    assert c.n_phases == py.n_phases
    assert np.array_equal(c.phase, py.phase)
    assert np.array_equal(c.src, py.src)
    assert np.array_equal(c.dst, py.dst)
    if verify or not capacity_model(analyze(job)).uniform:
        verify_schedule(job, c.phase, c.src, c.dst)


@st.composite
def placements(draw: st.DrawFn) -> tuple[Topology, list[int]]:
    """A random tree and a random job on it: a subset of machines in any order, 1-4 ranks on
    each (blocks, round robin or shuffled), unequal counts."""
    topo = draw(switch_trees(min_machines=2, max_machines=200))
    n = topo.n_machines
    k = draw(st.integers(min(2, n), min(n, 40)))
    machines = draw(st.permutations(range(n)))[:k]
    counts = [draw(st.integers(1, 4)) if draw(st.booleans()) else 1 for _ in machines]
    layout = draw(st.sampled_from(["block", "round-robin", "shuffled"]))
    if layout == "block":
        ranks = [m for m, c in zip(machines, counts) for _ in range(c)]
    else:
        ranks = [m for i in range(max(counts)) for m, c in zip(machines, counts) if i < c]
        if layout == "shuffled":
            ranks = draw(st.permutations(ranks))
    if len(ranks) < 2:
        ranks = [machines[0], machines[0]]
    return topo, list(ranks)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(placements())
def test_random_jobs_identical_and_verified(case):
    topo, ranks = case
    assert_same(topo, ranks, verify=len(ranks) <= 80)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(switch_trees(min_machines=2, max_machines=200))
def test_whole_random_cluster_identical(topo):
    """One rank per machine on every machine: the schedule of the offline generator."""
    c = job_phases(topo, list(range(topo.n_machines)))
    py = build_phases(analyze(topo))
    assert np.array_equal(c.phase, py.phase) and np.array_equal(c.src, py.src)
    assert np.array_equal(c.dst, py.dst)


@pytest.mark.parametrize("name", SMALL)
def test_shipped_topologies(name):
    topo = load_topology(TOPOS / f"{name}.yaml")
    rng = random.Random(name)
    n = topo.n_machines
    assert_same(topo, list(range(n)), verify=n <= 64)
    for _ in range(5):
        machines = rng.sample(range(n), rng.randint(2, min(n, 24)))
        assert_same(topo, machines)
        assert_same(topo, [m for m in machines for _ in range(rng.randint(1, 3))])


def test_table4_on_the_whole_cluster():
    """Seed 002 Table 4 (paper-fig1): the run-time scheduler's phases for the whole cluster."""
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    s = job_phases(topo, [0, 1, 2, 3, 4])
    assert s.n_phases == 6 and len(s.src) == 20


def test_errors_are_one_line():
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    with pytest.raises(InputError, match="rank 1: machine 7 is not a machine of the cluster"):
        job_phases(topo, [0, 7])
    with pytest.raises(InputError, match="1 rank"):
        job_phases(topo, [0])


@pytest.mark.slow
def test_sanitizers_clean(tmp_path):
    """The C scheduler under ASan/UBSan on a few jobs, output equal to Python's."""
    exe = tmp_path / "cluster_driver"
    src = ROOT / "runtime_c" / "cluster"
    cc = os.environ.get("CC", "cc")
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
    flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    cmd = [
        cc,
        *flags,
        f"-I{src}",
        str(ROOT / "tests/c/cluster_driver.c"),
        *map(str, src.glob("*.c")),
    ]
    subprocess.run([*cmd, "-o", str(exe)], check=True, timeout=300)
    chain = load_topology(TOPOS / "chain-4x4.yaml")
    jobs = [(chain, r) for r in ([0, 5, 9, 13], [3, 3, 3, 7, 12, 12], list(range(16)), [1, 1])]
    # capacities: the exact two-level construction (4 x 5, c = 4), the general scheduler with
    # its repair (trunk and fat trees, subsets and shared machines)
    fast = dataclasses.replace(
        star_of_subtrees([5] * 4),
        links=tuple(Link(x.a, x.b, 4 * MBIT100) for x in star_of_subtrees([5] * 4).links),
    )
    jobs += [(fast, list(range(20)))]
    for name, ranks in (("trunk-8-8", list(range(16))), ("fat-4-4", [0, 0, 2, 5, 6, 6, 7])):
        jobs.append((load_topology(TOPOS / f"{name}.yaml"), ranks))
    for topo, ranks in jobs:
        index = {s: i for i, s in enumerate(topo.switches)}
        head = f"{len(topo.switches)} {topo.n_machines} {len(topo.links)} {len(ranks)}\n"
        body = " ".join(str(index[s]) for s in topo.machine_switch) + "\n"
        body += " ".join(f"{index[ln.a]} {index[ln.b]}" for ln in topo.links) + "\n"
        body += " ".join(map(str, ranks)) + "\n"
        speeds = [*topo.machine_bandwidth, *(ln.bandwidth for ln in topo.links)]
        body += " ".join(map(repr, speeds)) + "\n"
        proc = subprocess.run(
            [str(exe)], input=head + body, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        lines = proc.stdout.split("\n")
        py = python_phases(topo, ranks)
        assert lines[0] == f"phases {py.n_phases} {len(py.src)}"
        got = np.array([list(map(int, x.split())) for x in lines[1:] if x], dtype=np.int64)
        assert np.array_equal(got, np.stack([py.phase, py.src, py.dst], axis=1))
        # with capacities "Python's" phases are the C scheduler's too: prove the ASan run's
        verify_schedule(job_topology(topo, ranks), got[:, 0], got[:, 1], got[:, 2])
