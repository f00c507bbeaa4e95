"""Generated MPI_Alltoallv routines (levels 1-3) with real MPI: byte-identical to PMPI_Alltoallv.

One generated directory per (topology, scheduler) and one mpiexec job running every variant and
case of tests/c/alltoallv_check.c: random patterns with zero rows and columns, gapped and
reversed displacements, derived datatypes on either side, MPI_IN_PLACE, counts that differ from
the compiled pattern (fallback), repeated calls, a duplicate communicator and sub-communicators
(reversed split, halves, thirds, grid rows and columns, all at once).

Levels 1 and 2 on any communicator: jobs on subsets of a 16-machine cluster, several ranks per
machine in blocks, round robin and unequal, placed with AAPC_MACHINE; every schedule they compute
(AAPC_DUMP_SCHEDULE) is proved by the independent checker on the job tree and equals the Python
scheduler's. Every MPI run has a timeout.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_cluster_mpi import n as machines
from test_cluster_mpi import run as run_on
from test_mpi import BIN, CFLAGS, MPICC, OPENMPI, ROOT, SANITIZE, run

from aapcgen.alltoall.job import job_topology
from aapcgen.alltoallv.schedule import run_scheduler
from aapcgen.codegen.generate import AlltoallvRequest, generate, variant_specs
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoallv import verify_vschedule

HARNESS = ROOT / "tests" / "c" / "alltoallv_check.c"
VARIANTS = ("no-sync", "sender-all", "sender-partial", "receiver-all", "barrier-all")

pytestmark = pytest.mark.mpi


def random_pattern(n: int, seed: int, top: int = 12000, symmetric: bool = False) -> np.ndarray:
    """Byte counts, multiples of 8, with one zero row, one zero column and a few tiny entries
    (symmetric: zero row and column 1 instead, so MPI_IN_PLACE runs the compiled schedule)."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, top // 8, size=(n, n)) * 8
    p[rng.random((n, n)) < 0.25] = 0
    p[rng.random((n, n)) < 0.1] = 8
    p[1, :] = 0
    p[:, 1 if symmetric else 2] = 0
    return np.maximum(p, p.T) if symmetric else p


def build(
    topo_file: str,
    pattern: np.ndarray,
    scheduler: str,
    threshold: int,
    out: Path,
    mpicc: Path = MPICC,
    extra: tuple[str, ...] = (),
) -> Path:
    topo = load_topology(ROOT / "topologies" / topo_file)
    specs = [s for v in VARIANTS for s in variant_specs(v, (2,) if "partial" in v else None)]
    request = AlltoallvRequest(pattern, "test", scheduler, threshold, None)
    gen = generate(topo, specs, out / "gen", alltoallv=request)
    assert gen.alltoallv is not None and len(gen.alltoallv.variants) == len(VARIANTS)
    exe = out / "alltoallv_check"
    sources = sorted(str(p) for p in (out / "gen").glob("*.c"))
    subprocess.run(
        [str(mpicc), *CFLAGS, *extra, f"-I{out / 'gen'}", str(HARNESS), *sources, "-o", str(exe)],
        check=True,
        timeout=300,
    )
    text = f"{len(pattern)}\n" + "\n".join(" ".join(map(str, row)) for row in pattern) + "\n"
    (out / "pattern.txt").write_text(text)
    return exe


def passed(proc, cases: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("alltoallv_check:")][-1]
    ok, failed = (int(x.split()[0]) for x in last.split(": ")[1].split(", "))
    assert failed == 0 and ok == cases, last


def handed(proc) -> dict[str, set[str]]:
    """Per routine, the cases in which alltoallv_check saw it hand the call to the library's
    PMPI_Alltoallv (tests/c/library_calls.h)."""
    out = {}
    for line in proc.stdout.splitlines():
        head, sep, rest = line.partition(": handed to the library:")
        if sep:
            out[head.removeprefix("alltoallv_check: ")] = set(rest.split())
    return out


# calls on all of WORLD (or a duplicate, or a reversed split) with the compiled counts
WHOLE = {"bytes", "bytes-gaps-reversed", "int", "holey-to-int", "int-to-holey"}
WHOLE |= {"vector-to-holey", "zero-counts", "repeat-3", "dup-comm", "split-reversed"}


def served(proc, symmetric: bool) -> None:
    """Every generated routine served the calls on the whole communicator; the compiled
    pattern (level 3) handed over the counts that differ from it (and MPI_IN_PLACE when the
    pattern is not symmetric); levels 1 and 2 scheduled any counts; native is the library."""
    by = handed(proc)
    assert len(by) == ROUTINES, proc.stdout[-2000:]
    in_place = {"in-place-int", "in-place-holey"}
    for routine, cases in by.items():
        if routine == "native":
            assert WHOLE | in_place | {"other-counts-fallback"} <= cases, cases
            continue
        assert not cases & WHOLE, (routine, cases)
        if routine.startswith("level3"):
            assert "other-counts-fallback" in cases, (routine, cases)
            assert (in_place & cases) == (set() if symmetric else in_place), (routine, cases)
        else:
            assert not cases & (in_place | {"other-counts-fallback"}), (routine, cases)


def cases(n: int) -> int:
    """Cases per routine on n ranks: 15, and the grid's rows and columns when n has a divisor
    1 < k <= sqrt(n)."""
    return 15 + 2 * any(n % k == 0 for k in range(2, int(n**0.5) + 1))


# every level-3 variant, the four level-1 and four level-2 routines and "native" run all cases
ROUTINES = len(VARIANTS) + 4 + 4 + 1


@pytest.mark.parametrize(
    "topo_file, scheduler, threshold, seed, symmetric",
    [
        ("two-switch-4-4.yaml", "balanced", 0, 1, False),  # pieces of messages (packing path)
        ("paper-fig1.yaml", "greedy", 2000, 2, True),  # a contended small-message phase
        ("paper-fig1.yaml", "alltoall", 0, 3, False),
    ],
)
def test_level3_matches_pmpi(tmp_path, topo_file, scheduler, threshold, seed, symmetric):
    n = len(load_topology(ROOT / "topologies" / topo_file).machines)
    pattern = random_pattern(n, seed, symmetric=symmetric)
    exe = build(topo_file, pattern, scheduler, threshold, tmp_path)
    proc = run(exe, n, str(tmp_path / "pattern.txt"), env={"AAPC_QUIET": "1"}, timeout=400)
    passed(proc, cases(n) * ROUTINES)
    served(proc, symmetric)


def test_level3_sanitizers(tmp_path):
    pattern = random_pattern(5, 4, symmetric=True)
    exe = build("paper-fig1.yaml", pattern, "balanced", 0, tmp_path, extra=SANITIZE)
    env = {"AAPC_QUIET": "1", "ASAN_OPTIONS": "detect_leaks=0", "AAPC_PREPOST_WINDOW": "2"}
    passed(
        proc := run(exe, 5, str(tmp_path / "pattern.txt"), env=env, timeout=400),
        cases(5) * ROUTINES,
    )
    served(proc, symmetric=True)


@pytest.mark.openmpi
def test_level3_open_mpi(tmp_path):
    exe = build(
        "paper-fig1.yaml", random_pattern(5, 5), "balanced", 0, tmp_path, mpicc=OPENMPI / "mpicc"
    )
    proc = run(
        exe,
        5,
        str(tmp_path / "pattern.txt"),
        mpiexec=OPENMPI / "mpiexec",
        env={"AAPC_QUIET": "1"},
        timeout=400,
    )
    passed(proc, cases(5) * ROUTINES)
    served(proc, symmetric=False)


# ---- levels 1 and 2 on any communicator of a cluster ------------------------------------------

CHAIN = load_topology(ROOT / "topologies" / "chain-4x4.yaml")  # n0-n3 on s0, ..., n12-n15 on s3
JOBS = {
    "5 machines on 4 switches, reordered": machines(13, 2, 7, 3, 9),
    "2 ranks per machine, blocks": machines(0, 0, 5, 5, 10, 10, 15, 15),
    "2 ranks per machine, round robin": machines(0, 5, 10, 0, 5, 10),
    "4 ranks on 2 machines": machines(2, 2, 2, 2, 12, 12, 12, 12),
    "unequal ranks per machine": machines(3, 3, 3, 7, 11, 11),
}


def build_cluster(
    out: Path, scheduler: str = "greedy", mpicc: Path = MPICC, extra: tuple[str, ...] = ()
) -> Path:
    """chain-4x4's directory (levels 1 and 2 by ``scheduler``) and the harness."""
    gen = out / f"gen-{scheduler}"
    if not gen.exists():
        generate(CHAIN, variant_specs("receiver-all", None), gen, runtime_scheduler=scheduler)
    exe = out / f"vcheck-{scheduler}-{len(extra)}-{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, f"-I{gen}", str(HARNESS), *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def check_dumps(dump: Path, job: list[str]) -> int:
    """Every schedule a job's ranks computed: complete and contention-free on the job tree by
    the independent checker, and the Python scheduler's own schedule piece for piece."""
    index = {m: i for i, m in enumerate(CHAIN.machines)}
    files = sorted(dump.glob("aapc-vschedule-*.json"))
    for f in files:
        d = json.loads(f.read_text())
        tree = job_topology(CHAIN, [index[m] for m in d["rank_machines"]])
        pattern = np.array(d["pattern"], dtype=np.int64)
        small = np.zeros(d["n_phases"], bool)
        if d["small_phase"] >= 0:
            small[d["small_phase"]] = True
        pieces = {
            k: np.array(d[k], dtype=np.int64) for k in ("phase", "src", "dst", "offset", "length")
        }
        got = SimpleNamespace(**pieces, small=small, phase_time=np.array(d["phase_time"]),
                              threshold=d["threshold"], cost=d["cost"])  # fmt: skip
        verify_vschedule(tree, pattern, got)
        want = run_scheduler(d["scheduler"], tree, pattern, d["threshold"])
        for k, v in pieces.items():
            assert np.array_equal(getattr(want, k), v), (f.name, k)
        assert want.cost == d["cost"], f.name
    assert json.loads(files[0].read_text())["rank_machines"] == job
    return len(files)


# the phases forced: these tests are about them (MPI_Alltoallv otherwise hands small and empty
# exchanges to the library by size; tests/test_select_mpi.py tests that choice)
PHASES = {"AAPC_WAY": "phases"}


@pytest.fixture(scope="module")
def cluster_exe(tmp_path_factory) -> Path:
    return build_cluster(tmp_path_factory.mktemp("vcluster"))


@pytest.mark.parametrize("job", list(JOBS))
def test_levels_1_2_on_jobs_of_a_cluster(cluster_exe, job, tmp_path):
    """Every level-1 and level-2 routine on a job's WORLD, dup, reversed split, halves, thirds
    and grid rows and columns, scheduled on each communicator's job tree: nothing falls back,
    and every schedule is proved and equals Python's."""
    dump = tmp_path / "dump"
    dump.mkdir()
    proc = run_on(cluster_exe, JOBS[job], "--random", "7", "--variant", "level*",
                  env={**PHASES, "AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
    passed(proc, 8 * cases(len(JOBS[job])))
    assert "aapcgen:" not in proc.stderr, proc.stderr  # nothing fell back
    assert handed(proc) == {r: set() for r in handed(proc)} and len(handed(proc)) == 8
    assert check_dumps(dump, JOBS[job]) >= 8


@pytest.mark.parametrize("scheduler", ["balanced", "alltoall"])
def test_levels_1_2_other_schedulers(tmp_path, scheduler):
    exe = build_cluster(tmp_path, scheduler)
    dump = tmp_path / "dump"
    dump.mkdir()
    job = machines(1, 1, 6, 14, 14, 14)
    proc = run_on(exe, job, "--random", "3", "--variant", "level1-*",
                  env={**PHASES, "AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
    passed(proc, 4 * cases(6))
    assert "aapcgen:" not in proc.stderr, proc.stderr
    assert handed(proc) == {r: set() for r in handed(proc)} and len(handed(proc)) == 4
    check_dumps(dump, job)


def test_levels_1_2_on_the_4x4_grid(cluster_exe):
    """16 ranks, rank r on machine r: the whole cluster, and its rows (one switch each) and
    columns (four switches) at once."""
    proc = run_on(
        cluster_exe, machines(*range(16)), "--random", "11", "--variant", "level1-receiver-all",
        env=PHASES,
    )  # fmt: skip
    passed(proc, cases(16))
    assert "aapcgen:" not in proc.stderr, proc.stderr
    assert handed(proc) == {"level1-receiver-all": set()}


def test_levels_1_2_unknown_host_falls_back_on_every_rank(cluster_exe):
    """A rank on an unknown host: the fixed whole-cluster tree does not fit 4 ranks either, so
    every rank uses the library's MPI_Alltoallv, with one warning per reason."""
    proc = run_on(
        cluster_exe,
        [*machines(0, 5, 9), "nowhere"],
        "--random",
        "5",
        "--variant",
        "level1-sender-all",
    )
    passed(proc, cases(4))
    assert handed(proc)["level1-sender-all"] >= WHOLE - {"zero-counts"}  # the library ran them
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert warnings and all("MPI_Alltoallv" in w for w in warnings), proc.stderr


@pytest.fixture(scope="module")
def sanitized_exe(tmp_path_factory) -> Path:
    return build_cluster(tmp_path_factory.mktemp("vsan"), extra=tuple(SANITIZE))


def test_levels_1_2_log_rounds_in_the_trees_digits(sanitized_exe, tmp_path):
    """AAPC_WAY=loground: MPI_Alltoallv's log rounds among the ranks in the tree's digits, blocks
    of any size (random counts, zero rows and columns, gapped and derived datatypes, in place),
    byte for byte against PMPI_Alltoallv under ASan/UBSan. Two ranks on each of n0, n1 (s0) and
    n4, n5 (s1): digits 2 x 2 x 2; the sub-communicators without digits (the thirds, the
    reversed split's parts) take the phases. The dumped members and digits are proved."""
    dump = tmp_path / "dump"
    dump.mkdir()
    job = machines(0, 0, 1, 1, 4, 4, 5, 5)
    proc = run_on(sanitized_exe, job, "--random", "9", "--variant", "level1-*",
                  env={"AAPC_WAY": "loground", "AAPC_DUMP_SCHEDULE": str(dump)})  # fmt: skip
    passed(proc, 4 * cases(8))
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    assert handed(proc) == {r: set() for r in handed(proc)} and len(handed(proc)) == 4
    files = sorted(dump.glob("aapc-loground-*.json"))
    dumped = [json.loads(f.read_text()) for f in files]
    assert any(d["radix"] == [2, 2, 2] and len(d["members"]) == 8 for d in dumped), dumped
    unique = {f.read_text(): f for f in files}  # one file per communicator's members
    got = subprocess.run(
        [str(BIN / "aapcgen"), "verify", str(ROOT / "topologies" / "chain-4x4.yaml"),
         "--schedule", *map(str, unique.values())],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert got.stdout.count("every block delivered exactly once") == len(unique), got.stdout
    assert "in the tree's digits [2, 2, 2]" in got.stdout, got.stdout


def test_levels_1_2_sanitizers(sanitized_exe):
    proc = run_on(sanitized_exe, machines(0, 0, 6, 11, 11, 15), "--random", "2", "--variant", "level*",
                  env={**PHASES, "AAPC_PREPOST_WINDOW": "2"})  # fmt: skip
    passed(proc, 8 * cases(6))
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_levels_1_2_open_mpi(tmp_path):
    exe = build_cluster(tmp_path, mpicc=OPENMPI / "mpicc")
    proc = run_on(exe, machines(0, 4, 4, 9, 14), "--random", "4", "--variant", "level*",
                  env=PHASES, ompi=True)  # fmt: skip
    passed(proc, 8 * cases(5))
    assert "aapcgen:" not in proc.stderr, proc.stderr
    assert handed(proc) == {r: set() for r in handed(proc)} and len(handed(proc)) == 8
    # the log rounds in the tree's digits (2 x 2: n0, n1 on s0, n4, n5 on s1) under Open MPI's
    # matched probes
    proc = run_on(exe, machines(0, 1, 4, 5), "--random", "6", "--variant", "level1-receiver-all",
                  env={"AAPC_WAY": "loground"}, ompi=True)  # fmt: skip
    passed(proc, cases(4))
    assert handed(proc) == {"level1-receiver-all": set()}


def test_dummy_variants_rejected_for_alltoallv(tmp_path):
    from aapcgen.core.errors import InputError

    topo = load_topology(ROOT / "topologies" / "paper-fig1.yaml")
    request = AlltoallvRequest(random_pattern(5, 6), "test")
    with pytest.raises(InputError, match="dummy"):
        generate(topo, variant_specs("dummy", None), tmp_path, alltoallv=request)


def test_bench_alltoallv_local_end_to_end(tmp_path):
    """A short local run: every candidate kind measured, ratios consistent, files written."""
    import json
    import os
    import sys

    pattern = tmp_path / "p.npy"
    np.save(pattern, random_pattern(5, 7, top=4000))
    aapcgen = Path(sys.executable).parent / "aapcgen"
    cmd = [
        str(aapcgen),
        "bench-alltoallv",
        str(ROOT / "topologies" / "paper-fig1.yaml"),
        str(pattern),
        "--backend",
        "local",
        "--repeats",
        "2",
        "--max-iters",
        "3",
        "--target-seconds",
        "0.05",
        "--variants",
        "sender-all",
        "--settle",
        "0",
        "-o",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "AAPC_QUIET": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    names = {s["candidate"] for s in data["summary"]}
    assert {"native-default", "native-scattered", "level3-sender-all"} <= names
    assert {f"level{k}-{s}" for k in (1, 2) for s in ("no-sync", "sender-all")} <= names
    assert data["lower_bound_s"] > 0 and data["schedule_cost_s"] >= data["lower_bound_s"] * 0.999
    for s in data["summary"]:
        assert s["median_s"] > 0 and s["min_s"] <= s["median_s"] <= s["max_s"]
        assert abs(s["over_bound"] - s["median_s"] / data["lower_bound_s"]) < 1e-9
    assert "| level3-sender-all |" in proc.stdout
    # per-candidate TCP counters were read; candidates run in a different order per repeat, so
    # the one after native-default (which inherits the TCP state native leaves) changes
    rows = list(csv.DictReader(open(tmp_path / "out" / "results.csv")))
    assert all(float(r["tcp_timeouts_per_call"]) >= 0 for r in rows)
    after_native = []
    for rep in ("0", "1"):
        order = [r["candidate"] for r in rows if r["repeat"] == rep]
        after_native.append(order[order.index("native-default") + 1 :][:1])
    assert after_native[0] != after_native[1], after_native


def test_summarize_v_ratios():
    from aapcgen.measure.bench import Measurement
    from aapcgen.measure.vbench import summarize_v

    rows = [Measurement("native-default", 100, r, s, 3, 0.5) for r, s in enumerate((2.0, 4.0, 3.0))]
    rows += [Measurement("level3-x", 100, r, s, 3, 0.2) for r, s in enumerate((1.0, 1.5))]
    by = {s.candidate: s for s in summarize_v(rows, bound_s=0.5)}
    assert by["native-default"].median_s == 3.0 and by["native-default"].speedup == 1.0
    assert by["level3-x"].median_s == 1.25 and by["level3-x"].speedup == 3.0 / 1.25
    assert by["level3-x"].over_bound == 2.5 and by["level3-x"].repeats == 2


def test_bench_alltoallv_rejects_a_negative_warmup(tmp_path):
    import sys

    pattern = tmp_path / "p.npy"
    np.save(pattern, random_pattern(5, 7, top=4000))
    aapcgen = Path(sys.executable).parent / "aapcgen"
    topo = str(ROOT / "topologies" / "paper-fig1.yaml")
    cmd = [
        str(aapcgen),
        "bench-alltoallv",
        topo,
        str(pattern),
        "--warmup",
        "-1",
        "-o",
        str(tmp_path / "o"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith("--warmup must be at least 0, got -1")
    assert "Traceback" not in proc.stderr
