"""Benchmark: time and peak memory of scheduling + verification on large topologies.

Each topology runs in a fresh child process pinned to one CPU core, so the peak resident set
size (ru_maxrss) is that run's own. Prints a Markdown table; record it in docs/performance.md.

    .venv/bin/python tuning/bench_scheduler.py [TOPO.yaml ...]
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["topologies/two-level-1024.yaml", "topologies/three-level-4096.yaml"]
TARGETS = {1024: (2.0, 4.0), 4096: (30.0, 4.0)}  # machines: (seconds, GiB)


def child(path: str) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from aapcgen.alltoall.phases import build_phases
    from aapcgen.alltoall.tree import analyze
    from aapcgen.core.topology import load_topology
    from aapcgen.verify.alltoall import verify_schedule

    t0 = time.perf_counter()
    topo = load_topology(path)
    t1 = time.perf_counter()
    sched = build_phases(analyze(topo))
    t2 = time.perf_counter()
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    t3 = time.perf_counter()
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        json.dumps(
            {
                "machines": topo.n_machines,
                "phases": proof.n_phases,
                "messages": proof.n_messages,
                "load": t1 - t0,
                "schedule": t2 - t1,
                "verify": t3 - t2,
                "rss_gib": rss_gib,
            }
        )
    )


def main(paths: list[str]) -> None:
    print(
        f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; one core per run"
    )
    print(
        "| topology | machines | phases | messages | load s | schedule s | verify s | total s | peak RSS GiB | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        out = subprocess.run(
            [sys.executable, __file__, "--child", path],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        total = r["schedule"] + r["verify"]
        secs, gib = TARGETS.get(r["machines"], (float("nan"), float("nan")))
        ok = "met" if total <= secs and r["rss_gib"] <= gib else ("-" if secs != secs else "MISSED")
        print(
            f"| {Path(path).stem} | {r['machines']} | {r['phases']} | {r['messages']} | {r['load']:.2f} | "
            f"{r['schedule']:.2f} | {r['verify']:.2f} | {total:.2f} | {r['rss_gib']:.2f} | "
            f"<= {secs:g} s, <= {gib:g} GiB: {ok} |",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main(sys.argv[1:] or DEFAULT)
