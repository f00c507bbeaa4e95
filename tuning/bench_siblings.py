"""Sibling communicators of one MPI_Comm_split all calling MPI_Alltoall at once (the rows or the
columns of a 2-D FFT's process grid), side by side in one job per repeat: the MPI library's
MPI_Alltoall, each communicator's own run-time schedule (runtime-receiver-all) and the union of
the siblings' schedules (runtime-receiver-all+union: aapc_comm_split_siblings, the generated
MPI_Comm_split under AAPC_SIBLINGS=union). Rank r runs on machine r (AAPC_MACHINE).

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_siblings.py \\
        topologies/chain-4x4.yaml --split columns:4 --backend emulate --sizes 64K -o out/

Prints the bench table (throughput counts the blocks every sibling moves; % of peak is against
the union's own bound: its bytes on its busiest link, aapcgen.measure.bench.split_peak) and the
ratios to the best native algorithm.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.codegen.generate import variant_specs  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.core.units import parse_rate_option  # noqa: E402
from aapcgen.measure.bench import (  # noqa: E402
    BenchConfig,
    best_ratios,
    parse_sizes,
    report_table,
    run_bench,
    split_colors,
    split_peak,
    summarize,
    write_outputs,
)
from aapcgen.platforms.emulate import DEFAULT_QUEUE  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology")
    p.add_argument("--split", required=True, help="rows:K or columns:K")
    p.add_argument("--backend", default="emulate", choices=("local", "emulate", "mpiexec"))
    p.add_argument("--sizes", default="64K")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--target-seconds", type=float, default=2.0)
    p.add_argument("--max-iters", type=int, default=50)
    p.add_argument("--rate", default=None, help="emulated link rate (default: the topology's)")
    p.add_argument("--natives", default=None, help="forced native algorithms (default: the MPI's)")
    p.add_argument(
        "--runtime", default="runtime-receiver-all", help="run-time routines, comma list"
    )
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--prefix", default="aapcsib", help="emulate: namespace name prefix")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    topo = load_topology(Path(a.topology))
    split_colors(a.split, topo.n_machines)  # checks the spec
    natives = tuple(x for x in a.natives.split(",") if x) if a.natives is not None else None
    cfg = BenchConfig(
        topo, a.backend, parse_sizes(a.sizes), variant_specs("receiver-all", None), natives,
        a.repeats, a.target_seconds, a.max_iters, parse_rate_option(a.rate), DEFAULT_QUEUE,
        Path(a.output),
        timeout=a.timeout, prefix=a.prefix, runtime=tuple(x for x in a.runtime.split(",") if x), split=a.split,
    )  # fmt: skip
    pairs, peak = split_peak(topo, a.split, cfg.rate)
    print(f"{topo.name} split {a.split}: {pairs} pairs, union peak {peak / 1e6:.2f} MB/s")
    rows = run_bench(cfg, lambda m: print(m, file=sys.stderr))
    # the precomputed whole-cluster routine (built for the bench) falls back on a sub-communicator
    rows = [r for r in rows if r.candidate.startswith(("native", "runtime-"))]
    summary = summarize(rows, topo.n_machines, peak, pairs)
    files = write_outputs(cfg, rows, summary, peak, pairs)
    print(report_table(summary))
    print(best_ratios(summary))
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
