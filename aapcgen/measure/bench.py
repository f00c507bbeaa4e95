"""`aapcgen bench`: generated routines against the MPI library's MPI_Alltoall, side by side.

Measurement as in seed 002 Figure 5 (runtime_c/bench/alltoall_timer.c): warm-up calls, then
timed calls each followed by a barrier; time per call = max over ranks. One invocation runs
several MPI jobs per repeat, interleaved so every candidate sees the same machine: job 0 times the
library's default MPI_Alltoall and every generated variant; each further job times one forced
native algorithm (MPICH: MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM; SimGrid: --cfg=smpi/alltoall).

Throughput = |M|(|M|-1) * msize / time, reported with its percentage of the section 3 peak. Every
measurement records the CPU utilisation of the machine during the timed calls; above
CPU_BOUND it is flagged "cpu-bound": not a statement about the network. It also records how
long the ranks waited for a CPU (the largest share of the timed time one rank spent runnable on
a run queue); from STARVED up a row is "cpu-starved", and a ratio between two rows is CPU-fair
only when neither is.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import VariantSpec
from aapcgen.codegen.generate import generate
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Link, Topology
from aapcgen.core.resources import resource_dir
from aapcgen.core.units import format_bandwidth, parse_rate_option, shown_text
from aapcgen.measure import cleanup
from aapcgen.measure.mpi import DEFAULT_NATIVES, mpi_flavour, native_env
from aapcgen.measure.timer import parse_timer_lines

BACKENDS = ("local", "emulate", "simulate", "mpiexec")
CPU_BOUND = 0.90
STARVED = 0.05  # a rank that waited for a CPU this share of the time was starved of it
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 2**20, "MB": 2**20, "MIB": 2**20}


MAX_SIZE = 2**31 - 1  # the timers pass a block's bytes to MPI as an int count


def _one_size(item: str) -> int:
    """``4K`` -> 4096: one size, from 1 to MAX_SIZE."""
    m = re.fullmatch(r"\s*([0-9]{1,12})\s*([A-Za-z]*)\s*", item)
    if not m or m.group(2).upper() not in _UNITS:
        raise InputError(
            f"--sizes: {shown_text(item)} is not a message size (examples: 1024, 4K, 64K, 1M, "
            "8..1M)"
        )
    size = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if not 1 <= size <= MAX_SIZE:
        raise InputError(
            f"--sizes: {shown_text(item)} must be from 1 byte to 2 GiB - 1 ({MAX_SIZE})"
        )
    return size


def _size_range(item: str) -> tuple[int, ...]:
    """``8..1K`` -> 8, 16, 32, ..., 1024: the first size and its doubles up to the last."""
    lo_text, hi_text = item.split("..", 1)
    if not lo_text.strip() or not hi_text.strip():
        raise InputError(
            f"--sizes: {shown_text(item)} needs a size on each side of '..' (e.g. 8..1M)"
        )
    lo, hi = _one_size(lo_text), _one_size(hi_text)
    if lo > hi:
        raise InputError(
            f"--sizes: {shown_text(item)} runs downwards (write the smaller size first)"
        )
    return tuple(lo << k for k in range((hi // lo).bit_length()))


def parse_sizes(text: str) -> tuple[int, ...]:
    """``1K,4K,64K,1M`` -> bytes (binary prefixes, as message sizes usually are), each from 1 to
    MAX_SIZE; ``A..B`` is A and its doubles up to B (``8..1M``: every power of two from 8 B)."""
    sizes: list[int] = []
    for item in text.split(","):
        sizes.extend(_size_range(item) if ".." in item else (_one_size(item),))
    return tuple(sizes)


def with_rate(topo: Topology, rate: float | None) -> Topology:
    """The topology with every link at ``rate`` bytes/s (--rate for scaled-down experiments)."""
    if rate is None:
        return topo
    return replace(
        topo,
        bandwidth=rate,
        machine_bandwidth=(rate,) * topo.n_machines,
        links=tuple(Link(ln.a, ln.b, rate) for ln in topo.links),
    )


@dataclass(frozen=True)
class Measurement:
    candidate: str
    bytes: int
    repeat: int
    seconds: float
    iters: int
    cpu_busy: float  # fraction of the machine's CPUs busy during the timed calls; -1 unknown
    # TCP segments retransmitted / retransmission timeouts per call, summed over the machines'
    # network namespaces (emulation); -1 unknown (SimGrid, older timers, no /proc/net)
    tcp_retrans: float = -1.0
    tcp_timeouts: float = -1.0
    runq_wait: float = -1.0  # the most a rank waited for a CPU, share of the time; -1 unknown


@dataclass(frozen=True)
class Summary:
    candidate: str
    bytes: int
    median_s: float
    min_s: float
    max_s: float
    throughput_mbps: float  # MB/s (1e6 bytes) at the median time
    percent_of_peak: float
    cpu_busy: float  # median
    cpu_bound: bool
    repeats: int
    tcp_retrans: float = -1.0  # medians per call; -1 unknown
    tcp_timeouts: float = -1.0
    runq_wait: float = -1.0  # median
    cpu_starved: bool = False  # runq_wait >= STARVED


def median_known(values: list[float]) -> float:
    """Median of the values >= 0; -1 when there are none."""
    known = [v for v in values if v >= 0]
    return statistics.median(known) if known else -1.0


def parse_timer_output(text: str, rename: dict[str, str], repeat: int) -> list[Measurement]:
    """A timer's output (measure/timer.py) as rows of repeat ``repeat``, candidates renamed."""
    return [
        Measurement(
            rename.get(t.candidate, t.candidate),
            t.bytes,
            repeat,
            t.seconds,
            t.calls,
            t.cpu_busy,
            t.tcp_retrans,
            t.tcp_timeouts,
            t.runq_wait,
        )  # fmt: skip
        for t in parse_timer_lines(text)
    ]


def summarize(
    rows: list[Measurement], n_machines: int, peak: float, pairs: int | None = None
) -> list[Summary]:
    """Median and spread per (candidate, size); pure. Throughput counts n(n-1) pairs of blocks,
    or ``pairs`` (the sibling communicators of a split: split_peak)."""
    groups: dict[tuple[str, int], list[Measurement]] = {}
    for r in rows:
        groups.setdefault((r.candidate, r.bytes), []).append(r)
    out = []
    for (cand, size), ms in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        times = [m.seconds for m in ms]
        med = statistics.median(times)
        cpu = median_known([m.cpu_busy for m in ms])
        moved = n_machines * (n_machines - 1) if pairs is None else pairs
        tput = moved * size / med if med > 0 else 0.0
        out.append(
            Summary(
                cand,
                size,
                med,
                min(times),
                max(times),
                tput / 1e6,
                100 * tput / peak,
                cpu,
                cpu >= CPU_BOUND,
                len(ms),
                median_known([m.tcp_retrans for m in ms]),
                median_known([m.tcp_timeouts for m in ms]),
                median_known([m.runq_wait for m in ms]),
                median_known([m.runq_wait for m in ms]) >= STARVED,
            )
        )
    return out


@dataclass(frozen=True)
class Job:
    """One MPI job of a repeat: the timer's arguments, environment and candidate names."""

    label: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    rename: tuple[tuple[str, str], ...]  # timer candidate name -> reported name
    simgrid_algorithm: str | None = None


# The ways the default routine can be forced to take (AAPC_WAY; runtime_c/cluster/aapc_cluster.h)
WAYS = ("library", "phases", "leaders", "loground")


def plan_jobs(
    flavour: str,
    natives: tuple[str, ...],
    sizes: tuple[int, ...],
    target_s: float,
    max_iters: int,
    ways: tuple[str, ...] = (),
    ours: tuple[str, ...] = (),
) -> list[Job]:
    """Job 0: the MPI library's default routine; job 1: ours, the timer's candidates named
    in ``ours`` (generated variants, run-time routines), if any; then one job per forced native
    algorithm, forced the way the MPI ``flavour`` (mpich, openmpi, simgrid; measure/mpi.py)
    needs; then one job per forced way of the default routine (``auto`` with AAPC_WAY, named
    auto/WAY). Ours never share a job with the library's routines: a job's connections carry
    TCP state from one call to the next, and MPICH's contended exchanges (thousands of
    retransmissions per call) left them slow for the calls after them (4+4 tree, 4 ranks per
    machine, 32 KB: the run-time routine 1457 ms after MPICH's default in one job, 771 ms in
    a job of its own; docs/measurements/cpu-fairness.md)."""
    common = (
        "--bytes",
        ",".join(map(str, sizes)),
        "--repeats",
        "1",
        "--warmup",
        "1",
        "--target-seconds",
        str(target_s),
        "--iters",
        str(max_iters),
        "--min-iters",
        "3",
    )
    jobs = [
        Job("native-default", (*common, "--only", "native"), (), (("native", "native-default"),))
    ]
    if ours:
        jobs.append(Job("ours", (*common, "--only", ",".join(ours)), (), ()))
    for alg in natives:
        rename = (("native", f"native-{alg}"),)
        if flavour == "simgrid":
            jobs.append(Job(f"native-{alg}", (*common, "--only", "native"), (), rename, alg))
        else:
            env = native_env(flavour, alg)
            jobs.append(Job(f"native-{alg}", (*common, "--only", "native"), env, rename))
    for way in ways:
        env = (("AAPC_WAY", way),)
        jobs.append(
            Job(f"auto/{way}", (*common, "--only", "auto"), env, (("auto", f"auto/{way}"),))
        )
    return jobs


@dataclass(frozen=True)
class BenchConfig:
    topology: Topology
    backend: str
    sizes: tuple[int, ...]
    variants: list[VariantSpec]
    natives: tuple[str, ...] | None  # None: the MPI's defaults (measure/mpi.py DEFAULT_NATIVES)
    repeats: int
    target_seconds: float
    max_iters: int
    rate: float | None
    queue: int
    out_dir: Path
    hostfile: str | None = None
    launcher: str | None = None
    timeout: float = 3600.0
    prefix: str = "aapc"  # emulate: name prefix of namespaces and interfaces
    mpicc: str | None = None  # the MPI's compiler wrapper (None: the venv's, then PATH's)
    runtime: tuple[str, ...] = ()  # run-time scheduled routines to time too (runtime-<sync>)
    # "rows:K" | "columns:K": time on MPI_COMM_WORLD's sub-communicators, all at once
    # (alltoall_timer.c --split; the runtime-* routines also as "<name>+union")
    split: str | None = None
    # write the generated routines' time-lines (AAPC_TRACE, measure/timeline.py) under
    # out_dir/timeline: one plot and account per candidate and size
    timeline: bool = False
    # the default routine (auto) once more per way forced with AAPC_WAY (WAYS), as auto/WAY
    ways: tuple[str, ...] = ()
    # simulate: SimGrid settings (name:value) added last to every smpirun, e.g. the per-message
    # overheads smpi/os, smpi/or (platforms/simgrid.py smpirun_command)
    simgrid_cfg: tuple[str, ...] = ()
    # False: the generated variants are built (the run-time routines live beside them) but not
    # timed; only the library's routines and the run-time ones are (tuning/bench_crossover.py)
    time_variants: bool = True
    # the selection's constants compiled into the routines (aapcgen tune's model.json, read by
    # aapcgen.tune.model.read_model); None: the built-in ones
    model: dict[str, float] | None = None

    @classmethod
    def from_args(
        cls,
        a: argparse.Namespace,
        topology: Topology,
        sizes: tuple[int, ...],
        variants: list[VariantSpec],
        natives: tuple[str, ...] | None,
        out_dir: Path,
        backends: tuple[str, ...] = BACKENDS,
    ) -> BenchConfig:
        """The options every measuring command shares (cli/options.py run_options), checked."""
        if a.backend not in backends:
            raise InputError(
                f"--backend: unknown backend '{a.backend}' (choose from: {', '.join(backends)})"
            )
        if a.repeats < 1:
            raise InputError(f"--repeats must be at least 1, got {a.repeats}")
        if a.max_iters < 1:
            raise InputError(f"--max-iters must be at least 1, got {a.max_iters}")
        for name, value in (("--target-seconds", a.target_seconds), ("--timeout", a.timeout)):
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"{name} must be a positive number of seconds, got {value}")
        return cls(
            topology, a.backend, sizes, variants, natives, a.repeats, a.target_seconds,
            a.max_iters, parse_rate_option(a.rate), a.queue, out_dir, a.hostfile, a.launcher,
            a.timeout, a.prefix, a.mpicc,
        )  # fmt: skip


Runner = Callable[[Job, Path], str]


def mpi_bin(cfg: BenchConfig, name: str) -> str:
    """``mpicc`` or ``mpiexec`` of the MPI being measured (``mpi_tool`` of ``cfg.mpicc``)."""
    return mpi_tool(cfg.mpicc, name)


def mpi_tool(mpicc: str | None, name: str) -> str:
    """``mpicc`` or ``mpiexec`` of the MPI being measured: ``mpicc`` and the mpiexec beside it
    (with the same suffix: Debian's mpicc.openmpi sits beside mpiexec.openmpi), else the venv's,
    else PATH's."""
    if mpicc:
        if name == "mpicc":
            return mpicc
        path = Path(shutil.which(mpicc) or mpicc)
        suffix = path.name[len("mpicc") :] if path.name.startswith("mpicc") else ""
        sibling = path.parent / (name + suffix)
        return str(sibling) if sibling.exists() else name
    return bin_path(name)


def bin_path(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def _check(
    cmd: list[str], env: dict[str, str], timeout: float, work: cleanup.Workdir | None = None
) -> str:
    """Run one MPI job (measure/cleanup.py: stopped cleanly on a timeout or an interruption,
    nothing left behind); its output, or AapcError with the last line it printed."""
    proc = cleanup.run_job(cmd, env, timeout, work)
    if proc.timed_out:
        raise AapcError(f"benchmark job timed out after {timeout:.0f} s: {shlex.join(cmd[:6])} ...")
    if proc.returncode != 0 or "done" not in proc.stdout.splitlines():
        tail = (
            proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"]
        )[-1]
        raise AapcError(f"benchmark job failed (exit {proc.returncode}): {tail}")
    return proc.stdout


@contextlib.contextmanager
def runner(cfg: BenchConfig, work: cleanup.Workdir | None = None) -> Iterator[tuple[Runner, str]]:
    """A function running one job's timer on the chosen backend, and the compiler to build it;
    with ``work``, the jobs' leftovers are recorded there and removed (measure/cleanup.py)."""
    n = cfg.topology.n_machines * cfg.topology.ranks_per_machine  # MPI ranks
    base_env = {**os.environ, "AAPC_QUIET": "1"}
    if cfg.backend == "local":
        yield (
            (
                lambda job, exe: _check(
                    [mpi_bin(cfg, "mpiexec"), "-n", str(n), str(exe), *job.args],
                    {**base_env, **dict(job.env)},
                    cfg.timeout,
                    work,
                )
            ),
            mpi_bin(cfg, "mpicc"),
        )
    elif cfg.backend == "mpiexec":
        if cfg.launcher:
            launch = shlex.split(cfg.launcher)
        else:
            launch = [
                mpi_bin(cfg, "mpiexec"),
                "-n",
                str(n),
                *(["-f", cfg.hostfile] if cfg.hostfile else []),
            ]
        yield (
            (
                lambda job, exe: _check(
                    [*launch, str(exe), *job.args],
                    {**base_env, **dict(job.env)},
                    cfg.timeout,
                    work,
                )
            ),
            mpi_bin(cfg, "mpicc"),
        )
    elif cfg.backend == "emulate":
        from aapcgen.platforms import emulate

        with emulate.emulated(
            cfg.topology, rate=cfg.rate, queue=cfg.queue, prefix=cfg.prefix
        ) as em:
            # Open MPI's mpirun and MPICH's hydra take different options: the command by flavour
            launch = (
                emulate.ompi_command
                if mpi_flavour(mpi_bin(cfg, "mpicc"))[0] == "openmpi"
                else emulate.mpiexec_command
            )

            def run(job: Job, exe: Path) -> str:
                cmd = launch(
                    em,
                    mpi_bin(cfg, "mpiexec"),
                    [str(exe), *job.args],
                    dict(job.env),
                    cfg.topology.ranks_per_machine,
                )
                return _check(cmd, base_env, cfg.timeout, work)

            yield run, mpi_bin(cfg, "mpicc")
    elif cfg.backend == "simulate":
        from aapcgen.platforms import simgrid

        simgrid.check_mappings(n, max(cfg.sizes, default=0))
        with (
            contextlib.nullcontext(str(work.path)) if work
            else tempfile.TemporaryDirectory(prefix="aapc-sim-")
        ) as tmp:  # fmt: skip
            platform_file, hostfile = simgrid.export_simgrid(cfg.topology, Path(tmp), rate=cfg.rate)

            def run(job: Job, exe: Path) -> str:
                cmd = simgrid.smpirun_command(
                    platform_file,
                    hostfile,
                    n,
                    exe,
                    list(job.args),
                    job.simgrid_algorithm,
                    cfg.simgrid_cfg,
                )
                # SMPI runs every rank in one process, scheduled cooperatively: a machine's
                # ranks meet in MPI messages over the host's loopback link, not in a shared
                # segment whose waits would never yield to the simulation
                env = {**base_env, "AAPC_SHM": "0", **dict(job.env)}
                return _check(cmd, env, cfg.timeout, work)

            yield run, "smpicc"
    else:
        raise InputError(f"unknown backend '{cfg.backend}' (choose from: {', '.join(BACKENDS)})")


def compile_timer(mpicc: str, gen_dir: Path, exe: Path) -> None:
    sources = [str(p) for p in sorted(gen_dir.glob("*.c"))]
    timer = resource_dir("runtime_c") / "bench" / "alltoall_timer.c"
    cmd = [mpicc, "-std=c11", "-O2", f"-I{gen_dir}", str(timer), *sources, "-o", str(exe)]
    # the compiler's own temporary files go beside the executable (removed with its folder)
    env = {**os.environ, "TMPDIR": str(exe.parent)}
    proc = cleanup.run_tool(cmd, env)
    if proc.returncode != 0:
        raise AapcError(
            f"compiling the benchmark failed: {(proc.stderr.strip().splitlines() or ['?'])[0]}"
        )


def run_bench(cfg: BenchConfig, progress: Callable[[str], None]) -> list[Measurement]:
    rows: list[Measurement] = []
    with cleanup.workdir("aapc-bench-", progress) as work, runner(cfg, work) as (run, mpicc):
        tmp = work.path
        flavour = "simgrid" if cfg.backend == "simulate" else mpi_flavour(mpicc)[0]
        natives = cfg.natives if cfg.natives is not None else DEFAULT_NATIVES.get(flavour, ())
        # the timer skips runtime-* unless named
        timed = cfg.variants if cfg.time_variants else []
        ours = (*(v.label for v in timed), *cfg.runtime)
        jobs = plan_jobs(
            flavour, natives, cfg.sizes, cfg.target_seconds, cfg.max_iters, cfg.ways, ours
        )
        if cfg.split:
            jobs = [replace(j, args=(*j.args, "--split", cfg.split)) for j in jobs]
        gen_dir = Path(tmp) / "gen"
        generate(cfg.topology, cfg.variants, gen_dir, model=cfg.model)
        if cfg.timeline:
            (Path(tmp) / "trace").mkdir(exist_ok=True)
        exe = Path(tmp) / "alltoall_timer"
        if cfg.backend == "simulate":
            from aapcgen.platforms import simgrid

            simgrid.compile_timer(gen_dir, exe)
        else:
            compile_timer(mpicc, gen_dir, exe)
        total, done, start = len(jobs) * cfg.repeats, 0, time.monotonic()
        for repeat in range(cfg.repeats):
            for job in jobs:
                # --seed: the candidates' order within the job changes with the repeat
                out = run(replace(job, args=(*job.args, "--seed", str(repeat))), exe)
                measured = parse_timer_output(out, dict(job.rename), repeat)
                if (
                    cfg.backend == "simulate"
                ):  # the simulator's own CPU use says nothing of the network
                    measured = [replace(m, cpu_busy=-1.0) for m in measured]
                rows += measured
                done += 1
                elapsed = time.monotonic() - start
                eta = elapsed / done * (total - done)
                progress(
                    f"repeat {repeat + 1}/{cfg.repeats}, {job.label}: done ({done}/{total} jobs, "
                    f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s)"
                )
        if cfg.timeline:  # one more run of the generated routines, traced, not in the table
            prefix = Path(tmp) / "trace" / "aapc"
            trace_env = (*jobs[0].env, ("AAPC_TRACE", str(prefix)))
            names = ",".join([*(v.label for v in cfg.variants), *cfg.runtime])
            run(
                replace(jobs[0], env=trace_env, args=(*jobs[0].args, "--only", names)), exe
            )  # the last --only counts
            write_timelines(cfg, prefix, progress)
    return rows


def write_timelines(cfg: BenchConfig, prefix: Path, progress: Callable[[str], None]) -> None:
    """The traced calls (AAPC_TRACE=prefix) as cfg.out_dir/timeline/<candidate>-<size>.png and
    accounts in timeline.txt: for each generated candidate and size, its call of median
    duration. The raw trace files are kept beside them."""
    from aapcgen.measure import timeline

    out = cfg.out_dir / "timeline"
    out.mkdir(parents=True, exist_ok=True)
    calls = timeline.read_traces(prefix)
    topo = with_rate(cfg.topology, cfg.rate)
    peak = peak_of(cfg.topology, cfg.rate)
    n = cfg.topology.n_machines * cfg.topology.ranks_per_machine
    lines = []
    for name in sorted({c.schedule for c in calls}):
        for size in sorted({c.bytes for c in calls if c.schedule == name}):
            call = timeline.median_call([c for c in calls if c.schedule == name], None, size)
            bound = n * (n - 1) * size / peak
            png = out / f"{name}-{size}.png"
            timeline.plot(topo, call, bound, png)
            lines.append(timeline.report(topo, call, bound))
    (out / "timeline.txt").write_text("\n".join(lines) + "\n")
    for f in prefix.parent.glob(prefix.name + ".*"):
        shutil.copy(f, out / f.name)
    progress(f"time-lines of {len(lines)} candidate(s) and size(s) in {out}")


def write_outputs(
    cfg: BenchConfig,
    rows: list[Measurement],
    summary: list[Summary],
    peak: float,
    pairs: int | None = None,
) -> list[Path]:
    """CSV, JSON and plot; ``pairs``: the pairs of blocks a call moves when not n(n-1) (a split,
    split_peak)."""
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    n = cfg.topology.n_machines
    csv_path, json_path, png_path = (
        cfg.out_dir / f for f in ("results.csv", "results.json", "throughput.png")
    )
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "candidate",
                "bytes",
                "repeat",
                "seconds",
                "iters",
                "throughput_MBps",
                "percent_of_peak",
                "cpu_busy",
                "cpu_bound",
                "tcp_retrans_per_call",
                "tcp_timeouts_per_call",
                "runq_wait",
            ]
        )
        for r in rows:
            moved = n * (n - 1) if pairs is None else pairs
            tput = moved * r.bytes / r.seconds if r.seconds > 0 else 0.0
            w.writerow(
                [
                    r.candidate,
                    r.bytes,
                    r.repeat,
                    f"{r.seconds:.9f}",
                    r.iters,
                    f"{tput / 1e6:.3f}",
                    f"{100 * tput / peak:.2f}",
                    f"{r.cpu_busy:.3f}",
                    r.cpu_busy >= CPU_BOUND,
                    f"{r.tcp_retrans:.2f}",
                    f"{r.tcp_timeouts:.3f}",
                    f"{r.runq_wait:.3f}",
                ]
            )
    env = {
        "topology": cfg.topology.name,
        "machines": n,
        "backend": cfg.backend,
        "rate": format_bandwidth(cfg.rate) if cfg.rate else "from topology",
        "queue_bytes": cfg.queue if cfg.backend == "emulate" else None,
        "peak_MBps": peak / 1e6,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "mpi": _mpi_version(),
        "tcp_congestion_control": tcp_congestion_control(),
        "split": cfg.split,
    }
    json_path.write_text(
        json.dumps(
            {
                "environment": env,
                "summary": [asdict(s) for s in summary],
                "measurements": [asdict(r) for r in rows],
            },
            indent=1,
        )
    )
    plot(summary, peak, f"{cfg.topology.name} ({cfg.backend}, {n} machines)", png_path)
    return [csv_path, json_path, png_path]


def tcp_congestion_control() -> str:
    """The host's TCP congestion control (new namespaces inherit it); "unknown" elsewhere."""
    try:
        return Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    except OSError:
        return "unknown"


def _mpi_version() -> str:
    try:
        out = subprocess.run(
            [bin_path("mpichversion")], capture_output=True, text=True, timeout=10
        ).stdout
        return " ".join(out.split()[:3]) or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def plot(summary: list[Summary], peak: float, title: str, path: Path) -> None:
    """Throughput against message size, one line per candidate, the peak as a line (seed 002 Fig. 7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for cand in sorted({s.candidate for s in summary}):
        pts = sorted((s for s in summary if s.candidate == cand), key=lambda s: s.bytes)
        sizes = [s.bytes for s in pts]
        style = "--" if cand.startswith("native") else "-"
        ax.plot(sizes, [s.throughput_mbps for s in pts], style, marker="o", label=cand)
    ax.axhline(peak / 1e6, color="black", linewidth=1.5, label="peak (bottleneck bound)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size per pair (bytes)")
    ax.set_ylabel("aggregate throughput (MB/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report_table(summary: list[Summary]) -> str:
    lines = [
        "| size | candidate | median MB/s | time median (min-max) ms | % of peak | CPU busy "
        "| waiting for a CPU | TCP retrans / timeouts per call | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        notes = ["cpu-starved"] if s.cpu_starved else []
        notes += ["cpu-bound: not network-bound"] if s.cpu_bound else []
        cpu = f"{100 * s.cpu_busy:.0f}%" if s.cpu_busy >= 0 else "?"
        wait = f"{100 * s.runq_wait:.0f}%" if s.runq_wait >= 0 else "?"
        lines.append(
            f"| {_size(s.bytes)} | {s.candidate} | {s.throughput_mbps:.2f} | {1e3 * s.median_s:.2f} "
            f"({1e3 * s.min_s:.2f}-{1e3 * s.max_s:.2f}) | {s.percent_of_peak:.1f} | {cpu} | {wait} "
            f"| {tcp_cell(s.tcp_retrans, s.tcp_timeouts)} | {'; '.join(notes)} |"
        )
    return "\n".join(lines)


def tcp_cell(retrans: float, timeouts: float) -> str:
    """The TCP column of the report tables: retransmitted segments / timeouts per call."""
    if retrans < 0 or timeouts < 0:
        return "?"
    return f"{retrans:.1f} / {timeouts:.2f}"


def cpu_fairness(rows: list[Summary]) -> str:
    """Whether a ratio between these rows is CPU-fair: none of them was starved of CPU."""
    starved = list(dict.fromkeys(s.candidate for s in rows if s.cpu_starved))
    if starved:
        return f" (not CPU-fair: {', '.join(starved)} waited for a CPU)"
    if any(s.runq_wait < 0 for s in rows):
        return " (CPU fairness unknown)"
    return " (CPU-fair)"


def best_ratios(summary: list[Summary]) -> str:
    """Per size: best generated variant against the best native algorithm (median throughput)."""
    lines = []
    for size in sorted({s.bytes for s in summary}):
        at = [s for s in summary if s.bytes == size]
        gen = max(
            (s for s in at if not s.candidate.startswith("native")),
            key=lambda s: s.throughput_mbps,
            default=None,
        )
        nat = max(
            (s for s in at if s.candidate.startswith("native")),
            key=lambda s: s.throughput_mbps,
            default=None,
        )
        default = next((s for s in at if s.candidate == "native-default"), None)
        if gen and nat:
            vs_default = (
                f", {gen.throughput_mbps / default.throughput_mbps:.2f}x native-default"
                if default
                else ""
            )
            fairness = cpu_fairness([s for s in (gen, nat, default) if s])
            lines.append(
                f"{_size(size)}: best generated {gen.candidate} {gen.percent_of_peak:.1f}% of peak, "
                f"{gen.throughput_mbps / nat.throughput_mbps:.2f}x the best native ({nat.candidate})"
                f"{vs_default}{fairness}"
            )
    return "\n".join(lines)


def _size(b: int) -> str:
    for unit, factor in (("M", 2**20), ("K", 1024)):
        if b >= factor and b % factor == 0:
            return f"{b // factor}{unit}"
    return str(b)


def split_colors(spec: str, ranks: int) -> list[int]:
    """The colour of every rank of a ``--split`` spec (alltoall_timer.c): ``rows:K`` (rank / K)
    or ``columns:K`` (rank mod K)."""
    kind, _, k = spec.partition(":")
    if kind not in ("rows", "columns") or not k.isdigit() or int(k) < 1:
        raise InputError(f"--split: '{spec}' is not rows:K or columns:K")
    return [r // int(k) if kind == "rows" else r % int(k) for r in range(ranks)]


def split_peak(topo: Topology, spec: str, rate: float | None) -> tuple[int, float]:
    """For sibling communicators of a split all calling at once (rank r on machine r): the
    rank pairs they exchange, sum of n(n-1), and the peak (bytes/s) of that union: its pairs
    over the lower bound of the union's bytes on the busiest link."""
    from aapcgen.alltoallv.schedule import lower_bound

    n = topo.n_machines
    colors = np.array(split_colors(spec, n))
    pattern = (colors[:, None] == colors[None, :]).astype(np.int64)
    np.fill_diagonal(pattern, 0)
    pairs = int(pattern.sum())
    return pairs, pairs / lower_bound(with_rate(topo, rate), pattern)


def peak_of(topo: Topology, rate: float | None) -> float:
    """Peak aggregate throughput P(P-1) msize / time for the P = N R ranks: the machines' peak
    (seed 002 section 3) scaled by the share of rank pairs whose blocks cross machines."""
    n, r = topo.n_machines, topo.ranks_per_machine
    ranks = n * r
    return analyze(with_rate(topo, rate)).peak * ranks * (ranks - 1) / (n * (n - 1) * r * r)
