"""Human-readable and JSON renderings of the pipeline's data objects (no decisions made here)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np

from aapcgen.alltoall.capacity import CapacityModel
from aapcgen.alltoall.phases import Schedule
from aapcgen.alltoall.tree import LinkLoad, TreeInfo
from aapcgen.core.units import format_bandwidth

MAX_LISTED = 8  # machines named per subtree in `info`
MAX_TABLE_SUBTREES = 8  # wider trees get the list form of `schedule`


def _names(topo_machines: tuple[str, ...], ranks: tuple[int, ...]) -> str:
    shown = " ".join(topo_machines[r] for r in ranks[:MAX_LISTED])
    more = len(ranks) - MAX_LISTED
    return shown + (f" ... ({more} more)" if more > 0 else "")


def _links(links: tuple[LinkLoad, ...]) -> str:
    labels = [link.label for link in links[:MAX_LISTED]]
    more = len(links) - MAX_LISTED
    return ", ".join(labels) + (f" and {more} more" if more > 0 else "")


def throughput(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e6:.2f} MB/s ({bytes_per_s * 8 / 1e6:.1f} Mbit/s)"


def capacity_line(model: CapacityModel, n_phases: int, unit: int) -> str:
    """What the capacities give: the lower bound and the phases of the schedule."""
    if model.uniform:
        return f"capacity    one message per link and phase: the {unit} phases are optimal"
    verdict = (
        "= the bound"
        if n_phases == model.lower_bound
        else f"({n_phases / model.lower_bound:.3f}x the bound)"
    )
    return (
        f"capacity    switch links carry up to {max(model.caps)} messages per phase "
        f"(speed / {format_bandwidth(model.bref)}, the slowest machine link): lower bound "
        f"{model.lower_bound} phases, schedule {n_phases} {verdict} (one message per link: {unit})"
    )


def info_text(tree: TreeInfo, model: CapacityModel | None = None, n_phases: int = 0) -> str:
    topo = tree.topology
    n, m0 = tree.n_machines, len(tree.subtrees[0])
    top = tree.bottlenecks[0]
    lines = [
        f"topology    {topo.name} ({topo.source}): {n} machines, {len(topo.switches)} switches, "
        f"{len(topo.links)} switch links, default {format_bandwidth(topo.bandwidth)}",
        f"root        {tree.root} ({len(tree.subtrees)} subtrees)",
    ]
    width = len(str(len(tree.subtrees) - 1)) + 1
    for i, (ranks, via) in enumerate(zip(tree.subtrees[:MAX_LISTED], tree.subtree_via)):
        head = "subtrees    " if i == 0 else "            "
        word = "machine " if len(ranks) == 1 else "machines"
        lines.append(
            f"{head}{f'T{i}':<{width}}: {len(ranks):>4} {word} via {via}: {_names(topo.machines, ranks)}"
        )
    rest = tree.subtrees[MAX_LISTED:]
    if rest:
        sizes = sorted({len(r) for r in rest}, reverse=True)
        lines.append(
            f"            ... and {len(rest)} more subtrees (T{MAX_LISTED}..T{len(tree.subtrees) - 1}) "
            f"of {'/'.join(map(str, sizes))} machines"
        )
    lines += [
        f"bottleneck  {_links(tree.bottlenecks)}: {top.side_a} x {top.side_b} machines, "
        f"load {top.load} messages each way",
        f"load        {tree.load} phases = |M0| x (|M| - |M0|) = {m0} x {n - m0}",
    ]
    rate = tree.rate_bottlenecks
    if set(rate) == set(tree.bottlenecks):
        lines.append(
            f"peak        {throughput(tree.peak)} aggregate = |M|(|M|-1) B / load "
            f"= {n} x {n - 1} x {format_bandwidth(top.bandwidth)} / {top.load}"
        )
    else:
        slow = rate[0]
        lines.append(
            f"peak        {throughput(tree.peak)} aggregate, bounded by {_links(rate)} "
            f"(load {slow.load} at {format_bandwidth(slow.bandwidth)}: the largest load/bandwidth; "
            f"see docs/scheduling.md on mixed link speeds)"
        )
    if model is not None:
        lines.append(capacity_line(model, n_phases, tree.load))
    return "\n".join(lines)


def info_json(tree: TreeInfo, model: CapacityModel | None = None, n_phases: int = 0) -> str:
    topo = tree.topology

    def link(x: LinkLoad) -> dict:
        return {
            "a": x.a,
            "b": x.b,
            "machines": [x.side_a, x.side_b],
            "load": x.load,
            "bandwidth": x.bandwidth,
        }

    return json.dumps(
        {
            "name": topo.name,
            "machines": list(topo.machines),
            "root": tree.root,
            "subtrees": [
                {"via": v, "ranks": list(r)} for r, v in zip(tree.subtrees, tree.subtree_via)
            ],
            "load": tree.load,
            "bottlenecks": [link(x) for x in tree.bottlenecks],
            "rate_bottlenecks": [link(x) for x in tree.rate_bottlenecks],
            "peak_bytes_per_s": tree.peak,
            **(
                {
                    "capacity": {
                        "reference_bandwidth": model.bref,
                        "max_messages_per_link": max(model.caps),
                        "lower_bound": model.lower_bound,
                        "phases": n_phases,
                    }
                }
                if model is not None
                else {}
            ),
        },
        indent=2,
    )


def schedule_json_chunks(tree: TreeInfo, sched: Schedule) -> Iterator[str]:
    """The JSON contract, streamed phase by phase (a 4096-machine schedule has 16.8M pairs)."""
    head = {"machines": list(tree.topology.machines), "root": tree.root, "load": sched.n_phases}
    yield json.dumps(head)[:-1] + ', "phases": ['
    bounds = np.searchsorted(sched.phase, np.arange(sched.n_phases + 1))
    src, dst = sched.src.tolist(), sched.dst.tolist()
    for p in range(sched.n_phases):
        pairs = ",".join(f"[{src[e]},{dst[e]}]" for e in range(bounds[p], bounds[p + 1]))
        yield ("," if p else "") + "[" + pairs + "]"
    yield "]}\n"


def schedule_text(tree: TreeInfo, sched: Schedule) -> Iterator[str]:
    """A table like the paper's Table 4: per phase, each subtree's global and local message."""
    names = tree.topology.machines
    k = len(tree.subtrees)
    subtree_of = np.empty(tree.n_machines, dtype=np.int64)
    for i, ranks in enumerate(tree.subtrees):
        subtree_of[list(ranks)] = i
    parts = ", ".join(
        f"T{i} = {_names(names, r)}" for i, r in enumerate(tree.subtrees[:MAX_LISTED])
    )
    yield f"{tree.topology.name}: root {tree.root}, {sched.n_phases} phases; {parts}\n"
    bounds = np.searchsorted(sched.phase, np.arange(sched.n_phases + 1))
    if k > MAX_TABLE_SUBTREES:
        for p in range(sched.n_phases):
            msgs = (
                f"{names[sched.src[e]]}->{names[sched.dst[e]]}"
                for e in range(bounds[p], bounds[p + 1])
            )
            yield f"phase {p}: " + " ".join(msgs) + "\n"
        return
    width = max(8, 2 * max(len(x) for x in names) + 3)
    header = ["phase"] + [f"T{i}->" for i in range(k)] + [f"local T{i}" for i in range(k)]
    yield (
        "  ".join(h.ljust(width) if j else h.rjust(5) for j, h in enumerate(header)).rstrip() + "\n"
    )
    for p in range(sched.n_phases):
        glob, local = [""] * k, [""] * k
        for e in range(bounds[p], bounds[p + 1]):
            s, d = int(sched.src[e]), int(sched.dst[e])
            text = f"{names[s]}->{names[d]}"
            if subtree_of[s] == subtree_of[d]:
                local[subtree_of[s]] = text
            else:
                glob[subtree_of[s]] = text
        cells = [str(p).rjust(5)] + [c.ljust(width) for c in glob + local]
        yield "  ".join(cells).rstrip() + "\n"
