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

The exchange in the tree's digits (runtime_c/alltoall/aapc_alltoall_treedigits.c; the dump
gives "radix" as a list, bottom-up, and "groups") is proved the same way and more:

1. the digits are the tree's: derived here again from the tree and the members' machines
   (``tree_digits``: a switch's own machines as its first child, chains of one child folded,
   every switch of a level with as many children of one shape), they must equal the dump's;
2. delivery, replaying the mixed-radix exchange slot by slot (slot s of place i starts with the
   block for place i (+) s, digit by digit modulo the radices; level l, value d moves the slots
   whose digit l is d to place i (+) d e_l);
3. every level stays inside its switches: the members of one block of a level (the places that
   share the digits above it) use links no other block of that level uses;
4. every level is contention-free: its phase d, sub-phase g (the members whose place inside
   their level block, modulo groups[l], is g) loads no directed link beyond its capacity.
"""

from __future__ import annotations

from collections import Counter
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
    # the tree's digits: per level (radix, contention-free phases, the most messages on a
    # directed link in one of them); empty for radix 2
    levels: tuple[tuple[int, int, int], ...] = ()

    def summary(self, name: str) -> str:
        if self.levels:
            return (
                f"{name}: log-round exchange of {self.n_members} members in the tree's digits "
                f"{[f for f, _, _ in self.levels]}: every block delivered exactly once in "
                f"{self.messages} messages; every level inside its switches, its "
                f"{', '.join(str(p) for _, p, _ in self.levels)} phases contention-free"
            )
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


def place_add(x: np.ndarray, s: np.ndarray, radix: Sequence[int], sign: int) -> np.ndarray:
    """x (+) s (sign 1) or x (-) s (sign -1), digit by digit, each modulo its radix."""
    out, unit = np.zeros_like(x), 1
    for f in radix:
        a, b = x // unit % f, s // unit % f
        out = out + (a + sign * b) % f * unit
        unit *= f
    return out


def replay_digits(n: int, radix: Sequence[int]) -> int:
    """The mixed-radix exchange on n members, slot by slot; its number of messages per member.
    Raises unless every member ends with slot s holding the block of member i (-) s."""
    if int(np.prod(radix)) != n or any(f < 2 for f in radix):
        raise VerificationError(f"loground: radices {list(radix)} do not multiply to {n}")
    i = np.arange(n)[:, None]
    s = np.arange(n)[None, :]
    block = i * n + place_add(i, s, radix, 1)
    unit, messages = 1, 0
    for f in radix:
        for d in range(1, f):
            moving = s // unit % f == d
            sender = place_add(np.arange(n), np.full(n, d * unit), radix, -1)
            block = np.where(moving, block[sender, :], block)  # member i gets i (-) d e_l's
            messages += 1
        unit *= f
    want = place_add(i, s, radix, -1) * n + i
    if not np.array_equal(block, want):
        raise VerificationError(misdelivered(block, want))
    return messages


def tree_digits(topo: Topology, machines: Sequence[int]) -> tuple[int, ...]:
    """The radices, bottom-up, of the uniform tree the machines hang from (hung from the first
    switch; a switch's own machines are its first child, a chain of one child folds); () when
    the tree is not uniform."""
    tree = hang_tree(topo)
    n = topo.n_machines
    wanted = set(machines)
    kids: dict[int, list[int]] = {}
    for v in range(len(tree.names)):
        if int(tree.parent[v]) >= 0 and (v >= n or v in wanted):
            kids.setdefault(int(tree.parent[v]), []).append(v)

    class NotUniform(Exception):
        pass

    def shape(v: int) -> tuple[int, ...] | None:  # None: no machine below; () a machine
        if v < n:
            return () if v in wanted else None
        own = [m for m in kids.get(v, []) if m < n]
        parts = [shape(c) for c in kids.get(v, []) if c >= n]
        if own:
            parts.insert(0, () if len(own) == 1 else (len(own),))
        parts = [p for p in parts if p is not None]
        if len(parts) <= 1:
            return parts[0] if parts else None
        if any(p != parts[0] for p in parts):
            raise NotUniform
        return (*parts[0], len(parts))

    try:
        return shape(n) or ()  # the first switch: node n in hang_tree
    except NotUniform:
        return ()


def rank_digits(topo: Topology, order: Sequence[int]) -> tuple[int, ...]:
    """The digits of members placed on machines (``order``: the machine of each member): the
    machines' tree digits with one member per machine; with R > 1 on every machine a digit of
    R below them (the members of a machine are consecutive: ``check_order``); () otherwise."""
    counts = Counter(order)
    per = set(counts.values())
    machines = tree_digits(topo, list(counts))
    if len(per) != 1 or not machines:
        return ()
    r = per.pop()
    return machines if r == 1 else (r, *machines)


def level_blocks(n: int, radix: Sequence[int], level: int) -> np.ndarray:
    """The block of every place at a level: places sharing every digit above it."""
    return np.arange(n) // int(np.prod(radix[: level + 1]))


def links_of(tree: VTree, a: int, b: int) -> list[tuple[int, int]]:
    """The directed links (node, +1 up / -1 down) of the path from machine a to machine b."""
    path_a, path_b = [a], [b]
    while path_a[-1] >= 0:
        path_a.append(int(tree.parent[path_a[-1]]))
    while path_b[-1] >= 0:
        path_b.append(int(tree.parent[path_b[-1]]))
    common = set(path_a) & set(path_b)
    return [(x, 1) for x in path_a if x not in common] + [
        (x, -1) for x in path_b if x not in common
    ]


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


def check_levels(
    topo: Topology, order: Sequence[int], radix: Sequence[int], groups: Sequence[int]
) -> tuple[tuple[int, int, int], ...]:
    """Items 3 and 4 of the module's proof of the digits' exchange; per level (radix, phases,
    the most messages a directed link carries in one of them)."""
    tree = hang_tree(topo)
    n = len(order)
    bref = min(topo.machine_bandwidth[m] for m in order)
    if len(groups) != len(radix) or any(g < 1 for g in groups):
        raise VerificationError(f"loground: groups {list(groups)} for radices {list(radix)}")
    out = []
    unit = 1
    places = np.arange(n)
    for level, f in enumerate(radix):
        block = level_blocks(n, radix, level)
        owner: dict[int, int] = {}  # link node -> the block whose members use it
        most = 0
        for d in range(1, f):
            dest = place_add(places, np.full(n, d * unit), radix, 1)
            for g in range(groups[level]):
                load: dict[tuple[int, int], int] = {}
                for x in places[places % unit % groups[level] == g].tolist():
                    for link in links_of(tree, order[x], order[int(dest[x])]):
                        if owner.setdefault(link[0], int(block[x])) != block[x]:
                            raise VerificationError(
                                f"loground: level {level}: blocks {owner[link[0]]} and "
                                f"{int(block[x])} share the link above {tree.names[link[0]]}"
                            )
                        load[link] = load.get(link, 0) + 1
                for (node, way), k in load.items():
                    cap = link_capacity(topo, tree, node, bref)
                    if k > cap:
                        raise VerificationError(
                            f"loground: level {level} phase {d} sub-phase {g}: {k} messages "
                            f"{'up' if way > 0 else 'down'} the link above {tree.names[node]} "
                            f"(capacity {cap})"
                        )
                    most = max(most, k)
        out.append((f, (f - 1) * groups[level], most))
        unit *= f
    return tuple(out)


def verify_loground(
    topo: Topology,
    order: Sequence[int],
    radix: Sequence[int] | None = None,
    groups: Sequence[int] | None = None,
) -> LogroundProof:
    """Prove the log-round exchange of the members of ``order`` (the machine of each member, in
    the members' order) complete on ``topo``: Bruck's radix 2, or with ``radix`` (and
    ``groups``) the exchange in the tree's digits; raises VerificationError naming the first
    fault."""
    check_order(topo, order)
    if radix is not None:
        want = rank_digits(topo, order)
        if tuple(radix) != want:
            raise VerificationError(
                f"loground: radices {list(radix)} are not the tree's digits {list(want)} "
                f"of these {len(order)} members"
            )
        messages = replay_digits(len(order), radix)
        levels = check_levels(topo, order, radix, groups if groups is not None else [])
        return LogroundProof(len(order), len(radix), messages * len(order), (), levels)
    n = len(order)
    rounds = replay(n)
    busiest = tuple((1 << k, *round_loads(topo, order, 1 << k)) for k in range(rounds))
    return LogroundProof(n, rounds, n * rounds, busiest)
