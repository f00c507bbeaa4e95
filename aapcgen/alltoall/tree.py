"""Stage 2: root and bottleneck of a switch tree (seed 002, section 3 and section 4.1).

``analyze(topology) -> TreeInfo``.

* Every link (switch-switch and machine-switch) splits the machines into two sides; AAPC sends
  ``|Mu| * |Mv|`` messages across it in each direction: its *load*.
* The bottleneck link(s) have the largest load; the schedule needs exactly that many phases.
* The root is found by the walk of section 4.1: start on a bottleneck link (u, v) with
  ``|Mu| >= |Mv|``; while u has only one branch (other than the one towards v) that contains
  machines, step along that branch. Lemma 1: every subtree of the root has at most |M|/2 machines.

Deterministic choices (documented in docs/scheduling.md):

* the walk starts on the first bottleneck link, switch-switch links in file order before machine
  links in rank order;
* when both sides of that link hold |M|/2 machines, u is the side holding rank 0;
* the subtrees T0..Tk-1 are sorted by size, largest first, ties broken by smallest rank; machines
  inside a subtree are in rank order (m_{i,0} has the smallest rank);
* with two machines (the paper assumes three or more) the root is the switch of rank 0.

With per-link bandwidths the phases are the same (they depend only on machine counts), but the
time bound is set by the link with the largest load/bandwidth, which need not be the
load-bottleneck; ``TreeInfo.peak`` uses that bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aapcgen.core.model import Topology


@dataclass(frozen=True)
class LinkLoad:
    """One link with its AAPC load. ``side_a`` machines are on a's side of the link."""

    a: str
    b: str
    side_a: int
    side_b: int
    bandwidth: float  # bytes per second

    @property
    def load(self) -> int:
        return self.side_a * self.side_b

    @property
    def seconds_per_byte(self) -> float:
        """Time to carry one byte of every AAPC message across the link (load / bandwidth)."""
        return self.load / self.bandwidth

    @property
    def label(self) -> str:
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class TreeInfo:
    topology: Topology
    root: str
    subtrees: tuple[tuple[int, ...], ...]  # T0..Tk-1: machine ranks, rank order inside each
    subtree_via: tuple[str, ...]  # the root's neighbour that leads to each subtree
    links: tuple[LinkLoad, ...]  # every link, switch links first then machine links

    @property
    def n_machines(self) -> int:
        return self.topology.n_machines

    @property
    def load(self) -> int:
        """Number of phases: |M0| * (|M| - |M0|), the largest link load."""
        m0 = len(self.subtrees[0])
        return m0 * (self.n_machines - m0)

    @property
    def bottlenecks(self) -> tuple[LinkLoad, ...]:
        """Links with the largest load (the bottleneck links of section 3)."""
        top = max(link.load for link in self.links)
        return tuple(link for link in self.links if link.load == top)

    @property
    def rate_bottlenecks(self) -> tuple[LinkLoad, ...]:
        """Links with the largest load/bandwidth: they bound the AAPC time."""
        top = max(link.seconds_per_byte for link in self.links)
        return tuple(link for link in self.links if link.seconds_per_byte >= top * (1 - 1e-12))

    @property
    def peak(self) -> float:
        """Peak aggregate throughput in bytes/s: |M|(|M|-1) / max over links of load/bandwidth."""
        n = self.n_machines
        return n * (n - 1) / max(link.seconds_per_byte for link in self.links)


def _adjacency(topo: Topology) -> dict[str, list[tuple[str, float]]]:
    adj: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    for link in topo.links:
        adj[link.a].append((link.b, link.bandwidth))
        adj[link.b].append((link.a, link.bandwidth))
    for name, switch, bw in zip(topo.machines, topo.machine_switch, topo.machine_bandwidth):
        adj[name] = [(switch, bw)]
        adj[switch].append((name, bw))
    return adj


def _dfs_order(
    adj: dict[str, list[tuple[str, float]]], start: str
) -> tuple[list[str], dict[str, str]]:
    """Preorder of the tree from ``start`` and each node's parent (iterative: trees can be deep)."""
    order: list[str] = []
    parent: dict[str, str] = {}
    stack = [start]
    seen = {start}
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in reversed(adj[node]):
            if nxt not in seen:
                seen.add(nxt)
                parent[nxt] = node
                stack.append(nxt)
    return order, parent


def _subtree_counts(topo: Topology, order: list[str], parent: dict[str, str]) -> dict[str, int]:
    """Machines below each node when the tree hangs from ``order[0]``."""
    machines = set(topo.machines)
    count = {node: int(node in machines) for node in order}
    for node in reversed(order[1:]):
        count[parent[node]] += count[node]
    return count


@dataclass(frozen=True)
class _Counts:
    """The tree hanging from its first switch, with the machines below every node."""

    adj: dict[str, list[tuple[str, float]]]
    parent: dict[str, str]
    below: dict[str, int]
    n: int

    def beyond(self, node: str, nxt: str) -> int:
        """Machines reached from ``node`` through its neighbour ``nxt``."""
        return self.below[nxt] if self.parent.get(nxt) == node else self.n - self.below[node]


def _counts(topo: Topology) -> _Counts:
    adj = _adjacency(topo)
    order, parent = _dfs_order(adj, topo.switches[0])
    return _Counts(adj, parent, _subtree_counts(topo, order, parent), topo.n_machines)


def link_loads(topo: Topology) -> tuple[LinkLoad, ...]:
    """Every link with the number of machines on each side (switch links first, file order)."""
    c = _counts(topo)
    n = topo.n_machines
    links = [
        LinkLoad(ln.a, ln.b, c.beyond(ln.b, ln.a), c.beyond(ln.a, ln.b), ln.bandwidth)
        for ln in topo.links
    ]
    links += [
        LinkLoad(m, s, 1, n - 1, bw)
        for m, s, bw in zip(topo.machines, topo.machine_switch, topo.machine_bandwidth)
    ]
    return tuple(links)


def find_root(topo: Topology, links: tuple[LinkLoad, ...]) -> str:
    """The root switch by the walk of section 4.1 (see the module docstring for tie rules)."""
    if topo.n_machines == 2:
        return topo.machine_switch[0]
    c = _counts(topo)
    adj, parent = c.adj, c.parent

    top = max(link.load for link in links)
    start = next(link for link in links if link.load == top)
    if start.side_a > start.side_b:
        u, v = start.a, start.b
    elif start.side_b > start.side_a:
        u, v = start.b, start.a
    else:  # |Mu| == |Mv|: u is the side that holds rank 0
        ancestors_of_rank0 = set()
        node: str | None = topo.machines[0]
        while node is not None:
            ancestors_of_rank0.add(node)
            node = parent.get(node)
        a_below = parent.get(start.a) == start.b  # a's side is the subtree hanging from a
        lower = start.a if a_below else start.b
        upper = start.b if a_below else start.a
        u, v = (lower, upper) if lower in ancestors_of_rank0 else (upper, lower)
    while True:
        branches = [w for w, _ in adj[u] if w != v and c.beyond(u, w) > 0]
        if len(branches) != 1:
            return u
        u, v = branches[0], u


def root_subtrees(topo: Topology, root: str) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Subtrees of the root with their machines, sorted largest first, ties by smallest rank."""
    adj = _adjacency(topo)
    order, parent = _dfs_order(adj, root)
    branch = {nxt: nxt for nxt, _ in adj[root]}
    for node in order[1:]:
        if node not in branch:
            branch[node] = branch[parent[node]]
    members: dict[str, list[int]] = {}
    for r, name in enumerate(topo.machines):
        members.setdefault(branch[name], []).append(r)
    found = sorted(members.items(), key=lambda item: (-len(item[1]), item[1][0]))
    return tuple(tuple(ranks) for _, ranks in found), tuple(via for via, _ in found)


def analyze(topo: Topology) -> TreeInfo:
    """Stage 2 of the pipeline: root, subtrees, link loads."""
    links = link_loads(topo)
    root = find_root(topo, links)
    subtrees, via = root_subtrees(topo, root)
    return TreeInfo(topology=topo, root=root, subtrees=subtrees, subtree_via=via, links=links)


@dataclass(frozen=True)
class HungTree:
    """The tree hanging from its first switch, as arrays. Node ids: machines 0..N-1 (rank
    order), then switches in declaration order. ``parent`` is -1 at the top."""

    names: tuple[str, ...]
    parent: np.ndarray
    depth: np.ndarray
    switch_of: np.ndarray  # machine rank -> node id of its switch


def hang(topo: Topology) -> HungTree:
    names = tuple(topo.machines) + tuple(topo.switches)
    index = {name: i for i, name in enumerate(names)}
    order, parent = _dfs_order(_adjacency(topo), topo.switches[0])
    par = np.full(len(names), -1, dtype=np.int64)
    depth = np.zeros(len(names), dtype=np.int64)
    for node in order[1:]:
        par[index[node]] = index[parent[node]]
        depth[index[node]] = depth[par[index[node]]] + 1
    switch_of = np.array([index[s] for s in topo.machine_switch], dtype=np.int64)
    return HungTree(names=names, parent=par, depth=depth, switch_of=switch_of)


def machine_ancestors(tree: HungTree) -> np.ndarray:
    """``anc[d, m]``: the node at depth d on the path from the top switch to machine m (the
    machine itself at its own depth; -1 below it)."""
    n = len(tree.switch_of)
    max_depth = int(tree.depth[:n].max())
    anc = np.full((max_depth + 1, n), -1, dtype=np.int64)
    node = np.arange(n, dtype=np.int64)
    for d in range(max_depth, -1, -1):
        here = tree.depth[node] == d
        anc[d, here] = node[here]
        node = np.where(here, tree.parent[node], node)
    return anc


def path_edges(tree: HungTree, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed edges used by each message, as (message index, edge id) pairs.

    Edge id ``2*c`` is the edge from node c up to its parent, ``2*c + 1`` the edge down from the
    parent to c. A message uses the up-edge of each ancestor of src strictly below the lowest
    common ancestor, and the down-edge of each such ancestor of dst.
    """
    anc = machine_ancestors(tree)
    msgs, edges = [], []
    for d in range(1, anc.shape[0]):
        a, b = anc[d][src], anc[d][dst]
        differ = a != b
        for end, down in ((a, 0), (b, 1)):
            used = np.flatnonzero(differ & (end >= 0))
            msgs.append(used)
            edges.append(2 * end[used] + down)
    return np.concatenate(msgs), np.concatenate(edges)


def uplink_bandwidths(topo: Topology, ht: HungTree) -> np.ndarray:
    """Bandwidth (bytes/s) of the link from each node of ``ht = hang(topo)`` up to its parent,
    indexed by node id (machines first, then switches; 0 for the top switch)."""
    index = {name: i for i, name in enumerate(ht.names)}
    bw = np.zeros(len(ht.names), dtype=np.float64)
    bw[: topo.n_machines] = topo.machine_bandwidth
    for link in topo.links:
        a, b = index[link.a], index[link.b]
        bw[b if ht.parent[b] == a else a] = link.bandwidth
    return bw
