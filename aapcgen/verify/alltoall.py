"""Independent verifier for AAPC schedules.

It shares no code with the scheduler (``tree.py``, ``phases.py``): from the validated
``Topology`` alone it rebuilds the tree, its own link loads and lower bound, and checks a schedule
given as three integer arrays (phase, src, dst per message). It proves:

1. completeness: every ordered pair of distinct machines is sent exactly once;
2. contention-freedom: no directed edge carries more messages in one phase than its capacity:
   one on a machine's own link; ``max(1, floor(b / b_ref))`` on a switch link of bandwidth b,
   b_ref the slowest machine link (docs/scheduling.md "Capacities"; with one link speed every
   capacity is 1, seed 002's model);
3. optimality: the number of phases against the lower bound max(|M| - 1, max over links of
   ceil(load / capacity)); with one link speed it is the largest load |Mu|*|Mv| and the
   schedule must meet it exactly. No phase may be empty.

Method for 2: the tree hangs from its first switch; a message s -> d uses the upward edge of
every ancestor a of s with depth(a) > depth(lca(s, d)), i.e. exactly where the ancestors of s and
d at that depth differ, and likewise the downward edges on d's side. Per depth this is one
vectorised comparison, and each (phase, edge) key may occur at most capacity times: one sort per
depth.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Topology
from aapcgen.verify.tree import VTree, ancestors, hang_tree


@dataclass(frozen=True)
class Proof:
    """What a successful verification established."""

    n_machines: int
    n_messages: int
    n_phases: int
    lower_bound: int
    bound_links: tuple[str, ...]  # the links whose load is the lower bound (empty: machines)
    directed_edges: int
    max_capacity: int = 1  # the largest link capacity (1: seed 002's model)

    @property
    def optimal(self) -> bool:
        return self.n_phases == self.lower_bound

    def summary(self, name: str) -> str:
        n = self.n_machines
        edges = (
            "no directed edge used twice in any phase"
            if self.max_capacity == 1
            else "no directed edge over its capacity in any phase (capacities up to "
            f"{self.max_capacity} messages)"
        )
        if self.bound_links:
            why = f"the load of link {self.bound_links[0]}" + (
                f" and {len(self.bound_links) - 1} other link(s)"
                if len(self.bound_links) > 1
                else ""
            )
            if self.max_capacity > 1:
                why += " over its capacity"
        else:
            why = f"{n - 1} messages sent by every machine"
        verdict = (
            "so the schedule is optimal"
            if self.optimal
            else f"{self.n_phases / self.lower_bound:.4f}x the bound"
        )
        return (
            f"verified {name}: {self.n_messages} messages = every ordered pair of {n} machines exactly once; "
            f"{edges} ({self.directed_edges} directed edges x {self.n_phases} phases); "
            f"{self.n_phases} phases {'=' if self.optimal else 'against'} the lower bound "
            f"{self.lower_bound} ({why}), {verdict}"
        )


def _check_arrays(n: int, phase: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    if not (len(phase) == len(src) == len(dst)):
        raise VerificationError("schedule arrays differ in length")
    if len(phase) and (
        phase.min() < 0 or min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n
    ):
        raise VerificationError("schedule has a phase below 0 or a rank outside 0..N-1")
    same = np.flatnonzero(src == dst)
    if len(same):
        e = same[0]
        raise VerificationError(f"message {src[e]}->{dst[e]} in phase {phase[e]} sends to itself")


def _check_complete(names: list[str], n: int, src: np.ndarray, dst: np.ndarray) -> None:
    count = np.bincount(src * n + dst, minlength=n * n).reshape(n, n)
    np.fill_diagonal(count, 1)
    if (count == 0).any():
        s, d = np.argwhere(count == 0)[0]
        raise VerificationError(f"message {names[s]}->{names[d]} is missing")
    if (count > 1).any():
        s, d = np.argwhere(count > 1)[0]
        raise VerificationError(f"message {names[s]}->{names[d]} is sent {count[s, d]} times")


def capacities(topo: Topology, tree: VTree) -> np.ndarray:
    """Messages per phase the link from each node up to its parent carries, each direction (the
    verifier's own reading of the model; 0 at the top)."""
    n = topo.n_machines
    index = {name: i for i, name in enumerate(tree.names)}
    bref = topo.reference_bandwidth or min(topo.machine_bandwidth)
    cap = np.ones(len(tree.names), dtype=np.int64)
    for link in topo.links:
        a, b = index[link.a], index[link.b]
        child = b if tree.parent[b] == a else a
        side = int(tree.below[child])
        c = max(1, min(65535, math.floor(link.bandwidth / bref * (1 + 1e-9))))
        cap[child] = max(1, min(c, side, n - side))
    cap[tree.parent < 0] = 0
    return cap


def _check_edges(
    tree: VTree, n: int, cap: np.ndarray, phase: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> None:
    anc = ancestors(tree, n)
    n_nodes = len(tree.names)
    for d in range(anc.shape[0] - 1, 0, -1):
        a_src, a_dst = anc[d][src], anc[d][dst]
        crossing = a_src != a_dst
        for end, up in ((a_src, True), (a_dst, False)):
            used = np.flatnonzero(crossing & (end >= 0))
            if len(used) == 0:
                continue
            key = phase[used] * n_nodes + end[used]
            skey = np.sort(key)
            starts = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]])
            sizes = np.diff(np.r_[starts, len(skey)])
            over = np.flatnonzero(sizes > cap[skey[starts] % n_nodes])
            if len(over):
                order = np.argsort(key, kind="stable")  # only to name the messages
                first = starts[over[0]]
                e1, e2 = used[order[first]], used[order[first + 1]]
                node = int(end[e1])
                a, b = tree.names[node], tree.names[int(tree.parent[node])]
                edge = f"{a}->{b}" if up else f"{b}->{a}"
                more = sizes[over[0]]
                raise VerificationError(
                    f"contention in phase {phase[e1]}: {tree.names[src[e1]]}->{tree.names[dst[e1]]}, "
                    f"{tree.names[src[e2]]}->{tree.names[dst[e2]]}"
                    + (f" and {more - 2} more" if more > 2 else "")
                    + f" use directed edge {edge} (capacity {cap[node]})"
                )


def verify_schedule(topo: Topology, phase: np.ndarray, src: np.ndarray, dst: np.ndarray) -> Proof:
    """Check completeness, contention-freedom and optimality; raise VerificationError otherwise."""
    n = topo.n_machines
    phase, src, dst = (np.asarray(a, dtype=np.int64) for a in (phase, src, dst))
    _check_arrays(n, phase, src, dst)
    tree = hang_tree(topo)
    _check_complete(tree.names, n, src, dst)
    cap = capacities(topo, tree)
    _check_edges(tree, n, cap, phase, src, dst)
    n_phases = int(phase.max()) + 1 if len(phase) else 0
    empty = np.flatnonzero(np.bincount(phase) == 0)
    if len(empty):
        raise VerificationError(f"phase {empty[0]} of {n_phases} carries no message")
    # phases each link needs (none at the top, whose "load" is n x 0); a machine's own link
    # (capacity 1) needs n - 1, the bound of a machine sending to every other
    loads = tree.below * (n - tree.below)
    need = -(-loads // np.maximum(cap, 1))
    bound = int(need.max())
    # a contention-free schedule cannot have fewer phases than the bound (each link carries at
    # most its capacity per phase); with one link speed it must have exactly as many (seed 002)
    if int(cap.max()) <= 1 and n_phases != bound:
        raise VerificationError(
            f"{n_phases} phases, but the lower bound (largest link load) is {bound}"
        )
    links = tuple(
        f"{tree.names[i]}-{tree.names[int(tree.parent[i])]}"
        for i in np.flatnonzero(need == bound)
        if tree.parent[i] >= 0  # the top, needing 0, when a one-machine job's bound is 0
    )
    return Proof(
        n_machines=n,
        n_messages=len(phase),
        n_phases=n_phases,
        lower_bound=bound,
        bound_links=links,
        directed_edges=2 * (len(tree.names) - 1),
        max_capacity=int(cap.max()),
    )


# ---------------------------------------------------------------------------------------------
# Synchronisation: sufficiency and minimality (independent of aapcgen/alltoall/sync.py)
# ---------------------------------------------------------------------------------------------

SYNC_CHECK_MAX_MACHINES = 64


@dataclass(frozen=True)
class SyncProof:
    required_pairs: int  # contending message pairs that must be ordered
    syncs: int
    window: int = 1

    def summary(self, name: str) -> str:
        ordered = (
            f"all {self.required_pairs} contending pairs are ordered"
            if self.window == 1
            else f"no link can have more than {self.window} x its capacity of messages in flight "
            f"(a window of {self.window} phases; {self.required_pairs} contending pairs)"
        )
        return (
            f"verified synchronisation of {name}: {ordered} "
            f"by the {self.syncs} syncs plus program order (sufficient), and no sync is implied by the "
            f"others plus program order, each ordering a contending pair (minimal)"
        )


def _edge_uses(topo: Topology, src: np.ndarray, dst: np.ndarray) -> dict[int, list[int]]:
    """Messages using each directed edge (key 2*node for up, 2*node+1 for down)."""
    tree = hang_tree(topo)
    anc = ancestors(tree, topo.n_machines)
    uses: dict[int, list[int]] = {}
    for d in range(1, anc.shape[0]):
        a_src, a_dst = anc[d][src], anc[d][dst]
        for end, down in ((a_src, 0), (a_dst, 1)):
            for m in np.flatnonzero((a_src != a_dst) & (end >= 0)):
                uses.setdefault(2 * int(end[m]) + down, []).append(int(m))
    return uses


def _scope_test(scope: str, block_size: int, phase: list[int]) -> Callable[[int, int], bool]:
    """Whether a pair of messages of different phases on one edge must be ordered."""

    def test(a: int, b: int) -> bool:
        same_block = phase[a] // block_size == phase[b] // block_size
        return scope == "all" or (scope == "cross") != same_block

    return test


def _widest_antichain(items: list[int], before: Callable[[int, int], bool]) -> int:
    """Largest set of ``items`` none ordered before another, for a partial order ``before``
    (transitive): by Dilworth, len(items) minus a maximum matching of a -> b when a is before b
    (the fewest chains that cover the items)."""
    succ = [
        [j for j, b in enumerate(items) if i != j and before(a, b)] for i, a in enumerate(items)
    ]
    match_right = [-1] * len(items)

    def augment(i: int, seen: list[bool]) -> bool:
        stack = [(i, iter(succ[i]))]
        path: list[tuple[int, int]] = []
        while stack:
            node, it = stack[-1]
            nxt = next((j for j in it if not seen[j]), None)
            if nxt is None:
                stack.pop()
                if path:
                    path.pop()
                continue
            seen[nxt] = True
            path.append((node, nxt))
            if match_right[nxt] < 0:
                for left, right in path:
                    match_right[right] = left
                return True
            stack.append((match_right[nxt], iter(succ[match_right[nxt]])))
        return False

    matched = sum(augment(i, [False] * len(items)) for i in range(len(items)))
    return len(items) - matched


def verify_sync(
    topo: Topology,
    phase: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    kind: str,
    scope: str,
    block_size: int,
    syncs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    minimal: bool = True,
    window: int = 1,
) -> SyncProof:
    """Prove a variant's syncs sufficient and (``minimal``) minimal under the executor's program
    order. The run-time builders (runtime_c/alltoallv/aapc_vtables.c) skip the exact redundancy
    removal, so their tables are checked with ``minimal=False``: sufficient, no duplicate, none
    implied by a rank's own program order.

    kind: "sender" (a sync fires when its sender's send completes) or "receiver" (when its
    sender's receive completes). scope: "all", "cross" (only pairs in different blocks) or
    "within" (same block). syncs: (from machine, trigger phase, to machine, target phase) arrays.

    Program order (runtime_c/common/aapc_exec.c): a rank starts its sends in phase order, and
    its send of phase q only once its sends (and, receiver-based, its receives) of phases
    <= q - ``window`` are complete; window 1 is seed 002's executor. Sufficient means: on every
    directed edge of capacity c, no more than c x window messages can be in flight at once (for
    c x window = 1: every contending pair ordered).
    """
    n = topo.n_machines
    if n > SYNC_CHECK_MAX_MACHINES:
        raise VerificationError(
            f"the sync check handles at most {SYNC_CHECK_MAX_MACHINES} machines, not {n}"
        )
    if window < 1 or (window > 1 and scope != "all"):
        raise VerificationError(f"a window of {window} phases is checked for scope all only")
    phase, src, dst = (np.asarray(a, dtype=np.int64).tolist() for a in (phase, src, dst))
    n_msgs = len(phase)
    sender_of = {(s, p): m for m, (s, p) in enumerate(zip(src, phase))}
    receiver_of = {(d, p): m for m, (d, p) in enumerate(zip(dst, phase))}
    # events: S(m) = 3m (send starts), D(m) = 3m + 1 (send completes), R(m) = 3m + 2 (received)
    succ: list[set[int]] = [set() for _ in range(3 * n_msgs)]
    sends_of: dict[int, list[int]] = {}
    for m in sorted(range(n_msgs), key=lambda m: (src[m], phase[m])):
        sends_of.setdefault(src[m], []).append(m)
    phases_of = {r: [phase[x] for x in ms] for r, ms in sends_of.items()}

    def waiting_send(rank: int, p: int) -> int | None:
        """The rank's first send that waits for its events of phase p (phase >= p + window)."""
        i = bisect.bisect_left(phases_of.get(rank, []), p + window)
        return sends_of[rank][i] if i < len(sends_of.get(rank, [])) else None

    for mine in sends_of.values():
        for a, b in zip(mine, mine[1:]):
            succ[3 * a].add(3 * b)  # sends start in phase order
    for m in range(n_msgs):
        succ[3 * m].add(3 * m + 1)
        nxt = waiting_send(src[m], phase[m])
        if nxt is not None:
            succ[3 * m + 1].add(3 * nxt)  # at most `window` phases of sends outstanding
        if kind == "receiver":
            succ[3 * m].add(3 * m + 2)  # a message is received after it is sent
            nxt = waiting_send(dst[m], phase[m])
            if nxt is not None:  # the receiver completes it before that send
                succ[3 * m + 2].add(3 * nxt)
    fire = (lambda m: 3 * m + 1) if kind == "sender" else (lambda m: 3 * m + 2)
    lookup = sender_of if kind == "sender" else receiver_of
    sync_edges = []
    for f, t, to, q in zip(*(np.asarray(a, dtype=np.int64).tolist() for a in syncs)):
        if (f, t) not in lookup or (to, q) not in sender_of:
            raise VerificationError(
                f"sync {topo.machines[f]}@{t} -> {topo.machines[to]}@{q} refers to no message"
            )
        if q <= t:
            raise VerificationError(
                f"sync {topo.machines[f]}@{t} -> {topo.machines[to]}@{q} does not point to a "
                "later phase (a cycle of waits could hang)"
            )
        edge = (fire(lookup[(f, t)]), 3 * sender_of[(to, q)])
        if edge[1] in succ[edge[0]]:
            raise VerificationError(
                f"sync {topo.machines[f]}@{t} -> {topo.machines[to]}@{q} is duplicated or implied by program order"
            )
        succ[edge[0]].add(edge[1])
        sync_edges.append(edge)
    order = sorted(range(3 * n_msgs), key=lambda e: (phase[e // 3], e % 3))
    reach = [0] * (3 * n_msgs)
    for e in reversed(order):
        bits = 0
        for s in succ[e]:
            bits |= reach[s] | (1 << s)
        reach[e] = bits
    in_scope = _scope_test(scope, block_size, phase)
    vt = hang_tree(topo)
    cap = capacities(topo, vt)
    required = set()
    for key, ms in _edge_uses(topo, np.array(src), np.array(dst)).items():
        ms.sort(key=lambda m: phase[m])
        pairs = [(a, b) for i, a in enumerate(ms) for b in ms[i + 1 :] if in_scope(a, b)]
        required.update(pairs)
        c = int(cap[key // 2]) * window
        # scope "cross": a block's messages contend freely among themselves, and no message may
        # overlap one of another block on the edge, whatever its capacity: every pair ordered
        if c == 1 or scope == "cross":
            for a, b in pairs:
                if not reach[fire(a)] >> (3 * b) & 1:
                    raise VerificationError(
                        f"insufficient: {topo.machines[src[a]]}->{topo.machines[dst[a]]} (phase {phase[a]}) is not ordered "
                        f"before the contending {topo.machines[src[b]]}->{topo.machines[dst[b]]} (phase {phase[b]})"
                    )
            continue
        groups = (
            [ms]
            if scope == "all"
            else [
                [m for m in ms if phase[m] // block_size == g]
                for g in {phase[m] // block_size for m in ms}
            ]
        )
        for group in groups:
            width = _widest_antichain(group, lambda a, b: bool(reach[fire(a)] >> (3 * b) & 1))
            if width > c:
                node = key // 2
                a, b = vt.names[node], vt.names[int(vt.parent[node])]
                edge = f"{a}->{b}" if key % 2 == 0 else f"{b}->{a}"
                raise VerificationError(
                    f"insufficient: {width} messages on directed edge {edge} can be in flight at "
                    f"once (none ordered before another), its capacity is {c // window}"
                    + (f" x a window of {window} phases" if window > 1 else "")
                )
    fired = {(fire(a), 3 * b) for a, b in required}
    for x, y in sync_edges if minimal else []:
        others = [s for s in succ[x] if s != y]
        if any(s == y or reach[s] >> y & 1 for s in others):
            raise VerificationError(
                f"not minimal: the sync {x // 3}->{y // 3} (message indices) is implied by the others"
            )
        if (x, y) not in fired:
            raise VerificationError(
                f"not minimal: the sync {x // 3}->{y // 3} (message indices) orders no contending pair"
            )
    return SyncProof(required_pairs=len(required), syncs=len(sync_edges), window=window)


def verify_hierarchical(topo: Topology, phase: np.ndarray, src: np.ndarray, dst: np.ndarray) -> str:
    """Machines running R = topo.ranks_per_machine ranks each: the rank-level model of the
    hierarchical routine (runtime_c/hier/aapc_hier_alltoall.c: gather on the machine, the
    machine-level schedule on R*R-block aggregates, scatter). Expand every machine-level message
    a -> c into the R*R rank messages it aggregates (rank a*R+i -> c*R+j) and check that, with
    the R*R intra-machine pairs of every machine kept local, every ordered pair of distinct ranks
    is delivered exactly once. This follows from a complete machine-level schedule; it checks
    the model's rank arithmetic, not the C code (tests/test_hier.py runs that against the
    library) and not the phases: verify_schedule proves those (complete, contention-free,
    optimal). Returns a one-line summary; raises VerificationError naming the first missing or
    doubled rank pair."""
    r, n = topo.ranks_per_machine, topo.n_machines
    p = n * r
    phase, src, dst = (np.asarray(a, dtype=np.int64) for a in (phase, src, dst))
    i, j = np.meshgrid(np.arange(r), np.arange(r), indexing="ij")
    rank_src = (src[:, None] * r + i.ravel()[None, :]).ravel()
    rank_dst = (dst[:, None] * r + j.ravel()[None, :]).ravel()
    local = np.arange(p)
    li, lj = np.meshgrid(local, local, indexing="ij")
    same = (li // r == lj // r) & (li != lj)
    count = np.zeros((p, p), dtype=np.int64)
    np.add.at(count, (rank_src, rank_dst), 1)
    count[li[same], lj[same]] += 1  # delivered inside the machine (gather / scatter)
    np.fill_diagonal(count, 1)  # own block: a local copy
    bad = np.argwhere(count != 1)
    if len(bad):
        a, b = (int(x) for x in bad[0])
        raise VerificationError(
            f"ranks {a} -> {b}: delivered {int(count[a, b])} times in the hierarchical schedule"
        )
    n_phases = int(phase.max()) + 1 if len(phase) else 0
    return (
        f"hierarchical ({r} ranks per machine, {p} ranks): every one of the {p * (p - 1)} rank "
        f"pairs delivered exactly once ({n * r * (r - 1)} inside machines); "
        f"{n_phases} machine-level phases of {r * r}-block aggregates"
    )
