"""Which way the default MPI_Alltoall takes per block size on a job, as the generated library
decides it at run time (the C cost model of runtime_c/cluster/aapc_cluster_select.c, through
aapcgen.alltoall.cjob): for ``aapcgen info`` and the docs' tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aapcgen.alltoall.cjob import (
    WAYS,
    Digits,
    Shape,
    default_model,
    inflight_window,
    job_shape,
    points_of,
    way_chooser,
    way_costs,
)
from aapcgen.core.model import Topology

LARGEST = 1 << 30  # blocks up to 1 GiB are described


@dataclass(frozen=True)
class WayRange:
    way: str
    first: int  # bytes per block, inclusive
    last: int  # inclusive; LARGEST: and above


ALLTOALLV_WAYS = ("library", "phases", "loground")  # what MPI_Alltoallv chooses between


def way_ranges(
    model: Mapping[str, Any],
    shape: Shape,
    allowed: Sequence[str] = WAYS,
    windows: bool = True,
    alltoallv: bool = False,
) -> list[WayRange]:
    """The ranges of block sizes (1 B .. LARGEST) over which one way of ``allowed`` is chosen,
    in order (MPI_Alltoall: all four; MPI_Alltoallv: ALLTOALLV_WAYS, one phase at a time, the
    log rounds among the ranks in the tree's digits). The choice is probed at every power of two
    and at the model's measured sizes and their neighbours (a measured size can hold a way of its
    own), and the boundary bisected between two probes that differ."""

    way_at = way_chooser(model, shape, allowed, windows, alltoallv)
    marks = {1 << k for k in range(LARGEST.bit_length())}
    for *_, size, _fastest in model.get("points", ()):
        b = int(size)
        marks |= {x for x in (b - 1, b, b + 1) if 1 <= x <= LARGEST}
    probes = sorted(marks | {LARGEST})
    out: list[WayRange] = []
    first, way = 1, way_at(1)
    for lo, hi in zip(probes, probes[1:]):
        if way_at(hi) == way:
            continue
        while hi - lo > 1:  # way at lo, another at hi: the last size of lo's way
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if way_at(mid) == way else (lo, mid)
        out.append(WayRange(way, first, lo))
        first, way = hi, way_at(hi)
    out.append(WayRange(way, first, LARGEST))
    return out


def size_text(b: int) -> str:
    for unit, factor in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= factor and b % factor == 0:
            return f"{b // factor} {unit}"
    return f"{b} B"


def ranges_text(ranges: Sequence[WayRange]) -> str:
    parts = []
    for r in ranges:
        if r.last >= LARGEST:
            parts.append(f"{r.way} from {size_text(r.first)}")
        elif r.first == 1:
            parts.append(f"{r.way} up to {size_text(r.last)}")
        elif r.first == r.last:
            parts.append(f"{r.way} at {size_text(r.first)}")
        else:
            parts.append(f"{r.way} {size_text(r.first)}-{size_text(r.last)}")
    return ", ".join(parts)


def last_size(holds, lo: int = 1) -> int:  # noqa: ANN001
    """The largest block size from ``lo`` up to LARGEST for which ``holds`` (true at lo, false
    from some size on) is still true."""
    hi = lo
    while hi * 2 <= LARGEST and holds(hi * 2):
        hi *= 2
    top = min(hi * 2, LARGEST + 1)
    while top - hi > 1:
        mid = (hi + top) // 2
        hi, top = (mid, top) if holds(mid) else (hi, mid)
    return hi


def window_text(phases: float, per_block: int, budget: float = 0) -> str:
    """How many of ``phases`` phases a blocking call keeps in flight by block size, its messages
    ``per_block`` blocks each, within ``budget`` bytes (C: aapc_inflight_window; 0: the
    default budget)."""
    n = int(phases)
    if n < 2:
        return "one phase"
    every = last_size(lambda b: inflight_window(per_block * b, phases, budget) >= phases)
    one = last_size(lambda b: inflight_window(per_block * b, phases, budget) > 1) + 1
    head = (
        f"all {n} at once up to {size_text(every)}"
        if inflight_window(per_block, phases, budget) >= phases
        else ""
    )
    tail = f"one at a time from {size_text(one)}"
    return f"{head}, {tail}" if head else tail


def digits_text(digits: Digits, leaders: bool) -> str:
    """How the log-round way runs on this job: in the tree's digits, or Bruck's radix 2, among
    the machines' leaders (aggregated) or the ranks."""
    among = "the machines' leaders" if leaders else "the ranks"
    if not digits.radix:
        return f"log-round way: Bruck's radix 2 among {among} (the tree is not uniform)"
    levels = " x ".join(str(f) for f in digits.radix)
    split = ", ".join(str(g) for g in digits.groups)
    return (
        f"log-round way: among {among} in the tree's digits {levels} (machines' switches "
        f"first), each phase of a level in {split} contention-free sub-phases"
    )


def selection_lines(
    topo: Topology,
    model: dict[str, float] | None = None,
    rank_machine: Sequence[int] | None = None,
) -> list[str]:
    """``aapcgen info``'s account of the selection for a job on the cluster ``topo``: ranks on
    the machines ``rank_machine`` (by index, in rank order; default ranks_per_machine ranks on
    every machine, in blocks), the shape the runtime computes for it."""
    tuned = model is not None
    model = model or default_model()
    if rank_machine is None:
        rank_machine = [m for m in range(topo.n_machines) for _ in range(topo.ranks_per_machine)]
    shape = job_shape(topo, rank_machine)
    r = shape.max_per_machine
    per = f"{r} per machine" if shape.equal_per_machine else f"1 to {r} per machine"
    leaders = "leaders" in way_costs(model, shape, 1.0)  # several on every machine, equally
    points = len(model.get("points", ()))
    measured = (
        f"; {points} measured points, {points_of(model, shape)} of this job's shape: there, "
        "and between two within 2x, the way measured fastest"
        if points
        else ""
    )
    source = (
        f"constants measured on this cluster by aapcgen tune (ours only where the model says it "
        f"wins by more than {model.get('guard', 0.0):.0%}, its fit's median error{measured})"
        if tuned
        else "untuned: built-in constants measured on emulated trees (docs/measurements/selection.md); "
        "`aapcgen tune` measures this cluster's"
    )
    budget = shape.inflight
    windows = f"the per-rank phases {window_text(shape.rank_phases, 1, budget)}"
    if leaders:
        windows += f"; the leaders' {window_text(shape.machine_phases, r * r, budget)}"
    whose = "the topology's inflight" if topo.inflight else "the default"
    return [
        f"selection   the default MPI_Alltoall per block, {shape.ranks} ranks "
        f"({per}): {ranges_text(way_ranges(model, shape))}",
        f"            phases in flight ({size_text(int(budget))} of messages, {whose}; "
        f"AAPC_INFLIGHT): {windows}",
        f"            {digits_text(shape.digits if leaders else shape.rank_digits, leaders)}",
        "            MPI_Alltoallv, by the busiest rank's bytes over P - 1: "
        f"{ranges_text(way_ranges(model, shape, ALLTOALLV_WAYS, False, True))}",
        f"            {source}",
    ]
