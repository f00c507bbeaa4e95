"""The collectives other than the all-to-all on an emulated switch tree, or (--one-machine) with
every rank on this host: MPI_Bcast, MPI_Allgather, MPI_Allreduce, MPI_Reduce, MPI_Barrier,
MPI_Scatter and MPI_Scatterv, MPICH's (its default and a few of its algorithms forced with
MPIR_CVAR_<OP>_INTRA_ALGORITHM) beside ours (AAPC_<OP>=hier: the machine's ranks through shared
memory, the leaders across machines with the library's collective; ring: the leaders in a ring
over the tree; phased: Allgather's leaders in the tree's phases; mcast: the leaders over IP
multicast; lanes: Allreduce with every local rank a ring on a slice; AAPC_<OP>=auto: the
selection), per size, in one table per operation. Scatter and
Scatterv (root 0) send every rank a block of the size, Scatterv with every count the same.

    sudo flock -x /tmp/aapc-cpu.lock flock /tmp/aapc-mpi.lock .venv/bin/python \\
        tuning/bench_coll.py [topologies/two-switch-4-4.yaml] [--rate 100Mbit] \\
        [--ranks-per-machine 2] \\
        [--ops bcast,allgather,allreduce,reduce,barrier,scatter,scatterv] \\
        [--sizes 8,64,512,4K,32K,256K,1M,4M] [--repeats 3] [-o DIR]

runtime_c/bench/coll_timer.c is compiled once with -DAAPC_INTERCEPT and the routines generated
for the topology (what `aapcgen generate` writes), so every call goes through the library's
MPI_<Op> and the environment picks its way (AAPC_<OP>=native for MPICH's candidates). One MPI
job per (repeat, operation, candidate) times every size (aapcgen.platforms.emulate: machines
are network namespaces, ranks k*R .. k*R+R-1 on machine k, links shaped with tbf, MPICH without
shared memory between ranks; root needed); the candidates' order changes from one repeat to the
next, and every job has a timeout. Timing as alltoall_timer.c's: per size one checked call (a
wrong result stops the job: never a wrong routine timed), warm-up calls, then n x { call;
MPI_Barrier } with the barrier MPICH's, the slowest rank's time per call; n from the time a call
should take at the link rate (--target-seconds of calls per size), so that the defaults took
about twelve minutes on two cores for the first five operations (scatter and scatterv, not timed
yet, add a few). A candidate whose checked call takes over --slow-seconds is timed by that call
at that size and skipped at larger ones.

The tables give the median over the repeats in ms per call, the best MPICH candidate in bold,
and best MPICH / hier, best MPICH / auto and MPICH default / auto (above 1: ours is faster).
"(cpu)" marks a point whose timed calls kept the host's CPUs at least 90% busy (CPU time more
than the network's), or the heading says every point did; "(fb)" a forced MPICH algorithm that
MPICH could not apply at that size (it ran its own choice). Progress goes to stderr; with -o DIR
every measurement goes to DIR/bench_coll.json. Exit status 1 when a job failed (its cells say
"failed", the reason is printed below the table).

With --one-machine RANKS: RANKS ranks all on this host, one machine (seed 003's regime: the
library serves every collective through its shared memory, runtime_c/shm/), typically more
ranks than cores. No emulation and no root: every job is `mpiexec -n RANKS coll_timer ...`
with the candidate's environment, MPICH with its shared memory, no AAPC_MACHINE. Of ours only
hier and auto run (ring, phased and mcast are between machines); the topology is used only to
generate the routines the timer is built with; --rate, --ranks-per-machine and --prefix are
refused with it. The calls per size come from a CPU-based expectation instead of a link rate:
max(2 ms, the bytes the call copies at 200 MB/s) x RANKS / cores when oversubscribed (MPICH
busy-polls then: 8 ranks on 2 cores take ~20 ms per MPICH barrier), max(5 us, the same bytes)
when every rank has a core (calls of microseconds: give --max-iters 20000 to time enough). MPICH's barrier after
every timed call would then be most of a small call's time (milliseconds): the timer's barrier
after each call is the library's shared-memory one instead (COLL_TIMER_SYNC=mpi), the same for
every candidate, and the heading gives it alone. This took 4.6 minutes here (51 jobs):

    flock -x /tmp/aapc-cpu.lock flock /tmp/aapc-mpi.lock .venv/bin/python \\
        tuning/bench_coll.py --one-machine 8 --ops barrier,bcast,allreduce \\
        --sizes 8,4K,64K,256K --repeats 3 -o DIR
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.codegen.generate import generate, variant_specs  # noqa: E402
from aapcgen.core.errors import AapcError, InputError  # noqa: E402
from aapcgen.core.model import Topology  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.core.units import format_bandwidth, parse_rate_option  # noqa: E402
from aapcgen.measure import cleanup  # noqa: E402
from aapcgen.measure.bench import (  # noqa: E402
    CPU_BOUND,
    _size,
    median_known,
    mpi_tool,
    parse_sizes,
    tcp_congestion_control,
)
from aapcgen.measure.mpi import mpi_flavour  # noqa: E402
from aapcgen.measure.timer import parse_timer_lines  # noqa: E402
from aapcgen.platforms import emulate  # noqa: E402

OPS = ("bcast", "allgather", "allreduce", "reduce", "barrier", "scatter", "scatterv")
MPI_NAMES = {
    "bcast": "MPI_Bcast",
    "allgather": "MPI_Allgather",
    "allreduce": "MPI_Allreduce",
    "reduce": "MPI_Reduce",
    "barrier": "MPI_Barrier",
    "scatter": "MPI_Scatter",
    "scatterv": "MPI_Scatterv",
}
# MPICH's algorithms forced per operation (MPIR_CVAR_<OP>_INTRA_ALGORITHM), a representative few
# of the values MPICH 5.0.2 takes (`strings libmpi.so | grep -A12 MPIR_CVAR_BCAST_INTRA_ALGORITHM`;
# an unknown value aborts MPI_Init). Left out: nb (the non-blocking routine waited for), smp
# (MPICH's own node-aware composition: in the emulation every rank is its own node,
# MPIR_CVAR_NOLOCAL=1), and for allreduce ccl (a GPU library); nor auto anywhere (MPICH's own
# choice: native-default already). Scatter and scatterv have one real algorithm each besides nb
# and auto (MPIR_CVAR_SCATTER_INTRA_ALGORITHM: binomial; MPIR_CVAR_SCATTERV_INTRA_ALGORITHM:
# linear, the root sending every block itself).
MPICH_ALGORITHMS = {
    "bcast": ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather"),
    "allgather": ("brucks", "recursive_doubling", "ring"),
    "allreduce": ("recursive_doubling", "reduce_scatter_allgather", "ring"),
    "reduce": ("binomial", "reduce_scatter_gather"),
    "barrier": ("k_dissemination", "recexch"),
    "scatter": ("binomial",),
    "scatterv": ("linear",),
}
OURS_BY_OP = {  # ours forced (AAPC_<OP>=...), then the selection
    "bcast": ("hier", "ring", "chain", "mcast", "auto"),
    "allgather": ("hier", "ring", "phased", "mcast", "auto"),
    "allreduce": ("hier", "ring", "lanes", "auto"),
    "reduce": ("hier", "chain", "auto"),
    "barrier": ("hier", "auto"),
    "scatter": ("hier", "mcast", "auto"),
    "scatterv": ("hier", "auto"),
}
OURS = ("hier", "ring", "phased", "chain", "mcast", "lanes", "auto")
OURS_ONE_MACHINE = ("hier", "auto")  # ring, phased, mcast: between machines
DEFAULT_TOPOLOGY = "topologies/two-switch-4-4.yaml"
DEFAULT_SIZES = "8,64,512,4K,32K,256K,1M,4M"
MIN_CALL_S = 2e-3  # the least a call is expected to take (latency, 16 ranks on 2 cores)
EXPENSIVE_S = 0.5  # expected seconds per call from which a size gets no warm-up call (the
# checked call before the timed ones warms it up already)
MIN_CALL_ONE_MACHINE_S = 5e-6  # a small call on one machine whose ranks have a core each
MACHINE_BPS = 2e8  # bytes per second a call copies on one machine, for choosing the calls: low
# (oversubscribed MPICH, busy-polling: a bcast of 256 KB of 8 ranks on 2 cores takes 50-150 ms)


@dataclass(frozen=True)
class Candidate:
    name: str  # native-default, native-<algorithm>, hier, ring, phased, auto
    env: tuple[tuple[str, str], ...]


def candidates(op: str, algorithms: tuple[str, ...], ours: tuple[str, ...]) -> list[Candidate]:
    """MPICH's default, its forced algorithms, then those of ``ours`` that ``op`` has: the
    environment of each."""
    var = f"AAPC_{op.upper()}"
    out = [Candidate("native-default", ((var, "native"),))]
    cvar = f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"
    for alg in algorithms:
        # MPICH says so when the forced algorithm does not fit a call (and runs its own choice
        # then); the timer counts it per size (COLL_TIMER_FALLBACKS)
        env = (
            (var, "native"),
            (cvar, alg),
            ("MPIR_CVAR_COLLECTIVE_FALLBACK", "print"),
            ("COLL_TIMER_FALLBACKS", "1"),
        )
        out.append(Candidate(f"native-{alg}", env))
    out += [Candidate(way, ((var, way),)) for way in OURS_BY_OP[op] if way in ours]
    return out


def link_volume(op: str, size: int, topo: Topology) -> float:
    """Bytes over the busiest link in one call, roughly (for choosing the number of calls): a
    bcast or reduce moves the vector about twice (scatter + allgather, reduce-scatter + gather),
    an allreduce twice per rank of a machine, an allgather every rank's block across the cut, a
    scatter or scatterv every other rank's block out of the root (mostly over the root's link)."""
    ranks = topo.n_machines * topo.ranks_per_machine
    if op == "allgather":
        return size * ranks
    if op in ("scatter", "scatterv"):
        return size * (ranks - 1)
    if op == "allreduce":
        return 2.0 * size * topo.ranks_per_machine
    if op == "barrier":
        return 0.0
    return 2.0 * size


def expected_seconds(op: str, size: int, topo: Topology, rate: float) -> float:
    return max(MIN_CALL_S, link_volume(op, size, topo) / rate)


def machine_volume(op: str, size: int, ranks: int) -> float:
    """Bytes one call copies on one machine, roughly: every rank's result (an allgather's is
    every rank's block), none for a barrier."""
    if op == "barrier":
        return 0.0
    return float(size * ranks * (ranks if op == "allgather" else 1))


def expected_seconds_one_machine(op: str, size: int, ranks: int, cpus: int) -> float:
    """A call of ``ranks`` ranks on one machine of ``cpus`` cores: at least MIN_CALL_S and slower
    by ranks / cpus when oversubscribed (the ranks wait for a core in turn), at least
    MIN_CALL_ONE_MACHINE_S when every rank has a core (calls of microseconds: raise
    --max-iters to time enough of them)."""
    over = ranks > cpus
    least = MIN_CALL_S if over else MIN_CALL_ONE_MACHINE_S
    seconds = max(least, machine_volume(op, size, ranks) / MACHINE_BPS)
    return seconds * (ranks / cpus if over else 1.0)


def ms(value: float) -> str:
    """Milliseconds for a table: three decimals, five below 0.1 ms (calls of microseconds on
    one machine)."""
    return f"{value:.5f}" if value < 0.1 else f"{value:.3f}"


def choose_calls(seconds: float, target_s: float, max_iters: int) -> tuple[int, int]:
    """(timed calls, warm-up calls) for a call expected to take ``seconds``: about
    ``target_s`` of timed calls, from 1 to ``max_iters``; no warm-up for an expensive one."""
    calls = max(1, min(max_iters, int(target_s / seconds)))
    return calls, 0 if seconds >= EXPENSIVE_S else 1


@dataclass(frozen=True)
class Point:
    op: str
    candidate: str
    bytes: int
    repeat: int
    seconds: float
    calls: int
    cpu_busy: float  # -1: unknown
    tcp_retrans: float
    runq_wait: float


@dataclass(frozen=True)
class Summary:
    op: str
    candidate: str
    bytes: int
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    cpu_busy: float
    cpu_bound: bool
    tcp_retrans: float


def summarize(points: list[Point]) -> list[Summary]:
    groups: dict[tuple[str, str, int], list[Point]] = {}
    for p in points:
        groups.setdefault((p.op, p.candidate, p.bytes), []).append(p)
    out = []
    for (op, cand, size), ps in groups.items():
        times = [p.seconds for p in ps]
        cpu = median_known([p.cpu_busy for p in ps])
        out.append(
            Summary(
                op, cand, size, statistics.median(times), min(times), max(times), len(ps),
                cpu, cpu >= CPU_BOUND, median_known([p.tcp_retrans for p in ps]),
            )
        )  # fmt: skip
    return out


def intercepted(exe: Path) -> dict[str, bool]:
    """Whether the timer defines each MPI_<Op> itself (the library's entry) or calls MPICH's."""
    proc = subprocess.run(
        ["nm", "--defined-only", str(exe)], capture_output=True, text=True, timeout=60
    )
    defined = {line.split()[-1] for line in proc.stdout.splitlines() if line.split()}
    return {op: name in defined for op, name in MPI_NAMES.items()}


def build_timer(mpicc: str, topo: Topology, work: Path) -> Path:
    """coll_timer.c with the routines generated for ``topo`` and -DAAPC_INTERCEPT."""
    gen = work / "gen"
    generate(topo, variant_specs("receiver-all", None), gen)
    exe = work / "coll_timer"
    timer = ROOT / "runtime_c" / "bench" / "coll_timer.c"
    sources = [str(p) for p in sorted(gen.glob("*.c"))]
    cmd = [mpicc, "-std=c11", "-O2", "-DAAPC_INTERCEPT", f"-I{gen}", str(timer), *sources]
    proc = cleanup.run_tool([*cmd, "-o", str(exe)], {**os.environ, "TMPDIR": str(work)})
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["?"])[0]
        raise AapcError(f"compiling coll_timer failed: {first}")
    return exe


def ratio(num: Summary | None, den: Summary | None) -> str:
    if num is None or den is None or den.median_s <= 0:
        return ""
    return f"{num.median_s / den.median_s:.2f}x"


@dataclass
class Collected:
    """What the jobs said: measurements, the barrier baseline per operation, and per (op,
    candidate) why it failed, the sizes it skipped and where MPICH fell back."""

    points: list[Point] = field(default_factory=list)
    baselines: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)
    skipped: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    fallbacks: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)

    def add(self, op: str, cand: str, repeat: int, stdout: str) -> None:
        """One job's output (coll_timer.c's lines)."""
        for t in parse_timer_lines(stdout):
            if t.candidate == "barrier-baseline":
                self.baselines.setdefault(op, []).append(t.seconds)
            else:
                self.points.append(
                    Point(
                        op, cand, t.bytes, repeat, t.seconds, t.calls, t.cpu_busy,
                        t.tcp_retrans, t.runq_wait,
                    )
                )  # fmt: skip
        for line in stdout.splitlines():
            f = line.split()
            if len(f) == 3 and f[0] == "skip":
                self.skipped.setdefault((op, cand), set()).add(int(f[2]))
            elif len(f) == 4 and f[0] == "fallback":
                said = self.fallbacks.setdefault((op, cand), {})
                said[int(f[2])] = said.get(int(f[2]), 0) + int(f[3])

    def baseline_ms(self, op: str) -> float | None:
        b = self.baselines.get(op)
        return 1e3 * statistics.median(b) if b else None


def setting_emulated(topo: Topology, rate: float) -> str:
    """Where an emulated run ran, for the tables' headings."""
    ranks = topo.n_machines * topo.ranks_per_machine
    return (
        f"{topo.name}: {topo.n_machines} machines x {topo.ranks_per_machine} ranks = {ranks} "
        f"ranks on {os.cpu_count() or 1} cores, {format_bandwidth(rate)} links"
    )


def setting_one_machine(ranks: int) -> str:
    """Where a --one-machine run ran, for the tables' headings."""
    cores = os.cpu_count() or 1
    over = " (oversubscribed)" if ranks > cores else ""
    return f"one machine: {ranks} ranks on {cores} cores{over}"


def table(
    op: str,
    names: list[str],
    summary: list[Summary],
    got: Collected,
    setting: str,
    ranks: int,
    hooked: bool,
    slow_s: float,
    sync: str = "MPICH",
) -> str:
    """One operation's table: median ms per call per size and candidate, the best of MPICH's in
    bold, and the ratios (above 1: ours faster). ``setting`` says where it ran (setting_*)."""
    cores = os.cpu_count() or 1
    mine = [s for s in summary if s.op == op]
    failed = {c: why for (o, c), why in got.failed.items() if o == op}
    skipped = {(c, b) for (o, c), bs in got.skipped.items() if o == op for b in bs}
    fell = {(c, b) for (o, c), bs in got.fallbacks.items() if o == op for b in bs}
    head = f"{MPI_NAMES[op]} on {setting}; median ms per call"
    baseline = got.baseline_ms(op)
    if op != "barrier" and baseline is not None:
        head += f", each with one {sync} MPI_Barrier after it ({ms(baseline)} ms alone)"
    every_cpu = bool(mine) and all(s.cpu_bound for s in mine)
    if every_cpu:  # one note rather than a mark in every cell
        head += f"; every point CPU-bound (at least {CPU_BOUND:.0%} of the cores busy"
        head += f", {ranks} ranks on {cores} cores)" if ranks > cores else ")"
    shown = [n + ("" if hooked or n not in OURS else "*") for n in names]
    cols = ["size", *shown, "best MPICH / hier", "best MPICH / auto", "MPICH default / auto"]
    lines = [head, "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for size in sorted({s.bytes for s in mine} | {b for _, b in skipped}):
        at = {s.candidate: s for s in mine if s.bytes == size}
        mpich = [at[n] for n in names if n.startswith("native") and n in at]
        best = min(mpich, key=lambda s: s.median_s) if mpich else None
        cells = [_size(size) if op != "barrier" else "-"]
        for n in names:
            s = at.get(n)
            if s is None:
                cells.append("failed" if n in failed else "skipped" if (n, size) in skipped else "")
                continue
            text = ms(1e3 * s.median_s) + (" (cpu)" if s.cpu_bound and not every_cpu else "")
            text += " (fb)" if (n, size) in fell else ""
            cells.append(f"**{text}**" if s is best else text)
        cells += [
            ratio(best, at.get("hier")),
            ratio(best, at.get("auto")),
            ratio(at.get("native-default"), at.get("auto")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if skipped:
        lines.append(
            f"skipped: a smaller size took over {slow_s:g} s per call (that size: one call timed)"
        )
    if fell:
        lines.append(
            "(fb): MPICH could not apply the forced algorithm to these calls (it said so: "
            "MPIR_CVAR_COLLECTIVE_FALLBACK=print) and ran its own choice"
        )
    if not hooked:
        lines.append(
            f"*: this build does not define {MPI_NAMES[op]} (-DAAPC_INTERCEPT): MPICH's routine "
            "ran for hier and auto too"
        )
    for name, why in failed.items():
        lines.append(f"{name} FAILED: {why}")
    return "\n".join(lines)


def job_argv(
    exe: Path,
    op: str,
    sizes: tuple[int, ...],
    plan: list[tuple[int, int]],
    label: str,
    slow_s: float,
) -> list[str]:
    """coll_timer's command line: OP SIZES ITERS WARMUP LABEL SLOW_SECONDS."""
    return [
        str(exe),
        op,
        ",".join(map(str, sizes)),
        ",".join(str(c) for c, _ in plan),
        ",".join(str(w) for _, w in plan),
        label,
        str(slow_s),
    ]


def failure(res: cleanup.JobResult, cand: Candidate, timeout: float) -> str | None:
    """Why a job failed, None when it did not."""
    if res.timed_out:
        return f"timed out after {timeout:.0f} s"
    if res.returncode == 0 and "done" in res.stdout.splitlines():
        return None
    lines = [ln.strip() for ln in res.stderr.splitlines() if ln.strip()]
    # the timer's own words (a wrong result, an error returned) say most; else the last line
    why = next((ln for ln in lines if ln.startswith("coll_timer:")), None)
    why = why or (lines[-1] if lines else "no output")
    if "internal_Init" in why and len(cand.env) > 1:  # MPI_Init refused the environment
        why += f" (does this MPICH take {cand.env[1][0]}={cand.env[1][1]}?)"
    return f"exit {res.returncode}: {why}"


def one_machine_help() -> str:
    """The docstring's paragraph on --one-machine and its command (the --help epilog)."""
    paras = (__doc__ or "").split("\n\n")
    at = next((i for i, t in enumerate(paras) if t.startswith("With --one-machine")), len(paras))
    return "\n\n".join(paras[at : at + 2])


EMULATION_ONLY = {"rate": "100Mbit", "ranks_per_machine": 2, "prefix": "aapcc"}  # the defaults


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=one_machine_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "topology",
        nargs="?",
        default=DEFAULT_TOPOLOGY,
        help="the emulated tree; with --one-machine only what the timer's routines are "
        f"generated for (default {DEFAULT_TOPOLOGY})",
    )
    p.add_argument(
        "--one-machine",
        type=int,
        default=None,
        metavar="RANKS",
        help="RANKS ranks (at least 2) all on this host, no emulation, no root; of ours hier and "
        "auto (see below); an error with --rate, --ranks-per-machine or --prefix",
    )
    p.add_argument("--rate", help="every emulated link's rate (default 100Mbit)")
    p.add_argument("--ranks-per-machine", type=int, help="in the emulation (default 2)")
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated, from: " + ", ".join(OPS))
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="bytes: bcast's message, allgather's block per rank, the vector of doubles of "
        "allreduce and reduce, the block each rank receives in scatter and scatterv; barrier "
        "has none",
    )
    p.add_argument("--repeats", type=int, default=3, help="jobs per candidate; the median")
    p.add_argument(
        "--target-seconds",
        type=float,
        default=0.25,
        help="timed seconds per size and candidate a job aims at (the calls: from the link "
        "rate, or with --one-machine from the cores)",
    )
    p.add_argument("--max-iters", type=int, default=100, help="most timed calls per size")
    p.add_argument(
        "--slow-seconds",
        type=float,
        default=2.0,
        help="a candidate whose call takes longer is timed by one call at that size and not at "
        "larger ones",
    )
    p.add_argument(
        "--mpicc",
        help="the MPICH to measure, by its compiler wrapper (its mpiexec beside it), e.g. "
        ".mpich-sock/bin/mpicc of `make mpich-sock`; default: the venv's",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per MPI job")
    p.add_argument("--prefix", help="emulation namespace name prefix (default aapcc)")
    p.add_argument("-o", "--output", default=None, help="write DIR/bench_coll.json")
    a = p.parse_args()
    path = Path(a.topology)
    if not path.exists() and not path.is_absolute() and (ROOT / path).exists():
        path = ROOT / path  # the default, from anywhere
    if not path.is_file():
        p.error(f"topology file '{a.topology}' does not exist")
    a.topology_path = path
    a.op_list = tuple(o.strip() for o in a.ops.split(",") if o.strip())
    bad = [o for o in a.op_list if o not in OPS]
    if bad or not a.op_list:
        p.error(f"--ops: '{(bad or [a.ops])[0]}' is not one of {', '.join(OPS)}")
    given = [k for k in EMULATION_ONLY if getattr(a, k) is not None]
    if a.one_machine is not None and given:
        p.error(f"--{given[0].replace('_', '-')} is for the emulation, not with --one-machine")
    if a.one_machine is not None and a.one_machine < 2:
        p.error("--one-machine: give at least 2 ranks")
    for k, default in EMULATION_ONLY.items():
        setattr(a, k, default if getattr(a, k) is None else getattr(a, k))
    if a.ranks_per_machine < 1:
        p.error("--ranks-per-machine must be at least 1")
    if min(a.repeats, a.max_iters) < 1 or min(a.target_seconds, a.slow_seconds, a.timeout) <= 0:
        p.error(
            "--repeats, --max-iters, --target-seconds, --slow-seconds and --timeout must be "
            "positive"
        )
    try:
        a.size_list = parse_sizes(a.sizes)
        a.rate_bps = parse_rate_option(a.rate)
    except InputError as exc:
        p.error(str(exc))
    if a.rate_bps is None:
        p.error("--rate: give a link rate, e.g. 100Mbit")
    return a


def call_plan(
    op: str, a: argparse.Namespace, topo: Topology
) -> tuple[tuple[int, ...], list[tuple[int, int]]]:
    """The sizes of ``op`` and (timed calls, warm-up calls) at each: from the time a call should
    take at the link rate, or on one machine from the cores."""
    op_sizes = (0,) if op == "barrier" else a.size_list
    if a.one_machine is None:
        seconds = [expected_seconds(op, s, topo, a.rate_bps) for s in op_sizes]
    else:
        cpus = os.cpu_count() or 1
        seconds = [expected_seconds_one_machine(op, s, a.one_machine, cpus) for s in op_sizes]
    return op_sizes, [choose_calls(t, a.target_seconds, a.max_iters) for t in seconds]


def job_command(
    em: emulate.Emulation | None,
    mpiexec: str,
    argv: list[str],
    cand: Candidate,
    base_env: dict[str, str],
    a: argparse.Namespace,
) -> tuple[list[str], dict[str, str]]:
    """One job's command and environment: on one machine (``em`` None) mpiexec -n RANKS with the
    candidate's environment added to ``base_env``; in the emulation emulate.mpiexec_command's
    (the candidate's environment in -genv)."""
    if em is None:
        return [mpiexec, "-n", str(a.one_machine), *argv], {**base_env, **dict(cand.env)}
    cmd = emulate.mpiexec_command(em, mpiexec, argv, dict(cand.env), a.ranks_per_machine)
    return cmd, base_env


def emulation(
    a: argparse.Namespace, topo: Topology
) -> contextlib.AbstractContextManager[emulate.Emulation | None]:
    """The emulated tree the jobs run in, or nothing on one machine."""
    if a.one_machine is not None:
        return contextlib.nullcontext()
    return emulate.emulated(topo, rate=a.rate_bps, queue=emulate.DEFAULT_QUEUE, prefix=a.prefix)


def environment(
    a: argparse.Namespace, topo: Topology, version: str, hooked: dict[str, bool], got: Collected
) -> dict[str, object]:
    """The JSON's "environment": where and how the run ran."""
    if a.one_machine is not None:
        where: dict[str, object] = {"one_machine": a.one_machine, "ranks": a.one_machine}
    else:
        where = {
            "topology": topo.name,
            "machines": topo.n_machines,
            "ranks_per_machine": topo.ranks_per_machine,
            "rate": format_bandwidth(a.rate_bps),
            "queue_bytes": emulate.DEFAULT_QUEUE,
        }
    where.update({"cpus": os.cpu_count(), "host": platform.node(), "mpi": version})
    if a.one_machine is None:
        where["tcp_congestion_control"] = tcp_congestion_control()
    return {
        **where,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "repeats": a.repeats,
        "slow_seconds": a.slow_seconds,
        "intercepted": {op: hooked[op] for op in a.op_list},
        "barrier_baseline_ms": {op: got.baseline_ms(op) for op in a.op_list},
    }


def main() -> int:
    a = parse_args()
    ops = a.op_list
    topo = replace(load_topology(a.topology_path), ranks_per_machine=a.ranks_per_machine)
    one = a.one_machine is not None
    ranks = a.one_machine if one else topo.n_machines * topo.ranks_per_machine
    setting = setting_one_machine(ranks) if one else setting_emulated(topo, a.rate_bps)
    if not one:
        emulate.require_root()

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    mpicc, mpiexec = mpi_tool(a.mpicc, "mpicc"), mpi_tool(a.mpicc, "mpiexec")
    flavour, version = mpi_flavour(mpicc)
    if flavour != "mpich":
        raise AapcError(f"{mpicc} is not MPICH's ({version}): this runs MPICH's mpiexec and CVARs")
    ours = OURS_ONE_MACHINE if one else OURS
    per_op = {op: candidates(op, MPICH_ALGORITHMS[op], ours) for op in ops}
    plans = {op: call_plan(op, a, topo) for op in ops}
    got = Collected()
    base_env = {**os.environ, "AAPC_QUIET": "1"}
    if a.one_machine is not None:  # MPICH's barrier, oversubscribed, would hide small calls
        base_env["COLL_TIMER_SYNC"] = "mpi"
    start = time.monotonic()
    with cleanup.workdir("aapc-bench-coll-", say) as work:
        say(f"building coll_timer (routines for {topo.name}); jobs on {setting} ...")
        exe = build_timer(mpicc, topo, work.path)
        hooked = intercepted(exe)
        say(f"{exe.name}: the library's own " + ", ".join(
            f"{MPI_NAMES[op]} {'yes' if hooked[op] else 'no (MPICH)'}" for op in ops
        ))  # fmt: skip
        with emulation(a, topo) as em:
            total, done = sum(map(len, per_op.values())) * a.repeats, 0
            for repeat in range(a.repeats):
                for op in ops:
                    cands = per_op[op]
                    k = repeat % len(cands)  # a different candidate first each repeat
                    for cand in cands[k:] + cands[:k]:
                        done += 1
                        if (op, cand.name) in got.failed:
                            continue
                        op_sizes, plan = plans[op]
                        argv = job_argv(exe, op, op_sizes, plan, cand.name, a.slow_seconds)
                        cmd, env = job_command(em, mpiexec, argv, cand, base_env, a)
                        t0 = time.monotonic()
                        res = cleanup.run_job(cmd, env, a.timeout, work)
                        took = time.monotonic() - t0
                        why = failure(res, cand, a.timeout)
                        if why is not None:
                            got.failed[(op, cand.name)] = why
                            say(f"repeat {repeat + 1}, {op} {cand.name}: FAILED ({why})")
                            continue
                        got.add(op, cand.name, repeat, res.stdout)
                        elapsed = time.monotonic() - start
                        say(
                            f"repeat {repeat + 1}/{a.repeats}, {op} {cand.name}: "
                            f"{len(op_sizes)} size(s) in {took:.1f} s ({done}/{total} jobs, "
                            f"{elapsed:.0f} s elapsed, ETA {elapsed / done * (total - done):.0f} s)"
                        )
    summary = summarize(got.points)
    report = [
        table(
            op,
            [c.name for c in per_op[op]],
            summary,
            got,
            setting,
            ranks,
            hooked[op],
            a.slow_seconds,
            "MPICH" if a.one_machine is None else "shared-memory (the library's)",
        )
        for op in ops
    ]
    print("\n\n".join(report), flush=True)
    print(f"{total} jobs in {time.monotonic() - start:.0f} s", flush=True)
    if a.output:
        out = Path(a.output)
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "environment": environment(a, topo, version, hooked, got),
            "candidates": {
                op: [{"name": c.name, "env": dict(c.env)} for c in per_op[op]] for op in ops
            },
            "plan": {
                op: [{"bytes": s, "calls": c, "warmup": w} for s, (c, w) in zip(*plans[op])]
                for op in ops
            },
            "summary": [asdict(s) for s in summary],
            "measurements": [asdict(x) for x in got.points],
            "failed": [{"op": o, "candidate": c, "why": w} for (o, c), w in got.failed.items()],
            "skipped": [
                {"op": o, "candidate": c, "bytes": sorted(bs)} for (o, c), bs in got.skipped.items()
            ],
            "fallbacks": [
                {"op": o, "candidate": c, "bytes": b, "said": n}
                for (o, c), bs in got.fallbacks.items()
                for b, n in sorted(bs.items())
            ],
            "tables": report,
        }
        (out / "bench_coll.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out / 'bench_coll.json'}", flush=True)
    return 1 if got.failed else 0


if __name__ == "__main__":
    from aapcgen.cli.failure import report

    try:
        sys.exit(main())
    except BaseException as exc:  # one line and an exit status, as the CLI (no traceback)
        sys.exit(report(exc))
