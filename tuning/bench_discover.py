"""Topology discovery on emulated networks: full recoveries (docs/measurements/discovery.md, "Topology
discovery"). Needs root (network namespaces); hold the CPU lock for the whole run:

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_discover.py [--only NAME ...]

Runs ``aapcgen discover --backend emulate`` on two-switch-4-4, chain-4x4, tree-24, fat-4-4 and
a random 16-machine tree (tuning/discover/random-16.yaml, written from seed 20 by
``--write-random``), and writes tuning/discover/results.json: per tree, whether the tree was
found up to switch names, probes, measurements, seconds and the speeds against the truth.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tuning" / "discover"
AAPCGEN = Path(sys.executable).with_name("aapcgen")
TREES = {
    "two-switch-4-4": ROOT / "topologies" / "two-switch-4-4.yaml",
    "chain-4x4": ROOT / "topologies" / "chain-4x4.yaml",
    "tree-24": ROOT / "topologies" / "tree-24.yaml",
    "fat-4-4": ROOT / "topologies" / "fat-4-4.yaml",
    "random-16": OUT / "random-16.yaml",
}


def random_tree(seed: int, machines: int = 16) -> str:
    """A random tree every link of which bandwidth can see: 5-7 switches, each parent drawn
    among the earlier switches; a leaf switch gets at least two machines, a switch with two or
    more children may get none; machine ranks in random order (rank 0 decides nothing)."""
    rng = random.Random(seed)
    n_switches = rng.randint(5, 7)
    parents = [rng.randrange(i) for i in range(1, n_switches)]
    children = [parents.count(i) for i in range(n_switches)]
    minimum = [0 if children[i] + (i > 0) >= 3 else 2 for i in range(n_switches)]
    counts = list(minimum)
    for _ in range(machines - sum(counts)):
        counts[rng.randrange(n_switches)] += 1
    placement = [f"s{i}" for i in range(n_switches) for _ in range(counts[i])]
    rng.shuffle(placement)
    lines = [
        f"# A random 16-machine tree (tuning/bench_discover.py --write-random, seed {seed}).",
        "name: random-16",
        "bandwidth: 100Mbit",
        f'switches: ["s[0-{n_switches - 1}]"]',
        "machines:",
        *(f"  - {{name: n{r:02d}, switch: {s}}}" for r, s in enumerate(placement)),
        "links:",
        *(f"  - [s{p}, s{i}]" for i, p in enumerate(parents, start=1)),
    ]
    return "\n".join(lines) + "\n"


def speeds(path: Path) -> tuple[list[float], list[float]]:
    data = yaml.safe_load(path.read_text())
    from aapcgen.core.topology import parse_topology

    topo = parse_topology(data, str(path))
    return list(topo.machine_bandwidth), [ln.bandwidth for ln in topo.links]


def run(name: str, topo: Path) -> dict:
    found = OUT / f"{name}.found.yaml"
    state = OUT / f"{name}.state.json"
    state.unlink(missing_ok=True)
    started = time.monotonic()
    result = subprocess.run(
        [str(AAPCGEN), "discover", "--backend", "emulate", str(topo), "-o", str(found)]
        + ["--state", str(state), "-q"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    if result.returncode == 0:
        state.unlink(missing_ok=True)  # a failed run keeps its measurements for a look
    lines = [line.removeprefix("aapcgen: ") for line in result.stderr.splitlines()]
    entry = {
        "tree": name,
        "exit": result.returncode,
        "seconds": round(seconds, 1),
        "same_tree": any(line.startswith("same tree as") for line in lines),
        "report": lines,
    }
    summary = next((ln for ln in lines if " probes, " in ln and "measurements" in ln), "")
    if summary:
        entry["probes"] = int(summary.split()[0])
        entry["measurements"] = int(summary.split()[2])
    if result.returncode == 0:
        got_m, got_l = speeds(found)
        want_m, want_l = speeds(topo)
        entry["machine_speed_error"] = max(abs(g - w) / w for g, w in zip(got_m, want_m))
        entry["link_speeds_found_mbit"] = sorted(round(b * 8 / 1e6, 1) for b in got_l)
        entry["link_speeds_true_mbit"] = sorted(round(b * 8 / 1e6, 1) for b in want_l)
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(TREES), help="these trees only")
    parser.add_argument("--write-random", action="store_true", help="rewrite random-16.yaml")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.write_random or not TREES["random-16"].exists():
        TREES["random-16"].write_text(random_tree(20))
    results_file = OUT / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for name in args.only or list(TREES):
        entry = run(name, TREES[name])
        entry["date"] = time.strftime("%Y-%m-%d")
        results[name] = entry
        results_file.write_text(json.dumps(results, indent=2) + "\n")
        print(
            f"{name:15s} exit {entry['exit']} same={entry['same_tree']} "
            f"probes {entry.get('probes')} {entry['seconds']:.0f} s "
            f"speeds {entry.get('link_speeds_found_mbit')} / {entry.get('link_speeds_true_mbit')}",
            flush=True,
        )


if __name__ == "__main__":
    main()
