"""Stage 4: synchronisation of the phases (seed 002 section 5, Table 5).

``plan_sync(tree, schedule, spec) -> SyncPlan``.

Executor semantics assumed here (runtime_c/common/aapc_exec.c implements exactly these; they are the
"implicit ordering a process already has", counted as free):

* every rank starts its sends in phase order and each send completes before its next send starts;
* sender-based (kind "sender"): after my send of message u completes I send the syncs of u;
  a sync u -> v lets src(v) start v;
* receiver-based (kind "receiver"): in each phase a rank waits for its receive before its next
  send; after receiving u, dst(u) sends the syncs of u.
* with a window of w phases (``VariantSpec.window``, variants ``*-w<w>``) a rank's sends still
  start in phase order, but the send of phase q waits only for the rank's sends and receives of
  phases <= q - w (w = 1 is the rule above); the chains then order each message before the one
  w places later on its link lane, so at most w messages per lane are in flight.

Required orderings: two messages of different phases that share a directed link edge contend, so
the earlier must finish (sender: its send completes; receiver: it is received) before the later
starts. Partial variants (block size bs) require this only across blocks; barrier-partial
variants with pair-wise syncs only within blocks (the barrier orders the rest).

Construction without the paper's O(|M|^6) step: the messages using one directed edge form a chain
in phase order, so consecutive pairs of each chain (for partial variants: every message of one
block group to every message of the edge's next block group) generate all required orderings
transitively. Pairs already implied by program order are dropped, then the transitive reduction
removes every sync implied by the others plus program order. Reachability is tracked as a vector
per message (the earliest phase of each rank's sends reachable from it; program order makes every
later send of that rank reachable too), computed in one reverse sweep over phases and kept only
while some earlier message still refers to it, so memory stays O((|M| + edges) * |M|).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aapcgen.alltoall.phases import Schedule
from aapcgen.alltoall.tree import TreeInfo, hang, path_edges
from aapcgen.alltoall.variants import VariantSpec

INF = np.iinfo(np.int32).max


@dataclass(frozen=True)
class SyncCounts:
    contending: int  # contending pairs the paper's dependence graph would hold
    chain: int  # generating pairs from the per-edge chains
    after_program_order: int  # ... not already implied by one rank's own order
    after_removal: int  # ... after removing every sync implied by the others


@dataclass(frozen=True)
class SyncPlan:
    """Sync message k goes from machine ``frm[k]`` after its event in phase ``trigger[k]`` (its send
    for sender-based, its receive for receiver-based) to machine ``to[k]``, which waits for it
    before its send in phase ``target[k]``. Dummy messages: (dummy_phase, dummy_src, dummy_dst)."""

    spec: VariantSpec
    frm: np.ndarray
    trigger: np.ndarray
    to: np.ndarray
    target: np.ndarray
    dummy_phase: np.ndarray
    dummy_src: np.ndarray
    dummy_dst: np.ndarray
    counts: SyncCounts


def _pairs_count(counts: np.ndarray) -> int:
    return int((counts * (counts - 1) // 2).sum())


def _scoped_pairs(group: np.ndarray, block: np.ndarray, scope: str) -> int:
    """Message pairs in scope among messages grouped by ``group`` (blocks given per message)."""
    total = _pairs_count(np.unique(group, return_counts=True)[1])
    key = group * (int(block.max()) + 1) + block
    same_block = _pairs_count(np.unique(key, return_counts=True)[1])
    return {"all": total, "within": same_block, "cross": total - same_block}[scope]


def _contending(
    tree: TreeInfo,
    sched: Schedule,
    msg: np.ndarray,
    edge: np.ndarray,
    block: np.ndarray,
    scope: str,
) -> int:
    """Unique contending pairs (the paper's dependence graph). Two paths in a tree share a
    contiguous run of directed edges, so pairs counted per shared edge, minus pairs counted per
    shared consecutive edge pair along the paths, count every pair once."""
    ht = hang(tree.topology)
    # position of each edge along its message's path: up-edges from the source upwards, then down
    child = edge // 2
    down = edge % 2
    depth = ht.depth[child]
    position = np.where(down == 1, depth, -depth)
    order = np.lexsort((position, msg))
    m, e = msg[order], edge[order]
    consecutive = m[:-1] == m[1:]
    pair_key = e[:-1][consecutive] * (int(edge.max()) + 1) + e[1:][consecutive]
    pair_block = block[m[:-1][consecutive]]
    return _scoped_pairs(edge, block[msg], scope) - _scoped_pairs(pair_key, pair_block, scope)


def _chains(
    tree: TreeInfo, sched: Schedule, lanes: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(chain id, message) for every use of a directed edge, sorted by chain then phase; and the
    (message, edge) pairs unsorted.

    A link that carries c > 1 messages in a phase (capacities, aapcgen/alltoall/capacity.py) has
    c lanes: the messages of one phase on it take lanes 0, 1, ... in source order, and each lane
    is a chain of its own, ordered like a link of capacity 1. At most one message per lane is in
    flight, so at most c on the link. With one message per link and phase there is one lane
    and a chain per edge, seed 002's construction. ``lanes=False`` keeps one chain per edge
    whatever the capacity (scope "cross": a block group waits for the whole previous one)."""
    msg, edge = path_edges(
        hang(tree.topology), sched.src.astype(np.int64), sched.dst.astype(np.int64)
    )
    phase = sched.phase.astype(np.int64)
    by_slot = np.lexsort((sched.src[msg], phase[msg], edge))
    e, p = edge[by_slot], phase[msg][by_slot]
    first = np.flatnonzero(np.r_[True, (e[1:] != e[:-1]) | (p[1:] != p[:-1])])
    size = np.diff(np.r_[first, len(e)])
    lane = np.zeros(len(e), dtype=np.int64)
    if lanes:
        lane[by_slot] = np.arange(len(e)) - np.repeat(first, size)
    chain = edge * (int(lane.max(initial=0)) + 1) + lane
    order = np.lexsort((phase[msg], chain))
    return chain[order], msg[order], msg, edge


def _candidates(
    edge: np.ndarray, msg: np.ndarray, block: np.ndarray, scope: str, window: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Generating sync pairs (u, v) from the per-edge chains (sorted by edge, then phase). With a
    window w (scope "all" only) each message is ordered before the one w places later in its
    chain: at most w of a chain in flight."""
    same_edge = edge[:-1] == edge[1:]
    b = block[msg]
    if scope == "all":
        keep = edge[:-window] == edge[window:] if window < len(edge) else np.zeros(0, dtype=bool)
        return msg[:-window][keep], msg[window:][keep]
    if scope == "within":
        keep = same_edge & (b[:-1] == b[1:])
        return msg[:-1][keep], msg[1:][keep]
    # cross: every message of a block group -> every message of the edge's next block group
    group_key = edge * (int(b.max()) + 1) + b
    starts = np.flatnonzero(np.r_[True, group_key[1:] != group_key[:-1]])
    sizes = np.diff(np.r_[starts, len(msg)])
    group_of = np.repeat(np.arange(len(starts)), sizes)
    has_next = np.r_[edge[starts[1:]] == edge[starts[:-1]], False]
    entries = np.flatnonzero(has_next[group_of])
    nxt = group_of[entries] + 1
    count = sizes[nxt]
    u = np.repeat(entries, count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    v = starts[np.repeat(nxt, count)] + offset
    return msg[u], msg[v]


def _next_send(
    src: np.ndarray, phase: np.ndarray, rank: np.ndarray, after: np.ndarray, n_phases: int
) -> np.ndarray:
    """Index of the first message sent by ``rank`` in a phase later than ``after`` (-1 if none)."""
    order = np.lexsort((phase, src))
    keys = src[order].astype(np.int64) * (n_phases + 1) + phase[order]
    pos = np.searchsorted(keys, rank.astype(np.int64) * (n_phases + 1) + after, side="right")
    found = pos < len(order)
    pos = np.minimum(pos, len(order) - 1)
    found &= src[order][pos] == rank
    return np.where(found, order[pos], -1)


def _reduce(
    sched: Schedule,
    u: np.ndarray,
    v: np.ndarray,
    kind: str,
    po_out: np.ndarray,
    po_src: np.ndarray,
    window: int = 1,
) -> np.ndarray:
    """Mask of the candidate edges u -> v that are not implied by other edges + program order.

    ``po_out[m]``: program-order successor of m's firing event (-1 if none); ``po_src[m]``: the
    next send of src(m) (S(m) -> S(next send of src(m)): sends start in phase order; with
    receiver-based syncs, or a window, that is not the firing event's successor)."""
    via_start = kind == "receiver" or window > 1
    n, n_msgs = sched.n_machines, len(sched.phase)
    phase = sched.phase.astype(np.int64)
    src = sched.src.astype(np.int64)
    has_po = po_out >= 0
    # out-edges of every message's firing event: candidates first, then its program-order edge
    out_u = np.concatenate([u, np.flatnonzero(has_po)])
    out_t = np.concatenate([v, po_out[has_po]])
    is_cand = np.r_[np.ones(len(u), dtype=bool), np.zeros(int(has_po.sum()), dtype=bool)]
    order = np.argsort(out_u, kind="stable")
    out_u, out_t, is_cand = out_u[order], out_t[order], is_cand[order]
    cand_index = np.full(len(order), -1, dtype=np.int64)
    cand_index[is_cand] = order[is_cand]  # position in the (u, v) input
    edge_lo = np.searchsorted(out_u, np.arange(n_msgs + 1))

    # a message's vector is needed from its own phase down to the earliest phase referring to it
    release = phase.copy()
    np.minimum.at(release, out_t, phase[out_u])
    if via_start:
        has_next = po_src >= 0
        np.minimum.at(release, po_src[has_next], phase[has_next])
    # alive at phase p: #(phase >= p) - #(release > p)
    at_or_after = np.cumsum(np.bincount(phase, minlength=sched.n_phases)[::-1])[::-1]
    released_after = np.cumsum(np.bincount(release, minlength=sched.n_phases + 1)[::-1])[::-1][1:]
    alive = at_or_after - released_after
    pool = np.full((int(alive.max()) + 1, n), INF, dtype=np.int32)
    free = list(range(pool.shape[0] - 1, -1, -1))
    slot = np.full(n_msgs, -1, dtype=np.int64)
    release_order = np.argsort(release, kind="stable")
    release_lo = np.searchsorted(release[release_order], np.arange(sched.n_phases + 1))
    phase_lo = np.searchsorted(phase, np.arange(sched.n_phases + 1))
    implied = np.zeros(len(u), dtype=bool)

    for p in range(sched.n_phases - 1, -1, -1):
        lo, hi = phase_lo[p], phase_lo[p + 1]
        e_lo, e_hi = edge_lo[lo], edge_lo[hi]
        vec = np.full((hi - lo, n), INF, dtype=np.int32)
        if e_hi > e_lo:
            rows = pool[slot[out_t[e_lo:e_hi]]]
            owner = out_u[e_lo:e_hi] - lo
            starts = edge_lo[lo:hi] - e_lo
            size = edge_lo[lo + 1 : hi + 1] - edge_lo[lo:hi]
            for d in range(int(size.max())):  # out-degrees are small: min over the d-th out-edges
                has = np.flatnonzero(size > d)
                vec[has] = np.minimum(vec[has], rows[starts[has] + d])
            cand = np.flatnonzero(is_cand[e_lo:e_hi])
            if len(cand):
                # an edge u -> t is implied when another out-edge of u reaches t's rank by t's phase
                first, width = starts[owner[cand]], size[owner[cand]]
                cols = src[out_t[e_lo + cand]]
                span = np.arange(int(width.max()))
                idx = first[:, None] + span[None, :]
                ok = (span[None, :] < width[:, None]) & (idx != cand[:, None])
                vals = np.where(ok, rows[np.minimum(idx, len(rows) - 1), cols[:, None]], INF)
                implied[cand_index[e_lo + cand]] = vals.min(axis=1) <= phase[out_t[e_lo + cand]]
        if via_start:  # S(m) also reaches its firing event (vec so far) and src(m)'s next send
            nxt = po_src[lo:hi]
            has = nxt >= 0
            vec[has] = np.minimum(vec[has], pool[slot[nxt[has]]])
        vec[np.arange(hi - lo), src[lo:hi]] = p
        for i in range(lo, hi):
            slot[i] = free.pop()
        pool[slot[lo:hi]] = vec
        for m in release_order[release_lo[p] : release_lo[p + 1]]:
            free.append(int(slot[m]))
            slot[m] = -1
    return ~implied


def _dummies(tree: TreeInfo, sched: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dummy messages for machines idle in a phase (neither sending nor receiving), seed 002 s5:
    idle machines on one switch pass a dummy round a ring; a lone idle machine sends to a machine
    on its switch that does not receive, else receives from one that does not send, else itself."""
    topo = tree.topology
    n, n_phases = topo.n_machines, sched.n_phases
    switch_index = {s: i for i, s in enumerate(topo.switches)}
    switch_of = np.array([switch_index[s] for s in topo.machine_switch], dtype=np.int64)
    sends = np.zeros((n_phases, n), dtype=bool)
    recvs = np.zeros((n_phases, n), dtype=bool)
    sends[sched.phase, sched.src] = True
    recvs[sched.phase, sched.dst] = True
    idle_p, idle_m = np.nonzero(~sends & ~recvs)
    key = idle_p * len(topo.switches) + switch_of[idle_m]
    order = np.lexsort((idle_m, key))
    idle_p, idle_m, key = idle_p[order], idle_m[order], key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, len(key)])
    group = np.repeat(np.arange(len(starts)), sizes)
    pos = np.arange(len(key)) - starts[group]
    ring = sizes[group] >= 2
    partner = starts[group] + (pos + 1) % sizes[group]
    phases, srcs, dsts = [idle_p[ring]], [idle_m[ring]], [idle_m[partner[ring]]]
    for e in np.flatnonzero(~ring):  # lone idle machines: at most one per (phase, switch)
        p, m = int(idle_p[e]), int(idle_m[e])
        mates = np.flatnonzero((switch_of == switch_of[m]) & (np.arange(n) != m))
        not_recv = mates[~recvs[p, mates]]
        not_send = mates[~sends[p, mates]]
        s, d = (
            (m, int(not_recv[0]))
            if len(not_recv)
            else ((int(not_send[0]), m) if len(not_send) else (m, m))
        )
        phases.append(np.array([p]))
        srcs.append(np.array([s]))
        dsts.append(np.array([d]))
        recvs[p, d] = sends[p, s] = True
    return np.concatenate(phases), np.concatenate(srcs), np.concatenate(dsts)


def _several_per_phase(phase: np.ndarray, rank: np.ndarray) -> bool:
    key = phase.astype(np.int64) * (int(rank.max(initial=0)) + 1) + rank
    return len(np.unique(key)) < len(key)


def plan_sync(tree: TreeInfo, sched: Schedule, spec: VariantSpec, reduce: bool = True) -> SyncPlan:
    """Stage 4 of the pipeline: the synchronisation messages (and dummies) of one variant.

    ``reduce=False`` keeps every chain pair not implied by program order instead of the exact
    transitive reduction: Alltoallv schedules have many sparse phases, where an ordering implied
    through a chain of other ranks' syncs arrives much later than a direct sync would
    (docs/alltoallv.md, measured on the chain of 4x4)."""
    empty = np.zeros(0, dtype=np.int64)
    dummy = _dummies(tree, sched) if spec.dummy else (empty, empty, empty)
    if spec.kind == "none" or len(sched.phase) == 0:  # nothing to order (or no message at all)
        counts = SyncCounts(0, 0, 0, 0)
        return SyncPlan(spec, empty, empty, empty, empty, *dummy, counts)
    phase = sched.phase.astype(np.int64)
    src, dst = sched.src.astype(np.int64), sched.dst.astype(np.int64)
    # partial variants (scope "cross") leave a block's messages unordered among themselves and
    # order every message of a block group on an edge before every one of the next group: one
    # chain per edge; lanes would let the next group pass a still-running message of another lane
    edge, msg, raw_msg, raw_edge = _chains(tree, sched, lanes=spec.scope != "cross")
    block = phase // spec.block_size
    window = spec.window
    u, v = _candidates(edge, msg, block, spec.scope, window)
    contending = _contending(tree, sched, raw_msg, raw_edge, block, spec.scope)
    n_chain = len(u)
    # Alltoallv schedules may put many messages of one rank into one (small-message) phase:
    # then syncs only order different phases, and the exact removal (which tracks one send per
    # rank and phase) is skipped, keeping every pair not implied by program order
    several = _several_per_phase(phase, src) or _several_per_phase(phase, dst)
    if several:
        forward = phase[u] < phase[v]
        u, v = u[forward], v[forward]
    fires_at = src if spec.kind == "sender" else dst
    keep = fires_at[u] != src[v]  # same rank: its own program order already orders them
    pairs = np.unique(u[keep] * len(phase) + v[keep])
    u, v = pairs // len(phase), pairs % len(phase)
    po_src = _next_send(src, phase, src, phase, sched.n_phases)
    # the firing rank's first send that waits for the firing event: the next one, or with a
    # window w the first of a phase >= phase + w
    po_out = _next_send(src, phase, fires_at, phase + window - 1, sched.n_phases)
    needed = (
        _reduce(sched, u, v, spec.kind, po_out, po_src, window)
        if reduce and not several
        else np.ones(len(u), dtype=bool)
    )
    u, v = u[needed], v[needed]
    counts = SyncCounts(contending, n_chain, len(pairs), len(u))
    return SyncPlan(spec, fires_at[u], phase[u], src[v], phase[v], *dummy, counts)
