"""Benchmark: what a call the preloaded library hands to the MPI library costs on top of the MPI
library's own time (issue 29: "no extra collective per call, no allocation"; docs/generate.md:
"A call the library serves costs nothing on top of the library's own time").

Two ranks, each with a core, placed on two machines (AAPC_MACHINE) of a one-switch topology, so
every collective of runtime_c/bench/handoff_timer.c on 8-byte arguments goes to the MPI library
(the report of one extra run says so, and the table names the reason): MPI_Alltoall, _Alltoallv
and _Ialltoall by the selection's model, the other collectives by the rule "one rank per
machine". Each round runs the timer alone and preloaded, in alternating order; the table gives
the medians over the rounds of the time per call, their difference and ratio.

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_handoff.py [--iters 200000] \\
        [--rounds 7] [--lib LABEL=libaapc.so ...] [-o DIR]

--lib times libraries built elsewhere (another version: `aapcgen build` of the one-switch
topology above, machines n0 and n1) in the same rounds, a column each, instead of building this
checkout's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOPOLOGY = """name: handoff-2
bandwidth: 1Gbit
switches: [s0]
machines:
  - {name: "n[0-1]", switch: s0}
"""


def command(exe: Path, iters: int, env: dict[str, str]) -> list[str]:
    """mpiexec with rank 0 on n0 and rank 1 on n1 (and ``env`` on both)."""
    cmd = [str(BIN / "mpiexec")]
    for i, machine in enumerate(("n0", "n1")):
        extra = [x for k, v in {"AAPC_MACHINE": machine, **env}.items() for x in ("-env", k, v)]
        cmd += ([":"] if i else []) + ["-n", "1", *extra, str(exe), str(iters)]
    return cmd


def run(cmd: list[str]) -> tuple[dict[str, float], str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"bench_handoff: {' '.join(cmd[:3])} ... failed: {proc.stderr[-500:]}")
    times = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "handoff":
            times[parts[1]] = float(parts[2])
    return times, proc.stderr


def routines(report: str) -> dict[str, str]:
    """Per collective, the routine column of the AAPC_REPORT table."""
    out = {}
    for line in report.splitlines():
        parts = line.split(None, 4)
        if len(parts) == 5 and parts[0].startswith("MPI_"):
            out[parts[0].removeprefix("MPI_").lower()] = parts[4].strip()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iters", type=int, default=200000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--lib", action="append", default=[], help="LABEL=PATH, repeatable")
    p.add_argument("-o", "--output")
    a = p.parse_args()
    given = dict(x.split("=", 1) for x in a.lib if "=" in x)
    if len(given) != len(a.lib):
        p.error("--lib: give LABEL=PATH")
    with tempfile.TemporaryDirectory(prefix="aapc-handoff-") as tmp:
        topo, lib, exe = Path(tmp) / "t.yaml", Path(tmp) / "libaapc.so", Path(tmp) / "timer"
        topo.write_text(TOPOLOGY)
        if not given:
            build = [str(BIN / "aapcgen"), "build", str(topo), "-o", str(lib)]
            subprocess.run(build, check=True, capture_output=True, timeout=600)
            given = {"preloaded": str(lib)}
        cc = [str(BIN / "mpicc"), "-std=c11", "-O2", str(ROOT / "runtime_c/bench/handoff_timer.c")]
        subprocess.run([*cc, "-o", str(exe)], check=True, timeout=300)
        first = next(iter(given.values()))
        _, report = run(command(exe, 1000, {"LD_PRELOAD": first, "AAPC_REPORT": "1"}))
        served = routines(report)
        modes = [("alone", {})] + [(k, {"LD_PRELOAD": v}) for k, v in given.items()]
        samples: dict[str, dict[str, list[float]]] = {m: {} for m, _ in modes}
        for rnd in range(a.rounds):
            for mode, env in modes if rnd % 2 == 0 else modes[::-1]:
                times, _ = run(command(exe, a.iters, env))
                for op, ns in times.items():
                    samples[mode].setdefault(op, []).append(ns)
            print(f"round {rnd + 1}/{a.rounds}", file=sys.stderr, flush=True)
    rows = []
    print(
        f"Per call, 2 ranks on 2 machines (a core each), 8-byte arguments, {a.iters} calls per "
        f"collective, median of {a.rounds} rounds (ns)"
    )
    libs = list(given)
    head = ["collective", "MPI library alone"]
    for k in libs:
        head += [k, "difference", f"{k} / alone"]
    print("| " + " | ".join([*head, "routine (report)"]) + " |")
    print("|" + "---|" * (len(head) + 1))
    for op, alone in samples["alone"].items():
        x = statistics.median(alone)
        cells = [op, f"{x:.0f}"]
        row = {"op": op, "alone_ns": alone}
        for k in libs:
            y = statistics.median(samples[k][op])
            cells += [f"{y:.0f}", f"{y - x:+.0f}", f"{y / x:.3f}"]
            row[f"{k}_ns"] = samples[k][op]
        rows.append(row)
        print("| " + " | ".join([*cells, served.get(op, "?")]) + " |")
    if a.output:
        out = Path(a.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "handoff.json").write_text(json.dumps({"iters": a.iters, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
