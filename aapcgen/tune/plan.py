"""The plan of a sweep: candidates, the MPI jobs of a round, the estimated cost, and budget pruning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from aapcgen.measure import bench
from aapcgen.measure.bench import BenchConfig, Job, Measurement
from aapcgen.measure.mpi import native_env
from aapcgen.tune.decide import (
    DEFAULT,
    NATIVE_PREFIX,
    Point,
    dominated,
    halve,
    is_native,
    points,
)

JOB_OVERHEAD_S = {"local": 0.5, "mpiexec": 2.0, "emulate": 2.0, "simulate": 2.0}


@dataclass(frozen=True)
class TuneConfig:
    bench: BenchConfig  # topology, backend, sizes, variants, natives, repeats, timing, launch
    flavour: str  # mpich, openmpi, simgrid, unknown
    mpi: str  # version line
    mpicc: str | None  # compiler wrapper (None: the backend's)
    budget: float | None
    validate_repeats: int
    dry_run: bool
    # also measure the per-call selection's cost model (tune/sweep.py measure_model)
    model: bool = True


def candidates(cfg: TuneConfig) -> list[str]:
    names = [DEFAULT, *(NATIVE_PREFIX + a for a in cfg.bench.natives)]
    return names + [s.label for s in cfg.bench.variants]


def group_of(candidate: str) -> str:
    """Which job measures a candidate: 'main' (the generated routines), the library's default
    or a forced native. Ours never share a job with the library's routines (measure/bench.py
    plan_jobs: a contended exchange of the library leaves the job's connections slow)."""
    return candidate if is_native(candidate) else "main"


def timer_name(candidate: str) -> str:
    return "native" if is_native(candidate) else candidate


def make_job(
    cfg: TuneConfig, group: str, cands: list[str], sizes: tuple[int, ...], env: tuple = ()
) -> Job:
    """One timer invocation measuring ``cands`` (all of one group) at ``sizes``."""
    base = bench.plan_jobs(cfg.flavour, (), sizes, cfg.bench.target_seconds, cfg.bench.max_iters)[0]
    only = ",".join(sorted({timer_name(c) for c in cands}))
    if group == "main":
        return replace(base, label="main", args=(*base.args, "--only", only), env=env, rename=())
    if group == DEFAULT:
        return replace(base, env=env)
    alg = group.removeprefix(NATIVE_PREFIX)
    rename = (("native", group),)
    if cfg.bench.backend == "simulate":
        return Job(group, (*base.args, "--only", "native"), env, rename, alg)
    return Job(
        group, (*base.args, "--only", "native"), (*native_env(cfg.flavour, alg), *env), rename
    )


def round_jobs(
    cfg: TuneConfig, todo: set[tuple[str, int]]
) -> list[tuple[Job, set[tuple[str, int]]]]:
    """The jobs measuring the (candidate, size) points ``todo`` once: per group, sizes needing the
    same candidates share one job."""
    by_group: dict[str, dict[int, set[str]]] = {}
    for cand, size in todo:
        by_group.setdefault(group_of(cand), {}).setdefault(size, set()).add(cand)
    jobs = []
    for group in sorted(by_group, key=lambda g: (g != "main", g)):
        by_set: dict[frozenset[str], list[int]] = {}
        for size, cands in by_group[group].items():
            by_set.setdefault(frozenset(cands), []).append(size)
        for cands, sizes in sorted(by_set.items(), key=lambda kv: min(kv[1])):
            job = make_job(cfg, group, sorted(cands), tuple(sorted(sizes)))
            jobs.append((job, {(c, s) for c in cands for s in sizes}))
    return jobs


def estimate_point_seconds(cfg: TuneConfig, size: int, peak: float) -> float:
    """A priori cost of one measurement: warm-up + timed calls, one call at the peak rate."""
    n = cfg.bench.topology.n_machines
    call = n * (n - 1) * size / peak
    iters = min(cfg.bench.max_iters, max(3, cfg.bench.target_seconds / call if call else 1))
    return call * (1 + iters)


def estimate(cfg: TuneConfig, todo_rounds: list[set[tuple[str, int]]], peak: float) -> float:
    overhead = JOB_OVERHEAD_S.get(cfg.bench.backend, 2.0)
    total = 0.0
    for todo in todo_rounds:
        total += sum(estimate_point_seconds(cfg, s, peak) for _, s in todo)
        total += overhead * len(round_jobs(cfg, todo))
    return total


def points_of(rows: list[Measurement], exclude: set[tuple[str, int]] | None = None) -> list[Point]:
    return points(
        (r.candidate, r.bytes, r.seconds)
        for r in rows
        if not exclude or (r.candidate, r.bytes) not in exclude
    )


def budget_prune(
    pts: list[Point],
    pruned: set[tuple[str, int]],
    remaining_s: float,
    rounds_left: int,
    cost: Callable[[str, int], float],
) -> tuple[list[tuple[str, int, str]], bool]:
    """After a round: drop dominated candidates, then halve per size while the rest of the sweep
    does not fit ``remaining_s``. Returns the new (candidate, size, reason) and whether it fits."""
    alive = [p for p in pts if (p.candidate, p.bytes) not in pruned]
    by_size: dict[int, list[Point]] = {}
    for p in alive:
        by_size.setdefault(p.bytes, []).append(p)
    drop: set[tuple[str, int]] = set()
    new: list[tuple[str, int, str]] = []
    for size, ps in by_size.items():
        # the native tuning files choose among the natives: the best one stays even when a
        # generated variant dominates it
        natives = [p for p in ps if is_native(p.candidate)]
        keep = {DEFAULT, min(natives, key=lambda p: p.median).candidate} if natives else {DEFAULT}
        for c in dominated(ps) - keep:
            drop.add((c, size))
            new.append((c, size, "dominated"))

    def projected() -> float:
        return rounds_left * sum(
            cost(p.candidate, p.bytes) for p in alive if (p.candidate, p.bytes) not in drop
        )

    while rounds_left > 0 and projected() > remaining_s:
        changed = False
        for size, ps in by_size.items():
            left = [p for p in ps if (p.candidate, p.bytes) not in drop]
            natives = [p for p in left if is_native(p.candidate)]
            protected = {DEFAULT}
            if natives:
                protected.add(min(natives, key=lambda p: p.median).candidate)
            for c in halve(left, frozenset(protected)):
                drop.add((c, size))
                new.append((c, size, "halved"))
                changed = True
        if not changed:
            break
    return new, rounds_left == 0 or projected() <= remaining_s


def shlex_args(job: Job) -> str:
    env = " ".join(f"{k}={v}" for k, v in job.env)
    return (env + " " if env else "") + " ".join(job.args)
