"""Plain data objects passed between the pipeline stages.

topology (YAML) -> Topology -> TreeInfo (root, bottleneck) -> Schedule (phases) -> ...

Every stage is a pure function from one of these objects to the next.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """A switch-to-switch link (undirected, full duplex). ``bandwidth`` is in bytes per second."""

    a: str
    b: str
    bandwidth: float


@dataclass(frozen=True)
class Topology:
    """A validated switch tree.

    ``machines[r]`` is the machine that runs MPI rank ``r``; the other per-machine tuples are
    indexed the same way. The loader guarantees: names are unique over switches and machines,
    every machine is attached to exactly one declared switch, switch links form one tree, and
    there are at least two machines.
    """

    name: str
    source: str  # the file name used in messages, or "<built-in>"
    bandwidth: float  # default link speed, bytes per second
    switches: tuple[str, ...]  # declaration order
    machines: tuple[str, ...]  # rank order
    machine_switch: tuple[str, ...]  # switch of each machine, rank order
    machine_bandwidth: tuple[float, ...]  # speed of each machine's own link, bytes/s
    hosts: tuple[str | None, ...]  # optional hostname of each machine, rank order
    links: tuple[Link, ...]  # switch-to-switch links, declaration order
    # MPI ranks per machine (multicore machines): ranks k*R .. k*R+R-1 run on machine k, in
    # blocks (mpiexec -ppn R); 1 = one rank per machine, the rank order of ``machines``
    ranks_per_machine: int = 1
    # b_ref of the capacity model (aapcgen/alltoall/capacity.py): the slowest machine link of
    # the machines in use; None: the slowest of machine_bandwidth (a job tree sets it, since its
    # ranks on shared machines have memory links)
    reference_bandwidth: float | None = None
    # bytes of blocks a rank keeps in flight in the windows of small blocks (the topology's
    # `inflight`: large on a lossless fabric); None: the library's default (64 KiB)
    inflight: float | None = None

    @property
    def n_machines(self) -> int:
        return len(self.machines)
