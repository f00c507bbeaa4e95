"""What the selection's constants choose at every point of recorded crossover runs, and what
that choice measured against MPICH's best there: a change of the built-in constants checked on
every run at once, without measuring anything (docs/measurements/selection.md, "The
per-message constant from CPU-fair runs").

    .venv/bin/python tuning/replay_runs.py docs/bench/cpu-fair-sock/*.json [--set msg_alpha=120e-6]
        [--model model.json] [--fair 0.10]

A run is a `tuning/bench_crossover.py` crossover.json (other JSON files are skipped, and so are
points where the way chosen was not measured). A point is CPU-fair where MPICH's best algorithm
waited less than --fair of its time for a CPU (the runs that record run-queue waits).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tuning"))

from bench_crossover import Replayed, default_model, replayed  # noqa: E402

from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.tune.model import read_model  # noqa: E402


def points_of(path: Path, model: dict[str, float], topologies: Path) -> list[Replayed]:
    """The chosen way's measured time beside MPICH's best at every point of one run (none when
    the file is not a crossover run, or its tree is not in ``topologies``)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or "runs" not in data or "topology" not in data:
        return []
    yaml = topologies / f"{data['topology']}.yaml"
    if not yaml.exists():
        return []
    runs = [run for run in data["runs"] if "summary" in run]
    return replayed(model, load_topology(yaml), runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="crossover.json files")
    p.add_argument("--model", type=Path, help="a model file (default: the built-in constants)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override one constant (repeatable)")  # fmt: skip
    p.add_argument("--fair", type=float, default=0.10, help="CPU-fair: best's wait below this")
    p.add_argument("--topologies", type=Path, default=ROOT / "topologies")
    a = p.parse_args()
    model = read_model(str(a.model)) if a.model else default_model()
    for item in a.set:
        name, _, value = item.partition("=")
        if name not in model:
            p.error(f"--set {item}: no constant '{name}' (one of {', '.join(model)})")
        try:
            model[name] = float(value)
        except ValueError:
            p.error(f"--set {item}: '{value}' is not a number")
    points = [(path.name, pt) for path in a.runs for pt in points_of(path, model, a.topologies)]
    if not points:
        p.error("no point of a crossover run in these files")
    print("| run | R | block | way | ms | MPICH's best ms | ratio | best's wait |")
    print("|---|---|---|---|---|---|---|---|")
    for name, pt in points:
        wait = "-" if pt.best_wait is None or pt.best_wait < 0 else f"{pt.best_wait:.0%}"
        print(f"| {name} | {pt.ranks_per_machine} | {pt.block} | {pt.way} | "
              f"{pt.seconds * 1e3:.2f} | {pt.best * 1e3:.2f} | {pt.ratio:.2f}x | {wait} |")  # fmt: skip
    fair = [(n, pt) for n, pt in points if pt.cpu_fair(a.fair)]
    low = [(n, pt) for n, pt in fair if pt.ratio < 0.95]
    mean = math.exp(sum(math.log(pt.ratio) for _, pt in points) / len(points))
    print(f"{len(points)} points, geometric mean {mean:.3f}x MPICH's best; {len(fair)} CPU-fair, "
          f"{len(low)} of them below 0.95x" + "".join(
              f"\n  {n} R={pt.ranks_per_machine} {pt.block} B: {pt.way} {pt.ratio:.2f}x"
              for n, pt in low))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
