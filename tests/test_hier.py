"""Machines running several ranks each (ranks_per_machine): the hierarchical all-to-all.

The verifier's rank-level check, the topology key, and real MPI: the generated routines against
PMPI_Alltoall (tests/c/alltoall_check.c) with 2 ranks per machine, locally and on an emulated
switch tree with two ranks in every machine's namespace (root; runs in CI).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

import numpy as np
import pytest
from test_emulate import IS_ROOT, TOPOS, clean, needs_root  # noqa: F401  (fixture)
from test_mpi import MPIEXEC, ROOT, run, served
from test_mpi import build as build_harness

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.codegen.generate import variant_specs
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.core.topology import load_topology, parse_topology
from aapcgen.core.units import parse_bandwidth
from aapcgen.platforms.emulate import emulate_down, emulate_up, link_counters, mpiexec_command
from aapcgen.verify.alltoall import verify_hierarchical


def two_ppn(name: str, r: int = 2):
    return replace(load_topology(TOPOS / f"{name}.yaml"), ranks_per_machine=r)


def test_rank_level_model_delivers_every_rank_pair_once():
    """verify_hierarchical: the rank arithmetic of the hierarchical routine's model (R*R blocks
    per machine-level message, intra-machine pairs kept local) delivers every rank pair once,
    and a dropped, doubled or self-addressed machine message shows as a rank pair delivered 0 or
    2 times. The C routine itself: test_two_ranks_per_machine_local."""
    topo = two_ppn("paper-fig1", 3)
    s = build_phases(analyze(topo))
    summary = verify_hierarchical(topo, s.phase, s.src, s.dst)
    assert summary == (
        "hierarchical (3 ranks per machine, 15 ranks): every one of the 210 rank pairs delivered "
        "exactly once (30 inside machines); 6 machine-level phases of 9-block aggregates"
    )
    with pytest.raises(VerificationError, match="^ranks 3 -> 4: delivered 2 times"):
        verify_hierarchical(topo, np.r_[s.phase, 0], np.r_[s.src, 1], np.r_[s.dst, 1])
    first = f"ranks {3 * s.src[0]} -> {3 * s.dst[0]}: delivered"
    with pytest.raises(VerificationError, match=f"^{first} 0 times in the hierarchical schedule$"):
        verify_hierarchical(topo, s.phase[1:], s.src[1:], s.dst[1:])
    with pytest.raises(VerificationError, match=f"^{first} 2 times"):
        verify_hierarchical(topo, np.r_[s.phase, 0], np.r_[s.src, s.src[0]], np.r_[s.dst, s.dst[0]])


def test_ranks_per_machine_key():
    base = {
        "switches": ["s0"],
        "machines": [{"name": "a", "switch": "s0"}, {"name": "b", "switch": "s0"}],
    }
    assert parse_topology({**base, "ranks_per_machine": 4}, "t.yaml").ranks_per_machine == 4
    assert parse_topology(base, "t.yaml").ranks_per_machine == 1
    for bad in (0, -1, 2.5, "2", True):
        with pytest.raises(InputError, match="t.yaml: ranks_per_machine: must be a whole number"):
            parse_topology({**base, "ranks_per_machine": bad}, "t.yaml")


def build(topo, out):
    specs = [s for v in ("receiver-all", "sender-all") for s in variant_specs(v, None)]
    return build_harness(topo, out, specs=specs)


def passed(proc, cases: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("alltoall_check:")][-1]
    assert last.endswith(" 0 failed") and int(last.split()[1]) >= cases, last


@pytest.mark.mpi
def test_two_ranks_per_machine_local(tmp_path):
    """paper-fig1 with 2 ranks per machine: 10 ranks, every harness case, both variants."""
    exe = build(two_ppn("paper-fig1"), tmp_path)
    proc = run(exe, 10, "--max-bytes", "65536", env={"AAPC_QUIET": "1"}, timeout=600)
    passed(proc, 24)
    served(proc, parts=False, variants=2)  # the hierarchical routine ran on WORLD


@needs_root
@pytest.mark.mpi
def test_two_ranks_per_namespace_on_the_emulated_tree(clean, tmp_path):  # noqa: F811
    """16 ranks in 8 namespaces (2 each) of the 4+4 tree: correct, and traffic crosses s0-s1."""
    prefix = clean("aapch")
    topo = load_topology(ROOT / "topologies" / "two-switch-4-4-2ppn.yaml")
    assert topo.ranks_per_machine == 2
    exe = build(topo, tmp_path)
    em = emulate_up(topo, rate=parse_bandwidth("100Mbit"), prefix=prefix)
    try:
        before = link_counters(em)
        cmd = mpiexec_command(
            em,
            str(MPIEXEC),
            [str(exe), "--max-bytes", "1000", "--variant", "receiver-all"],
            {"AAPC_QUIET": "1"},
            ranks_per_machine=2,
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        passed(proc, 12)
        served(proc, parts=False)
        after = link_counters(em)
        assert after["s0->s1"][0] - before["s0->s1"][0] >= 4 * 4 * 4 * 1000
    finally:
        emulate_down(prefix)
