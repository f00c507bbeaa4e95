"""Time-lines of the phase executor: AAPC_TRACE in the runtime, aapcgen/measure/timeline.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from trees import make_topology

from aapcgen.core.errors import InputError
from aapcgen.core.topology import load_topology
from aapcgen.measure import timeline

ROOT = Path(__file__).resolve().parent.parent


def write_trace(prefix: Path, ranks: dict[int, list[tuple[float, str, int, int]]], offset=0.0):
    for rank, events in ranks.items():
        head = (
            f"# aapc-trace 1 schedule=t_receiver_all call=0 rank={rank} machine={rank} "
            f"nphases=2 sync_kind=2 bytes=1000 t0=10.0 t1=10.010 offset={offset if rank else 0}\n"
        )
        body = "".join(f"{10 + t:.9f},{k},{p},{q}\n" for t, k, p, q in events)
        (prefix.parent / f"{prefix.name}.{rank}").write_text(head + body)


def test_accounts_of_a_handover(tmp_path):
    """Two machines per switch; 0->2 in phase 0 then 1->3 in phase 1 share the uplink s0->s1:
    the sync from 2 reaches 1 at 5 ms, 1 posts at 5.5 ms."""
    topo = make_topology([0], [0, 0, 1, 1])  # two switches, 2 + 2 machines
    prefix = tmp_path / "tr"
    ms = 1e-3
    write_trace(
        prefix,
        {
            0: [(0, "sync_wait", 0, 2), (0, "send_start", 0, 2), (4 * ms, "send_done", 0, 2)],
            1: [
                (0, "sync_wait", 1, 3),
                (5 * ms, "sync_in", 1, 2),
                (5.5 * ms, "send_start", 1, 3),
                (9 * ms, "send_done", 1, 3),
            ],
            2: [(4 * ms, "recv_done", 0, 0), (4.1 * ms, "sync_fire", 0, 1)],
            3: [(9 * ms, "recv_done", 1, 1)],
        },
    )
    (call,) = timeline.read_traces(prefix)
    assert call.seconds == pytest.approx(10 * ms)
    msgs = timeline.messages(call)
    assert [(m.src, m.dst, m.phase) for m in msgs] == [(0, 2, 0), (1, 3, 1)]
    up = next(a for a in timeline.link_accounts(topo, call, top=4) if a.label.endswith("->s1"))
    assert up.messages == 2 and up.handovers == 1
    assert up.busy == pytest.approx(7.5 * ms)
    assert up.gap_mean == pytest.approx(1.5 * ms)
    assert up.sync_flight_mean == pytest.approx(1 * ms)
    assert up.sender_delay_mean == pytest.approx(0.5 * ms)
    text = timeline.report(topo, call, 8 * ms)
    assert "1.250x" in text and "handovers" in text
    timeline.plot(topo, call, 8 * ms, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 1000


def test_clock_offsets_are_applied(tmp_path):
    prefix = tmp_path / "tr"
    write_trace(prefix, {0: [(0, "send_start", 0, 1)], 1: [(0.001, "recv_done", 0, 0)]}, 0.5)
    (call,) = timeline.read_traces(prefix)
    assert call.ranks[1].events[0].t == pytest.approx(10.501)
    assert call.ranks[1].t0 == pytest.approx(10.5)


def test_missing_traces_say_so(tmp_path):
    with pytest.raises(InputError, match="AAPC_TRACE"):
        timeline.read_traces(tmp_path / "none")


@pytest.mark.mpi
def test_traced_calls_stay_exact_and_record_every_message(tmp_path):
    """Every variant of paper-fig1, byte-exact against PMPI_Alltoall while traced, under
    ASan/UBSan; every traced call of size > 0 records each of its 20 messages (posted, sent,
    received) with posted <= sent and the receive after the post, on rank 0's clock."""
    from test_mpi import SANITIZE, build, passed, run

    topo = load_topology(ROOT / "topologies" / "paper-fig1.yaml")
    exe = build(topo, tmp_path, extra=SANITIZE)
    prefix = tmp_path / "trace"
    env = {
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1",
        "AAPC_TRACE": str(prefix),
    }
    proc = run(exe, 5, "--max-bytes", "4096", env=env)
    passed(proc, 10 * 10)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    calls = timeline.read_traces(prefix)
    kinds = {c.schedule.split("paper_fig1_")[1] for c in calls}
    assert {"sender_all", "receiver_all", "no_sync", "barrier_all", "dummy"} <= kinds
    checked = 0
    for c in calls:
        if c.bytes == 0 or len(c.ranks) != 5:
            continue
        msgs = timeline.messages(c)
        assert len(msgs) == 20, c.schedule
        err = {r.machine: r.clock_err for r in c.ranks}  # one rank per machine here
        assert all(0 <= e < 0.1 for e in err.values())
        for m in msgs:
            assert m.sync_wait <= m.start <= m.send_done
            assert m.recv_done == m.recv_done  # stamped
            # the receive ends after the send starts, up to the two clocks' uncertainties (half
            # the best of 4 round trips each; oversubscribed sanitized ranks stretch them)
            assert m.recv_done >= m.start - 1e-4 - err[m.src] - err[m.dst]
        checked += 1
    assert checked >= 10


def test_header_values_with_blanks_are_read_whole(tmp_path):
    """A schedule name with a blank (older runtimes wrote the run-time routine's as
    "paper-fig1 auto") does not break the header; files of several communicators are read
    apart, by communicator."""
    for comm, name in (("0-0", "paper-fig1 auto"), ("0-1", "paper-fig1_auto")):
        for rank in (0, 1):
            head = (
                f"# aapc-trace 1 schedule={name} comm={comm} call=0 rank={rank} machine={rank} "
                f"nphases=1 sync_kind=2 bytes=8 t0=1.0 t1=1.5 offset=0\n"
            )
            (tmp_path / f"tr.{comm}.{rank}").write_text(head + "1.1,send_start,0,1\n")
    calls = timeline.read_traces(tmp_path / "tr")
    assert [(c.comm, c.schedule, len(c.ranks)) for c in calls] == [
        ("0-0", "paper-fig1 auto", 2),
        ("0-1", "paper-fig1_auto", 2),
    ]
    assert timeline.median_call(calls, "auto").comm == "0-0"


@pytest.mark.mpi
def test_traces_of_several_communicators_stay_apart(tmp_path):
    """The default routines (MPI_Alltoall's auto and MPI_Alltoallv's level 1, scheduled at run
    time, ranks on machines) traced on MPI_COMM_WORLD, a dup and the two halves of a split
    (tests/c/coll_valid.c): one file per communicator and rank, every call complete (each rank
    of its communicator once, every message recorded), headers the reader parses (the
    run-time routine's name has a blank, written as _)."""
    from test_misuse import MPICH, mpirun
    from test_mpi import build

    from aapcgen.codegen.generate import variant_specs

    topo = load_topology(ROOT / "topologies" / "paper-fig1.yaml")
    program = ROOT / "tests" / "c" / "coll_valid.c"
    exe = build(topo, tmp_path, program, extra=["-DAAPC_INTERCEPT"],
                specs=variant_specs("receiver-all", None))  # fmt: skip
    prefix = tmp_path / "trace"
    # the phases whatever the block size: they are what a trace records
    env = {"AAPC_TRACE": str(prefix), "AAPC_QUIET": "1", "AAPC_WAY": "phases"}
    proc = mpirun(MPICH, 5, exe, env=env, machines=[f"n{i}" for i in range(5)])
    assert proc.returncode == 0 and ", 0 failed" in proc.stdout, proc.stderr[-3000:]
    calls = timeline.read_traces(prefix)
    comms = {c.comm for c in calls}
    assert len(comms) >= 4, comms  # world, its dup, two halves
    files = timeline.trace_files(prefix)
    assert len(files) == len({f.name for f in files}) and len(files) >= 5 + 5 + 2 + 3
    sizes = {}
    assert {c.schedule for c in calls} == {"paper-fig1_auto", "topo_paper_fig1_level1_receiver_all"}
    for c in calls:
        n = len(c.ranks)
        assert [r.rank for r in c.ranks] == list(range(n)), (c.comm, c.call)
        assert sizes.setdefault(c.comm, n) == n
        if c.bytes > 0:  # MPI_Alltoall (Alltoallv calls record 0)
            assert len(timeline.messages(c)) == n * (n - 1), (c.comm, c.call)
    assert sorted(sizes.values()) == [2, 3, 5, 5], sizes
