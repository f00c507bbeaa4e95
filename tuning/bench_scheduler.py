"""Benchmark: time and peak memory of scheduling + verification on large topologies.

Each topology runs twice, each time in a fresh child process pinned to one CPU core, so the peak
resident set size (ru_maxrss) is that run's own: "unit" is seed 002's phases (one message per
link and phase, Python), "capacity" the capacity-aware phases (aapcgen/alltoall/capacity.py,
the C scheduler; the same as "unit" where seed 002 is already optimal). Prints a Markdown table;
record it in docs/measurements/scheduling-at-scale.md.

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


def child(path: str, mode: str) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from aapcgen.alltoall.capacity import schedule_phases
    from aapcgen.alltoall.cjob import library
    from aapcgen.alltoall.phases import build_phases
    from aapcgen.alltoall.tree import analyze
    from aapcgen.core.topology import load_topology
    from aapcgen.verify.alltoall import verify_schedule

    library()  # compiled before the clock starts (cached after the first run)
    t0 = time.perf_counter()
    topo = load_topology(path)
    t1 = time.perf_counter()
    run = build_phases if mode == "unit" else schedule_phases
    sched = run(analyze(topo))
    t2 = time.perf_counter()
    proof = verify_schedule(topo, sched.phase, sched.src, sched.dst)
    t3 = time.perf_counter()
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        json.dumps(
            {
                "machines": topo.n_machines,
                "phases": proof.n_phases,
                "bound": proof.lower_bound,
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
        "| topology | phases of | machines | phases | lower bound | messages | load s | schedule s | verify s | total s | peak RSS GiB | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path, mode in ((p, m) for p in paths for m in ("unit", "capacity")):
        out = subprocess.run(
            [sys.executable, __file__, "--child", path, mode],
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
            f"| {Path(path).stem} | {mode} | {r['machines']} | {r['phases']} | {r['bound']} | "
            f"{r['messages']} | {r['load']:.2f} | "
            f"{r['schedule']:.2f} | {r['verify']:.2f} | {total:.2f} | {r['rss_gib']:.2f} | "
            f"<= {secs:g} s, <= {gib:g} GiB: {ok} |",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1:] or DEFAULT)
