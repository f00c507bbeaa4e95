"""Fortran programs (mpif.h, `use mpi`, `use mpi_f08`) call MPI_ALLTOALL and MPI_ALLTOALLV and
the library serves them, under MPICH and Open MPI (Debian's, with gfortran: `make fortran-mpi`).

tests/fortran/alltoall_check.F90 checks every element itself (world, the halves of an
MPI_COMM_SPLIT, MPI_IN_PLACE, MPI_BOTTOM, an error returned in ierr) and prints how many calls
it made on each communicator; the test compares them with AAPC_REPORT's counts, so a call the
library does not see (Open MPI's bindings call PMPI_Alltoall directly) fails it, and so does a
missing report (a Fortran MPI_FINALIZE that skipped the library's). One mpiexec job per binding
and MPI, ranks placed on paper-fig1's machines with AAPC_MACHINE: mpif.h on 6 ranks, 2 per
machine (preloaded); `use mpi` on 4 of the 5 machines with AAPC_WAY=phases, where every call
must run a schedule of the library (linked with -Wl,--no-as-needed, as docs/fortran.md says);
`use mpi_f08` on 5 ranks, 1 or 2 per machine (linked plainly: the library defines f08 entries
the program calls, so the linker's --as-needed keeps it). docs/fortran.md gives the commands.

tests/fortran/ialltoall_check.F90 does the same for MPI_IALLTOALL(V) (and MPICH's persistent
MPI_ALLTOALL(V)_INIT) completed by every Fortran completion call with the program's own
point-to-point requests: one job per binding and MPI, AAPC_WAY=phases, so every call but a
communicator's first (its machines being gathered) must run the library's schedules; and, under
MPICH, a job with the library linked after libmpichfort, where they must go to MPICH.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FIG1 = ROOT / "topologies" / "paper-fig1.yaml"
SOURCE = ROOT / "tests" / "fortran" / "alltoall_check.F90"
CASES = 32  # the program's cases: 2 x (8 alltoall + 2 bottom + 4 alltoallv) + 2 errors
# + scatter and scatterv


@dataclass(frozen=True)
class Flavour:
    name: str  # mpich, openmpi: the suffix of Debian's mpicc.X, mpif90.X, mpiexec.X

    def tool(self, what: str) -> str:
        return f"/usr/bin/{what}.{self.name}"


@dataclass(frozen=True)
class Run:
    binding: str  # the preprocessor macro of alltoall_check.F90
    machines: list[str]
    how: str  # preloaded; linked; linked-no-as-needed
    env: dict[str, str]


RUNS = [
    Run("AAPC_MPIF_H", ["n0", "n0", "n1", "n1", "n3", "n3"], "preloaded", {}),
    Run("AAPC_USE_MPI", ["n1", "n2", "n3", "n4"], "linked-no-as-needed", {"AAPC_WAY": "phases"}),
    Run("AAPC_USE_MPI_F08", ["n0", "n0", "n2", "n4", "n4"], "linked", {}),
]


@dataclass(frozen=True)
class Built:
    mpi: Flavour
    lib: Path
    root: Path


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """paper-fig1's libaapc.so built with the Debian MPI's mpicc (`aapcgen build`)."""
    mpi = Flavour(request.param)
    root = tmp_path_factory.mktemp(f"fortran-{mpi.name}")
    lib = root / "libaapc.so"
    cmd = [str(BIN / "aapcgen"), "build", str(FIG1), "-o", str(lib), "--mpicc", mpi.tool("mpicc")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return Built(mpi, lib, root)


def compile_program(
    b: Built, run: Run, source: Path = SOURCE, defines: list[str] | None = None, after: bool = False
) -> Path:
    """source built for run's binding; linked with the library where run says so (after the
    MPI's own Fortran libraries where `after`, before its C library: the Fortran bindings'
    entries come first in the program's lookup, the library's C entry points before the
    MPI's)."""
    exe = b.root / f"{source.stem}-{run.binding}{'-after' if after else ''}"
    mods = b.root / f"mod-{run.binding}"  # each binding's module files apart
    mods.mkdir(exist_ok=True)
    flags = ["-O1", f"-D{run.binding}", *(defines or []), "-J", str(mods)]
    if run.binding == "AAPC_MPIF_H":  # no interfaces: a buffer is a scalar here, an array there
        flags.append("-fallow-argument-mismatch")
    link = [str(b.lib), f"-Wl,-rpath,{b.root}"] if run.how.startswith("linked") else []
    if run.how == "linked-no-as-needed" or after:
        link.insert(0, "-Wl,--no-as-needed")
    if after:  # the MPI's Fortran libraries first, the C library after it (as mpif90 names them)
        fortran = ("fort", "usempi")  # MPICH's libmpichfort; Open MPI's f08 and `use mpi` ones
        libs = [
            f
            for f in mpif90_libs(b)
            if f[:2] == "-L" or (f[:2] == "-l" and any(x in f for x in fortran))
        ]
        link[1:1] = libs
    cmd = [b.mpi.tool("mpif90"), *flags, str(source), *link, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300, capture_output=True)
    return exe


def mpif90_libs(b: Built) -> list[str]:
    """The compiler wrapper's link flags (mpif90 -show)."""
    out = subprocess.run([b.mpi.tool("mpif90"), "-show"], capture_output=True, text=True)
    return out.stdout.split()


def mpiexec(b: Built, exe: Path, run: Run, report: Path) -> subprocess.CompletedProcess[str]:
    """One MPMD group per rank with its AAPC_MACHINE; every run has a timeout."""
    env = {**os.environ, "AAPC_REPORT": str(report), **run.env}
    env.pop("LD_PRELOAD", None)
    if run.how == "preloaded":
        env["LD_PRELOAD"] = str(b.lib)
    cmd = [b.mpi.tool("mpiexec")]
    if b.mpi.name == "openmpi":
        cmd += ["--allow-run-as-root", "--oversubscribe"]
    for i, m in enumerate(run.machines):
        flag = (
            ["-x", f"AAPC_MACHINE={m}"] if b.mpi.name == "openmpi" else ["-env", "AAPC_MACHINE", m]
        )
        cmd += [*([":"] if i else []), "-n", "1", *flag, str(exe)]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hang: {' '.join(cmd)} ran past 180 s\n{e.stdout!r}\n{e.stderr!r}")


@dataclass(frozen=True)
class Row:
    world: bool  # a row of the MPI_COMM_WORLD block
    collective: str
    calls: int
    routine: str


def report_rows(text: str) -> list[Row]:
    """The rows of an AAPC_REPORT report (common/aapc_report.c print_report)."""
    rows, world = [], False
    for line in text.splitlines():
        if "communicator" in line and "world ranks" in line:
            world = "(MPI_COMM_WORLD)" in line
        m = re.match(r"^  (MPI_\w+) +(\d+) +\S+ +\S+  (.*)$", line)
        if m:
            rows.append(Row(world, m.group(1), int(m.group(2)), m.group(3)))
    return rows


def calls_of(rows: list[Row], collective: str, world: bool) -> int:
    return sum(r.calls for r in rows if r.collective == collective and r.world == world)


@pytest.mark.fortran
@pytest.mark.parametrize("run", RUNS, ids=[r.binding for r in RUNS])
def test_fortran_calls_are_served(built: Built, run: Run, tmp_path: Path) -> None:
    exe = compile_program(built, run)
    report = tmp_path / "report.txt"
    proc = mpiexec(built, exe, run, report)
    out = proc.stdout + proc.stderr
    m = re.search(r"^alltoall_check: (\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert proc.returncode == 0 and m and (m.group(1), m.group(2)) == (str(CASES), "0"), out[-4000:]
    made = re.search(
        r"^calls: MPI_Alltoall MPI_Alltoallv (\d+) (\d+) (\d+) (\d+)$", proc.stdout, re.M
    )
    assert made, proc.stdout
    a2a_world, a2a_half, a2av_world, a2av_half = map(int, made.groups())
    assert report.exists(), f"no report: MPI_FINALIZE did not reach the library\n{out[-4000:]}"
    rows = report_rows(report.read_text())
    # every call of the program went through the library, on the communicator it was made on
    # (both halves of the split: the calls of each, summed)
    assert calls_of(rows, "MPI_Alltoall", True) == a2a_world, rows
    assert calls_of(rows, "MPI_Alltoallv", True) == a2av_world, rows
    assert calls_of(rows, "MPI_Alltoall", False) == 2 * a2a_half, rows
    assert calls_of(rows, "MPI_Alltoallv", False) == 2 * a2av_half, rows
    served = [r for r in rows if "MPI library" not in r.routine and "error" not in r.routine]
    assert {r.collective for r in served if "Alltoall" in r.collective} == {
        "MPI_Alltoall",
        "MPI_Alltoallv",
    }, rows
    # the program's MPI_REDUCE (2 calls) and MPI_ALLREDUCE reach the library's entries too
    # (Open MPI: aapc_fortran_coll.c), which hand these short vectors to the MPI library with
    # their reason: below the size where ours gains (with one rank per machine too: the chain
    # over the tree gains there from the same size)
    assert calls_of(rows, "MPI_Reduce", True) == 2, rows
    assert calls_of(rows, "MPI_Allreduce", True) >= 1, rows
    several = len(set(run.machines)) < len(run.machines)
    why = "library: below AAPC_COLL_MIN_REDUCE"
    assert {r.routine for r in rows if r.collective == "MPI_Reduce"} == {why}, rows
    # MPI_SCATTER (8 KB per rank) and MPI_SCATTERV: ours where machines run several ranks
    ours = "leader-based, one message per machine"
    for c in ("MPI_Scatter", "MPI_Scatterv"):
        want = ours if several else "library: one rank per machine"
        got = {r.routine.split(" (")[0] for r in rows if r.collective == c and r.calls}
        assert got == {want}, rows  # (Scatterv's empty blocks: a row "(no data ...)")
    if run.env.get("AAPC_WAY") == "phases":  # forced: no all-to-all handed to the library
        assert all(r in served or "error" in r.routine for r in rows if r.calls), rows


@pytest.mark.mpi
@pytest.mark.slow
def test_abi_build_says_fortran_is_not_served(tmp_path: Path) -> None:
    """A library built for the MPI ABI (MPICH's mpicc_abi) cannot serve Fortran calls: with a
    Fortran binding in the process it says so once per job at start-up, not without one, not
    under AAPC_QUIET; C calls stay served."""
    lib = tmp_path / "libaapc.so"
    mpicc = str(BIN / "mpicc_abi")
    cmd = [str(BIN / "aapcgen"), "build", str(FIG1), "-o", str(lib), "--mpicc", mpicc]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    notice = "built for the MPI ABI (libmpi_abi)"
    source = ROOT / "tests" / "fortran" / "abi_notice.c"
    for defines, env, expected in [
        ([], {}, 1),
        (["-DNO_FORTRAN"], {}, 0),
        ([], {"AAPC_QUIET": "1"}, 0),
    ]:
        exe = tmp_path / f"abi_notice{''.join(defines)}"
        compile_cmd = [mpicc, "-std=c11", "-Wall", "-Werror", "-rdynamic", *defines, str(source)]
        subprocess.run([*compile_cmd, "-o", str(exe)], check=True, timeout=300)
        run_env = {**os.environ, "LD_PRELOAD": str(lib), "AAPC_REPORT": "1", **env}
        proc = subprocess.run(
            [str(BIN / "mpiexec"), "-n", "3", str(exe)],
            capture_output=True,
            text=True,
            timeout=120,
            env=run_env,
        )
        assert proc.returncode == 0 and "abi_notice: ok" in proc.stdout, proc.stderr
        assert proc.stderr.count(notice) == expected, (defines, env, proc.stderr)
        assert re.search(r"^  MPI_Alltoall +1 ", proc.stderr, re.M), proc.stderr  # C: served


NBC_SOURCE = ROOT / "tests" / "fortran" / "ialltoall_check.F90"
NBC_RUNS = [  # AAPC_WAY=phases: every call the library can serve runs its schedule
    Run("AAPC_MPIF_H", ["n0", "n0", "n1", "n1"], "preloaded", {"AAPC_WAY": "phases"}),
    Run(
        "AAPC_USE_MPI",
        ["n1", "n1", "n3", "n4"],
        "linked-no-as-needed",
        {"AAPC_WAY": "phases"},
    ),
    Run("AAPC_USE_MPI_F08", ["n0", "n2", "n2", "n4"], "linked", {"AAPC_WAY": "phases"}),
]
NBC_CALLS = (
    "MPI_Ialltoall", "MPI_Ialltoallv", "MPI_Alltoall_init", "MPI_Alltoallv_init", "MPI_Ialltoallw"
)  # fmt: skip
NBC_CHECKS = {True: 593, False: 123}  # rank 0's checks, with the persistent calls or without


def nbc_flags(b: Built, binding: str, persistent: bool) -> list[str]:
    """MPICH 4.0.2 has MPI-4's persistent collectives (Open MPI 4.1 has not); its mpif.h and
    `use mpi` MPI_WAITANY turn MPI_UNDEFINED into MPI_UNDEFINED + 1 (its own wrapper)."""
    if b.mpi.name != "mpich":
        return []
    extra = [] if binding == "AAPC_USE_MPI_F08" else ["-DAAPC_MPICH_WAITANY_PLUS_ONE"]
    return (["-DAAPC_HAVE_INIT"] if persistent else []) + extra


def nbc_rows(text: str) -> list[tuple[str, int, str]]:
    """(collective, calls, routine) of the report's non-blocking and persistent rows."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^  (MPI_\w+) +(\d+) +\S+ +\S+  (.*)$", line)
        if m and m.group(1) in NBC_CALLS:
            rows.append((m.group(1), int(m.group(2)), m.group(3)))
    return rows


def run_nbc(b: Built, run: Run, tmp: Path, link_after: bool = False) -> list:
    """ialltoall_check.F90 built for run (the library linked after the MPI's own Fortran
    libraries where link_after; the persistent calls where the MPI has them, but not then)
    and run under mpiexec: every check passed; the report's non-blocking rows, whose counts
    are the program's."""
    persistent = b.mpi.name == "mpich" and not link_after
    exe = compile_program(b, run, NBC_SOURCE, nbc_flags(b, run.binding, persistent), link_after)
    report = tmp / "report.txt"
    proc = mpiexec(b, exe, run, report)
    out = proc.stdout + proc.stderr
    m = re.search(r"^ialltoall_check: (\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert proc.returncode == 0 and m and m.group(2) == "0", out[-4000:]
    assert int(m.group(1)) == NBC_CHECKS[persistent], out[-4000:]  # rank 0's: every one ran
    made = re.search(
        r"^calls: " + " ".join(NBC_CALLS) + r" (\d+) (\d+) (\d+) (\d+) (\d+)$", proc.stdout, re.M
    )
    assert made and report.exists(), out[-4000:]
    rows = nbc_rows(report.read_text())
    for coll, n in zip(NBC_CALLS, map(int, made.groups()), strict=True):
        assert sum(c for name, c, _ in rows if name == coll) == n, (coll, n, rows)
    return rows


@pytest.mark.fortran
@pytest.mark.parametrize("run", NBC_RUNS, ids=[r.binding for r in NBC_RUNS])
def test_fortran_nonblocking_calls_are_served(built: Built, run: Run, tmp_path: Path) -> None:
    """MPI_IALLTOALL(V), MPI_IALLTOALLW (and MPICH's MPI_ALLTOALL(V)_INIT, restarted 100
    times and freed) from each binding run the library's schedules, completed with the program's ISEND/IRECV
    by MPI_WAITALL, MPI_TESTSOME, MPI_WAITANY, MPI_TEST, MPI_REQUEST_GET_STATUS, MPI_TESTALL,
    MPI_TESTANY, MPI_WAITSOME, MPI_START(ALL), MPI_REQUEST_FREE and MPI_CANCEL (an error):
    Open MPI's bindings call PMPI_ for all of them and MPICH's mpi_f08 for the completion
    calls, so the library's Fortran entries must serve them, or the data would not move. A
    blocking MPI_ALLTOALL first gathers the communicator's machines (and, under Open MPI, makes
    the library's duplicate of it, which the non-blocking calls cannot), so none is the MPI
    library's."""
    rows = run_nbc(built, run, tmp_path)
    assert {name for name, c, _ in rows if c} >= {
        "MPI_Ialltoall", "MPI_Ialltoallv", "MPI_Ialltoallw"
    }, rows  # fmt: skip
    if built.mpi.name == "mpich":
        assert {name for name, c, _ in rows if c} == set(NBC_CALLS), rows
    assert not [(n, c, why) for n, c, why in rows if "MPI library" in why], rows


@pytest.mark.fortran
def test_fortran_nonblocking_linked_after_the_bindings_goes_to_the_library(
    built: Built, tmp_path: Path
) -> None:
    """Linked after the MPI's `use mpi_f08` library (MPICH's libmpichfort: every binding; Open
    MPI's libmpi_usempif08, before its mpif.h library), the library's Fortran completion
    entries are not the ones the program uses: an mpi_f08 MPI_TEST would call PMPI_Test and a
    request of ours would never complete, so the non-blocking calls go to the MPI library, with
    the reason in the report, and complete. MPICH: mpif.h and no persistent calls, as MPICH
    4.0.2's own mpi_f08 MPI_WAITANY and MPI_TESTSOME return 0-based indices and its MPI_TESTALL
    fails with MPI_ERR_PENDING on an incomplete persistent collective."""
    binding = "AAPC_MPIF_H" if built.mpi.name == "mpich" else "AAPC_USE_MPI_F08"
    run = Run(binding, ["n0", "n0", "n1", "n2"], "linked", {"AAPC_WAY": "phases"})
    rows = run_nbc(built, run, tmp_path, link_after=True)
    assert rows and all("Fortran bindings" in why for _, c, why in rows if c), rows


# MPICH's own Fortran collective tests (test/mpi/f77/coll and f08/coll, vendored in
# tests/mpich/): the all-to-alls in and out of place, blocking and not, with ours forced
MPICH_FORTRAN = ROOT / "tests" / "mpich"
MPICH_PROGRAMS = [
    "f77/nonblocking_inpf.f", "f77/alltoallvf.f", "f77/alltoallwf.f", "f77/inplacef.f",
    "f77/nonblockingf.f", "f08/nonblocking_inpf08.f90", "f08/alltoallvf08.f90",
    "f08/alltoallwf08.f90",
]  # fmt: skip


@pytest.mark.fortran
def test_mpich_fortran_collective_tests_pass_preloaded(built: Built, tmp_path: Path) -> None:
    """Each program with MPICH's mtest_f77.f or mtest_f08.f90, built with the MPI's mpif90,
    run on 4 ranks (two machines of two) with the library preloaded and its own ways forced,
    must print `No Errors`. nonblocking_inpf's MPI_IALLTOALLW with MPI_IN_PLACE leaves its send
    datatypes unset: the library once read their sizes for its report and MPICH aborted the job
    (an invalid datatype). alltoallwf's MPI_ALLTOALLW must be the library's schedules under
    both MPIs (Open MPI's bindings call PMPI_Alltoallw: aapc_fortran_alltoall.c defines its
    Fortran names)."""
    mpif90 = built.mpi.tool("mpif90")
    util = {".f": "mtest_f77.f", ".f90": "mtest_f08.f90"}
    objects = {}
    for suffix, name in util.items():
        obj = tmp_path / f"{name}.o"
        cmd = [mpif90, "-w", "-J", str(tmp_path), "-c", str(MPICH_FORTRAN / "util" / name)]
        subprocess.run([*cmd, "-o", str(obj)], check=True, timeout=300, capture_output=True)
        objects[suffix] = obj
    settings = {
        "AAPC_WAY": "phases",
        **{f"AAPC_{c}": "hier" for c in ("ALLREDUCE", "REDUCE", "SCATTER", "SCATTERV")},
    }
    run = Run("mpich-suite", ["n0", "n0", "n1", "n1"], "preloaded", settings)
    failed = []
    for program in MPICH_PROGRAMS:
        src = MPICH_FORTRAN / program
        exe = tmp_path / src.stem
        cmd = [mpif90, "-w", "-fallow-argument-mismatch", "-I", str(tmp_path), str(src)]
        subprocess.run([*cmd, str(objects[src.suffix]), "-o", str(exe)], check=True,
                       timeout=300, capture_output=True)  # fmt: skip
        proc = mpiexec(built, exe, run, tmp_path / f"report-{src.stem}.txt")
        if proc.returncode != 0 or "No Errors" not in proc.stdout:
            failed.append(f"{program}: rc {proc.returncode}\n{proc.stdout[-1500:]}"
                          f"{proc.stderr[-1500:]}")  # fmt: skip
    assert not failed, "\n".join(failed)
    for stem in ("alltoallwf", "alltoallwf08"):
        report = (tmp_path / f"report-{stem}.txt").read_text()
        rows = re.findall(r"^  MPI_Alltoallw +(\d+) .*  (\S.*)$", report, re.M)
        assert rows and all("run-time" in what for _, what in rows), report[-2000:]
