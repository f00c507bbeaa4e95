"""The outputs of `aapcgen tune`: the decision, the tuned routine, native tuning files, tables and plot."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from aapcgen.codegen.generate import stderr_progress
from aapcgen.core.errors import AapcError
from aapcgen.measure.bench import Measurement
from aapcgen.tune.decide import (
    DEFAULT,
    Choice,
    Range,
    decide,
    is_native,
    merge,
    simplicity,
)
from aapcgen.tune.native import (
    mpich_builtin_tree,
    mpich_csel_json,
    ompi_rules_file,
)
from aapcgen.tune.plan import TuneConfig, candidates, points_of
from aapcgen.tune.probe import MPICH_JSON, OMPI_RULES
from aapcgen.tune.render import TUNED, decision_markdown, plot_tune, render_tuned, throughput
from aapcgen.tune.store import SWEEP, VALIDATE, Store


def validation_table(rows: list[Measurement], choices: list[Choice], n: int) -> list[dict]:
    """Per size: tuned against the best candidate and the library default (median throughput)."""
    pts = {(p.candidate, p.bytes): p for p in points_of(rows)}
    out = []
    for c in choices:
        tuned, ref, nat = (pts.get((x, c.bytes)) for x in (TUNED, c.best, DEFAULT))
        if not (tuned and ref and nat):
            continue
        out.append(
            {
                "bytes": c.bytes,
                "tuned_MBps": throughput(n, c.bytes, tuned.median),
                "best": c.best,
                "best_MBps": throughput(n, c.bytes, ref.median),
                "native_MBps": throughput(n, c.bytes, nat.median),
                "tuned_vs_best": ref.median / tuned.median,
                "tuned_vs_native": nat.median / tuned.median,
            }
        )
    return out


def write_results(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    library: Path | None,
    say: Callable[[str], None],
) -> tuple[list[Choice], list[Range], list[Path]]:
    """Decision, native files, tuned routine directory; returns the choices, ranges, files."""
    b = cfg.bench
    n = b.topology.n_machines
    pruned = set(store.pruned())
    pts = points_of(store.rows(SWEEP), pruned)
    if not pts:
        raise AapcError("no measurements to decide from")
    choices = decide(pts)
    ranges = merge(choices)
    natives = frozenset(p.candidate for p in pts if is_native(p.candidate))
    native_ranges = merge(decide(pts, natives))
    out = b.out_dir
    files = []
    if cfg.flavour == "mpich":
        try:
            base = mpich_builtin_tree(library) if library else None
            if base is None:
                raise ValueError("the timer is not linked against a shared libmpi")
            (out / MPICH_JSON).write_text(mpich_csel_json(native_ranges, n, base))
            files.append(out / MPICH_JSON)
        except ValueError as exc:
            say(f"warning: no {MPICH_JSON}: {exc} (MPICH needs its whole selection tree in it)")
    elif cfg.flavour == "openmpi":
        try:
            (out / OMPI_RULES).write_text(ompi_rules_file(native_ranges, n))
        except ValueError as exc:
            raise AapcError(f"{OMPI_RULES}: {exc}") from None
        files.append(out / OMPI_RULES)
    measured_on = (
        f"{env['backend']} ({env['mpi']}, rate {env['rate']}) on {time.strftime('%Y-%m-%d')}"
    )
    tuned_dir = out / "tuned"
    render_tuned(b.topology, ranges, tuned_dir, measured_on)
    files.append(tuned_dir)
    return choices, ranges, files


def finish(
    cfg: TuneConfig,
    store: Store,
    env: dict[str, str],
    peak: float,
    choices: list[Choice],
    ranges: list[Range],
    files: list[Path],
) -> list[Path]:
    b = cfg.bench
    n = b.topology.n_machines
    pruned = store.pruned()
    pts = points_of(store.rows(SWEEP), set(pruned))
    natives = frozenset(p.candidate for p in pts if is_native(p.candidate))
    native_ranges = merge(decide(pts, natives))
    vrows = store.rows(VALIDATE)
    table = validation_table(vrows, choices, n)
    vpts = {p.bytes: p.median for p in points_of(vrows) if p.candidate == TUNED}
    missing = sorted({c.bytes for c in choices} - {int(v["bytes"]) for v in table})
    if vrows and missing:
        stderr_progress(
            "warning: validation lacks the tuned routine, the best candidate or the default at "
            + ", ".join(map(str, missing))
            + " bytes (re-run to measure them)"
        )
    env_lines = [
        f"topology {b.topology.name} ({n} machines, hash {env['topology_hash']})",
        f"backend {env['backend']}, rate {env['rate']}, MPI {env['mpi']}",
        f"peak {peak / 1e6:.2f} MB/s; {b.repeats} repeats; {len(candidates(cfg))} candidates; "
        f"{len(pruned)} (candidate, size) points pruned by --budget",
    ]
    decision = {
        "topology": b.topology.name,
        "environment": env,
        "peak_MBps": peak / 1e6,
        "rule": {
            "statistic": "median seconds per call",
            "noise_guard": "min(0.05, (max-min)/median of the best); ties go to the simplest",
            "boundary": "floor(sqrt(a*b)) between measured sizes a < b; bytes < boundary -> a",
            "message_size": "bytes per block = count x type size",
        },
        "per_size": [asdict(c) for c in choices],
        "ranges": [asdict(r) for r in ranges],
        "native_ranges": [asdict(r) for r in native_ranges],
        "simplicity_order": sorted({p.candidate for p in pts}, key=simplicity),
        "pruned": [
            {"candidate": c, "bytes": s, "reason": r} for (c, s), r in sorted(pruned.items())
        ],
        "validation": table,
        "files": [str(f.relative_to(b.out_dir)) for f in files],
    }
    out = b.out_dir
    (out / "decision.json").write_text(json.dumps(decision, indent=1) + "\n")
    title = f"{b.topology.name} ({b.backend}, {n} machines)"
    (out / "decision.md").write_text(
        decision_markdown(
            title,
            env_lines,
            choices,
            ranges,
            native_ranges,
            {(p.candidate, p.bytes): p for p in pts},
            n,
            peak,
            table,
        )
    )
    every = points_of(store.rows(SWEEP))  # pruned candidates too, with the rounds they ran
    plot_tune(every, choices, n, peak, title, out / "throughput.png", vpts or None)
    return [out / "decision.json", out / "decision.md", out / "throughput.png", *files]
