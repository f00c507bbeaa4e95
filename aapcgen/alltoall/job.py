"""The job tree: what the run-time scheduler schedules for one communicator.

``job_topology(cluster, rank_machine) -> Topology``: the cluster's switch tree with the
communicator's ranks as its machines (leaf r = rank r). A machine that runs one rank of the
communicator is that rank; a machine that runs R > 1 ranks becomes a switch (named after the
machine) joined to its own switch by the machine link, with its R ranks below it on memory links
(``MEMORY_FACTOR`` x the machine link: never a bottleneck). Every cluster switch stays.

``analyze`` and ``build_phases`` on this tree give seed 002's optimal contention-free phases for
the job: at most one message per machine link and per switch link in every phase. The C runtime
(runtime_c/cluster/aapc_cluster_tree.c) builds the same tree, node for node and link for link,
and must produce the same phases; tests/test_cluster_c.py compares them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from aapcgen.core.errors import InputError
from aapcgen.core.model import Link, Topology

MEMORY_FACTOR = 1e6


def job_topology(cluster: Topology, rank_machine: Sequence[int]) -> Topology:
    """The job tree of ranks placed on cluster machines (``rank_machine[r]``: machine index)."""
    n = cluster.n_machines
    if len(rank_machine) < 2:
        raise InputError(f"a job of {len(rank_machine)} rank(s) needs no all-to-all schedule")
    bad = next((m for m in rank_machine if not 0 <= m < n), None)
    if bad is not None:
        raise InputError(f"machine index {bad} is not a machine of {cluster.name} (0..{n - 1})")
    count = Counter(rank_machine)
    multi = list(dict.fromkeys(m for m in rank_machine if count[m] > 1))
    seen: Counter[int] = Counter()
    names, switch, bandwidth, hosts = [], [], [], []
    for m in rank_machine:
        name = cluster.machines[m]
        if count[m] > 1:
            names.append(f"{name}#{seen[m]}")
            switch.append(name)
            bandwidth.append(cluster.machine_bandwidth[m] * MEMORY_FACTOR)
        else:
            names.append(name)
            switch.append(cluster.machine_switch[m])
            bandwidth.append(cluster.machine_bandwidth[m])
        seen[m] += 1
        hosts.append(cluster.hosts[m])
    machine_links = tuple(
        Link(cluster.machine_switch[m], cluster.machines[m], cluster.machine_bandwidth[m])
        for m in multi
    )
    return Topology(
        name=f"{cluster.name}-job{len(rank_machine)}",
        source=cluster.source,
        bandwidth=cluster.bandwidth,
        switches=cluster.switches + tuple(cluster.machines[m] for m in multi),
        machines=tuple(names),
        machine_switch=tuple(switch),
        machine_bandwidth=tuple(bandwidth),
        hosts=tuple(hosts),
        links=cluster.links + machine_links,
        reference_bandwidth=min(cluster.machine_bandwidth[m] for m in rank_machine),
        inflight=cluster.inflight,
    )


def rank_machines(
    cluster: Topology, machines: Sequence[str], ranks_per_machine: int = 1
) -> list[int]:
    """Machine index of every rank of a job on ``machines`` with ``ranks_per_machine`` ranks
    each, in blocks (mpiexec -ppn R)."""
    index = {name: i for i, name in enumerate(cluster.machines)}
    return [index[m] for m in machines for _ in range(ranks_per_machine)]
