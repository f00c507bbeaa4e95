"""Stage 3 with link capacities: switch links faster than the machine links carry several
messages per phase (docs/scheduling.md "Capacities").

``schedule_phases(tree) -> Schedule`` is the stage the pipeline calls: seed 002's phases
(``phases.build_phases``) when they are optimal for the capacities, else the capacity-aware
phases of the run-time scheduler in C (runtime_c/cluster/aapc_cluster_capacity.c, one
implementation for the generator and the library, called through ``cjob``).

The model:

* ``b_ref``: the slowest machine link (of the machines in use: ``Topology.reference_bandwidth``
  when set, as job trees do, else the slowest ``machine_bandwidth``);
* a directed switch link of bandwidth b carries ``c = max(1, floor(b / b_ref))`` messages in one
  phase, at most the machines on either side of it; a machine's own link carries one: a machine
  sends at most one and receives at most one message per phase;
* lower bound on the phases: ``LB = max(n - 1, max over links of ceil(load / c))``;
* time bound: ``max over links of load / b`` seconds per byte of message; a phase lasts as long
  as its most loaded link needs, ``max over links of (its messages in the phase) / b``. With
  integer ratios and ``LB`` phases the two meet when the bottleneck's ``c`` divides its load;
  with ratios that are not whole numbers ``floor`` gives away the fraction, and
  ``phased_seconds_per_byte`` reports how far from the time bound the schedule lands.

With one link speed every ``c`` is 1, ``LB`` is seed 002's L, and the schedule is seed 002's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aapcgen.alltoall.phases import Schedule, build_phases
from aapcgen.alltoall.tree import TreeInfo, hang, machine_ancestors, uplink_bandwidths
from aapcgen.core.model import Topology

CAP_MAX = 65535  # as runtime_c/cluster/aapc_cluster_capacity.c


def reference_bandwidth(topo: Topology) -> float:
    """b_ref: the slowest machine link of the machines in use."""
    if topo.reference_bandwidth is not None:
        return topo.reference_bandwidth
    return min(topo.machine_bandwidth)


def capacity(bandwidth: float, bref: float, side: int, other: int) -> int:
    """Messages per phase on a switch link of ``bandwidth`` between ``side`` and ``other``
    machines."""
    c = max(1, min(CAP_MAX, math.floor(bandwidth / bref * (1 + 1e-9))))
    return max(1, min(c, side, other))


@dataclass(frozen=True)
class CapacityModel:
    bref: float  # bytes/s of the slowest machine link
    caps: tuple[int, ...]  # per link of TreeInfo.links
    lower_bound: int  # LB

    @property
    def uniform(self) -> bool:
        """Every link carries one message per phase (seed 002's model)."""
        return all(c == 1 for c in self.caps)


def capacity_model(tree: TreeInfo) -> CapacityModel:
    """Capacities and the lower bound of ``tree`` (links in TreeInfo.links order)."""
    topo = tree.topology
    bref = reference_bandwidth(topo)
    machines = set(topo.machines)
    caps = tuple(
        1
        if (link.a in machines or link.b in machines)
        else capacity(link.bandwidth, bref, link.side_a, link.side_b)
        for link in tree.links
    )
    n = tree.n_machines
    lb = max([n - 1] + [-(-link.load // c) for link, c in zip(tree.links, caps) if link.load])
    return CapacityModel(bref=bref, caps=caps, lower_bound=lb)


def schedule_phases(tree: TreeInfo) -> Schedule:
    """The pipeline's phases: seed 002's when they reach the capacity lower bound (always with
    one link speed), else the capacity-aware phases of the C scheduler."""
    model = capacity_model(tree)
    if model.lower_bound >= tree.load:
        return build_phases(tree)
    from aapcgen.alltoall.cjob import job_phases  # the C library is built on first use

    topo = tree.topology
    return job_phases(topo, list(range(topo.n_machines)))


def link_counts(tree: TreeInfo, sched: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Messages per (phase, directed link): ``counts[p, 2*node + down]`` over the nodes of
    ``hang(topology)``, and the bandwidth of each node's link up to its parent."""
    ht = hang(tree.topology)
    bw = uplink_bandwidths(tree.topology, ht)
    anc = machine_ancestors(ht)
    n_nodes = len(ht.names)
    counts = np.zeros((max(sched.n_phases, 1), 2 * n_nodes), dtype=np.int64)
    src, dst = sched.src.astype(np.int64), sched.dst.astype(np.int64)
    for d in range(1, anc.shape[0]):
        a, b = anc[d][src], anc[d][dst]
        differ = a != b
        for end, down in ((a, 0), (b, 1)):
            used = np.flatnonzero(differ & (end >= 0))
            np.add.at(counts, (sched.phase[used], 2 * end[used] + down), 1)
    return counts, bw


def phased_seconds_per_byte(tree: TreeInfo, sched: Schedule) -> float:
    """Least time per message byte of phases run one after another: each phase lasts as long as
    its busiest link needs, ``max over links of (messages on it in the phase) / bandwidth``."""
    if len(sched.src) == 0:
        return 0.0
    counts, bw = link_counts(tree, sched)
    inv = np.divide(1.0, bw, out=np.zeros_like(bw), where=bw > 0)
    per_link = np.repeat(inv, 2)
    return float((counts * per_link).max(axis=1).sum())
