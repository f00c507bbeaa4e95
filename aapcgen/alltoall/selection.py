"""Which way the default MPI_Alltoall takes per block size on a job, as the generated library
decides it at run time (the C cost model of runtime_c/cluster/aapc_cluster_select.c, through
aapcgen.alltoall.cjob): for ``aapcgen info`` and the docs' tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aapcgen.alltoall.cjob import WAYS, Shape, choose_way, default_model, job_shape
from aapcgen.core.model import Topology

LARGEST = 1 << 30  # blocks up to 1 GiB are described


@dataclass(frozen=True)
class WayRange:
    way: str
    first: int  # bytes per block, inclusive
    last: int  # inclusive; LARGEST: and above


ALLTOALLV_WAYS = ("library", "phases")  # what MPI_Alltoallv chooses between


def way_ranges(
    model: dict[str, float], shape: Shape, allowed: Sequence[str] = WAYS
) -> list[WayRange]:
    """The ranges of block sizes (1 B .. LARGEST) over which one way of ``allowed`` is chosen,
    in order (MPI_Alltoall: all four; MPI_Alltoallv: ALLTOALLV_WAYS)."""

    def choose_way_at(m: dict[str, float], sh: Shape, b: float) -> str:
        return choose_way(m, sh, b, allowed)

    out: list[WayRange] = []
    lo, way = 1, choose_way_at(model, shape, 1)
    while lo <= LARGEST:
        hi = lo  # grow, then bisect, the last size with the same way
        while hi * 2 <= LARGEST and choose_way_at(model, shape, hi * 2) == way:
            hi *= 2
        top = min(hi * 2, LARGEST + 1)
        while top - hi > 1:
            mid = (hi + top) // 2
            hi, top = (mid, top) if choose_way_at(model, shape, mid) == way else (hi, mid)
        out.append(WayRange(way, lo, hi))
        lo = hi + 1
        if lo <= LARGEST:
            way = choose_way_at(model, shape, lo)
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
        else:
            parts.append(f"{r.way} {size_text(r.first)}-{size_text(r.last)}")
    return ", ".join(parts)


def selection_lines(topo: Topology, model: dict[str, float] | None = None) -> list[str]:
    """``aapcgen info``'s account of the selection for this job (ranks_per_machine ranks on
    every machine, in blocks)."""
    tuned = model is not None
    model = model or default_model()
    r = topo.ranks_per_machine
    shape = job_shape(topo, [m for m in range(topo.n_machines) for _ in range(r)])
    source = (
        "constants measured on this cluster by aapcgen tune"
        if tuned
        else "untuned: built-in constants measured on emulated trees (docs/measurements/selection.md); "
        "`aapcgen tune` measures this cluster's"
    )
    return [
        f"selection   the default MPI_Alltoall per block, {shape.ranks} ranks "
        f"({r} per machine): {ranges_text(way_ranges(model, shape))}",
        "            MPI_Alltoallv, by the busiest rank's bytes over P - 1: "
        f"{ranges_text(way_ranges(model, shape, ALLTOALLV_WAYS))}",
        f"            {source}",
    ]
