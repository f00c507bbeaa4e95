"""Benchmark: time per call of the C Alltoallv schedulers (runtime_c/vsched), as Level 1 runs them.

For 64, 256 and 1024 machines, on one switch and on a two-level tree (edge switches of 16 under
a core), dense (every pair non-zero, 1 B..1 MiB) and sparse (20% of the pairs) patterns, and
each scheduler, it compiles tests/c/vsched_driver.c with -O2 and times aapc_vsched_run (paths,
scheduling, sorting, phase times, cost and bound: everything Level 1 does after MPI_Allgather)
with CLOCK_MONOTONIC (wall) and CLOCK_PROCESS_CPUTIME_ID (CPU), minimum and median of several
calls (a call slower than 1 s is measured once). Prints a Markdown table; record it in
docs/measurements/alltoallv-scheduling-in-c.md. Take the exclusive CPU lock while measuring:

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_vsched_c.py [--sizes 64,256]
        [--schedulers greedy,alltoall,balanced] [--max-balanced-pairs 70000]
        [--trees single,two-level] [--patterns dense,sparse]

Level 1 target: <= 50 ms per call for 256 machines with a dense pattern.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.codegen.vtree import render_vtree_text, vtree_tables  # noqa: E402
from aapcgen.core.model import Link, Topology  # noqa: E402

SCHEDULERS = {"greedy": 0, "alltoall": 1, "balanced": 2}
GBIT = 125e6
TARGET_MS = 50.0


def tree(n: int, edge: int | None) -> Topology:
    """One switch (edge None) or a core switch with n/edge edge switches of ``edge`` machines."""
    if edge is None:
        switches: tuple[str, ...] = ("s0",)
        machine_switch = ("s0",) * n
        links: tuple[Link, ...] = ()
    else:
        edges = tuple(f"e{i}" for i in range(n // edge))
        switches = ("core", *edges)
        machine_switch = tuple(edges[r // edge] for r in range(n))
        links = tuple(Link("core", e, GBIT) for e in edges)
    return Topology(
        name=f"{'single' if edge is None else 'two-level'}-{n}",
        source="<bench>",
        bandwidth=GBIT,
        switches=switches,
        machines=tuple(f"n{r}" for r in range(n)),
        machine_switch=machine_switch,
        machine_bandwidth=(GBIT,) * n,
        hosts=(None,) * n,
        links=links,
    )


def pattern(n: int, kind: str, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dense = rng.integers(1, 1 << 20, (n, n))
    if kind == "dense":
        return dense
    return np.where(rng.random((n, n)) < 0.2, dense, 0)


def compile_driver(out: Path) -> Path:
    vsched = ROOT / "runtime_c" / "vsched"
    sources = sorted(str(p) for p in vsched.glob("*.c"))
    cmd = ["cc", "-std=c11", "-O2", f"-I{vsched}", *sources]
    cmd += [str(ROOT / "tests" / "c" / "vsched_driver.c"), "-lm", "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def run(driver: Path, text_file: Path, repeat: int) -> dict[str, float]:
    res = subprocess.run(
        [str(driver), "--summary", "--repeat", str(repeat), str(text_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, float] = {}
    for line in res.stdout.splitlines():
        key, *vals = line.split()
        if key == "seconds_per_call":
            out["min"], out["median"] = float(vals[0]), float(vals[1])
        elif key == "cpu_seconds_per_call":
            out["cpu_min"], out["cpu_median"] = float(vals[0]), float(vals[1])
        elif key in ("cost", "bound"):
            out[key] = float.fromhex(vals[0])
        else:
            out[key] = float(vals[0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--schedulers", default="greedy,alltoall,balanced")
    ap.add_argument(
        "--max-balanced-pairs",
        type=int,
        default=70_000,
        help="skip balanced above this many messages (its time grows as messages x phases)",
    )
    ap.add_argument("--trees", default="single,two-level", help="single and/or two-level")
    ap.add_argument("--patterns", default="dense,sparse")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = args.schedulers.split(",")
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; cc -O2; "
        "times: min / median ms per aapc_vsched_run call"
    )
    print()
    print(
        "| machines | tree | pattern | scheduler | messages | phases | pieces | cost/bound "
        "| min ms | median ms | CPU median ms | <= 50 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        driver = compile_driver(Path(tmp) / "vsched_driver")
        for n in sizes:
            for edge in [None] * ("single" in args.trees) + [16] * ("two-level" in args.trees):
                topo = tree(n, edge)
                tables = vtree_tables(topo, with_template=True)
                head = render_vtree_text(tables)
                for kind in args.patterns.split(","):
                    p = pattern(n, kind)
                    np.fill_diagonal(p, 0)
                    k = int((p > 0).sum())
                    counts = " ".join(map(str, p.ravel().tolist()))
                    for name in names:
                        if name == "balanced" and k > args.max_balanced_pairs:
                            continue
                        f = Path(tmp) / "in.txt"
                        f.write_text(head + f"{SCHEDULERS[name]} 0 0\n{counts}\n")
                        r = run(driver, f, 1)
                        if r["min"] < 1.0:  # slow cases: that one call is the measurement
                            repeat = max(3, min(15, int(2.0 / max(r["min"], 1e-4))))
                            r = run(driver, f, repeat)
                        ratio = r["cost"] / r["bound"] if r["bound"] else 1.0
                        ok = "yes" if r["median"] * 1e3 <= TARGET_MS else "no"
                        print(
                            f"| {n} | {topo.name} | {kind} | {name} | {k} | {int(r['n_phases'])} "
                            f"| {int(r['n_pieces'])} | {ratio:.3f} | {r['min'] * 1e3:.1f} "
                            f"| {r['median'] * 1e3:.1f} | {r['cpu_median'] * 1e3:.1f} | {ok} |",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
