"""Fit the per-call selection's constants to the calls of one or more crossover runs
(tuning/bench_crossover.py's DIR/crossover.json, any trees and ranks per machine together), print
the constants, the fit's error, and what the fitted constants choose at every measured point
with that point's measured time against the library's; -o writes a model file for `aapcgen
build --model`, `aapcgen info --model` and `bench_crossover.py --model`.

    .venv/bin/python tuning/fit_model.py docs/bench/loground-digits/simulated-16x-r8.json \\
        docs/bench/loground-digits/simulated-16x-r16.json [...] [--topologies DIR] [-o model.json]

--constants MODEL keeps MODEL's constants and guard and takes only the measured points (the way
measured fastest per job shape and block size) from the runs.

A run's tree is read from DIR/<name>.yaml, its name being the run's "topology" (default DIR:
topologies/).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tuning"))

from bench_crossover import Summary, calls_of, replay  # noqa: E402

from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.tune.model import (  # noqa: E402
    fit_model,
    measured_points,
    model_lines,
    read_model,
    relative_errors,
    write_model,
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="crossover.json files")
    p.add_argument("--topologies", default=str(ROOT / "topologies"))
    p.add_argument("-o", "--output", help="write the fitted model here")
    p.add_argument(
        "--constants",
        metavar="MODEL",
        help="keep this model file's constants and guard; take only the measured points from the runs",
    )
    a = p.parse_args()
    calls, runs = [], []
    for name in a.runs:
        data = json.loads(Path(name).read_text())
        base = load_topology(Path(a.topologies) / f"{data['topology']}.yaml")
        for run in data["runs"]:
            topo = replace(base, ranks_per_machine=run["ranks_per_machine"])
            calls += calls_of(topo, [Summary(**s) for s in run["summary"]])
            runs.append((base, run))
    if a.constants:  # the points of these runs on another fit's constants
        model = {**read_model(a.constants), "points": measured_points(calls)}
    else:
        model = fit_model(calls)
    errors = sorted(map(abs, relative_errors(model, calls)))
    kept = f"kept from {a.constants}" if a.constants else "fitted"
    print(f"{len(calls)} calls; constants {kept} (aapc_cost_model_t):")
    print("\n".join(model_lines(model)))
    print(f"relative error: median {errors[len(errors) // 2]:.1%}, worst {errors[-1]:.1%}")
    for base, run in runs:
        print(f"{base.name}, {run['ranks_per_machine']} rank(s) per machine:")
        print(replay(model, base, [run]))
    if a.output:
        source = "tuning/fit_model.py " + " ".join(a.runs)
        source += f" --constants {a.constants}" if a.constants else ""
        write_model(Path(a.output), model, calls, source)
        print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
