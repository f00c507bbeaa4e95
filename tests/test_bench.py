"""aapcgen bench: parsing, summaries, job plan, and a short real run with well-formed output."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aapcgen.core.errors import InputError
from aapcgen.core.topology import load_topology
from aapcgen.measure.bench import (
    MAX_SIZE,
    Measurement,
    best_ratios,
    cpu_fairness,
    parse_sizes,
    parse_timer_output,
    peak_of,
    plan_jobs,
    report_table,
    summarize,
    tcp_cell,
    with_rate,
)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_parse_sizes():
    assert parse_sizes("1K,4K,64K,1M,100") == (1024, 4096, 65536, 2**20, 100)
    with pytest.raises(InputError, match="'1Q' is not a message size"):
        parse_sizes("1K,1Q")


@given(lo=st.integers(1, 2**20), k=st.integers(0, 12), extra=st.integers(0, 2**20))
def test_a_size_range_is_its_first_size_and_every_double_up_to_the_last(
    lo: int, k: int, extra: int
) -> None:
    hi = min((lo << k) + extra % max(1, lo << k), MAX_SIZE)
    sizes = parse_sizes(f"{lo}..{hi}")
    assert sizes[0] == lo and sizes[-1] <= hi < 2 * sizes[-1]
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_size_ranges_in_a_list_and_their_errors() -> None:
    assert parse_sizes("8..64,1K..4K,1M") == (8, 16, 32, 64, 1024, 2048, 4096, 2**20)
    assert len(parse_sizes("8..1M")) == 18  # aapcgen tune's default: every power of two
    for bad, says in [("1M..8", "runs downwards"), ("8..", "a size on each side"),
                      ("..8", "a size on each side"), ("8..1Q", "'1Q' is not a message size"),
                      ("1..4096M", "must be from 1 byte")]:  # fmt: skip
        with pytest.raises(InputError, match=says):
            parse_sizes(bad)


def test_peak_and_rate_override():
    topo = load_topology(ROOT / "topologies/two-switch-4-4.yaml")
    assert peak_of(topo, None) == pytest.approx(8 * 7 * 12.5e6 / 16)
    assert peak_of(topo, 2.5e6) == pytest.approx(8 * 7 * 2.5e6 / 16)  # 20 Mbit everywhere
    assert all(ln.bandwidth == 2.5e6 for ln in with_rate(topo, 2.5e6).links)


def test_timer_output_and_summary():
    out = "time native 65536 0 0.5 3 0.25\ntime sender-all 65536 0 0.25 4 0.95\nnoise\ndone\n"
    rows = parse_timer_output(out, {"native": "native-default"}, repeat=0)
    assert [r.candidate for r in rows] == ["native-default", "sender-all"]
    rows += [
        Measurement("sender-all", 65536, 1, 0.75, 4, 0.5),
        Measurement("sender-all", 65536, 2, 0.30, 4, 0.97),
    ]
    summary = {s.candidate: s for s in summarize(rows, n_machines=4, peak=4 * 3 * 65536 / 0.25)}
    s = summary["sender-all"]
    assert (s.median_s, s.min_s, s.max_s, s.repeats) == (0.30, 0.25, 0.75, 3)
    assert s.percent_of_peak == pytest.approx(100 * 0.25 / 0.30)
    assert s.cpu_bound  # median CPU 0.95 >= 0.90: flagged, not network-bound
    assert not summary["native-default"].cpu_bound
    assert (s.tcp_retrans, s.tcp_timeouts) == (-1.0, -1.0)  # old 7-column lines: unknown


def test_timer_output_with_tcp_counters():
    out = "time native 4096 2 0.5 3 0.25 12.50 0.333\ntime x 4096 2 0.5 3 0.25 -1.00 -1.000\n"
    native, x = parse_timer_output(out, {}, repeat=2)
    assert (native.tcp_retrans, native.tcp_timeouts, native.repeat) == (12.5, 0.333, 2)
    rows = [native, replace(native, repeat=3, tcp_retrans=1.0, tcp_timeouts=-1.0), x]
    summary = {s.candidate: s for s in summarize(rows, n_machines=4, peak=1e6)}
    assert (summary["native"].tcp_retrans, summary["native"].tcp_timeouts) == (6.75, 0.333)
    assert (summary["x"].tcp_retrans, summary["x"].tcp_timeouts) == (-1.0, -1.0)
    assert tcp_cell(6.75, 0.333) == "6.8 / 0.33" and tcp_cell(-1.0, 0.0) == "?"


def test_run_queue_wait_marks_starved_rows_and_unfair_ratios():
    out = (
        "time native 4096 0 0.5 3 0.99 1.00 0.000 0.412\n"
        "time receiver-all 4096 0 0.25 3 0.55 0.00 0.000 0.010\n"
        "time old 4096 0 0.25 3 0.55 0.00 0.000\n"
    )
    rows = parse_timer_output(out, {"native": "native-default"}, repeat=0)
    assert [r.runq_wait for r in rows] == [0.412, 0.010, -1.0]
    summary = {s.candidate: s for s in summarize(rows, n_machines=4, peak=1e6)}
    assert summary["native-default"].cpu_starved and not summary["receiver-all"].cpu_starved
    assert not summary["old"].cpu_starved  # unknown is not starved ...
    table = report_table(list(summary.values()))
    assert "| 41% |" in table and "cpu-starved" in table and "| ? |" in table
    assert "not CPU-fair: native-default waited for a CPU" in best_ratios(list(summary.values()))
    fair = [summary["receiver-all"], replace(summary["native-default"], cpu_starved=False)]
    assert cpu_fairness(fair) == " (CPU-fair)"
    assert cpu_fairness([*fair, summary["old"]]) == " (CPU fairness unknown)"  # ... nor fair


def test_job_plan_interleaves_natives():
    jobs = plan_jobs("mpich", ("brucks", "pairwise"), (1024, 65536), 1.0, 50)
    assert [j.label for j in jobs] == ["native-default", "native-brucks", "native-pairwise"]
    assert dict(jobs[1].env) == {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "brucks"}
    assert "--only" in jobs[2].args and "1024,65536" in jobs[0].args


def test_job_plan_keeps_ours_apart_from_the_library():
    """Ours run in a job of their own, never after the library's calls on the same
    connections (MPICH's contended calls left them slow for the next routine)."""
    jobs = plan_jobs("mpich", ("pairwise",), (1024,), 1.0, 50, ("phases",), ("sender-all", "auto"))
    assert [j.label for j in jobs] == ["native-default", "ours", "native-pairwise", "auto/phases"]
    only = [j.args[j.args.index("--only") + 1] for j in jobs]
    assert only == ["native", "sender-all,auto", "native", "auto"]
    assert dict(jobs[1].rename) == {} and dict(jobs[0].rename) == {"native": "native-default"}
    sim = plan_jobs("simgrid", ("pair",), (1024,), 1.0, 50)
    assert sim[1].simgrid_algorithm == "pair" and sim[1].env == ()


def test_native_rows_are_forced_the_way_the_mpi_needs():
    """Under Open MPI a native-X row forces X through coll_tuned (it used to set MPICH's
    variable, which Open MPI ignores: the library default labelled X)."""
    ompi = plan_jobs("openmpi", ("pairwise", "linear"), (1024,), 1.0, 50)
    assert [j.label for j in ompi] == ["native-default", "native-pairwise", "native-linear"]
    assert dict(ompi[1].env) == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_alltoall_algorithm": "2",
    }
    assert dict(ompi[2].env)["OMPI_MCA_coll_tuned_alltoall_algorithm"] == "1"
    assert all("MPIR_CVAR" not in k for j in ompi for k, _ in j.env)
    with pytest.raises(InputError, match="'brucks' is not an Open MPI alltoall algorithm"):
        plan_jobs("openmpi", ("brucks",), (1024,), 1.0, 50)
    with pytest.raises(InputError, match="neither MPICH nor Open MPI"):
        plan_jobs("unknown", ("brucks",), (1024,), 1.0, 50)
    assert len(plan_jobs("unknown", (), (1024,), 1.0, 50)) == 1  # the default alone is fine
    # MPICH aborts MPI_Init on a value it does not know: caught before any job runs
    with pytest.raises(InputError, match="'bruck' is not an MPICH alltoall algorithm"):
        plan_jobs("mpich", ("bruck",), (1024,), 1.0, 50)
    with pytest.raises(InputError, match="default algorithm is always timed"):
        plan_jobs("mpich", ("default",), (1024,), 1.0, 50)


@pytest.mark.mpi
def test_short_local_bench_is_well_formed(tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run(
        [
            str(BIN / "aapcgen"),
            "bench",
            str(ROOT / "topologies/paper-fig1.yaml"),
            "--backend",
            "local",
            "--sizes",
            "1K,16K",
            "--repeats",
            "2",
            "--target-seconds",
            "0.05",
            "--max-iters",
            "5",
            "--natives",
            "pairwise",
            "--variants",
            "sender-all,barrier-partial-none",
            "--block-size",
            "2",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ETA" in proc.stderr  # progress lines
    rows = list(csv.DictReader(open(out / "results.csv")))
    cands = {r["candidate"] for r in rows}
    assert cands == {"native-default", "native-pairwise", "sender-all", "barrier-partial-none-2"}
    assert len(rows) == 4 * 2 * 2  # candidates x sizes x repeats
    assert all(float(r["seconds"]) > 0 for r in rows)
    # the busy share of /proc/stat's jiffies (10 ms): -1 (unknown) when a row's timed calls
    # took less than a tick
    assert all(0 <= float(r["cpu_busy"]) <= 1 or float(r["cpu_busy"]) == -1 for r in rows)
    assert all(float(r["tcp_timeouts_per_call"]) >= 0 for r in rows)  # /proc/net read
    assert all(0 <= float(r["runq_wait"]) <= 1 for r in rows)  # /proc/thread-self/schedstat
    data = json.loads((out / "results.json").read_text())
    assert data["environment"]["backend"] == "local" and len(data["summary"]) == 4 * 2
    assert (out / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| 16K | sender-all |" in proc.stdout


OMPI = ROOT / ".venv-openmpi" / "bin"


@pytest.mark.mpi
@pytest.mark.openmpi
def test_bench_under_open_mpi_forces_its_own_algorithms(tmp_path):
    """`aapcgen bench --mpicc <Open MPI>`: built and run with Open MPI, natives forced with
    coll_tuned (checked by the unit test above), rows labelled by Open MPI's algorithm names."""
    out = tmp_path / "ompi"
    launcher = f"{OMPI / 'mpiexec'} --oversubscribe -n 5"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    cmd = [str(BIN / "aapcgen"), "bench", str(ROOT / "topologies/paper-fig1.yaml")]
    cmd += ["--backend", "mpiexec", "--launcher", launcher, "--mpicc", str(OMPI / "mpicc")]
    cmd += ["--sizes", "1K", "--repeats", "1", "--target-seconds", "0.02", "--max-iters", "3"]
    cmd += ["--natives", "pairwise,linear", "--variants", "receiver-all", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cands = {r["candidate"] for r in csv.DictReader(open(out / "results.csv"))}
    assert cands == {"native-default", "native-pairwise", "native-linear", "receiver-all"}
    bad = cmd[:-4] + ["--natives", "brucks", "-o", str(out)]
    proc = subprocess.run(bad, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2 and "not an Open MPI alltoall algorithm" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_backend_is_one_line(tmp_path):
    proc = subprocess.run(
        [str(BIN / "aapcgen"), "bench", "--backend", "cloud"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        proc.returncode == 2
        and "unknown backend 'cloud'" in proc.stderr
        and "Traceback" not in proc.stderr
    )


IS_ROOT = os.geteuid() == 0


@pytest.mark.root
@pytest.mark.mpi
def test_short_emulated_bench_is_well_formed(tmp_path):
    """On an emulated 4+4 tree: a short bench runs all candidates and writes well-formed output."""
    if not IS_ROOT:
        pytest.fail("CI=true but not root: the emulated bench needs root")
    out = tmp_path / "emu"
    proc = subprocess.run(
        [
            str(BIN / "aapcgen"),
            "bench",
            str(ROOT / "topologies/two-switch-4-4.yaml"),
            "--backend",
            "emulate",
            "--sizes",
            "16K",
            "--repeats",
            "1",
            "--target-seconds",
            "0.1",
            "--max-iters",
            "3",
            "--natives",
            "pairwise",
            "--variants",
            "receiver-all,runtime-receiver-all",
            "--rate",
            "200Mbit",
            "--prefix",
            "aapcb",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    assert data["environment"]["backend"] == "emulate"
    assert data["environment"]["peak_MBps"] == pytest.approx(8 * 7 * 25e6 / 16 / 1e6)
    assert {s["candidate"] for s in data["summary"]} == {
        "native-default",
        "native-pairwise",
        "receiver-all",
        "runtime-receiver-all",  # placed by AAPC_MACHINE in every namespace
    }
    assert all(
        0 < s["percent_of_peak"] <= 110 for s in data["summary"]
    )  # the emulated links bound it
    # every namespace's TCP counters were read (one reporter per machine)
    assert all(m["tcp_retrans"] >= 0 and m["tcp_timeouts"] >= 0 for m in data["measurements"])
    status = subprocess.run(
        [str(BIN / "aapcgen"), "emulate", "status", "--prefix", "aapcb"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "no emulation running" in status.stdout  # torn down after the bench


@pytest.mark.mpi
def test_handoff_bench_times_every_collective_handed_to_the_library(tmp_path):
    """tuning/bench_handoff.py: every collective of handoff_timer.c runs alone and preloaded
    (results checked by the timer), and the report shows each preloaded call went to the MPI
    library, the case the table measures."""
    script = Path(__file__).resolve().parent.parent / "tuning" / "bench_handoff.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--iters", "50", "--rounds", "1", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [
        ln.split(" | ")
        for ln in proc.stdout.splitlines()
        if ln.startswith("| ") and "---" not in ln
    ]
    ops = {r[0].strip("| ") for r in rows[1:]}
    assert ops == {"alltoall", "alltoallv", "ialltoall", "allgather", "allreduce", "bcast",
                   "reduce", "barrier", "scatter"}  # fmt: skip
    for r in rows[1:]:
        assert "library" in r[5], r  # "MPI library, chosen by size" or "library: <why>"
    data = json.loads((tmp_path / "handoff.json").read_text())
    assert len(data["rows"]) == 9 and all(x["alone_ns"] and x["preloaded_ns"] for x in data["rows"])
