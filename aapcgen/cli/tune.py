"""``aapcgen tune``: plan the sweep from the options, print it (``--dry-run``) or run it."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from pathlib import Path

from aapcgen.alltoall.variants import DEFAULT_VARIANT, VariantSpec
from aapcgen.cli.options import (
    MAX_REPEATS,
    block_sizes,
    check_output_dir,
    check_phase_slots,
    command,
    run_options,
    whole,
)
from aapcgen.codegen.generate import parse_block_sizes, stderr_progress, variant_specs
from aapcgen.core.errors import InputError
from aapcgen.core.topology import topology_or_builtin
from aapcgen.core.units import format_bandwidth
from aapcgen.measure import bench
from aapcgen.measure.bench import BenchConfig
from aapcgen.measure.mpi import DEFAULT_NATIVES, mpi_flavour, native_env
from aapcgen.tune.plan import (
    JOB_OVERHEAD_S,
    TuneConfig,
    candidates,
    estimate,
    round_jobs,
    shlex_args,
)
from aapcgen.tune.store import SWEEP, Store, topology_hash
from aapcgen.tune.sweep import run_tune


@dataclass(frozen=True)
class TunePlan:
    cfg: TuneConfig
    env: dict[str, str]  # what the stored measurements depend on
    peak: float  # bytes/s, the section 3 peak


def _specs(text: str, blocks: tuple[int, ...] | None) -> list[VariantSpec]:
    specs: list[VariantSpec] = []
    for v in text.split(","):
        for s in variant_specs(v.strip(), blocks if ("partial" in v or v == "all") else None):
            if s.label not in {x.label for x in specs}:
                specs.append(s)
    return specs


def plan_tune(a: argparse.Namespace) -> TunePlan:
    """Check the options and build the sweep's configuration (no MPI job runs)."""
    topo = topology_or_builtin(a.topology)
    if a.budget is not None and not (math.isfinite(a.budget) and a.budget > 0):
        raise InputError(f"--budget must be a positive number of seconds, got {a.budget}")
    if a.validate_repeats < 0:
        raise InputError(f"--validate-repeats must be at least 0, got {a.validate_repeats}")
    sizes = tuple(sorted(set(bench.parse_sizes(a.sizes))))
    specs = _specs(a.variants, parse_block_sizes(a.block_sizes))
    out_dir = Path(a.output or f"tuning/{topo.name}")
    bcfg = BenchConfig.from_args(a, topo, sizes, specs, (), out_dir.resolve())
    check_phase_slots(topo)
    if not a.dry_run:
        check_output_dir(out_dir)  # before the sweep, not after it
    if a.backend == "simulate":
        flavour, mpi = "simgrid", "SimGrid SMPI"
    else:
        flavour, mpi = mpi_flavour(a.mpicc or bench.bin_path("mpicc"))
    natives = tuple(
        x.strip()
        for x in (
            a.natives.split(",") if a.natives is not None else DEFAULT_NATIVES.get(flavour, ())
        )
        if x.strip()
    )
    n = topo.n_machines
    if flavour == "simgrid" and a.natives is None and n & (n - 1):
        natives = tuple(x for x in natives if x != "pair")  # SimGrid's pair: 2^k ranks only
    if flavour == "openmpi":
        for alg in natives:
            native_env(flavour, alg)  # validates the names
    bcfg = replace(bcfg, natives=natives)
    # the model needs the default routine (auto), which exists when receiver-all is generated
    model = not a.no_model and any(v.label == DEFAULT_VARIANT for v in specs)
    cfg = TuneConfig(bcfg, flavour, mpi, a.mpicc, a.budget, a.validate_repeats, a.dry_run, model)
    env = {
        "topology_hash": topology_hash(topo),
        "backend": a.backend,
        "rate": format_bandwidth(bcfg.rate) if bcfg.rate else "from topology",
        "queue": str(a.queue) if a.backend == "emulate" else "-",
        "mpi": mpi,
        "machines": str(n),
    }
    return TunePlan(cfg, env, bench.peak_of(topo, bcfg.rate))


def _stored_points(plan: TunePlan) -> tuple[set[tuple[str, int, int]], str]:
    """Points already in the store that a run would keep, and a note when it would discard them."""
    path = plan.cfg.bench.out_dir / "results.sqlite"
    if not path.exists():
        return set(), ""
    store = Store(path)
    try:
        old = dict(store.db.execute("SELECT key, value FROM meta").fetchall())
        if old and all(old.get(k) == v for k, v in plan.env.items()):
            return store.done(SWEEP), ""
        if old:
            return set(), " (the stored sweep was measured elsewhere and would be discarded)"
        return set(), ""
    finally:
        store.close()


def dry_run(plan: TunePlan) -> int:
    """Print the plan: candidates, points still to measure, the MPI jobs per round, the cost."""
    cfg, b = plan.cfg, plan.cfg.bench
    cands = candidates(cfg)
    done, note = _stored_points(plan)
    rounds = [
        {(c, s) for c in cands for s in b.sizes if (c, s, r) not in done} for r in range(b.repeats)
    ]
    print(f"tune {b.topology.name} on {b.backend} ({cfg.mpi}); peak {plan.peak / 1e6:.2f} MB/s")
    print(f"candidates ({len(cands)}): {', '.join(cands)}")
    print(f"sizes: {', '.join(map(str, b.sizes))} bytes per block; {b.repeats} repeats")
    total = len(cands) * len(b.sizes) * b.repeats
    todo = sum(len(r) for r in rounds)
    print(f"points: {total} ({total - todo} already stored{note}), {todo} to measure")
    for r, todo_r in enumerate(rounds):
        jobs = round_jobs(cfg, todo_r)
        print(f"round {r + 1}: {len(jobs)} MPI jobs")
        for job, pts in jobs:
            print(f"  {job.label}: {len(pts)} points, {shlex_args(job)}")
    cost = estimate(cfg, rounds, plan.peak)
    print(
        f"estimated cost: {cost:.0f} s (each call at the peak rate, plus "
        f"{JOB_OVERHEAD_S.get(b.backend, 2.0):.1f} s per job; real calls are slower)"
    )
    if cfg.budget is not None and cost > cfg.budget:
        print(f"over the budget of {cfg.budget:.0f} s: successive halving will prune after round 1")
    if cfg.validate_repeats:
        print(f"then {cfg.validate_repeats} validation round(s) of the tuned routine")
    return 0


def run(plan: TunePlan) -> int:
    cfg, b = plan.cfg, plan.cfg.bench
    stderr_progress(
        f"tune {b.topology.name} on {b.backend} ({cfg.mpi}): {len(candidates(cfg))} candidates, "
        f"{len(b.sizes)} sizes, {b.repeats} repeats; peak {plan.peak / 1e6:.2f} MB/s"
    )
    written = run_tune(cfg, plan.env, plan.peak, stderr_progress)
    print((b.out_dir / "decision.md").read_text())
    print("wrote " + ", ".join(str(f) for f in written))
    return 0


def cmd_tune(a: argparse.Namespace) -> int:
    plan = plan_tune(a)
    return dry_run(plan) if a.dry_run else run(plan)


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "tune",
        cmd_tune,
        "Sweep every variant and native algorithm; choose per message size; emit a tuned routine.",
    )
    run_options(
        p,
        ", ".join(bench.BACKENDS),
        repeats=3,
        max_iters=50,
        prefix="atun",
        repeats_help="interleaved rounds (median and spread)",
    )
    p.add_argument(
        "--sizes",
        default="8..1M",
        help="bytes per block, e.g. 1K,64K,1M; A..B: A and its doubles up to B (default 8..1M: "
        "every power of two, so the measured points bind at every size)",
    )
    p.add_argument("--variants", default="all", help="generated variants, comma-separated, or all")
    p.add_argument(
        "--block-sizes",
        type=block_sizes,
        default="2,4,8,16",
        metavar="N[,N...]",
        help="block sizes of partial variants",
    )
    p.add_argument(
        "--natives",
        help="native algorithms to force besides the default (comma list; '' for none; default: "
        "MPICH brucks,scattered,pairwise; Open MPI linear,pairwise,modified_bruck,linear_sync)",
    )
    p.add_argument("--budget", type=float, metavar="SECONDS", help="time budget: prune candidates")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated cost")
    p.add_argument(
        "--validate-repeats",
        type=whole(0, MAX_REPEATS),
        default=2,
        help="rounds timing the tuned routine against the best and the default (0: none)",
    )
    p.add_argument(
        "--no-model",
        action="store_true",
        help="do not measure the per-call selection's cost model (DIR/model.json; measured "
        "when receiver-all is among the variants: docs/tuning.md)",
    )
    p.add_argument("-o", "--output", metavar="DIR", help="results directory (default tuning/NAME)")
