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

and it counts, per round, the messages on the busiest directed link (against the link's
capacity: 1 on a machine link, floor(b / b_ref) on a switch link; messages between two ranks of
one machine use no link), so the cost of a round's
sharing is on record. The rounds' messages are small (the selection takes this way for small
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
    # per round: (distance, largest number of its messages on one directed link, that link's
    # capacity)
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


def replay(n: int) -> int:
    """Bruck's rounds on n members, slot by slot; the number of rounds. Raises unless every
    member ends with slot s holding the block of member (i - s) mod n addressed to it."""
    i = np.arange(n)[:, None]
    s = np.arange(n)[None, :]
    src = np.broadcast_to(i, (n, n)).copy()  # slot s of member i: block from src to dst
    dst = (i + s) % n
    rounds, d = 0, 1
    while d < n:
        moving = (s & d) != 0  # the slots whose bit is set, every member alike
        src = np.where(moving, np.roll(src, d, axis=0), src)  # member i gets member i - d's
        dst = np.where(moving, np.roll(dst, d, axis=0), dst)
        rounds, d = rounds + 1, d * 2
    want_src, want_dst = (i - s) % n, np.broadcast_to(i, (n, n))
    if not (np.array_equal(src, want_src) and np.array_equal(dst, want_dst)):
        bad = np.argwhere((src != want_src) | (dst != want_dst))[0]
        raise VerificationError(
            f"loground: member {bad[0]} slot {bad[1]} ends with the block {src[tuple(bad)]} -> "
            f"{dst[tuple(bad)]}"
        )
    return rounds


def round_loads(topo: Topology, order: Sequence[int], d: int) -> tuple[int, int]:
    """(messages on the busiest directed link, its capacity) in the round of distance d."""
    tree = hang_tree(topo)
    n = len(order)
    bref = min(topo.machine_bandwidth[m] for m in order)
    up_bw = {}
    for ln in topo.links:
        up_bw[(ln.a, ln.b)] = up_bw[(ln.b, ln.a)] = ln.bandwidth
    count: dict[tuple[int, int], int] = {}
    for i in range(n):
        a, b = order[i], order[(i + d) % n]
        path_a, path_b = [a], [b]
        while path_a[-1] >= 0:
            path_a.append(int(tree.parent[path_a[-1]]))
        while path_b[-1] >= 0:
            path_b.append(int(tree.parent[path_b[-1]]))
        common = set(path_a) & set(path_b)
        for x in path_a[:-1]:
            if x in common:
                break
            count[(x, 1)] = count.get((x, 1), 0) + 1  # up the link above x
        for x in path_b[:-1]:
            if x in common:
                break
            count[(x, 0)] = count.get((x, 0), 0) + 1  # down the link above x
    if not count:
        return 0, 1
    (node, _), most = max(count.items(), key=lambda kv: kv[1])
    if node < topo.n_machines:
        return most, 1
    name, up = tree.names[node], tree.names[int(tree.parent[node])]
    return most, max(1, int(up_bw[(name, up)] / bref * (1 + 1e-9)))


def verify_loground(topo: Topology, order: Sequence[int]) -> LogroundProof:
    """Prove the log-round exchange of the members of ``order`` (the machine of each member, in
    the members' order) complete on ``topo``; raises VerificationError naming the first fault."""
    check_order(topo, order)
    n = len(order)
    rounds = replay(n)
    busiest = tuple((1 << k, *round_loads(topo, order, 1 << k)) for k in range(rounds))
    return LogroundProof(n, rounds, n * rounds, busiest)
