"""`aapcgen tune`: sweep every candidate on the target, choose per message size, emit a tuned routine.

Seed 002 section 6 (STAGE-MPI): users run this once on their cluster. Candidates are every
generated variant (and block size) plus the MPI library's native algorithms (MPICH: forced with
MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM; Open MPI: coll_tuned_alltoall_algorithm; SimGrid:
smpi/alltoall). The measurement is bench.py's (runtime_c/bench/alltoall_timer.c, interleaved
jobs, same backends). Every measured point goes to DIR/results.sqlite at once, one row per
(candidate, size, repeat) with its environment, so an interrupted sweep resumes where it stopped.
Then: decision (tune_decide), the tuned routine and the native tuning files (tune_render,
tune_native), an optional validation run of the tuned routine, decision.json/.md and a plot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from aapcgen.codegen.generate import generate
from aapcgen.measure import bench, cleanup
from aapcgen.measure.bench import Job, Measurement, parse_timer_output
from aapcgen.tune.decide import (
    DEFAULT,
    Choice,
    Range,
    is_native,
)
from aapcgen.tune.plan import (
    TuneConfig,
    budget_prune,
    candidates,
    group_of,
    make_job,
    points_of,
    round_jobs,
)
from aapcgen.tune.probe import mpi_library, mpich_library, native_tuning_file, tuning_file_env
from aapcgen.tune.render import TUNED, render_tuned
from aapcgen.tune.results import finish, write_results
from aapcgen.tune.store import SWEEP, VALIDATE, Store


class LazyTimer:
    """The timer program, compiled the first time a job needs it (a finished sweep needs none)."""

    def __init__(self, build: Callable[[Path], None], path: Path) -> None:
        self.build, self.path, self.built = build, path, False

    def get(self) -> Path:
        if not self.built:
            self.build(self.path)
            self.built = True
        return self.path


class Progress:
    """Points done / total with elapsed time and ETA."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.done, self.say, self.start = total, 0, say, time.monotonic()

    def step(self, points_done: int, label: str) -> None:
        self.done += points_done
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * max(0, self.total - self.done) if self.done else 0.0
        width = 24
        filled = int(width * min(1.0, self.done / max(1, self.total)))
        self.say(
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} points, {label}; "
            f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s"
        )


def run_job(
    run: bench.Runner, job: Job, exe: LazyTimer, backend: str, repeat: int
) -> list[Measurement]:
    # --seed: the order of a job's candidates changes with the round (runtime_c/bench/
    # timer_common.h strided_order), so no candidate always runs right after the same other one
    out = run(replace(job, args=(*job.args, "--seed", str(repeat))), exe.get())
    rows = parse_timer_output(out, dict(job.rename), repeat)
    if backend == "simulate":
        rows = [replace(m, cpu_busy=-1.0) for m in rows]
    return rows


def _build(cfg: TuneConfig, mpicc: str, gen_dir: Path, exe: Path) -> None:
    if cfg.bench.backend == "simulate":
        from aapcgen.platforms import simgrid

        simgrid.compile_timer(gen_dir, exe)
    else:
        bench.compile_timer(cfg.mpicc or mpicc, gen_dir, exe)


def sweep(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    run: bench.Runner,
    exe: LazyTimer,
    peak: float,
    say: Callable[[str], None],
) -> None:
    """Measure every (candidate, size) point ``repeats`` times, skipping stored points."""
    b = cfg.bench
    cands = candidates(cfg)
    start = time.monotonic()
    done = store.done(SWEEP)
    pruned = store.pruned()
    all_points = {(c, s, r) for c in cands for s in b.sizes for r in range(b.repeats)}
    stored = len(all_points & done)
    if stored:
        say(f"resuming: {stored} of {len(all_points)} points already measured are skipped")
    todo_total = sum(1 for c, s, r in all_points if (c, s, r) not in done and (c, s) not in pruned)
    progress = Progress(todo_total, say)
    cost_rows: list[tuple[float, int, float]] = []  # (job wall, points, sum of timed seconds)
    for rnd in range(b.repeats):
        todo = {
            (c, s)
            for c in cands
            for s in b.sizes
            if (c, s, rnd) not in done and (c, s) not in pruned
        }
        for job, wanted in round_jobs(cfg, todo):
            t0 = time.monotonic()
            rows = [
                r
                for r in run_job(run, job, exe, b.backend, rnd)
                if (r.candidate, r.bytes) in wanted
            ]
            store.add(SWEEP, rows, env)
            wall = time.monotonic() - t0
            cost_rows.append((wall, len(rows), sum(r.seconds * (r.iters + 1) for r in rows)))
            progress.step(len(rows), f"round {rnd + 1}/{b.repeats} {job.label}")
        if cfg.budget is None or rnd + 1 == b.repeats:
            continue
        pts = points_of(store.rows(SWEEP))
        timed = {(p.candidate, p.bytes): p.median for p in pts}
        walls, npts, timed_sum = (sum(x[i] for x in cost_rows) for i in range(3))
        overhead = max(0.0, walls - timed_sum) / max(1, npts)

        def cost(c: str, s: int, timed: dict = timed, overhead: float = overhead) -> float:
            med = timed.get((c, s), 0.0)
            iters = min(b.max_iters, max(3, b.target_seconds / med if med else 1))
            return med * (iters + 1) + overhead

        remaining = cfg.budget - (time.monotonic() - start)
        new, fits = budget_prune(pts, set(pruned), remaining, b.repeats - rnd - 1, cost)
        store.prune([(c, s, rnd, why) for c, s, why in new])
        pruned = store.pruned()
        if new:
            say(
                f"budget: pruned {len(new)} (candidate, size) points after round {rnd + 1} "
                f"({sum(1 for x in new if x[2] == 'dominated')} dominated)"
            )
            left = b.repeats - rnd - 1
            progress.total -= left * len({(c, s) for c, s, _ in new})
        if not fits:
            say(
                f"budget: the remaining rounds do not fit {cfg.budget:.0f} s even after pruning; "
                f"deciding from {rnd + 1} round(s)"
            )
            return


MODEL_FILE = "model.json"


def measure_model(
    cfg: TuneConfig, run: bench.Runner, exe: LazyTimer, say: Callable[[str], None]
) -> Path:
    """The selection's cost model for this cluster (aapcgen/tune/model.py): the library's own
    routine and the default routine with each of its ways forced (AAPC_WAY) that can run on
    this job, at every size of the sweep, ``repeats`` rounds; the constants fitted to their
    medians go to DIR/model.json (kept: a resumed sweep reuses it)."""
    from aapcgen.alltoall.cjob import job_shape, way_costs
    from aapcgen.tune.model import MAX_GUARD, Call, fit_model, relative_errors, write_model

    b = cfg.bench
    path = b.out_dir / MODEL_FILE
    if path.exists():
        say(f"model: {path} is already measured; remove it to measure again")
        return path
    topo = b.topology
    r = topo.ranks_per_machine
    shape = job_shape(topo, [m for m in range(topo.n_machines) for _ in range(r)])
    possible = [
        w for w in bench.WAYS if w != "library" and w in way_costs(cfg_model_unit(), shape, 1.0)
    ]
    jobs = bench.plan_jobs(cfg.flavour, (), b.sizes, b.target_seconds, b.max_iters, tuple(possible))
    jobs[0] = replace(jobs[0], label="library", args=(*jobs[0].args, "--only", "native"))
    progress = Progress(len(jobs) * b.repeats, say)
    rows: list[Measurement] = []
    for rnd in range(b.repeats):
        for job in jobs:
            rows += run_job(run, job, exe, b.backend, rnd)
            progress.step(1, f"model round {rnd + 1}/{b.repeats} {job.label}")
    calls = []
    for cand, way in [("native-default", "library")] + [(f"auto/{w}", w) for w in possible]:
        for size in b.sizes:
            times = sorted(m.seconds for m in rows if m.candidate == cand and m.bytes == size)
            if times:
                calls.append(Call(shape, way, size, times[len(times) // 2]))
    model = fit_model(calls)
    write_model(path, model, calls, f"aapcgen tune on {topo.name} ({b.backend})")
    errors = relative_errors(model, calls)
    worst = max(map(abs, errors)) if errors else 0.0
    guard = model["guard"]
    say(
        f"model: {len(calls)} calls fitted (median relative error {guard:.0%}, worst {worst:.0%}: "
        f"ours only where the model says it wins by more than {guard:.0%}; "
        f"{len(model['points'])} measured points: the way measured fastest there); wrote {path}"
    )
    if guard >= MAX_GUARD:
        say(
            f"model: its median error is {MAX_GUARD:.0%} or more: the measurements scatter "
            "(oversubscribed cores, a shared network?); the library keeps every call ours does not "
            f"win by {MAX_GUARD:.0%} in the model"
        )
    return path


def cfg_model_unit() -> dict[str, float]:
    """Every constant 1: the ways a shape allows show in way_costs' keys."""
    from aapcgen.codegen.cluster import COST_FIELDS

    return dict.fromkeys(COST_FIELDS, 1.0)


def validation_jobs(
    cfg: TuneConfig, choices: list[Choice], file_env: tuple[tuple[str, str], ...] = ()
) -> list[tuple[Job, str, set[tuple[str, int]]]]:
    """The jobs of one validation round: (job, label, the (candidate, size) point it measures).

    One job per point: the tuned routine and the library default at every size, each other
    candidate at the sizes where it is the best or the chosen one. On TCP a call pays for the
    connections' state left by the calls before it, so points share no job: on the emulated 4+4
    tree at 256 KB a contention-free variant timed right after MPICH's default or no-sync (which
    overflow switch buffers) measured 33-35 MB/s, after itself 40 MB/s; on the 32-machine chain
    MPICH's default at 64 KB measured 2-3 MB/s right after its own 16 KB calls (scattered) and
    6.2 MB/s alone (docs/tuning.md). In a job of its own every point is measured as an
    application calling that routine at that size would see it. The tuned routine's jobs come
    first, with the native tuning file ``file_env`` when a range goes to a forced native
    algorithm."""
    where: dict[str, set[int]] = {}
    for c in choices:
        for x in (TUNED, DEFAULT, c.best, c.candidate):
            where.setdefault(x, set()).add(c.bytes)
    jobs: list[tuple[Job, str, set[tuple[str, int]]]] = []
    for cand in sorted(where, key=lambda x: (x != TUNED, x != DEFAULT, x)):
        for size in sorted(where[cand]):
            if cand == TUNED:
                job = make_job(cfg, "main", [TUNED], (size,), file_env)
            else:
                job = make_job(cfg, group_of(cand), [cand], (size,))
            jobs.append((job, cand, {(cand, size)}))
    return jobs


def validate(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    run: bench.Runner,
    exe: LazyTimer,
    choices: list[Choice],
    ranges: list[Range],
    say: Callable[[str], None],
) -> None:
    """Time the tuned routine (with the native tuning file where needed) against each size's best
    and chosen candidates and the library default, ``validate_repeats`` rounds."""
    # the native tuning file only matters where the tuned routine hands a range to a forced
    # native algorithm
    tuning_file = native_tuning_file(cfg.flavour, cfg.bench.out_dir)
    if not any(is_native(r.candidate) and r.candidate != DEFAULT for r in ranges):
        tuning_file = None  # the file would only reproduce the library default
    file_env = tuning_file_env(cfg.flavour, tuning_file)
    message = store.check_decision(ranges, tuning_file.read_text() if tuning_file else "")
    if message:
        say(message)
    done = store.done(VALIDATE)
    jobs = validation_jobs(cfg, choices, file_env)
    progress = Progress(len(jobs) * cfg.validate_repeats, say)
    for rnd in range(cfg.validate_repeats):
        for job, label, wanted in jobs:
            if all((c, s, rnd) in done for c, s in wanted):
                progress.total -= 1
                continue
            rows = run_job(run, job, exe, cfg.bench.backend, rnd)
            store.add(VALIDATE, [r for r in rows if (r.candidate, r.bytes) in wanted], env)
            progress.step(1, f"validation round {rnd + 1}/{cfg.validate_repeats} {label}")


def generated_to_validate(choices: list[Choice]) -> set[str]:
    """The generated variants the validation compares the tuned routine with."""
    return {x for c in choices for x in (c.best, c.candidate) if not is_native(x)}


def run_tune(
    cfg: TuneConfig, env: dict[str, str], peak: float, say: Callable[[str], None]
) -> list[Path]:
    """The whole sweep: measure (resuming from the store), decide, write the tuned routine and
    native tuning files, validate them, write the decision; returns the files written."""
    b = cfg.bench
    topo = b.topology
    store = Store(b.out_dir / "results.sqlite")
    try:
        message = store.check_environment(env)
        if message:
            say(message)
        with (
            cleanup.workdir("aapc-tune-", say) as work,  # nothing left behind (measure/cleanup.py)
            bench.runner(b, work) as (run, mpicc),
        ):
            tmp = work.path
            gen_dir = Path(tmp) / "gen"

            def build_sweep(path: Path) -> None:
                generate(topo, b.variants, gen_dir)
                _build(cfg, mpicc, gen_dir, path)

            exe = LazyTimer(build_sweep, Path(tmp) / "alltoall_timer")
            sweep(cfg, store, env, run, exe, peak, say)
            if cfg.model:
                measure_model(cfg, run, exe, say)
            library = None
            if cfg.flavour == "mpich":
                library = mpich_library(cfg.mpicc or mpicc) or (
                    mpi_library(exe.path) if exe.built else None
                )
            choices, ranges, files = write_results(cfg, store, env, library, say)
            if cfg.validate_repeats > 0:
                vgen = Path(tmp) / "validate"

                def build_validation(path: Path) -> None:
                    extra = tuple(sorted(generated_to_validate(choices)))
                    render_tuned(topo, ranges, vgen, "validation", extra)
                    _build(cfg, mpicc, vgen, path)

                vexe = LazyTimer(build_validation, Path(tmp) / "tuned_timer")
                validate(cfg, store, env, run, vexe, choices, ranges, say)
        return finish(cfg, store, env, peak, choices, ranges, files)
    finally:
        store.close()
