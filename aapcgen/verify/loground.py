"""Independent checker of the log-round all-to-all (runtime_c/alltoall/aapc_alltoall_loground.c):
Bruck's radix-2 exchange among the ranks of a job, numbered in the switch tree's order.

It shares no code with the runtime: from the Topology and the members' order alone (what the
library dumps under AAPC_DUMP_SCHEDULE, kind "loground") it proves

1. the order follows the tree: the members below every machine and every switch hold consecutive
   places, so a round of distance d keeps inside a machine or a switch every message whose two
   ends are in it;
2. delivery: replaying Bruck's rounds slot by slot (slot s of the member at place i starts with
   its block for place (i + s) mod n; round d moves the slots whose bit d is set to place
   (i + d) mod n), every member ends with the block of every member, each exactly once;

and it counts, per round, the messages on the directed link most loaded for its capacity (1 on a
machine link, floor(b / b_ref) on a switch link; messages between two ranks of one machine use no
link), so the cost of a round's sharing is on record. The rounds' messages are small (the selection takes this way for small
blocks only), so a round is not split into contention-free sub-phases: a round whose messages
share a link runs them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Topology
from aapcgen.verify.tree import VTree, hang_tree


@dataclass(frozen=True)
class LogroundProof:
    n_members: int
    rounds: int
    messages: int
    # per round: (distance, messages on its directed link most loaded for its capacity, that
    # link's capacity)
    busiest: tuple[tuple[int, int, int], ...]

    def summary(self, name: str) -> str:
        shared = [f"d={d}: {k} on a link of capacity {c}" for d, k, c in self.busiest if k > c]
        return (
            f"{name}: log-round exchange of {self.n_members} members in tree order: every block "
            f"delivered exactly once in {self.rounds} rounds ({self.messages} messages); "
            + ("no round shares a link beyond its capacity" if not shared else "rounds sharing a "
               "link beyond its capacity: " + ", ".join(shared))
        )  # fmt: skip


def subtree_of(tree: VTree, n: int) -> list[list[int]]:
    """For every node, the machines below it (machines are nodes 0..n-1)."""
    out: list[list[int]] = [[] for _ in tree.names]
    for m in range(n):
        v = m
        while v >= 0:
            out[v].append(m)
            v = int(tree.parent[v])
    return out


def check_order(topo: Topology, order: Sequence[int]) -> None:
    """Every member is on a machine of the tree, and the members below each node (a machine: its
    ranks; a switch: its subtree's ranks) hold consecutive places."""
    n = topo.n_machines
    if any(not 0 <= m < n for m in order):
        raise VerificationError(f"loground order {list(order)[:20]}: not machines of the tree")
    places_of: dict[int, list[int]] = {}
    for i, m in enumerate(order):
        places_of.setdefault(m, []).append(i)
    tree = hang_tree(topo)
    for v, below in enumerate(subtree_of(tree, n)):
        places = sorted(i for m in below for i in places_of.get(m, []))
        if places and places[-1] - places[0] + 1 != len(places):
            raise VerificationError(
                f"loground order: the members below {tree.names[v]} are not consecutive "
                f"(places {places})"
            )


def misdelivered(block: np.ndarray, want: np.ndarray) -> str:
    """The first slot whose block (src * n + dst, n members) is not the one it should end with."""
    n = block.shape[0]
    i, s = (int(x) for x in np.argwhere(block != want)[0])
    got = int(block[i, s])
    return f"loground: member {i} slot {s} ends with the block {got // n} -> {got % n}"


def replay(n: int) -> int:
    """Bruck's rounds on n members, slot by slot; the number of rounds. Raises unless every
    member ends with slot s holding the block of member (i - s) mod n addressed to it."""
    i = np.arange(n)[:, None]
    s = np.arange(n)[None, :]
    block = i * n + (i + s) % n  # slot s of member i: the block src -> dst, as src * n + dst
    rounds, d = 0, 1
    while d < n:
        moving = (s & d) != 0  # the slots whose bit is set, every member alike
        block = np.where(moving, np.roll(block, d, axis=0), block)  # member i gets i - d's
        rounds, d = rounds + 1, d * 2
    want = (i - s) % n * n + i
    if not np.array_equal(block, want):
        raise VerificationError(misdelivered(block, want))
    return rounds


def link_capacity(topo: Topology, tree: VTree, node: int, bref: float) -> int:
    """Messages at once on the link above ``node``: 1 on a machine's own link, floor(b / b_ref)
    (at least 1) on a switch link of bandwidth b."""
    if node < topo.n_machines:
        return 1
    name, up = tree.names[node], tree.names[int(tree.parent[node])]
    b = next(ln.bandwidth for ln in topo.links if {ln.a, ln.b} == {name, up})
    return max(1, int(b / bref * (1 + 1e-9)))


def round_loads(topo: Topology, order: Sequence[int], d: int) -> tuple[int, int]:
    """(messages, capacity) of the most loaded directed link, relative to its capacity, in the
    round of distance d. A round is a permutation of the members (member i sends to i + d), so as
    many of its messages enter a subtree as leave it: counting the upward direction of every
    link counts both."""
    tree = hang_tree(topo)
    n = len(order)
    bref = min(topo.machine_bandwidth[m] for m in order)
    up: dict[int, int] = {}  # node -> messages on the link above it, upward
    for i in range(n):
        a, b = order[i], order[(i + d) % n]
        path_a, path_b = [a], [b]
        while path_a[-1] >= 0:
            path_a.append(int(tree.parent[path_a[-1]]))
        while path_b[-1] >= 0:
            path_b.append(int(tree.parent[path_b[-1]]))
        common = set(path_b)
        for x in path_a:
            if x in common:
                break
            up[x] = up.get(x, 0) + 1
    loads = [(k, link_capacity(topo, tree, x, bref)) for x, k in up.items()]
    return max(loads, key=lambda kc: (kc[0] / kc[1], kc[0]), default=(0, 1))  # ties: more


def verify_loground(topo: Topology, order: Sequence[int]) -> LogroundProof:
    """Prove the log-round exchange of the members of ``order`` (the machine of each member, in
    the members' order) complete on ``topo``; raises VerificationError naming the first fault."""
    check_order(topo, order)
    n = len(order)
    rounds = replay(n)
    busiest = tuple((1 << k, *round_loads(topo, order, 1 << k)) for k in range(rounds))
    return LogroundProof(n, rounds, n * rounds, busiest)
