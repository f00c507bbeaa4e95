"""``aapcgen vschedule`` and the ``--alltoallv`` options of ``aapcgen generate``."""

from __future__ import annotations

import argparse
import json

from aapcgen.alltoallv.pattern import MAX_COUNT
from aapcgen.alltoallv.schedule import (
    BALANCED_QUANTA,
    SCHEDULERS,
    VSchedule,
    load_pattern,
    run_scheduler,
)
from aapcgen.cli.options import command, whole
from aapcgen.core.model import Topology
from aapcgen.core.topology import load_topology

COMPACT_PIECES = 200  # text output lists every piece up to this many, then a summary per phase


def _text(name: str, sched: VSchedule, summary: str) -> str:
    lines = [
        f"{name}: {sched.scheduler} scheduler, {sched.n_phases} phases, {len(sched.src)} pieces"
        + (f", small-message threshold {sched.threshold} B" if sched.threshold else "")
    ]
    compact = len(sched.src) > COMPACT_PIECES
    for p, pieces in enumerate(sched.phase_lists()):
        tag = ""
        if sched.small[p]:
            tag = " small-message phase" + ("" if sched.contention_free[p] else ", contended")
        head = f"phase {p}: {sched.phase_time[p] * 1e3:.3f} ms, {len(pieces)} pieces{tag}"
        if compact:
            biggest = max(x[3] for x in pieces)
            lines.append(f"{head}, largest {biggest} B")
        else:
            items = ", ".join(f"{s}->{d} {ln}B" + (f"@{o}" if o else "") for s, d, o, ln in pieces)
            lines.append(f"{head}: {items}")
    lines.append(
        f"cost {sched.cost * 1e3:.3f} ms, bound {sched.bound * 1e3:.3f} ms, cost/bound {sched.ratio:.4f}"
    )
    lines.append(summary)
    return "\n".join(lines) + "\n"


def _json(topo: Topology, sched: VSchedule, summary: str) -> str:
    data = {
        "topology": topo.name,
        "machines": list(topo.machines),
        "scheduler": sched.scheduler,
        "threshold": sched.threshold,
        "phases": [[list(x) for x in phase] for phase in sched.phase_lists()],
        "phase_seconds": sched.phase_time.tolist(),
        "small": sched.small.tolist(),
        "contention_free": sched.contention_free.tolist(),
        "cost_seconds": sched.cost,
        "bound_seconds": sched.bound,
        "cost_over_bound": sched.ratio,
        "verified": summary,
    }
    return json.dumps(data) + "\n"


def _nonneg_int(text: str) -> int:
    """Bytes: a whole number from 0 to the largest count of a pattern."""
    return whole(0, MAX_COUNT)(text)


def cmd_vschedule(args: argparse.Namespace) -> int:
    from aapcgen.verify.alltoallv import verify_vschedule  # the independent checker

    topo = load_topology(args.topology)
    pattern = load_pattern(args.pattern, topo)
    sched = run_scheduler(args.scheduler, topo, pattern, args.threshold, args.chunk)
    proof = verify_vschedule(topo, pattern, sched)
    what = f"{args.pattern} on {topo.name}"
    out = (
        _json(topo, sched, proof.summary(what))
        if args.format == "json"
        else _text(what, sched, proof.summary(what))
    )
    print(out, end="")
    return 0


def alltoallv_options(p: argparse.ArgumentParser) -> None:
    """``aapcgen generate --alltoallv PATTERN``: level-3 MPI_Alltoallv routines."""
    p.add_argument(
        "--alltoallv",
        metavar="PATTERN",
        help="also compile MPI_Alltoallv for this N x N byte-count pattern (.yaml, .csv, .npy "
        "or builtin:table3); calls with other counts fall back to PMPI_Alltoallv",
    )
    p.add_argument("--scheduler", choices=SCHEDULERS, default="balanced", help="with --alltoallv")
    _schedule_options(p)
    p.add_argument(
        "--runtime-scheduler",
        choices=SCHEDULERS,
        default="greedy",
        help="the C scheduler of MPI_Alltoallv levels 1 and 2 (default greedy: fast enough to "
        "run per call)",
    )


def _schedule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threshold",
        type=_nonneg_int,
        default=0,
        metavar="BYTES",
        help="greedy/alltoall: messages below this share one final phase (default 0: off)",
    )
    p.add_argument(
        "--chunk",
        type=_nonneg_int,
        default=None,
        metavar="BYTES",
        help=f"balanced: shortest phase in bytes (default: bound / {BALANCED_QUANTA})",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "vschedule",
        cmd_vschedule,
        "Phases for an MPI_Alltoallv pattern (greedy, all-to-all based or balanced), verified.",
        topology="required",
    )
    p.add_argument(
        "pattern",
        metavar="PATTERN",
        help="N x N byte counts: .yaml (list of lists), .csv or .npy; or builtin:table3",
    )
    p.add_argument("--scheduler", choices=SCHEDULERS, default="balanced")
    _schedule_options(p)
    p.add_argument("--format", choices=["text", "json"], default="text")
