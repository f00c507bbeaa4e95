"""`aapcgen bench-alltoallv`: MPI_Alltoallv levels 1, 2 and 3 against the library's own.

The same measurement and backends as ``aapcgen bench`` (aapcgen/measure/bench.py: warm-up, barrier after
each call, adaptive iterations, repeats interleaved in one invocation, CPU busy per row), with
runtime_c/bench/alltoallv_timer.c and one byte-count pattern. Candidates: native MPI_Alltoallv
(default selection, plus forced MPICH algorithms via MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM), the
level-3 routines compiled for the pattern, and the level-1 and level-2 routines. Each row is
reported against the pattern's lower bound (max over directed links of bytes / bandwidth) and
the compiled schedule's cost (sum over phases of the slowest piece).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from aapcgen.alltoallv.schedule import SCHEDULERS, load_pattern, lower_bound
from aapcgen.codegen.generate import AlltoallvRequest, generate, stderr_progress, variant_specs
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.resources import resource_dir
from aapcgen.measure.bench import (
    BACKENDS,
    BenchConfig,
    Job,
    Measurement,
    _mpi_version,
    median_known,
    parse_timer_output,
    runner,
    tcp_cell,
    tcp_congestion_control,
    with_rate,
)

MPICH_VNATIVES = ("scattered",)


@dataclass(frozen=True)
class VSummary:
    candidate: str
    total_bytes: int
    median_s: float
    min_s: float
    max_s: float
    over_bound: float  # median time / lower bound
    speedup: float  # native-default median / this median
    cpu_busy: float
    repeats: int
    tcp_retrans: float = -1.0  # medians per call; -1 unknown
    tcp_timeouts: float = -1.0


def summarize_v(rows: list[Measurement], bound_s: float) -> list[VSummary]:
    """Median and spread per candidate; ratios to the bound and to native-default. Pure."""
    by: dict[str, list[Measurement]] = {}
    for r in rows:
        by.setdefault(r.candidate, []).append(r)
    med = {c: statistics.median(m.seconds for m in ms) for c, ms in by.items()}
    native = med.get("native-default")
    out = []
    for c, ms in sorted(by.items()):
        out.append(
            VSummary(
                candidate=c,
                total_bytes=ms[0].bytes,
                median_s=med[c],
                min_s=min(m.seconds for m in ms),
                max_s=max(m.seconds for m in ms),
                over_bound=med[c] / bound_s if bound_s > 0 else float("nan"),
                speedup=native / med[c] if native and med[c] > 0 else float("nan"),
                cpu_busy=statistics.median(m.cpu_busy for m in ms),
                repeats=len(ms),
                tcp_retrans=median_known([m.tcp_retrans for m in ms]),
                tcp_timeouts=median_known([m.tcp_timeouts for m in ms]),
            )
        )
    return out


def plan_vjobs(
    natives: tuple[str, ...], target_s: float, max_iters: int, warmup: int = 2
) -> list[Job]:
    common = ("--repeats", "1", "--warmup", str(warmup), "--target-seconds", str(target_s))
    common += ("--iters", str(max_iters), "--min-iters", "3")
    jobs = [Job("native + generated", common, (), (("native", "native-default"),))]
    for alg in natives:
        env = (("MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM", alg),)
        only = (*common, "--only", "native")
        jobs.append(Job(f"native-{alg}", only, env, (("native", f"native-{alg}"),)))
    return jobs


def _pattern_text(pattern: np.ndarray) -> str:
    rows = "\n".join(" ".join(map(str, row)) for row in pattern.tolist())
    return f"{len(pattern)}\n{rows}\n"


def _compile(mpicc: str, gen_dir: Path, exe: Path) -> None:
    timer = resource_dir("runtime_c") / "bench" / "alltoallv_timer.c"
    sources = [str(p) for p in sorted(gen_dir.glob("*.c"))]
    cmd = [mpicc, "-std=c11", "-O2", f"-I{gen_dir}", str(timer), *sources, "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["?"])[0]
        raise AapcError(f"compiling the Alltoallv benchmark failed: {first}")


def report(summary: list[VSummary], bound_s: float, cost_s: float) -> str:
    lines = [
        f"lower bound {bound_s * 1e3:.2f} ms; compiled schedule cost {cost_s * 1e3:.2f} ms "
        f"({cost_s / bound_s if bound_s else float('nan'):.3f} x bound)",
        "",
        "| candidate | median ms (min-max) | x bound | speedup vs native-default | CPU busy "
        "| TCP retrans / timeouts per call |",
        "|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s.candidate} | {s.median_s * 1e3:.2f} ({s.min_s * 1e3:.2f}-{s.max_s * 1e3:.2f}) "
            f"| {s.over_bound:.3f} | {s.speedup:.2f}x | {max(s.cpu_busy, 0) * 100:.0f}% "
            f"| {tcp_cell(s.tcp_retrans, s.tcp_timeouts)} |"
        )
    return "\n".join(lines)


def cmd_bench_alltoallv(a: argparse.Namespace) -> int:
    from aapcgen.core.topology import topology_or_builtin
    from aapcgen.core.units import parse_bandwidth

    topo = topology_or_builtin(a.topology)
    if a.backend not in BACKENDS or a.backend == "simulate":
        raise InputError(f"--backend: '{a.backend}' (choose from: local, emulate, mpiexec)")
    try:
        rate = parse_bandwidth(a.rate) if a.rate else None
    except ValueError as exc:
        raise InputError(f"--rate: {exc}") from None
    if a.scale < 1:
        raise InputError(f"--scale must be at least 1, got {a.scale}")
    if a.warmup < 0:
        raise InputError(f"--warmup must be at least 0, got {a.warmup}")
    pattern = load_pattern(a.pattern, topo) * a.scale
    if pattern.max(initial=0) > 2**31 - 1:
        raise InputError("pattern x --scale has an entry above 2^31-1 bytes (an MPI int count)")
    specs = [s for v in a.variants.split(",") for s in variant_specs(v, None)]
    natives = tuple(x for x in (a.natives or "").split(",") if x)
    out_dir = Path(a.output)
    cfg = BenchConfig(
        topo, a.backend, (0,), specs, natives, a.repeats, a.target_seconds, a.max_iters,
        rate, a.queue, out_dir, a.hostfile, a.launcher, a.timeout, a.prefix,
    )  # fmt: skip
    bound = lower_bound(with_rate(topo, rate), pattern)
    jobs = plan_vjobs(natives, a.target_seconds, a.max_iters, a.warmup)
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="aapc-vbench-") as tmp, runner(cfg) as (run, mpicc):
        gen_dir = Path(tmp) / "gen"
        request = AlltoallvRequest(pattern, f"{a.pattern} x {a.scale}", a.scheduler)
        gen = generate(
            with_rate(topo, rate), specs, gen_dir, alltoallv=request,
            runtime_scheduler=a.runtime_scheduler,
        )  # fmt: skip
        assert gen.alltoallv is not None
        cost = gen.alltoallv.schedule.cost
        exe = Path(tmp) / "alltoallv_timer"
        _compile(mpicc, gen_dir, exe)
        pattern_file = Path(tmp) / "pattern.txt"
        pattern_file.write_text(_pattern_text(pattern))
        total, done, start = len(jobs) * a.repeats, 0, time.monotonic()
        for repeat in range(a.repeats):
            for job in jobs:
                extra = ("--pattern", str(pattern_file), "--seed", str(repeat))
                extra += ("--settle", str(a.settle))
                extra += ("--only", a.only) if a.only and job.label == "native + generated" else ()
                job = Job(job.label, (*job.args, *extra), job.env, job.rename)
                rows += parse_timer_output(run(job, exe), dict(job.rename), repeat)
                done += 1
                elapsed = time.monotonic() - start
                stderr_progress(
                    f"repeat {repeat + 1}/{a.repeats}, {job.label}: done ({done}/{total} jobs, "
                    f"{elapsed:.0f} s elapsed, ETA {elapsed / done * (total - done):.0f} s)"
                )
    summary = summarize_v(rows, bound)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "candidate",
                "total_bytes",
                "repeat",
                "seconds",
                "iters",
                "cpu_busy",
                "tcp_retrans_per_call",
                "tcp_timeouts_per_call",
            ]
        )
        for r in rows:
            w.writerow(
                [
                    r.candidate,
                    r.bytes,
                    r.repeat,
                    r.seconds,
                    r.iters,
                    r.cpu_busy,
                    r.tcp_retrans,
                    r.tcp_timeouts,
                ]
            )
    meta = {
        "topology": topo.name,
        "pattern": a.pattern,
        "scale": a.scale,
        "scheduler": a.scheduler,
        "runtime_scheduler": a.runtime_scheduler,
        "backend": a.backend,
        "rate_bytes_per_s": rate,
        "mpi": _mpi_version(),
        "tcp_congestion_control": tcp_congestion_control(),
        "warmup": a.warmup,
        "settle_s": a.settle,
        "lower_bound_s": bound,
        "schedule_cost_s": cost,
        "summary": [asdict(s) for s in summary],
    }
    (out_dir / "results.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(report(summary, bound, cost))
    print(f"wrote {out_dir / 'results.csv'}, {out_dir / 'results.json'}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aapcgen bench-alltoallv``."""
    text = "Benchmark MPI_Alltoallv levels 1-3 against the MPI library's on one pattern."
    p = sub.add_parser("bench-alltoallv", help=text, description=text)
    p.add_argument("topology", metavar="TOPO.yaml")
    p.add_argument("pattern", metavar="PATTERN", help="N x N byte counts or builtin:table3")
    p.add_argument("--backend", default="local", help="local, emulate or mpiexec")
    p.add_argument("--hostfile")
    p.add_argument("--launcher")
    p.add_argument("--scale", type=int, default=1, help="multiply every count (default 1)")
    p.add_argument("--scheduler", choices=SCHEDULERS, default="balanced", help="level 3")
    p.add_argument("--runtime-scheduler", choices=SCHEDULERS, default="greedy", help="levels 1, 2")
    p.add_argument("--variants", default="receiver-all,no-sync", help="level-3 variants")
    p.add_argument("--natives", default=",".join(MPICH_VNATIVES), help="forced MPICH algorithms")
    p.add_argument(
        "--only",
        help="measure only these candidates (timer names, e.g. "
        "native,level3-receiver-all,level1-receiver-all)",
    )
    p.add_argument(
        "--settle", type=float, default=1.0, help="idle seconds before each candidate (default 1)"
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="untimed calls before each candidate's timed ones (default 2): the first call on "
        "connections another candidate left after heavy loss runs slow",
    )
    p.add_argument("--target-seconds", type=float, default=1.0)
    p.add_argument("--max-iters", type=int, default=20)
    p.add_argument("--rate", help="emulate: every link at this rate (e.g. 100mbit)")
    p.add_argument("--queue", type=int, default=100_000, help="emulate: switch port buffer bytes")
    p.add_argument("--prefix", default="aapcv", help="emulate: namespace name prefix")
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.set_defaults(func=cmd_bench_alltoallv)
