"""Benchmark: executor overhead on one machine (no network emulation).

The generated no-sync routine for a single-switch topology against MPICH's native pairwise
MPI_Alltoall (MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM=pairwise) at 64 KB, both in one mpiexec job,
interleaved repeat by repeat (runtime_c/bench/alltoall_timer.c). Target: within 10%.

    .venv/bin/python tuning/bench_overhead.py [--machines 4,8] [--bytes 65536] [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from aapcgen.measure.timer import parse_timer_lines

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def measure(n: int, nbytes: int, repeats: int, iters: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="aapc-overhead-") as tmp:
        topo = Path(tmp) / f"single-{n}.yaml"
        topo.write_text(
            f"name: single-{n}\nbandwidth: 1Gbit\nswitches: [s0]\nmachines:\n  - {{name: 'n[0-{n - 1}]', switch: s0}}\n"
        )
        gen = Path(tmp) / "gen"
        subprocess.run(
            [str(BIN / "aapcgen"), "generate", str(topo), "--variant", "no-sync", "-o", str(gen)],
            check=True,
            capture_output=True,
        )
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
    args = ap.parse_args()
    print(
        f"{os.cpu_count()} cores; {args.bytes} B per message; {args.repeats} interleaved repeats x {args.iters} calls"
    )
    print(
        "| ranks | native pairwise ms (median, min-max) | generated no-sync ms (median, min-max) | ratio |"
    )
    print("|---|---|---|---|")
    for n in (int(x) for x in args.machines.split(",")):
        t = measure(n, args.bytes, args.repeats, args.iters)
        nat, gen = t["native"], t["no-sync"]
        print(
            f"| {n} | {fmt(nat)} | {fmt(gen)} | {statistics.median(gen) / statistics.median(nat):.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
