"""The verifiers' own view of the switch tree, rebuilt from the Topology alone.

Shared by the MPI_Alltoall and MPI_Alltoallv checkers; shares no code with the scheduler
(aapcgen/alltoall/tree.py), so a bug there cannot hide itself here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Topology


@dataclass(frozen=True)
class VTree:
    names: list[str]  # node id -> name; machines are ids 0..N-1 in rank order
    parent: np.ndarray  # node id -> parent id (-1 at the top)
    depth: np.ndarray
    below: np.ndarray  # machines in the subtree of each node


def hang_tree(topo: Topology) -> VTree:
    names = list(topo.machines) + list(topo.switches)
    index = {name: i for i, name in enumerate(names)}
    neighbours: list[list[int]] = [[] for _ in names]
    edges = [(ln.a, ln.b) for ln in topo.links] + list(zip(topo.machines, topo.machine_switch))
    for a, b in edges:
        neighbours[index[a]].append(index[b])
        neighbours[index[b]].append(index[a])
    n = topo.n_machines
    top = index[topo.switches[0]]
    parent = np.full(len(names), -1, dtype=np.int64)
    depth = np.zeros(len(names), dtype=np.int64)
    seen = np.zeros(len(names), dtype=bool)
    seen[top] = True
    order = [top]
    for node in order:  # breadth-first; the list grows while we walk it
        for nxt in neighbours[node]:
            if not seen[nxt]:
                seen[nxt] = True
                parent[nxt] = node
                depth[nxt] = depth[node] + 1
                order.append(nxt)
    if len(order) != len(names):
        raise VerificationError(f"{topo.source}: topology is not connected")
    below = np.zeros(len(names), dtype=np.int64)
    below[:n] = 1
    for node in reversed(order[1:]):
        below[parent[node]] += below[node]
    return VTree(names=names, parent=parent, depth=depth, below=below)


def ancestors(tree: VTree, n: int) -> np.ndarray:
    """anc[d, m] = ancestor of machine m at depth d (m itself at its own depth), -1 below it."""
    max_depth = int(tree.depth[:n].max())
    anc = np.full((max_depth + 1, n), -1, dtype=np.int64)
    cur = np.arange(n, dtype=np.int64)
    cur_depth = tree.depth[:n].copy()
    for d in range(max_depth, -1, -1):
        at = cur_depth == d
        anc[d, at] = cur[at]
        cur = np.where(at, tree.parent[cur], cur)
        cur_depth = np.where(at, d - 1, cur_depth)
    return anc
