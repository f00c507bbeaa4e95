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

import argparse
import hashlib
import json
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from aapcgen.alltoall.sync import VariantSpec
from aapcgen.codegen.generate import generate, stderr_progress
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.units import format_bandwidth
from aapcgen.measure import bench
from aapcgen.measure.bench import BenchConfig, Job, Measurement, parse_timer_output
from aapcgen.tune.decide import (
    DEFAULT,
    NATIVE_PREFIX,
    Choice,
    Point,
    Range,
    decide,
    dominated,
    halve,
    is_native,
    merge,
    points,
    simplicity,
)
from aapcgen.tune.native import (
    OMPI_ALGORITHMS,
    mpich_builtin_tree,
    mpich_csel_json,
    ompi_rules_file,
)
from aapcgen.tune.render import TUNED, decision_markdown, plot_tune, render_tuned, throughput

NATIVES = {
    "mpich": ("brucks", "scattered", "pairwise"),
    "openmpi": ("linear", "pairwise", "modified_bruck", "linear_sync"),
    "simgrid": bench.SIMGRID_NATIVES,
}
JOB_OVERHEAD_S = {"local": 0.5, "mpiexec": 2.0, "emulate": 2.0, "simulate": 2.0}
MPICH_JSON = "mpich-alltoall.json"
OMPI_RULES = "ompi-alltoall-rules.conf"
SWEEP, VALIDATE = "sweep", "validate"


# --- environment ------------------------------------------------------------------------------


def topology_hash(topo: Topology) -> str:
    """Hash of what the routine depends on (names, tree, rates), not of the file's path."""
    data = asdict(topo)
    data.pop("source")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def mpi_flavour(mpicc: str) -> tuple[str, str]:
    """('mpich'|'openmpi'|'unknown', version line) of an MPI compiler wrapper."""
    for args, key, flavour in (
        (["--showme:version"], "Open MPI", "openmpi"),
        (["-v"], "MPICH", "mpich"),
    ):
        try:
            proc = subprocess.run([mpicc, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in (proc.stdout + proc.stderr).splitlines():
            if key in line:
                return flavour, line.strip()
    return "unknown", "unknown"


def mpi_library(exe: Path) -> Path | None:
    """The libmpi a dynamically linked program loads (``ldd``), or None."""
    try:
        out = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libmpi.so") and "=>" in parts and len(parts) > 2:
            return Path(parts[parts.index("=>") + 1])
    return None


def mpich_library(mpicc: str) -> Path | None:
    """MPICH's shared libmpi from its wrapper's link line (``mpicc -show``), or None."""
    try:
        out = subprocess.run([mpicc, "-show"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for word in out.split():
        if word.startswith("-L"):  # libmpi.so may be a linker script: take the ELF file
            for lib in sorted(Path(word[2:]).glob("libmpi.so*")):
                with open(lib, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        return lib.resolve()
    return None


class LazyTimer:
    """The timer program, compiled the first time a job needs it (a finished sweep needs none)."""

    def __init__(self, build: Callable[[Path], None], path: Path) -> None:
        self.build, self.path, self.built = build, path, False

    def get(self) -> Path:
        if not self.built:
            self.build(self.path)
            self.built = True
        return self.path


def native_env(flavour: str, alg: str) -> tuple[tuple[str, str], ...]:
    """Environment forcing one native algorithm (MPICH CVAR; Open MPI MCA parameters)."""
    if flavour == "openmpi":
        if alg not in OMPI_ALGORITHMS:
            raise InputError(
                f"--natives: '{alg}' is not an Open MPI alltoall algorithm "
                f"(choose from: {', '.join(OMPI_ALGORITHMS)})"
            )
        return (
            ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
            ("OMPI_MCA_coll_tuned_alltoall_algorithm", str(OMPI_ALGORITHMS[alg])),
        )
    return (("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", alg),)


def native_tuning_file(flavour: str, out_dir: Path) -> Path | None:
    """The native tuning file the sweep wrote for this MPI, if any."""
    name = {"mpich": MPICH_JSON, "openmpi": OMPI_RULES}.get(flavour)
    path = out_dir / name if name else None
    return path if path is not None and path.exists() else None


def tuning_file_env(flavour: str, path: Path | None) -> tuple[tuple[str, str], ...]:
    """Environment making the library use the native tuning file ``path``."""
    if path is None:
        return ()
    if flavour == "mpich":
        return (("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", str(path)),)
    return (
        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
        ("OMPI_MCA_coll_tuned_dynamic_rules_filename", str(path)),
    )


# --- results store ----------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    phase TEXT NOT NULL, candidate TEXT NOT NULL, bytes INTEGER NOT NULL, repeat INTEGER NOT NULL,
    seconds REAL NOT NULL, iters INTEGER NOT NULL, cpu_busy REAL NOT NULL,
    mpi TEXT NOT NULL, backend TEXT NOT NULL, rate TEXT NOT NULL, topology_hash TEXT NOT NULL,
    recorded TEXT NOT NULL, PRIMARY KEY (phase, candidate, bytes, repeat));
CREATE TABLE IF NOT EXISTS validated (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pruned (
    candidate TEXT NOT NULL, bytes INTEGER NOT NULL, after_round INTEGER NOT NULL,
    reason TEXT NOT NULL, PRIMARY KEY (candidate, bytes));
"""


class Store:
    """DIR/results.sqlite: measurements (one row per phase, candidate, size, repeat), pruning."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def check_environment(self, env: dict[str, str]) -> str | None:
        """Keep the stored rows if they were measured in ``env``; else discard them and say why."""
        old = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        message = None
        if old:
            changed = [k for k in env if old.get(k) != env[k]]
            if changed:
                n = self.db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
                what = (
                    f"topology changed (hash {old.get('topology_hash')} -> {env['topology_hash']})"
                    if "topology_hash" in changed
                    else "environment changed ("
                    + ", ".join(f"{k}: {old.get(k)} -> {env[k]}" for k in changed)
                    + ")"
                )
                message = f"{what} since the stored sweep: discarding {n} stored measurements"
                self.db.execute("DELETE FROM measurements")
                self.db.execute("DELETE FROM pruned")
        with self.db:
            self.db.execute("DELETE FROM meta")
            self.db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(env.items()))
        return message

    def add(self, phase: str, rows: list[Measurement], env: dict[str, str]) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        phase,
                        r.candidate,
                        r.bytes,
                        r.repeat,
                        r.seconds,
                        r.iters,
                        r.cpu_busy,
                        env["mpi"],
                        env["backend"],
                        env["rate"],
                        env["topology_hash"],
                        now,
                    )
                    for r in rows
                ],
            )

    def rows(self, phase: str) -> list[Measurement]:
        return [
            Measurement(*r)
            for r in self.db.execute(
                "SELECT candidate, bytes, repeat, seconds, iters, cpu_busy FROM measurements "
                "WHERE phase = ? ORDER BY bytes, candidate, repeat",
                (phase,),
            )
        ]

    def done(self, phase: str) -> set[tuple[str, int, int]]:
        return set(
            self.db.execute(
                "SELECT candidate, bytes, repeat FROM measurements WHERE phase = ?", (phase,)
            ).fetchall()
        )

    def prune(self, items: list[tuple[str, int, int, str]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO pruned VALUES (?,?,?,?)", items)

    def check_decision(self, ranges: list[Range], native_file: str = "") -> str | None:
        """Keep the stored validation rows of the tuned routine only if they timed the routine
        ``ranges`` describe, with the same native tuning file text ``native_file`` (it routes the
        ranges handed to a forced native algorithm); else discard them and say why. Rows of the
        other candidates stay: they do not depend on the decision."""
        now = json.dumps([[asdict(r) for r in ranges], native_file], sort_keys=True)
        row = self.db.execute("SELECT value FROM validated WHERE key = 'ranges'").fetchone()
        message = None
        with self.db:
            if row is not None and row[0] != now:
                n = self.db.execute(
                    "SELECT COUNT(*) FROM measurements WHERE phase = ? AND candidate = ?",
                    (VALIDATE, TUNED),
                ).fetchone()[0]
                self.db.execute(
                    "DELETE FROM measurements WHERE phase = ? AND candidate = ?", (VALIDATE, TUNED)
                )
                if n:
                    message = (
                        f"the decision changed since the stored validation: discarding {n} "
                        "stored measurements of the tuned routine"
                    )
            self.db.execute("INSERT OR REPLACE INTO validated VALUES ('ranges', ?)", (now,))
        return message

    def pruned(self) -> dict[tuple[str, int], str]:
        return {
            (c, b): reason
            for c, b, reason in self.db.execute("SELECT candidate, bytes, reason FROM pruned")
        }


# --- plan -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneConfig:
    bench: BenchConfig  # topology, backend, sizes, variants, natives, repeats, timing, launch
    flavour: str  # mpich, openmpi, simgrid, unknown
    mpi: str  # version line
    mpicc: str | None  # compiler wrapper (None: the backend's)
    budget: float | None
    validate_repeats: int
    dry_run: bool


def candidates(cfg: TuneConfig) -> list[str]:
    names = [DEFAULT, *(NATIVE_PREFIX + a for a in cfg.bench.natives)]
    return names + [s.label for s in cfg.bench.variants]


def group_of(candidate: str) -> str:
    """Which job measures a candidate: 'main' (default native + generated) or a forced native."""
    return candidate if is_native(candidate) and candidate != DEFAULT else "main"


def timer_name(candidate: str) -> str:
    return "native" if is_native(candidate) else candidate


def make_job(
    cfg: TuneConfig, group: str, cands: list[str], sizes: tuple[int, ...], env: tuple = ()
) -> Job:
    """One timer invocation measuring ``cands`` (all of one group) at ``sizes``."""
    base = bench.plan_jobs(
        cfg.bench.backend, (), sizes, cfg.bench.target_seconds, cfg.bench.max_iters
    )[0]
    only = ",".join(sorted({timer_name(c) for c in cands}))
    if group == "main":
        return replace(base, label="main", args=(*base.args, "--only", only), env=env)
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


# --- sweep ------------------------------------------------------------------------------------


def _points(rows: list[Measurement], exclude: set[tuple[str, int]] | None = None) -> list[Point]:
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
        pts = _points(store.rows(SWEEP))
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


def validation_table(rows: list[Measurement], choices: list[Choice], n: int) -> list[dict]:
    """Per size: tuned against the best candidate and the library default (median throughput)."""
    pts = {(p.candidate, p.bytes): p for p in _points(rows)}
    out = []
    for c in choices:
        tuned, ref, nat = (pts.get((x, c.bytes)) for x in (TUNED, c.best, DEFAULT))
        if not (tuned and ref and nat):
            continue
        out.append(
            {
                "bytes": c.bytes,
                "tuned_MBps": throughput(n, c.bytes, tuned.median),
                "best": c.best,
                "best_MBps": throughput(n, c.bytes, ref.median),
                "native_MBps": throughput(n, c.bytes, nat.median),
                "tuned_vs_best": ref.median / tuned.median,
                "tuned_vs_native": nat.median / tuned.median,
            }
        )
    return out


# --- the command ------------------------------------------------------------------------------


def write_results(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    library: Path | None,
    say: Callable[[str], None],
) -> tuple[list[Choice], list[Range], list[Path]]:
    """Decision, native files, tuned routine directory; returns the choices, ranges, files."""
    b = cfg.bench
    n = b.topology.n_machines
    pruned = set(store.pruned())
    pts = _points(store.rows(SWEEP), pruned)
    if not pts:
        raise AapcError("no measurements to decide from")
    choices = decide(pts)
    ranges = merge(choices)
    natives = frozenset(p.candidate for p in pts if is_native(p.candidate))
    native_ranges = merge(decide(pts, natives))
    out = b.out_dir
    files = []
    if cfg.flavour == "mpich":
        try:
            base = mpich_builtin_tree(library) if library else None
            if base is None:
                raise ValueError("the timer is not linked against a shared libmpi")
            (out / MPICH_JSON).write_text(mpich_csel_json(native_ranges, n, base))
            files.append(out / MPICH_JSON)
        except ValueError as exc:
            say(f"warning: no {MPICH_JSON}: {exc} (MPICH needs its whole selection tree in it)")
    elif cfg.flavour == "openmpi":
        try:
            (out / OMPI_RULES).write_text(ompi_rules_file(native_ranges, n))
        except ValueError as exc:
            raise AapcError(f"{OMPI_RULES}: {exc}") from None
        files.append(out / OMPI_RULES)
    measured_on = (
        f"{env['backend']} ({env['mpi']}, rate {env['rate']}) on {time.strftime('%Y-%m-%d')}"
    )
    tuned_dir = out / "tuned"
    render_tuned(b.topology, ranges, tuned_dir, measured_on)
    files.append(tuned_dir)
    return choices, ranges, files


def finish(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    peak: float,
    choices: list[Choice],
    ranges: list[Range],
    files: list[Path],
) -> list[Path]:
    b = cfg.bench
    n = b.topology.n_machines
    pruned = store.pruned()
    pts = _points(store.rows(SWEEP), set(pruned))
    natives = frozenset(p.candidate for p in pts if is_native(p.candidate))
    native_ranges = merge(decide(pts, natives))
    vrows = store.rows(VALIDATE)
    table = validation_table(vrows, choices, n)
    vpts = {p.bytes: p.median for p in _points(vrows) if p.candidate == TUNED}
    missing = sorted({c.bytes for c in choices} - {int(v["bytes"]) for v in table})
    if vrows and missing:
        stderr_progress(
            "warning: validation lacks the tuned routine, the best candidate or the default at "
            + ", ".join(map(str, missing))
            + " bytes (re-run to measure them)"
        )
    env_lines = [
        f"topology {b.topology.name} ({n} machines, hash {env['topology_hash']})",
        f"backend {env['backend']}, rate {env['rate']}, MPI {env['mpi']}",
        f"peak {peak / 1e6:.2f} MB/s; {b.repeats} repeats; {len(candidates(cfg))} candidates; "
        f"{len(pruned)} (candidate, size) points pruned by --budget",
    ]
    decision = {
        "topology": b.topology.name,
        "environment": env,
        "peak_MBps": peak / 1e6,
        "rule": {
            "statistic": "median seconds per call",
            "noise_guard": "min(0.05, (max-min)/median of the best); ties go to the simplest",
            "boundary": "floor(sqrt(a*b)) between measured sizes a < b; bytes < boundary -> a",
            "message_size": "bytes per block = count x type size",
        },
        "per_size": [asdict(c) for c in choices],
        "ranges": [asdict(r) for r in ranges],
        "native_ranges": [asdict(r) for r in native_ranges],
        "simplicity_order": sorted({p.candidate for p in pts}, key=simplicity),
        "pruned": [
            {"candidate": c, "bytes": s, "reason": r} for (c, s), r in sorted(pruned.items())
        ],
        "validation": table,
        "files": [str(f.relative_to(b.out_dir)) for f in files],
    }
    out = b.out_dir
    (out / "decision.json").write_text(json.dumps(decision, indent=1) + "\n")
    title = f"{b.topology.name} ({b.backend}, {n} machines)"
    (out / "decision.md").write_text(
        decision_markdown(
            title,
            env_lines,
            choices,
            ranges,
            native_ranges,
            {(p.candidate, p.bytes): p for p in pts},
            n,
            peak,
            table,
        )
    )
    every = _points(store.rows(SWEEP))  # pruned candidates too, with the rounds they ran
    plot_tune(every, choices, n, peak, title, out / "throughput.png", vpts or None)
    return [out / "decision.json", out / "decision.md", out / "throughput.png", *files]


def cmd_tune(a: argparse.Namespace) -> int:
    from aapcgen.codegen.generate import parse_block_sizes, variant_specs
    from aapcgen.core.topology import topology_or_builtin
    from aapcgen.core.units import parse_bandwidth

    topo = topology_or_builtin(a.topology)
    if a.backend not in bench.BACKENDS:
        raise InputError(
            f"--backend: unknown backend '{a.backend}' (choose from: {', '.join(bench.BACKENDS)})"
        )
    try:
        rate = parse_bandwidth(a.rate) if a.rate else None
    except ValueError as exc:
        raise InputError(f"--rate: {exc}") from None
    if a.repeats < 1:
        raise InputError(f"--repeats must be at least 1, got {a.repeats}")
    if a.budget is not None and a.budget <= 0:
        raise InputError(f"--budget must be a positive number of seconds, got {a.budget}")
    sizes = tuple(sorted(set(bench.parse_sizes(a.sizes))))
    blocks = parse_block_sizes(a.block_sizes)
    specs: list[VariantSpec] = []
    for v in a.variants.split(","):
        for s in variant_specs(v.strip(), blocks if ("partial" in v or v == "all") else None):
            if s.label not in {x.label for x in specs}:
                specs.append(s)
    if a.backend == "simulate":
        flavour, mpi = "simgrid", "SimGrid SMPI"
    else:
        flavour, mpi = mpi_flavour(a.mpicc or bench.bin_path("mpicc"))
    natives = tuple(
        x.strip()
        for x in (a.natives.split(",") if a.natives is not None else NATIVES.get(flavour, ()))
        if x.strip()
    )
    n = topo.n_machines
    if flavour == "simgrid" and a.natives is None and n & (n - 1):
        natives = tuple(x for x in natives if x != "pair")  # SimGrid's pair: 2^k ranks only
    if flavour == "openmpi":
        for alg in natives:
            native_env(flavour, alg)  # validates the names
    out_dir = Path(a.output or f"tuning/{topo.name}")
    bcfg = BenchConfig(
        topo,
        a.backend,
        sizes,
        specs,
        natives,
        a.repeats,
        a.target_seconds,
        a.max_iters,
        rate,
        a.queue,
        out_dir.resolve(),
        a.hostfile,
        a.launcher,
        a.timeout,
        a.prefix,
    )
    cfg = TuneConfig(bcfg, flavour, mpi, a.mpicc, a.budget, a.validate_repeats, a.dry_run)
    peak = bench.peak_of(topo, rate)
    env = {
        "topology_hash": topology_hash(topo),
        "backend": a.backend,
        "rate": format_bandwidth(rate) if rate else "from topology",
        "queue": str(a.queue) if a.backend == "emulate" else "-",
        "mpi": mpi,
        "machines": str(topo.n_machines),
    }
    say = stderr_progress
    cands = candidates(cfg)
    store_path = out_dir / "results.sqlite"
    if cfg.dry_run:
        done: set[tuple[str, int, int]] = set()
        note = ""
        if store_path.exists():
            store = Store(store_path)
            old = dict(store.db.execute("SELECT key, value FROM meta").fetchall())
            if old and all(old.get(k) == v for k, v in env.items()):
                done = store.done(SWEEP)
            elif old:
                note = " (the stored sweep was measured elsewhere and would be discarded)"
            store.close()
        rounds = [
            {(c, s) for c in cands for s in sizes if (c, s, r) not in done}
            for r in range(a.repeats)
        ]
        print(f"tune {topo.name} on {a.backend} ({mpi}); peak {peak / 1e6:.2f} MB/s")
        print(f"candidates ({len(cands)}): {', '.join(cands)}")
        print(f"sizes: {', '.join(map(str, sizes))} bytes per block; {a.repeats} repeats")
        total = len(cands) * len(sizes) * a.repeats
        todo = sum(len(r) for r in rounds)
        print(f"points: {total} ({total - todo} already stored{note}), {todo} to measure")
        for r, todo_r in enumerate(rounds):
            jobs = round_jobs(cfg, todo_r)
            print(f"round {r + 1}: {len(jobs)} MPI jobs")
            for job, pts in jobs:
                print(f"  {job.label}: {len(pts)} points, {shlex_args(job)}")
        cost = estimate(cfg, rounds, peak)
        print(
            f"estimated cost: {cost:.0f} s (each call at the peak rate, plus "
            f"{JOB_OVERHEAD_S.get(a.backend, 2.0):.1f} s per job; real calls are slower)"
        )
        if a.budget is not None and cost > a.budget:
            print(
                f"over the budget of {a.budget:.0f} s: successive halving will prune after round 1"
            )
        if a.validate_repeats:
            print(f"then {a.validate_repeats} validation round(s) of the tuned routine")
        return 0
    say(
        f"tune {topo.name} on {a.backend} ({mpi}): {len(cands)} candidates, "
        f"{len(sizes)} sizes, {a.repeats} repeats; peak {peak / 1e6:.2f} MB/s"
    )
    store = Store(store_path)
    try:
        message = store.check_environment(env)
        if message:
            say(message)
        with (
            tempfile.TemporaryDirectory(prefix="aapc-tune-") as tmp,
            bench.runner(bcfg) as (
                run,
                mpicc,
            ),
        ):
            gen_dir = Path(tmp) / "gen"

            def build_sweep(path: Path) -> None:
                generate(topo, specs, gen_dir)
                _build(cfg, mpicc, gen_dir, path)

            exe = LazyTimer(build_sweep, Path(tmp) / "alltoall_timer")
            sweep(cfg, store, env, run, exe, peak, say)
            library = None
            if cfg.flavour == "mpich":
                library = mpich_library(cfg.mpicc or mpicc) or (
                    mpi_library(exe.path) if exe.built else None
                )
            choices, ranges, files = write_results(cfg, store, env, library, say)
            if a.validate_repeats > 0:
                vgen = Path(tmp) / "validate"

                def build_validation(path: Path) -> None:
                    extra = tuple(sorted(generated_to_validate(choices)))
                    render_tuned(topo, ranges, vgen, "validation", extra)
                    _build(cfg, mpicc, vgen, path)

                vexe = LazyTimer(build_validation, Path(tmp) / "tuned_timer")
                validate(cfg, store, env, run, vexe, choices, ranges, say)
        written = finish(cfg, store, env, peak, choices, ranges, files)
    finally:
        store.close()
    print((out_dir / "decision.md").read_text())
    print("wrote " + ", ".join(str(f) for f in written))
    return 0


def shlex_args(job: Job) -> str:
    env = " ".join(f"{k}={v}" for k, v in job.env)
    return (env + " " if env else "") + " ".join(job.args)


def register(sub: object) -> None:
    """Add `aapcgen tune` to the CLI's subparsers."""
    p = sub.add_parser(  # type: ignore[attr-defined]
        "tune",
        help="Sweep every variant and native algorithm; choose per message size; emit a tuned routine.",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("topology", nargs="?", metavar="TOPO.yaml")
    p.add_argument(
        "--backend", default="local", help=f"one of {', '.join(bench.BACKENDS)} (default local)"
    )
    p.add_argument(
        "--sizes", default="1K,4K,16K,64K,256K,1M", help="bytes per block, e.g. 1K,64K,1M"
    )
    p.add_argument("--variants", default="all", help="generated variants, comma-separated, or all")
    p.add_argument(
        "--block-sizes",
        default="2,4,8,16",
        metavar="N[,N...]",
        help="block sizes of partial variants",
    )
    p.add_argument(
        "--natives",
        help="native algorithms to force besides the default (comma list; '' for none; default: "
        "MPICH brucks,scattered,pairwise; Open MPI linear,pairwise,modified_bruck,linear_sync)",
    )
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds (median and spread)")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="time budget: prune candidates")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated cost")
    p.add_argument(
        "--validate-repeats",
        type=int,
        default=2,
        help="rounds timing the tuned routine against the best and the default (0: none)",
    )
    p.add_argument("--target-seconds", type=float, default=1.0, help="timed seconds per point")
    p.add_argument("--max-iters", type=int, default=50, help="at most this many timed calls")
    p.add_argument("--rate", help="emulate/simulate: every link at this speed (e.g. 100Mbit)")
    p.add_argument("--queue", type=int, default=100_000, help="emulate: switch port buffer, bytes")
    p.add_argument("--prefix", default="atun", help="emulate: namespace and interface name prefix")
    p.add_argument("--hostfile", help="mpiexec backend: hostfile for mpiexec -f")
    p.add_argument(
        "--launcher", help="mpiexec backend: launch command, e.g. 'srun -N 16 --ntasks-per-node=1'"
    )
    p.add_argument("--mpicc", help="MPI compiler wrapper of the MPI the launcher runs")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds before one job is killed")
    p.add_argument("-o", "--output", metavar="DIR", help="results directory (default tuning/NAME)")
    p.set_defaults(func=cmd_tune)
