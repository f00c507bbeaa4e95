"""MPI-4's large-count MPI_Alltoall_c and MPI_Alltoallv_c, and MPI_Alltoallw, through the routine.

tests/c/large_counts.c calls each entry point byte for byte against the library's own (PMPI)
on MPI_COMM_WORLD and on the even ranks, 4 ranks placed 2 per machine (AAPC_MACHINE): counts
that fit in an int (served by the routine's MPI_Alltoall / MPI_Alltoallv), displacements beyond
INT_MAX (MPI_Alltoallv_c: the library, with the reason), MPI_IN_PLACE, derived datatypes,
Alltoallw whose types reduce (one datatype; dense types of different sizes) and whose types do
not (a type per peer; displacements no multiple of the extent: packed, then served),
and errors on every rank. Run plain (the library alone: the program must pass), relinked
(-DAAPC_INTERCEPT; MPICH: under ASan and UBSan) and preloaded (`aapcgen build`'s libaapc.so),
with MPICH and Open MPI (whose mpi.h, MPI 3.1, has no _c functions: Alltoallw only). The report
(AAPC_REPORT) must show every served call on its entry point's row and every fallback with its
cause; the job prints each cause once. A slow test moves blocks of 2049 MiB (counts beyond
INT_MAX) through MPI_Alltoall_c. docs/generate.md, "Other entry points", says what is served.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_misuse import FLAVOURS, MPICH, Build, fig1_build, mpirun
from test_programs_mpi import passed
from test_site import report_rows

pytestmark = pytest.mark.mpi

MACHINES = ["n0", "n0", "n1", "n1"]  # 2 ranks on each of 2 machines of paper-fig1
# the run-time MPI_Alltoallv on any communicator (the relinked build's default is a level-3
# schedule for one rank on each of the 5 machines)
LEVEL1 = {"AAPC_ALLTOALLV": "level1-receiver-all"}
WORLD = "communicator of 4 ranks (MPI_COMM_WORLD), world ranks 0-3"
EVEN = "communicator of 2 ranks, world ranks 0,2"
NO_DIVISOR = (
    "rank 0's recvcounts and rdispls are beyond an int with no common divisor that brings them "
    "within one"
)
SPREAD = "rank 0 passes counts beyond an int or blocks spread over more than 2 GiB"
NB_MARK = (
    "rank 0's arguments are not int counts of one dense datatype (MPI_Ialltoallv_c, MPI_Ialltoallw)"
)
NB_W = "the large-count non-blocking and persistent MPI_Alltoallw are the MPI library's"


@pytest.fixture(scope="module", params=FLAVOURS)
def fig1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Build:
    return fig1_build(request.param, tmp_path_factory)


def served(rows: dict, heading: str, collective: str) -> int:
    """Calls of ``collective`` on the communicator that ran the run-time schedules."""
    return sum(
        v[0] for k, v in rows.items() if k[:2] == (heading, collective) and "(run-time" in k[2]
    )


def wc_bytes(ranks: int) -> int:
    """The bytes of large_counts.c's MPI_Alltoallw_c cases: (r + j) % 3 + 1 ints from r to j."""
    return sum(4 * ((r + j) % 3 + 1) for r in range(ranks) for j in range(ranks))


def test_large_count_entries_and_alltoallw(fig1: Build, tmp_path: Path) -> None:
    """Every case passes plain, relinked and preloaded; with the routine, the report shows the
    calls MPI_Alltoall_c, MPI_Alltoallv_c and MPI_Alltoallw made on their own rows, served by
    the run-time schedules (the phases forced: the choice by size is tests/test_select*), and
    the fallbacks with their causes, each said once by the job."""
    large = fig1.mpi is MPICH  # Open MPI 5's mpi.h declares no MPI_Alltoall_c
    ways = [  # the library alone hangs on one rank's error: only the valid cases plain
        ("plain", fig1.plain("large_counts"), {}, ["--valid"]),
        ("relinked", fig1.relinked("large_counts"), {}, []),
        ("preloaded", fig1.plain("large_counts"), {"LD_PRELOAD": str(fig1.lib)}, []),
    ]
    for how, exe, env, args in ways:
        report = tmp_path / f"report-{how}.txt"
        env = {**env, "AAPC_REPORT": str(report), "AAPC_WAY": "phases", **LEVEL1}
        proc = mpirun(fig1.mpi, 4, exe, *args, env=env, machines=MACHINES, timeout=240)
        # per communicator: Alltoallw 7 valid + 1 error, its non-blocking and persistent forms
        # 4 (+ 1 _c); Alltoall_c 6 (3 ways of a-int) + 3 errors; Alltoallv_c 10 (3 ways of
        # v-int, v-inplace and v-resized-bottom) + 1 error (+ 6 on WORLD: 3 ways of v-displ-*);
        # Alltoallw_c 3
        valid = 7 + 4 + (1 + 6 + 10 + 3 if large else 0)
        per_comm = valid + (0 if args else 1 + (4 if large else 0))
        assert passed(proc, "large_counts", how) == 2 * per_comm + 6 * large
        if how == "plain":
            continue
        rows = report_rows(report.read_text())
        text = report.read_text()
        for heading, ranks in ((WORLD, 4), (EVEN, 2)):
            # the two whose types do not reduce (a type per peer; displacements no multiple of
            # the extent) are packed (rule P): served too
            assert served(rows, heading, "MPI_Alltoallw") == 6, (how, text)
            fallbacks = [
                k for k in rows if k[:2] == (heading, "MPI_Alltoallw") and "library" in k[2]
            ]
            assert not fallbacks, (how, text)
            # the non-blocking and persistent Alltoallw: nb-w-int and nb-w-mixed served (the
            # latter in the linear exchange); the large-count one the library's, with the reason
            for coll in ("MPI_Ialltoallw", "MPI_Alltoallw_init"):
                assert served(rows, heading, coll) == 2, (how, coll, text)
            if large:
                row = (heading, "MPI_Alltoallw_init_c", f"native (MPI library): {NB_W}")
                assert rows[row] == (1, ranks * ranks * 32), (how, text)
            if large:
                # a-int, a-vector, a-inplace: 300 ints, 5 vectors of 8 ints, 64 ints per block
                bytes_c = ranks * ranks * (300 * 4 + 5 * 32 + 64 * 4)
                # small blocks: the phases carry the argument agreement (aapc_alltoall_carried.c)
                carried = (heading, "MPI_Alltoall_c", "auto (run-time, agreement carried)")
                assert rows[carried] == (3, bytes_c), text
                # v-int, v-vector, v-inplace, v-resized-bottom (+ v-displ-beyond-int on WORLD)
                assert served(rows, heading, "MPI_Alltoallv_c") == 3 + ranks // 2, (how, text)
                assert served(rows, heading, "MPI_Alltoallw_c") == 2, (how, text)
                row = (heading, "MPI_Alltoallw_c", f"native (MPI library): {SPREAD}")
                assert rows[row] == (1, wc_bytes(ranks)), (how, text)
                # non-blocking and persistent: a-int; v-int, v-inplace, v-resized-bottom (+
                # v-displ-beyond-int and v-displ-no-divisor on WORLD: one rank's arguments not in
                # int, every rank the linear exchange)
                for coll, calls in (
                    ("MPI_Ialltoall_c", 1),
                    ("MPI_Alltoall_init_c", 1),
                    ("MPI_Ialltoallv_c", ranks + 1),
                    ("MPI_Alltoallv_init_c", ranks + 1),
                ):
                    assert served(rows, heading, coll) == calls, (how, coll, text)
        if large:
            row = (WORLD, "MPI_Alltoallv_c", f"native (MPI library): {NO_DIVISOR}")
            assert rows[row] == (1, 4 * 4 * 100), text
        said = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
        causes = [NB_MARK]
        causes += [NB_W, NO_DIVISOR, SPREAD] if large else []
        for cause in causes:
            assert sum(cause in ln for ln in said) == 1, (how, cause, said)
        assert len(said) == len(causes), (how, said)


@pytest.mark.slow
def test_alltoall_c_blocks_beyond_int_max(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """MPI_Alltoall_c with 2049 MiB blocks on 2 ranks on 2 machines: counts beyond INT_MAX on
    the receive side, moved by the run-time phases as one element of a contiguous type of the
    count, every byte checked; the same through MPI_Alltoallv_c (restated in int: served). About
    8 GiB at the peak; MPICH only (the _c functions), the library preloaded (not sanitized: the
    shadow memory would double it)."""
    build = fig1_build(MPICH, tmp_path_factory)
    exe = build.plain("large_counts")
    report = tmp_path / "report.txt"
    env = {"AAPC_REPORT": str(report), "AAPC_WAY": "phases", "LD_PRELOAD": str(build.lib)}
    proc = mpirun(MPICH, 2, exe, "--big", env=env, machines=["n0", "n1"], timeout=1200)
    assert passed(proc, "large_counts", "big") == 2
    rows = report_rows(report.read_text())
    world = "communicator of 2 ranks (MPI_COMM_WORLD), world ranks 0-1"
    block = 2049 * 2**20
    assert rows[(world, "MPI_Alltoall_c", "auto (run-time)")] == (1, 2 * 2 * block), rows
    # the same blocks through MPI_Alltoallv_c: receive counts beyond INT_MAX, restated (g = 2)
    assert served(rows, world, "MPI_Alltoallv_c") == 1, rows


def test_alltoallw_of_subarray_transposes_is_packed_and_served(fig1: Build, tmp_path: Path) -> None:
    """tests/c/alltoallw_subarray.c: the transposes of distributed FFTs (a subarray datatype per
    peer on both sides; contiguous copies to some peers; a resized subarray), byte for byte
    against PMPI_Alltoallw, on WORLD and on the halves of a split, relinked (MPICH: ASan and
    UBSan) and preloaded: every call served by the run-time schedules, none by the library."""
    for how, exe, env in (
        ("relinked", fig1.relinked("alltoallw_subarray"), {}),
        ("preloaded", fig1.plain("alltoallw_subarray"), {"LD_PRELOAD": str(fig1.lib)}),
    ):
        report = tmp_path / f"report-{how}.txt"
        env = {**env, "AAPC_REPORT": str(report), "AAPC_WAY": "phases", **LEVEL1}
        proc = mpirun(fig1.mpi, 4, exe, env=env, machines=MACHINES, timeout=240)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert "alltoallw_subarray: 184 checks, 0 failed" in proc.stdout, proc.stdout
        rows = report_rows(report.read_text())
        text = report.read_text()
        assert served(rows, WORLD, "MPI_Alltoallw") == 15, (how, text)
        assert not [k for k in rows if k[1] == "MPI_Alltoallw" and "library" in k[2]], (how, text)
        assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")], proc.stderr


def unions_keys(rows: dict) -> set:
    """The report rows of calls that ran the siblings' union."""
    return {k for k in rows if "siblings' union" in k[2]}


def test_process_grid_transposes_run_the_siblings_union(fig1: Build, tmp_path: Path) -> None:
    """Under AAPC_SIBLINGS=union, MPI_Cart_sub records a process grid's rows and columns as
    siblings (as MPI_Comm_split does): their MPI_Alltoallw transposes of even shapes (one block
    size on every rank of every sibling) run the union of the siblings' all-to-alls, on every
    grid communicator, the uneven ones each sibling's own MPI_Alltoallv; all byte for byte
    against PMPI_Alltoallw, relinked (MPICH: ASan and UBSan) and preloaded. Without the setting
    no union runs."""
    for how, union in (("relinked", True), ("preloaded", True), ("preloaded", False)):
        report = tmp_path / f"report-{how}-{union}.txt"
        env = {"AAPC_REPORT": str(report)} | ({"AAPC_SIBLINGS": "union"} if union else {})
        exe = fig1.relinked("alltoallw_subarray")
        if how == "preloaded":
            env, exe = env | {"LD_PRELOAD": str(fig1.lib)}, fig1.plain("alltoallw_subarray")
        proc = mpirun(fig1.mpi, 4, exe, env=env, machines=MACHINES, timeout=240)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert "alltoallw_subarray: 184 checks, 0 failed" in proc.stdout, proc.stdout
        rows = report_rows(report.read_text())
        text = report.read_text()
        unions = {k[0]: v[0] for k, v in rows.items() if k in unions_keys(rows)}
        if not union:
            assert not unions, text
            continue
        # on the 2-rank communicators (the report groups those with the same rows): the grid's
        # rows (world ranks 0-1 and 2-3, inside one machine each) and columns (0,2 and 1,3:
        # across the two) 3 even transposes each (3 modes) and 3 uneven; the halves of the
        # split (recorded as well; ranks in reverse) 6 even (2 shapes) and 9 uneven; then 2
        # transposes per grid communicator whose siblings take different paths (no union)
        pairs = {k: v[0] for k, v in rows.items() if "communicators of 2 ranks" in k[0]}
        assert sum(v for k, v in pairs.items() if k in unions_keys(rows)) == 4 * 3 + 2 * 6, text
        assert (
            sum(v for k, v in pairs.items() if k not in unions_keys(rows)) == 4 * 3 + 2 * 9 + 4 * 2
        ), text
        assert unions.get("2 communicators of 2 ranks, world ranks 0-1; 2-3") == 6, text
