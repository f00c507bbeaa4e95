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
CASES = 30  # the program's cases: 2 x (8 alltoall + 2 bottom + 4 alltoallv) + 2 errors


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


def compile_program(b: Built, run: Run, source: Path = SOURCE) -> Path:
    exe = b.root / f"{source.stem}-{run.binding}"
    mods = b.root / f"mod-{run.binding}"  # each binding's module files apart
    mods.mkdir(exist_ok=True)
    flags = ["-O1", f"-D{run.binding}", "-J", str(mods)]
    if run.binding == "AAPC_MPIF_H":  # no interfaces: a buffer is a scalar here, an array there
        flags.append("-fallow-argument-mismatch")
    link = [str(b.lib), f"-Wl,-rpath,{b.root}"] if run.how.startswith("linked") else []
    if run.how == "linked-no-as-needed":
        link.insert(0, "-Wl,--no-as-needed")
    cmd = [b.mpi.tool("mpif90"), *flags, str(source), *link, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300, capture_output=True)
    return exe


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
        m = re.match(r"^  (MPI_Alltoallv?) +(\d+) +\S+ +\S+  (.*)$", line)
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
    assert {r.collective for r in served} == {"MPI_Alltoall", "MPI_Alltoallv"}, rows
    if run.env.get("AAPC_WAY") == "phases":  # forced: no call handed to the library
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


@pytest.mark.fortran
@pytest.mark.parametrize("binding", ["AAPC_MPIF_H", "AAPC_USE_MPI_F08"])
def test_fortran_nonblocking_calls_complete(built: Built, binding: str, tmp_path: Path) -> None:
    """MPI_IALLTOALL(V) + MPI_WAIT(ALL) from Fortran move the data, phases forced: MPICH's
    mpi_f08 MPI_WAIT calls PMPI_Wait directly, so a request of ours made there would never
    run; the library hands calls from the Fortran bindings to the MPI library and says why."""
    run = Run(binding, ["n0", "n1", "n2", "n3"], "preloaded", {"AAPC_WAY": "phases"})
    exe = compile_program(built, run, NBC_SOURCE)
    report = tmp_path / "report.txt"
    proc = mpiexec(built, exe, run, report)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert re.search(r"^ialltoall_check: 100 passed, 0 failed$", proc.stdout, re.M), out[-4000:]
    assert report.exists(), out[-4000:]
    text = report.read_text()
    if built.mpi.name == "mpich":  # MPICH's bindings call the C MPI_Ialltoall(v): ours, declined
        for coll in ("MPI_Ialltoall", "MPI_Ialltoallv"):
            assert re.search(rf"^  {coll} +50 .*Fortran bindings", text, re.M), text
