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

import csv
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from aapcgen.alltoallv.schedule import lower_bound
from aapcgen.codegen.generate import AlltoallvRequest, generate, stderr_progress
from aapcgen.core.errors import AapcError
from aapcgen.core.resources import resource_dir
from aapcgen.measure import cleanup
from aapcgen.measure.bench import (
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
    # in its own process group, its temporary files beside the executable (measure/cleanup.py)
    proc = cleanup.run_tool(cmd, {**os.environ, "TMPDIR": str(exe.parent)})
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


@dataclass(frozen=True)
class VBenchRequest:
    """One ``aapcgen bench-alltoallv`` run: the pattern and how the routines are built."""

    pattern: np.ndarray  # machines x machines byte counts, already scaled
    source: str  # e.g. "builtin:table3 x 4"
    pattern_name: str
    scale: int
    scheduler: str  # level 3
    runtime_scheduler: str  # levels 1 and 2
    warmup: int
    settle: float
    only: str | None


def run_vbench(cfg: BenchConfig, req: VBenchRequest) -> list[Path]:
    """Build the routines, run every candidate ``cfg.repeats`` times interleaved, print the
    table and write results.csv and results.json; returns the files written."""
    topo, rate = cfg.topology, cfg.rate
    bound = lower_bound(with_rate(topo, rate), req.pattern)
    jobs = plan_vjobs(cfg.natives, cfg.target_seconds, cfg.max_iters, req.warmup)
    rows: list[Measurement] = []
    with cleanup.workdir("aapc-vbench-") as work, runner(cfg, work) as (run, mpicc):
        tmp = work.path
        gen_dir = Path(tmp) / "gen"
        request = AlltoallvRequest(req.pattern, req.source, req.scheduler)
        gen = generate(
            with_rate(topo, rate), cfg.variants, gen_dir, alltoallv=request,
            runtime_scheduler=req.runtime_scheduler,
        )  # fmt: skip
        assert gen.alltoallv is not None
        cost = gen.alltoallv.schedule.cost
        exe = Path(tmp) / "alltoallv_timer"
        _compile(mpicc, gen_dir, exe)
        pattern_file = Path(tmp) / "pattern.txt"
        pattern_file.write_text(_pattern_text(req.pattern))
        total, done, start = len(jobs) * cfg.repeats, 0, time.monotonic()
        for repeat in range(cfg.repeats):
            for job in jobs:
                extra = ("--pattern", str(pattern_file), "--seed", str(repeat))
                extra += ("--settle", str(req.settle))
                extra += (
                    ("--only", req.only) if req.only and job.label == "native + generated" else ()
                )
                job = Job(job.label, (*job.args, *extra), job.env, job.rename)
                rows += parse_timer_output(run(job, exe), dict(job.rename), repeat)
                done += 1
                elapsed = time.monotonic() - start
                stderr_progress(
                    f"repeat {repeat + 1}/{cfg.repeats}, {job.label}: done ({done}/{total} jobs, "
                    f"{elapsed:.0f} s elapsed, ETA {elapsed / done * (total - done):.0f} s)"
                )
    summary = summarize_v(rows, bound)
    files = _write_vbench(cfg, req, rows, summary, bound, cost)
    print(report(summary, bound, cost))
    return files


CSV_FIELDS = (
    "candidate", "total_bytes", "repeat", "seconds", "iters", "cpu_busy",
    "tcp_retrans_per_call", "tcp_timeouts_per_call",
)  # fmt: skip


def _write_vbench(
    cfg: BenchConfig,
    req: VBenchRequest,
    rows: list[Measurement],
    summary: list[VSummary],
    bound: float,
    cost: float,
) -> list[Path]:
    out_dir = cfg.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for r in rows:
            w.writerow(
                [r.candidate, r.bytes, r.repeat, r.seconds, r.iters, r.cpu_busy, r.tcp_retrans,
                 r.tcp_timeouts]
            )  # fmt: skip
    meta = {
        "topology": cfg.topology.name,
        "pattern": req.pattern_name,
        "scale": req.scale,
        "scheduler": req.scheduler,
        "runtime_scheduler": req.runtime_scheduler,
        "backend": cfg.backend,
        "rate_bytes_per_s": cfg.rate,
        "mpi": _mpi_version(),
        "tcp_congestion_control": tcp_congestion_control(),
        "warmup": req.warmup,
        "settle_s": req.settle,
        "lower_bound_s": bound,
        "schedule_cost_s": cost,
        "summary": [asdict(s) for s in summary],
    }
    (out_dir / "results.json").write_text(json.dumps(meta, indent=1) + "\n")
    return [out_dir / "results.csv", out_dir / "results.json"]
