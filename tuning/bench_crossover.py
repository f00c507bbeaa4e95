"""Where the MPI library wins and where our ways win: per ranks per machine and block size, the
MPI library's algorithms (its default and each forced one) beside the default routine (auto: its
way chosen per call) and each of its ways forced (AAPC_WAY: the library, the per-rank phases,
the leader-based phases, the log-round exchange), side by side in one run per ranks-per-machine.
Then the selection's cost model fitted to these calls (aapcgen/tune/model.py), its error, and
the way it picks per point.

    sudo flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_crossover.py \\
        topologies/two-switch-4-4.yaml --backend emulate --ranks-per-machine 1,2,4 \\
        --sizes 8,64,512,4K,32K,256K -o docs/bench/crossover-two-switch-4-4

Prints, per ranks per machine, one table of median milliseconds per call (best MPICH algorithm
in bold, the default routine's ratio to it and to MPICH's default), marking points where a
candidate kept the CPUs busy (32 ranks on 2 cores: those are CPU figures more than network
ones); then the fitted constants (paste them into a tuned build, or let `aapcgen tune` measure
them on the cluster). Writes every measurement and the fit to DIR/crossover.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.alltoall.cjob import choose_way, default_model, job_shape  # noqa: E402
from aapcgen.codegen.generate import variant_specs  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.core.units import parse_rate_option  # noqa: E402
from aapcgen.measure.bench import (  # noqa: E402
    WAYS,
    BenchConfig,
    Summary,
    parse_sizes,
    peak_of,
    run_bench,
    summarize,
)
from aapcgen.platforms.emulate import DEFAULT_QUEUE  # noqa: E402
from aapcgen.tune.model import Call, fit_model, model_lines, read_model, relative_errors  # noqa: E402

MPICH = ("native-default", "native-brucks", "native-scattered", "native-pairwise")


def ways_for(r: int) -> tuple[str, ...]:
    """The ways worth forcing with r ranks per machine (leaders need several)."""
    ours = ("phases", "leaders", "loground") if r > 1 else ("phases", "loground")
    return ("library", *ours)


def rank_machine(n_machines: int, r: int) -> list[int]:
    """Blocks of r ranks per machine, as the emulation places them (mpiexec per namespace)."""
    return [m for m in range(n_machines) for _ in range(r)]


def table(r: int, summary: list[Summary], reference: str) -> str:
    """Median ms per call for one ranks-per-machine, one row per size: the library's algorithms
    (the best in bold), ours, and auto against the best of the library's and ``reference``."""
    natives = {s.candidate for s in summary if s.candidate.startswith("native")}
    cands = [c for c in MPICH if c in natives] + sorted(natives - set(MPICH))
    ours = sorted({s.candidate for s in summary if s.candidate.startswith("auto")})
    head = ["block", *cands, *ours, "auto / best library", f"auto / {reference}"]
    lines = [f"R = {r} rank(s) per machine", "| " + " | ".join(head) + " |"]
    lines.append("|" + "---|" * len(head))
    for size in sorted({s.bytes for s in summary}):
        at = {s.candidate: s for s in summary if s.bytes == size}
        mine = [at[c] for c in cands if c in at]
        best = min(mine, key=lambda s: s.median_s) if mine else None
        cells = [str(size)]
        for c in [*cands, *ours]:
            s = at.get(c)
            if s is None:
                cells.append("")
                continue
            text = f"{1e3 * s.median_s:.2f}" + flags(s)
            cells.append(f"**{text}**" if s is best else text)
        auto = at.get("auto")
        for ref in (best, at.get(reference)):
            ok = auto is not None and ref is not None
            fair = ok and not (auto.cpu_starved or ref.cpu_starved)
            cells.append(
                f"{ref.median_s / auto.median_s:.2f}x" + ("" if fair else " *") if ok else ""
            )
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "(cpu): ranks busy >= 90% of the time; (starved): a rank waited for a CPU >= 5% of it;"
        " * a ratio with a starved side, not CPU-fair"
    )
    return "\n".join(lines)


def flags(s: Summary) -> str:
    """`` (cpu)``, `` (starved)``, both or nothing: how the CPU held a row back."""
    marks = [m for m, on in (("cpu", s.cpu_bound), ("starved", s.cpu_starved)) if on]
    return f" ({', '.join(marks)})" if marks else ""


def calls_of(topo_r, summary: list[Summary]) -> list[Call]:  # noqa: ANN001
    """The measured ways as model calls: the library's routine (its default selection, what
    PMPI_Alltoall runs) and our forced ways."""
    shape = job_shape(topo_r, rank_machine(topo_r.n_machines, topo_r.ranks_per_machine))
    out = []
    for s in summary:
        if s.candidate == "native-default":
            out.append(Call(shape, "library", s.bytes, s.median_s))
        elif s.candidate.startswith("auto/") and s.candidate != "auto/library":
            out.append(Call(shape, s.candidate.removeprefix("auto/"), s.bytes, s.median_s))
    return out


@dataclass(frozen=True)
class Replayed:
    """One measured point as a model would choose it: the way, that way's measured median (the
    library's is its default algorithm's), and the library's best and default algorithms'."""

    ranks_per_machine: int
    block: int
    way: str
    seconds: float
    best: float
    default: float  # nan where the default was not measured
    best_wait: float | None  # the best algorithm's run-queue wait; None or < 0: not recorded

    @property
    def ratio(self) -> float:
        return self.best / self.seconds

    def cpu_fair(self, limit: float = 0.10) -> bool:
        """MPICH's best algorithm waited less than ``limit`` of its time for a CPU (runs that
        record run-queue waits only)."""
        return self.best_wait is not None and 0 <= self.best_wait < limit


def replayed(model: dict[str, float], base, runs: list[dict]) -> list[Replayed]:  # noqa: ANN001
    """What the default routine would take with ``model`` at each measured point of ``runs``
    (a crossover.json's runs on the tree ``base``); points whose way was not measured are left
    out."""
    out = []
    for run in runs:
        r = run["ranks_per_machine"]
        topo = replace(base, ranks_per_machine=r)
        shape = job_shape(topo, rank_machine(topo.n_machines, r))
        at: dict[int, dict[str, dict]] = {}
        for s in run["summary"]:
            at.setdefault(s["bytes"], {})[s["candidate"]] = s
        for size in sorted(at):
            got = at[size]
            way = choose_way(model, shape, size)
            mine = got.get("native-default" if way == "library" else f"auto/{way}")
            natives = [s for c, s in got.items() if c.startswith("native") and s["median_s"]]
            if mine is None or not natives:
                continue
            best = min(natives, key=lambda s: s["median_s"])
            default = got.get("native-default", {}).get("median_s") or float("nan")
            out.append(
                Replayed(r, size, way, mine["median_s"], best["median_s"], default,
                         best.get("runq_wait"))
            )  # fmt: skip
    return out


def replay(model: dict[str, float], base, runs: list[dict]) -> str:  # noqa: ANN001
    """replayed() as a table: the measured time of the way ``model`` takes at each point, and
    that against the library's best and default algorithms: the choice checked on the
    measurements themselves."""
    lines = ["| R | block | way | ms | best library ms | vs best | vs default |", "|" + "---|" * 7]
    for p in replayed(model, base, runs):
        lines.append(
            f"| {p.ranks_per_machine} | {p.block} | {p.way} | {1e3 * p.seconds:.2f} | "
            f"{1e3 * p.best:.2f} | {p.ratio:.2f}x | {p.default / p.seconds:.2f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology")
    p.add_argument(
        "--backend", default="emulate", choices=("local", "emulate", "mpiexec", "simulate")
    )
    p.add_argument("--ranks-per-machine", default="1,2,4")
    p.add_argument("--sizes", default="8,64,512,4K,32K,256K")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--target-seconds", type=float, default=1.0)
    p.add_argument("--max-iters", type=int, default=20)
    p.add_argument("--rate", default=None, help="emulated link rate (default: the topology's)")
    p.add_argument(
        "--natives",
        default=None,
        help="forced algorithms of the library (default: MPICH's brucks, scattered, pairwise; "
        "SimGrid's own under --backend simulate)",
    )
    p.add_argument(
        "--reference",
        default="native-default",
        help="the library routine auto is also compared with (SimGrid's MPICH selector: "
        "native-mpich)",
    )
    p.add_argument(
        "--ways",
        default=None,
        help="our ways to force, comma-separated (default: library,phases,loground and leaders "
        "where a machine has several ranks)",
    )
    p.add_argument(
        "--simgrid-cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="simulate: a SimGrid setting for every run, e.g. smpi/os:0:2e-06:0 (repeatable)",
    )
    p.add_argument(
        "--mpicc",
        default=None,
        help="the MPI to measure, by its compiler wrapper (its mpiexec beside it); default: the "
        "venv's MPICH",
    )
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--prefix", default="aapcx", help="emulate: namespace name prefix")
    p.add_argument("-o", "--output", required=True)
    p.add_argument(
        "--model",
        help="the selection's constants for `auto` (a model.json of aapcgen tune or of this "
        "script's fit); default: the built-in ones",
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="measure nothing: read DIR/crossover.json, fit again and print what the fitted "
        "and the built-in constants choose at each measured point",
    )
    a = p.parse_args()
    try:
        rpms = [int(x) for x in a.ranks_per_machine.split(",") if x]
    except ValueError:
        p.error(f"--ranks-per-machine: '{a.ranks_per_machine}' is not a list of integers")
    if not rpms or min(rpms) < 1:
        p.error("--ranks-per-machine: give positive integers, e.g. 1,2,4")
    unknown = sorted(set((a.ways or "").split(",")) - {"", *WAYS})
    if unknown:
        p.error(f"--ways: unknown way '{unknown[0]}' (choose from: {', '.join(WAYS)})")
    base = load_topology(Path(a.topology))
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    natives = None if a.natives is None else tuple(x for x in a.natives.split(",") if x)
    if natives is None and a.backend != "simulate":
        natives = ("brucks", "scattered", "pairwise")
    report, calls, runs = [], [], []
    tuned = read_model(a.model) if a.model else None
    start = time.monotonic()
    if a.replay:
        try:
            runs = json.loads((out / "crossover.json").read_text())["runs"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error(f"--replay: {out / 'crossover.json'} is not a crossover run's output ({exc})")
        rpms = [run["ranks_per_machine"] for run in runs]
        for run in runs:
            topo = replace(base, ranks_per_machine=run["ranks_per_machine"])
            calls += calls_of(topo, [Summary(**s) for s in run["summary"]])
    for r in rpms if not a.replay else []:
        topo = replace(base, ranks_per_machine=r)
        cfg = BenchConfig(
            topo, a.backend, parse_sizes(a.sizes), variant_specs("receiver-all", None), natives,
            a.repeats, a.target_seconds, a.max_iters, parse_rate_option(a.rate), DEFAULT_QUEUE,
            out / f"r{r}", timeout=a.timeout, prefix=a.prefix, mpicc=a.mpicc, runtime=("auto",),
            ways=ways_for(r) if a.ways is None else tuple(w for w in a.ways.split(",") if w),
            simgrid_cfg=tuple(a.simgrid_cfg), time_variants=False, model=tuned,
        )  # fmt: skip
        print(f"R={r}: {topo.n_machines * r} ranks ({time.monotonic() - start:.0f} s)", flush=True)
        rows = run_bench(cfg, lambda m: print(m, file=sys.stderr, flush=True))
        rows = [x for x in rows if x.candidate.startswith(("native", "auto"))]
        summary = summarize(rows, topo.n_machines * r, peak_of(topo, cfg.rate))
        report.append(table(r, summary, a.reference))
        print(report[-1], flush=True)
        calls += calls_of(topo, summary)
        runs.append({"ranks_per_machine": r, "summary": [asdict(s) for s in summary]})
    model = fit_model(calls)
    errors = relative_errors(model, calls)
    lines = ["fitted constants (aapc_cost_model_t):"]
    lines += model_lines(model)
    lines.append(
        f"relative error over {len(errors)} calls: median {sorted(map(abs, errors))[len(errors) // 2]:.0%}, "
        f"worst {max(map(abs, errors)):.0%}"
    )
    lines.append("the way each model picks (fitted | built-in defaults):")
    for r in rpms:
        topo = replace(base, ranks_per_machine=r)
        shape = job_shape(topo, rank_machine(topo.n_machines, r))
        picks = [
            f"{b}: {choose_way(model, shape, b)} | {choose_way(default_model(), shape, b)}"
            for b in parse_sizes(a.sizes)
        ]
        lines.append(f"  R={r}: " + ", ".join(picks))
    print("\n".join(lines))
    print("measured time of the way the fitted constants choose:")
    print(replay(model, base, runs))
    print("... and the built-in constants:")
    print(replay(default_model(), base, runs))
    if a.replay:
        return 0
    (out / "crossover.json").write_text(
        json.dumps(
            {"topology": base.name, "runs": runs, "model": model, "errors": errors}, indent=1
        )
    )
    print(f"wrote {out / 'crossover.json'}")
    return 0


if __name__ == "__main__":
    from aapcgen.cli.failure import report

    try:
        sys.exit(main())
    except BaseException as exc:  # one line and an exit status, as the CLI (no traceback)
        sys.exit(report(exc))
