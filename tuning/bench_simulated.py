"""Simulated clusters (SimGrid SMPI): generated MPI_Alltoall variants against SimGrid's own
algorithms on one topology and message size, with the ratio of each to the bottleneck bound.

    flock -s /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_simulated.py \\
        topologies/two-level-1024.yaml --bytes 65536 \\
        --variants no-sync,receiver-all,sender-all \\
        --algorithms pair,ring,mpich,ompi,mvapich2,basic_linear,bruck --timeout 1500

One smpirun per candidate (one timed call, no warm-up: simulated time is deterministic), each
bounded by --timeout seconds of wall time. Prints a Markdown table: simulated seconds, ratio to
the bound (|M|(|M|-1) msize / the seed 002 section 3 peak), ratio to the best SimGrid
algorithm, wall seconds, and the lowest MemAvailable seen during the run (shared-malloc buffers
make the process's RSS meaningless). Candidates that time out or fail are reported as such.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.codegen.generate import generate, variant_specs  # noqa: E402
from aapcgen.core.errors import AapcError  # noqa: E402
from aapcgen.core.model import Topology  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.measure.bench import peak_of  # noqa: E402
from aapcgen.measure.timer import seconds_by_candidate  # noqa: E402
from aapcgen.platforms import simgrid  # noqa: E402


@dataclass(frozen=True)
class Result:
    candidate: str
    simulated_s: float | None  # None: timed out or failed
    wall_s: float
    min_available_mb: int
    note: str


def mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return -1


def run_one(candidate: str, run: Callable[[], simgrid.SimRun], timeout: float) -> Result:
    """Run one simulation (``run``); watch free memory meanwhile (shared-malloc buffers make
    the process's RSS meaningless)."""
    low = [mem_available_mb()]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(2.0):
            low.append(mem_available_mb())

    threading.Thread(target=watch, daemon=True).start()
    start = time.monotonic()
    try:
        sim = run()
    except AapcError:  # run_simulated kills the run at its timeout
        return Result(
            candidate, None, time.monotonic() - start, min(low), f"timed out after {timeout:g} s"
        )
    finally:
        done.set()
    times = seconds_by_candidate(sim.stdout)
    if sim.returncode != 0 or not times:
        tail = [ln for ln in sim.stderr.strip().splitlines() if ln.strip()][-1:] or ["(no output)"]
        return Result(
            candidate, None, sim.wall_seconds, min(low), f"exit {sim.returncode}: {tail[0][:80]}"
        )
    call = next(iter(times.values()))[0]
    print(f"{candidate}: {call:.6f} s simulated, {sim.wall_seconds:.0f} s wall", file=sys.stderr)
    return Result(candidate, call, sim.wall_seconds, min(low), "")


def build(topo: Topology, variant: str, work: Path) -> Path:
    """Generate one variant and compile the timer with it (smpicc)."""
    gen = work / f"gen-{variant}"
    generate(topo, variant_specs(variant, None), gen)
    return simgrid.compile_timer(gen, work / f"timer-{variant}")


def table(results: list[Result], bound: float) -> str:
    builtin = [
        r.simulated_s for r in results if r.candidate.startswith("SimGrid ") and r.simulated_s
    ]
    best = min(builtin) if builtin else None
    lines = [
        "| candidate | simulated s | x bound | x best SimGrid algorithm | wall s | min MemAvailable MB | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.simulated_s is None:
            lines.append(
                f"| {r.candidate} | – | – | – | {r.wall_s:.0f} | {r.min_available_mb} | {r.note} |"
            )
            continue
        vs = f"{r.simulated_s / best:.2f}" if best else "–"
        lines.append(
            f"| {r.candidate} | {r.simulated_s:.4f} | {r.simulated_s / bound:.2f} | {vs} "
            f"| {r.wall_s:.0f} | {r.min_available_mb} | {r.note} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology", type=Path)
    p.add_argument("--bytes", type=int, default=65536, help="message size per pair")
    p.add_argument("--variants", default="no-sync,receiver-all,sender-all")
    p.add_argument("--algorithms", default="pair,ring,mpich,ompi,mvapich2,basic_linear,bruck")
    p.add_argument("--timeout", type=float, default=1500.0, help="wall seconds per candidate")
    p.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="untimed calls before the timed one (0: the timed call includes the routine's "
        "first-call set-up, as an application's first all-to-all does)",
    )
    p.add_argument("--workdir", type=Path, help="keep generated code and timers here")
    p.add_argument(
        "--cfg",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra SimGrid setting for every run, e.g. network/crosstraffic:0 (repeatable)",
    )
    p.add_argument(
        "--models",
        default="SMPI",
        help="SimGrid network models, comma-separated: SMPI (the default, with its calibrated "
        "latency and bandwidth factors) and/or CM02 (max-min sharing at nominal speeds)",
    )
    a = p.parse_args()
    if a.warmup < 0:
        print(f"bench_simulated: --warmup {a.warmup}: expected 0 or more", file=sys.stderr)
        return 2
    try:
        topo = load_topology(a.topology)
    except AapcError as e:
        print(f"bench_simulated: {e}", file=sys.stderr)
        return 2
    n = topo.n_machines
    bound = n * (n - 1) * a.bytes / peak_of(topo, None)
    try:
        simgrid.check_mappings(n, a.bytes, "bench_simulated")
    except AapcError as e:
        print(e, file=sys.stderr)
        return 2
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in ("SMPI", "CM02")]
    if unknown or not models:
        print(
            f"bench_simulated: --models: expected SMPI and/or CM02, got '{a.models}'",
            file=sys.stderr,
        )
        return 2
    bad_cfg = [c for c in a.cfg if re.fullmatch(r"[a-z0-9_/-]+:[^\s]+", c) is None]
    if bad_cfg:
        print(f"bench_simulated: --cfg {bad_cfg[0]!r}: expected NAME:VALUE", file=sys.stderr)
        return 2
    variants = [v for v in a.variants.split(",") if v]
    algorithms = [x for x in a.algorithms.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="aapc-simbench-") as tmp:
        work = a.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        platform, hosts = simgrid.export_simgrid(topo, work)
        exes = {}
        for v in variants:
            print(f"generating and compiling {v} ...", file=sys.stderr)
            exes[v] = build(topo, v, work)
        any_exe = next(iter(exes.values()), None)
        if any_exe is None and algorithms:
            any_exe = build(topo, "no-sync", work)
        timer_args = ["--bytes", str(a.bytes), "--repeats", "1", "--iters", "1"]
        timer_args += ["--warmup", str(a.warmup)]
        results = []

        def runner(
            exe: Path, only: str, model: str, alg: str | None = None
        ) -> Callable[[], simgrid.SimRun]:
            args = [*timer_args, "--only", only]
            cfg = [f"network/model:{model}", *a.cfg]
            return lambda: simgrid.run_simulated(
                platform, hosts, n, exe, args, alg, cfg, timeout=a.timeout, check=False
            )

        for model in models:
            results = []
            for v, exe in exes.items():
                print(f"[{model}] generated {v} ...", file=sys.stderr, flush=True)
                results.append(run_one(f"generated {v}", runner(exe, v, model), a.timeout))
            for alg in algorithms:
                print(f"[{model}] SimGrid {alg} ...", file=sys.stderr, flush=True)
                run = runner(any_exe, "native", model, alg)
                results.append(run_one(f"SimGrid {alg}", run, a.timeout))
            print(
                f"{topo.name}: {n} ranks, {a.bytes} B per pair, bound {bound:.4f} s, model {model}"
            )
            print(table(results, bound))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AapcError as e:  # generation, compilation: one line, no traceback
        print(f"bench_simulated: {e}", file=sys.stderr)
        sys.exit(2)
