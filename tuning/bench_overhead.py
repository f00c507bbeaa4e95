"""Benchmark: executor overhead on one machine (no network emulation).

Generated routines for a single-switch topology (default: no-sync; --variants adds others, for
example the windowed no-sync-w2) against MPICH's native pairwise MPI_Alltoall
(MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM=pairwise) at 64 KB, all in one mpiexec job, interleaved
repeat by repeat (runtime_c/bench/alltoall_timer.c). Target: within 10%.

    .venv/bin/python tuning/bench_overhead.py [--machines 4,8] [--bytes 65536] [--repeats 15]
        [--variants no-sync,no-sync-w2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.topology import load_topology
from aapcgen.measure.timer import parse_timer_lines

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def measure(
    n: int, nbytes: int, repeats: int, iters: int, variants: str = "no-sync"
) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="aapc-overhead-") as tmp:
        topo = Path(tmp) / f"single-{n}.yaml"
        topo.write_text(
            f"name: single-{n}\nbandwidth: 1Gbit\nswitches: [s0]\nmachines:\n  - {{name: 'n[0-{n - 1}]', switch: s0}}\n"
        )
        gen = Path(tmp) / "gen"
        specs = [s for v in variants.split(",") for s in variant_specs(v, None)]
        generate(load_topology(topo), specs, gen)
        exe = Path(tmp) / "timer"
        sources = [str(p) for p in gen.glob("*.c")]
        subprocess.run(
            [
                str(BIN / "mpicc"),
                "-std=c11",
                "-O2",
                f"-I{gen}",
                str(ROOT / "runtime_c/bench/alltoall_timer.c"),
                *sources,
                "-o",
                str(exe),
            ],
            check=True,
        )
        env = {**os.environ, "MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "pairwise"}
        out = subprocess.run(
            [
                str(BIN / "mpiexec"),
                "-n",
                str(n),
                str(exe),
                "--bytes",
                str(nbytes),
                "--repeats",
                str(repeats),
                "--iters",
                str(iters),
            ],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        ).stdout
    times: dict[str, list[float]] = {}
    for t in parse_timer_lines(out):
        times.setdefault(t.candidate, []).append(t.seconds)
    return times


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1e3:.3f} ({min(xs) * 1e3:.3f}-{max(xs) * 1e3:.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", default="2,4,8")
    ap.add_argument("--bytes", type=int, default=65536)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--variants", default="no-sync", help="generated variants, comma-separated")
    args = ap.parse_args()
    names = args.variants.split(",")
    print(
        f"{os.cpu_count()} cores; {args.bytes} B per message; {args.repeats} interleaved repeats x {args.iters} calls"
    )
    head = "".join(f" {v} ms (median, min-max) | ratio |" for v in names)
    print(f"| ranks | native pairwise ms (median, min-max) |{head}")
    print("|---|---|" + "---|---|" * len(names))
    for n in (int(x) for x in args.machines.split(",")):
        t = measure(n, args.bytes, args.repeats, args.iters, args.variants)
        nat = t["native"]
        cells = "".join(
            f" {fmt(t[v])} | {statistics.median(t[v]) / statistics.median(nat):.3f} |"
            for v in names
        )
        print(f"| {n} | {fmt(nat)} |{cells}", flush=True)


if __name__ == "__main__":
    main()
