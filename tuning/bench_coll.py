"""The collectives other than the all-to-all on an emulated switch tree: MPI_Bcast,
MPI_Allgather, MPI_Allreduce, MPI_Reduce, MPI_Barrier, MPI_Scatter and MPI_Scatterv, MPICH's (its
default and a few of its algorithms forced with MPIR_CVAR_<OP>_INTRA_ALGORITHM) beside ours
(AAPC_<OP>=hier: the machine's ranks through shared memory, the leaders across machines with the
library's collective; ring: the leaders in a ring over the tree; phased: Allgather's leaders in
the tree's phases; mcast: the leaders over IP multicast; AAPC_<OP>=auto: the selection), per
size, in one table per operation. Scatter and Scatterv (root 0) send every rank a block of the
size, Scatterv with every count the same.

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
"""

from __future__ import annotations

import argparse
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
    bin_path,
    median_known,
    parse_sizes,
    tcp_congestion_control,
)
from aapcgen.measure.mpi import mpi_flavour  # noqa: E402
from aapcgen.measure.timer import parse_timer_lines  # noqa: E402
from aapcgen.platforms.emulate import DEFAULT_QUEUE  # noqa: E402

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
    "bcast": ("hier", "ring", "mcast", "auto"),
    "allgather": ("hier", "ring", "phased", "mcast", "auto"),
    "allreduce": ("hier", "ring", "auto"),
    "reduce": ("hier", "auto"),
    "barrier": ("hier", "auto"),
    "scatter": ("hier", "auto"),
    "scatterv": ("hier", "auto"),
}
OURS = ("hier", "ring", "phased", "mcast", "auto")
DEFAULT_TOPOLOGY = "topologies/two-switch-4-4.yaml"
DEFAULT_SIZES = "8,64,512,4K,32K,256K,1M,4M"
MIN_CALL_S = 2e-3  # the least a call is expected to take (latency, 16 ranks on 2 cores)
EXPENSIVE_S = 0.5  # expected seconds per call from which a size gets no warm-up call (the
# checked call before the timed ones warms it up already)


@dataclass(frozen=True)
class Candidate:
    name: str  # native-default, native-<algorithm>, hier, ring, phased, auto
    env: tuple[tuple[str, str], ...]


def candidates(op: str, algorithms: tuple[str, ...]) -> list[Candidate]:
    """MPICH's default, its forced algorithms, then ours: the environment of each."""
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
    out += [Candidate(way, ((var, way),)) for way in OURS_BY_OP[op]]
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


def table(
    op: str,
    names: list[str],
    summary: list[Summary],
    got: Collected,
    topo: Topology,
    rate: float,
    hooked: bool,
    slow_s: float,
) -> str:
    """One operation's table: median ms per call per size and candidate, the best of MPICH's in
    bold, and the ratios (above 1: ours faster)."""
    ranks = topo.n_machines * topo.ranks_per_machine
    cores = os.cpu_count() or 1
    mine = [s for s in summary if s.op == op]
    failed = {c: why for (o, c), why in got.failed.items() if o == op}
    skipped = {(c, b) for (o, c), bs in got.skipped.items() if o == op for b in bs}
    fell = {(c, b) for (o, c), bs in got.fallbacks.items() if o == op for b in bs}
    head = f"{MPI_NAMES[op]} on {topo.name}: {topo.n_machines} machines x "
    head += f"{topo.ranks_per_machine} ranks = {ranks} ranks on {cores} cores"
    head += f", {format_bandwidth(rate)} links; median ms per call"
    baseline = got.baseline_ms(op)
    if op != "barrier" and baseline is not None:
        head += f", each with one MPICH MPI_Barrier after it ({baseline:.3f} ms alone)"
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
            text = f"{1e3 * s.median_s:.3f}" + (" (cpu)" if s.cpu_bound and not every_cpu else "")
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


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology", nargs="?", default=DEFAULT_TOPOLOGY)
    p.add_argument("--rate", default="100Mbit", help="every emulated link's rate")
    p.add_argument("--ranks-per-machine", type=int, default=2)
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
        help="timed seconds per size and candidate a job aims at (the calls: from the link rate)",
    )
    p.add_argument("--max-iters", type=int, default=100, help="most timed calls per size")
    p.add_argument(
        "--slow-seconds",
        type=float,
        default=2.0,
        help="a candidate whose call takes longer is timed by one call at that size and not at "
        "larger ones",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per MPI job")
    p.add_argument("--prefix", default="aapcc", help="emulation namespace name prefix")
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


def main() -> int:
    a = parse_args()
    ops, rate = a.op_list, a.rate_bps
    topo = replace(load_topology(a.topology_path), ranks_per_machine=a.ranks_per_machine)
    ranks = topo.n_machines * topo.ranks_per_machine

    from aapcgen.platforms import emulate

    emulate.require_root()

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    mpicc, mpiexec = bin_path("mpicc"), bin_path("mpiexec")
    flavour, version = mpi_flavour(mpicc)
    if flavour != "mpich":
        raise AapcError(f"{mpicc} is not MPICH's ({version}): the emulation runs MPICH's mpiexec")
    per_op = {op: candidates(op, MPICH_ALGORITHMS[op]) for op in ops}
    plans: dict[str, tuple[tuple[int, ...], list[tuple[int, int]]]] = {}
    for op in ops:
        op_sizes = (0,) if op == "barrier" else a.size_list
        seconds = [expected_seconds(op, s, topo, rate) for s in op_sizes]
        plans[op] = (op_sizes, [choose_calls(t, a.target_seconds, a.max_iters) for t in seconds])
    got = Collected()
    base_env = {**os.environ, "AAPC_QUIET": "1"}
    start = time.monotonic()
    with cleanup.workdir("aapc-bench-coll-", say) as work:
        say(f"building coll_timer for {topo.name} ({ranks} ranks) ...")
        exe = build_timer(mpicc, topo, work.path)
        hooked = intercepted(exe)
        say(f"{exe.name}: the library's own " + ", ".join(
            f"{MPI_NAMES[op]} {'yes' if hooked[op] else 'no (MPICH)'}" for op in ops
        ))  # fmt: skip
        with emulate.emulated(topo, rate=rate, queue=DEFAULT_QUEUE, prefix=a.prefix) as em:
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
                        cmd = emulate.mpiexec_command(
                            em, mpiexec, argv, dict(cand.env), topo.ranks_per_machine
                        )
                        t0 = time.monotonic()
                        res = cleanup.run_job(cmd, base_env, a.timeout, work)
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
            op, [c.name for c in per_op[op]], summary, got, topo, rate, hooked[op], a.slow_seconds
        )
        for op in ops
    ]
    print("\n\n".join(report), flush=True)
    print(f"{total} jobs in {time.monotonic() - start:.0f} s", flush=True)
    if a.output:
        out = Path(a.output)
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "environment": {
                "topology": topo.name,
                "machines": topo.n_machines,
                "ranks_per_machine": topo.ranks_per_machine,
                "rate": format_bandwidth(rate),
                "queue_bytes": DEFAULT_QUEUE,
                "cpus": os.cpu_count(),
                "host": platform.node(),
                "mpi": version,
                "tcp_congestion_control": tcp_congestion_control(),
                "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                "repeats": a.repeats,
                "slow_seconds": a.slow_seconds,
                "intercepted": {op: hooked[op] for op in ops},
                "barrier_baseline_ms": {op: got.baseline_ms(op) for op in ops},
            },
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
