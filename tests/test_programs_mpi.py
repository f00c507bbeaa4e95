"""Valid MPI programs the library runs run the same with the routine relinked and preloaded.

Programs a careful user runs with ranks placed on machines (AAPC_MACHINE), each one a class a
routine used to get wrong (tests/c/): an MPI-4 sessions program in the form of OSU's
``osu_alltoall -c -I`` (no MPI_COMM_WORLD or MPI_COMM_SELF), MPI_BOTTOM with absolute-address
datatypes and two ranks per machine, MPI_THREAD_MULTIPLE with 2 to 6 threads on communicators of
their own (with the key-creation delay of common/aapc_lock.h), an in-place exchange while one
rank's address space is limited (``ulimit -v``), error codes read after later errors, a call
before MPI_Init, and a datatype larger than INT_MAX bytes. Each runs plain (the MPI library
alone: it must pass, or it is not a valid program), relinked (-DAAPC_INTERCEPT; MPICH: under
ASan and UBSan) and preloaded (`aapcgen build`'s libaapc.so), with MPICH and Open MPI. Every MPI
run has a timeout: a hang fails. docs/generate.md, "Semantics", describes what these hold the
routine to.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_misuse import (
    CFLAGS,
    FLAVOURS,
    MPICH,
    OMPI,
    Build,
    C,
    Mpi,
    fig1_build,
    mpirun,
    sanitizer_clean,
)

pytestmark = pytest.mark.mpi

MACHINES = [f"n{i}" for i in range(5)]  # paper-fig1's machines


@pytest.fixture(scope="module", params=FLAVOURS)
def fig1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Build:
    return fig1_build(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def fig1_mpich(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """MPICH only: the address-space margins are measured for MPICH's in-place algorithm."""
    return fig1_build(MPICH, tmp_path_factory)


def ways(
    build: Build, program: str, sanitize: bool = True
) -> list[tuple[str, Path, dict[str, str]]]:
    """The program plain, relinked (MPICH: under ASan and UBSan unless ``sanitize`` is off),
    and plain with the library preloaded."""
    return [
        ("plain", build.plain(program), {}),
        ("relinked", build.relinked(program) if sanitize else unsanitized(build, program), {}),
        ("preloaded", build.plain(program), {"LD_PRELOAD": str(build.lib)}),
    ]


def unsanitized(build: Build, program: str) -> Path:
    """The program relinked with the generated routine, without sanitizers (whose allocator
    maps memory of its own: a limit on the address space then hits the library first)."""
    exe = build.root / f"{program}-relinked-plain"
    if not exe.exists():
        cmd = [str(build.mpi.mpicc), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{build.gen}"]
        sources = [str(C / f"{program}.c"), *map(str, sorted(build.gen.glob("*.c")))]
        subprocess.run([*cmd, *sources, "-o", str(exe)], check=True, timeout=600)
    return exe


def passed(proc, program: str, how: str) -> int:
    """The count of passed tests of the program's closing line; fails on any failure."""
    out = proc.stdout + proc.stderr
    m = re.search(rf"^{program}: (\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert proc.returncode == 0 and m and m.group(2) == "0", (how, out[-4000:])
    sanitizer_clean(proc)
    return int(m.group(1))


def test_sessions_program(fig1: Build) -> None:
    """No MPI_Init: the routine must not touch MPI_COMM_SELF or MPI_COMM_WORLD (it used to
    abort every rank in MPI_Comm_dup(MPI_COMM_SELF)); with ranks on machines the run-time
    routine schedules the session's communicators, without them the precomputed one falls
    back (no MPI_COMM_WORLD to place ranks by) and says so."""
    counts = set()
    for how, exe, env in ways(fig1, "sessions"):
        for machines in (None, MACHINES):
            proc = mpirun(fig1.mpi, 5, exe, env=env, machines=machines)
            counts.add(passed(proc, "sessions", f"{how} machines={machines}"))
            if how != "plain" and machines is None:
                assert "no MPI_COMM_WORLD (MPI sessions)" in proc.stderr, (how, proc.stderr)
    assert counts == {43}, counts


def test_mpi_bottom_two_ranks_per_machine(fig1: Build) -> None:
    """Absolute-address datatypes at MPI_BOTTOM, 2 ranks on each of 3 machines: small blocks
    take the leader-based path (which packs the user's data and used to pass MPI_Pack a null
    buffer), large ones the per-rank path, then small again."""
    machines = ["n0", "n0", "n1", "n1", "n3", "n3"]
    for how, exe, env in ways(fig1, "bottom"):
        proc = mpirun(fig1.mpi, 6, exe, env={"AAPC_QUIET": "1", **env}, machines=machines)
        assert passed(proc, "bottom", how) == 8


@pytest.mark.parametrize(
    "mpi, threads",
    [
        pytest.param(MPICH, 2, id="mpich-2"),
        pytest.param(MPICH, 6, id="mpich-6"),
        pytest.param(OMPI, 2, id="openmpi-2", marks=pytest.mark.openmpi),
    ],
)
def test_thread_multiple(mpi: Mpi, threads: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Threads call MPI_Alltoall and MPI_Alltoallv at once on their own communicators, every
    lazily created key delayed 2 ms (AAPC_TEST_DELAY_KEYS_US) so that an unlocked creation
    races: the run-time routines (ranks on machines), the precomputed routine with level-1
    MPI_Alltoallv (which kept one schedule per process and aborted with "Invalid count").
    Open MPI with 2 threads (its progress engine is slow with more threads than cores)."""
    fig1 = fig1_build(mpi, tmp_path_factory)
    env = {"AAPC_TEST_DELAY_KEYS_US": "2000", "AAPC_QUIET": "1"}
    routines = [
        ({}, MACHINES),
        ({"AAPC_VARIANT": "receiver-all", "AAPC_ALLTOALLV": "level1-receiver-all"}, None),
    ]
    for how, exe, env_how in ways(fig1, "threads"):
        for extra, machines in routines if how != "plain" else routines[:1]:
            proc = mpirun(
                fig1.mpi, 5, exe, str(threads), "3", env={**env, **env_how, **extra},
                machines=machines, timeout=400,
            )  # fmt: skip
            assert passed(proc, "threads", f"{how} {extra}") == threads * 3


def test_in_place_with_one_rank_short_of_memory(fig1_mpich: Build) -> None:
    """256 MiB in place on 5 ranks while rank 0 may map only 128 MiB more: the library's
    in-place exchange (one block of temporary) completes; the routine, whose copy of the
    whole buffer rank 0 cannot have, hands the call to it on every rank and says why (it used
    to return an error on rank 0 and leave the others hanging)."""
    fig1 = fig1_mpich
    args = ("--limit-rank0", "128")
    for how, exe, env in ways(fig1, "inplace", sanitize=False):
        for machines in (None, MACHINES):
            proc = mpirun(fig1.mpi, 5, exe, *args, env=env, machines=machines, timeout=300)
            assert passed(proc, "inplace", how) == 2
            if how != "plain":
                assert "rank 0 cannot allocate the copy of its receive buffer" in proc.stderr


def test_failure_on_one_rank_after_the_agreement_aborts_the_job(fig1_mpich: Build) -> None:
    """Without the agreement (AAPC_AGREE=0) rank 0 finds out alone that it cannot copy its
    buffer: under MPI_ERRORS_RETURN its error goes through the handler and the job is aborted
    with the reason, since the other ranks would wait for it forever."""
    fig1 = fig1_mpich
    exe = unsanitized(fig1, "inplace")
    env = {"AAPC_AGREE": "0", "AAPC_VARIANT": "receiver-all"}
    proc = mpirun(fig1.mpi, 5, exe, "--limit-rank0", "128", env=env, timeout=300)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "failed alone in a call the other ranks have begun" in proc.stderr, proc.stderr[-3000:]
    assert "inplace: 2 passed" not in proc.stdout


def test_error_codes_keep_their_strings(fig1: Build) -> None:
    """Each misuse gets a code whose string stays what it said after later errors (one code
    per class, its string replaced, made earlier codes lie)."""
    for how, exe, env in ways(fig1, "errcodes"):
        proc = mpirun(fig1.mpi, 5, exe, env={"AAPC_QUIET": "1", **env})
        assert passed(proc, "errcodes", how) == 8
        if how != "plain":
            assert "code 0: aapcgen MPI_Alltoall: sendcount -1 is negative" in proc.stdout
            assert "code 1: aapcgen MPI_Alltoall: recvcount -1 is negative" in proc.stdout


def test_call_before_init_is_reported_by_the_library(fig1: Build) -> None:
    """MPI_Alltoall on MPI_COMM_WORLD before MPI_Init: the library's own message names
    MPI_Alltoall, not one of the routine's internal calls (it used to name
    internal_Comm_test_inter)."""
    said = (
        "internal_Alltoall) before initializing"
        if fig1.mpi is MPICH
        else "MPI_Alltoall() function was called before MPI_INIT"
    )
    for how, exe, env in ways(fig1, "errcodes"):
        proc = mpirun(fig1.mpi, 2, exe, "--before-init", env=env, timeout=60)
        text = proc.stdout + proc.stderr
        assert said in text and "Comm_test_inter" not in text, (how, text[-2000:])


@pytest.mark.slow
def test_datatype_larger_than_int_max(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A 2049 MiB datatype (MPI_Type_size: MPI_UNDEFINED) on 2 ranks on 2 machines, the
    run-time routine: MPI_Alltoallv moves every byte (it used to return success and move
    nothing). MPI_Alltoall with one such element per block (it used to fail the call) is the
    path MPI_Alltoall_c beyond an int count takes, and is checked there
    (tests/test_large_mpi.py test_alltoall_c_blocks_beyond_int_max): `bigtype 2049 a` runs it
    here by hand. 4 GiB of memory at the peak; MPICH only, not sanitized (the shadow memory
    would double it): the library of the shared paper-fig1 build preloaded."""
    build = fig1_build(MPICH, tmp_path_factory)
    proc = mpirun(
        MPICH, 2, build.plain("bigtype"), "2049", "v",
        env={"AAPC_QUIET": "1", "LD_PRELOAD": str(build.lib)}, machines=["n0", "n1"],
        timeout=1200,
    )  # fmt: skip
    assert passed(proc, "bigtype", "preloaded") == 1
    assert "MPI_Type_size: -32766" in proc.stdout  # the type really is beyond an int
