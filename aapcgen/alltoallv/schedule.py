"""Phased MPI_Alltoallv on a switch tree: CC-MPI's schedulers generalised (seed 000, section 4.2).

``greedy``, ``alltoall_based`` and ``balanced`` turn a pattern (an N x N matrix of byte counts,
rank order; the diagonal is a local copy and is not scheduled) into phases.

Model (docs/alltoallv.md):

* a message (s, d) uses the directed link edges of its tree path (``tree.path_edges``); two pieces
  *conflict* when they share a directed edge. CC-MPI's single-switch rule ("a node sends to at most
  one and receives from at most one node per phase") is the special case of a one-switch tree;
* a phase is a set of pieces (src, dst, offset, length); it is contention-free when no directed
  edge carries two of its pieces. Only the small-message phase (``small[p]``) may have contention;
* the time of a phase is the largest, over directed edges, of the bytes/bandwidth the edge carries
  in the phase: for a contention-free phase that is max over pieces of length / (slowest link of
  the piece's path); the cost of a schedule is the sum over phases (barriers not counted);
* the bound is max over directed edges of (total bytes crossing the edge) / (edge bandwidth): no
  schedule, phased or not, finishes sooner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze, hang, path_edges, uplink_bandwidths

# Patterns are read in pattern.py; these names stay importable from here.
from aapcgen.alltoallv.pattern import (  # noqa: F401
    BUILTIN_PATTERNS,
    load_pattern,
    table3_pattern,
    validate_pattern,
)
from aapcgen.core.errors import InputError
from aapcgen.core.model import Topology

SCHEDULERS = ("greedy", "alltoall", "balanced")
BALANCED_QUANTA = 4096  # default: no balanced phase shorter than bound / 4096


# ---------------------------------------------------------------------------------------------
# Schedules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VSchedule:
    """Pieces sorted by (phase, src, dst, offset); per-phase arrays have ``n_phases`` entries.

    Times are seconds. ``small[p]`` marks the small-message phase (contention allowed);
    ``contention_free[p]`` says whether phase p actually is contention-free.
    """

    scheduler: str
    n_machines: int
    n_phases: int
    threshold: int
    phase: np.ndarray  # int64
    src: np.ndarray
    dst: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    small: np.ndarray  # bool per phase
    contention_free: np.ndarray  # bool per phase
    phase_time: np.ndarray  # float per phase
    cost: float
    bound: float

    @property
    def ratio(self) -> float:
        return self.cost / self.bound if self.bound > 0 else 1.0

    def phase_lists(self) -> list[list[tuple[int, int, int, int]]]:
        """Phases as lists of (src, dst, offset, length)."""
        cut = np.searchsorted(self.phase, np.arange(self.n_phases + 1))
        rows = np.stack([self.src, self.dst, self.offset, self.length], axis=1).tolist()
        return [[tuple(r) for r in rows[cut[p] : cut[p + 1]]] for p in range(self.n_phases)]


@dataclass(frozen=True)
class _Messages:
    """The non-zero off-diagonal entries of a pattern, row-major, with their tree paths."""

    src: np.ndarray
    dst: np.ndarray
    count: np.ndarray
    rate: np.ndarray  # bytes/s of the slowest link on each path
    pair_msg: np.ndarray  # (message, directed edge) pairs, sorted by message
    pair_edge: np.ndarray
    edge_bw: np.ndarray  # bytes/s of every directed edge id
    n_edges: int
    n_machines: int

    def edges_of(self) -> list[list[int]]:
        cut = np.searchsorted(self.pair_msg, np.arange(len(self.src) + 1))
        edges = self.pair_edge.tolist()
        return [edges[cut[m] : cut[m + 1]] for m in range(len(self.src))]


def _messages(topo: Topology, pattern: np.ndarray) -> _Messages:
    n = topo.n_machines
    pattern = np.asarray(pattern, dtype=np.int64)
    if pattern.shape != (n, n) or (pattern < 0).any():
        raise InputError(f"pattern must be a {n}x{n} matrix of non-negative byte counts")
    off = pattern.copy()
    np.fill_diagonal(off, 0)
    src, dst = np.nonzero(off)
    tree = hang(topo)
    msg, edge = path_edges(tree, src, dst)
    order = np.lexsort((edge, msg))
    msg, edge = msg[order], edge[order]
    node_bw = uplink_bandwidths(topo, tree)
    edge_bw = np.repeat(node_bw, 2)
    rate = np.full(len(src), np.inf)
    np.minimum.at(rate, msg, edge_bw[edge])
    return _Messages(
        src=src.astype(np.int64),
        dst=dst.astype(np.int64),
        count=off[src, dst],
        rate=rate,
        pair_msg=msg,
        pair_edge=edge,
        edge_bw=edge_bw,
        n_edges=2 * len(tree.names),
        n_machines=n,
    )


def lower_bound(topo: Topology, pattern: np.ndarray) -> float:
    """Seconds: max over directed edges of total bytes crossing it / its bandwidth."""
    m = _messages(topo, pattern)
    return _bound(m)


def _bound(m: _Messages) -> float:
    if len(m.pair_msg) == 0:
        return 0.0
    load = np.bincount(m.pair_edge, weights=m.count[m.pair_msg], minlength=m.n_edges)
    return float((load / np.where(m.edge_bw > 0, m.edge_bw, 1.0)).max())


def _assemble(
    name: str,
    m: _Messages,
    threshold: int,
    pieces: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    small_phase: int | None,
) -> VSchedule:
    """Pieces (phase, message, offset, length) -> VSchedule with per-phase times and flags."""
    ph, msg, off, ln = (np.asarray(a, dtype=np.int64) for a in pieces)
    n_phases = int(ph.max()) + 1 if len(ph) else 0
    src, dst = m.src[msg], m.dst[msg]
    order = np.lexsort((off, dst, src, ph))
    ph, msg, src, dst, off, ln = (
        ph[order],
        msg[order],
        src[order],
        dst[order],
        off[order],
        ln[order],
    )
    # every (piece, edge) pair: per (phase, edge) bytes / bandwidth and number of pieces
    cut = np.searchsorted(m.pair_msg, np.arange(len(m.src) + 1))
    per = cut[msg + 1] - cut[msg]
    piece = np.repeat(np.arange(len(msg)), per)
    start = np.repeat(cut[msg], per)
    within = np.arange(len(piece)) - np.repeat(np.cumsum(per) - per, per)
    edge = m.pair_edge[start + within]
    key = ph[piece] * m.n_edges + edge
    secs = np.bincount(key, weights=ln[piece] / m.edge_bw[edge], minlength=n_phases * m.n_edges)
    uses = np.bincount(key, minlength=n_phases * m.n_edges)
    phase_time = secs.reshape(n_phases, m.n_edges).max(axis=1) if n_phases else np.zeros(0)
    free = (uses.reshape(n_phases, m.n_edges) <= 1).all(axis=1) if n_phases else np.zeros(0, bool)
    small = np.zeros(n_phases, dtype=bool)
    if small_phase is not None:
        small[small_phase] = True
    return VSchedule(
        scheduler=name,
        n_machines=m.n_machines,
        n_phases=n_phases,
        threshold=threshold,
        phase=ph,
        src=src,
        dst=dst,
        offset=off,
        length=ln,
        small=small,
        contention_free=free,
        phase_time=phase_time,
        cost=float(phase_time.sum()),
        bound=_bound(m),
    )


def _template_phase(topo: Topology, m: _Messages) -> np.ndarray:
    """Phase of each message in the optimal AAPC schedule (the ring j -> j+i on one switch)."""
    sched = build_phases(analyze(topo))
    n = topo.n_machines
    table = np.zeros(n * n, dtype=np.int64)
    table[sched.src.astype(np.int64) * n + sched.dst] = sched.phase
    return table[m.src * n + m.dst]


def _size_order(m: _Messages, template: np.ndarray) -> np.ndarray:
    """Largest first; ties by template phase, then source (on one switch: the paper's order)."""
    return np.lexsort((m.src, template, -m.count))


def _phased(
    name: str, topo: Topology, pattern: np.ndarray, threshold: int, seeded: bool
) -> VSchedule:
    m = _messages(topo, pattern)
    template = _template_phase(topo, m)
    edges = m.edges_of()
    remaining = _size_order(m, template).tolist()
    count = m.count.tolist()
    tmpl = template.tolist()
    phase_of = [0] * len(count)
    small_phase = None
    p = 0
    while remaining:
        if count[remaining[0]] < threshold:
            for x in remaining:
                phase_of[x] = p
            small_phase = p
            break
        used: set[int] = set()
        rest = []
        if seeded:  # all unscheduled messages of the largest one's template phase first
            t = tmpl[remaining[0]]
            for x in remaining:
                if tmpl[x] == t:
                    used.update(edges[x])
                    phase_of[x] = p
            remaining = [x for x in remaining if tmpl[x] != t]
        for x in remaining:
            if used.isdisjoint(edges[x]):
                used.update(edges[x])
                phase_of[x] = p
            else:
                rest.append(x)
        remaining = rest
        p += 1
    k = len(count)
    pieces = (np.array(phase_of), np.arange(k), np.zeros(k), m.count)
    return _assemble(name, m, threshold, pieces, small_phase)


def greedy(topo: Topology, pattern: np.ndarray, small_threshold: int = 0) -> VSchedule:
    """CC-MPI greedy scheduling on the tree: largest first into the first phase without conflict.
    When every remaining message is below ``small_threshold`` bytes they share one final phase."""
    return _phased("greedy", topo, pattern, small_threshold, seeded=False)


def alltoall_based(topo: Topology, pattern: np.ndarray, small_threshold: int = 0) -> VSchedule:
    """CC-MPI all-to-all based scheduling (seed 000 Figure 4) with the optimal AAPC phases of
    ``build_phases`` as the all-to-all template."""
    return _phased("alltoall", topo, pattern, small_threshold, seeded=True)


def _pick(order: list[int], edges: list[list[int]]) -> list[int]:
    """Greedy contention-free set in the given priority order."""
    used: set[int] = set()
    chosen = []
    for x in order:
        es = edges[x]
        if used.isdisjoint(es):
            used.update(es)
            chosen.append(x)
    return chosen


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def balanced(topo: Topology, pattern: np.ndarray, chunk: int | None = None) -> VSchedule:
    """Preemptive load balancing (Gonzalez-Sahni open-shop style, generalised to tree paths).

    Work in seconds: message m still needs w_m = remaining_m / rate_m; edge e still carries
    T_e = sum of w over its messages; L = max T_e is the remaining lower bound. Each phase:

    1. pick a contention-free set greedily, messages on the most loaded edges first (criticality
       max T_e on the path, then sum of T_e, then larger w), so every tight edge gets a piece;
    2. choose the phase length delta as the largest value that keeps every edge within the new
       bound L - delta: an edge with slack L - T_e that carries a piece of w_m allows
       delta <= slack + min(w_m, delta); delta is at least the quantum (``chunk`` bytes, default
       bound / 4096) and at most the largest chosen w;
    3. send min(remaining, ceil(delta * rate)) bytes of each chosen message.

    If step 1 covers every tight edge, the cost equals the bound exactly (each phase lowers L by
    its own length). Every phase either finishes a message or lasts a quantum, so there are at
    most (messages + 4096) phases.
    """
    m = _messages(topo, pattern)
    k = len(m.src)
    remaining = m.count.astype(np.int64).copy()
    bound = _bound(m)
    quantum = (chunk / float(m.rate.max())) if chunk and k else bound / BALANCED_QUANTA
    edges = m.edges_of()
    out_phase: list[np.ndarray] = []
    out_msg: list[np.ndarray] = []
    out_off: list[np.ndarray] = []
    out_len: list[np.ndarray] = []
    p = 0
    while k and remaining.any():
        active = remaining > 0
        w = remaining / m.rate
        load = np.bincount(
            m.pair_edge, weights=w[m.pair_msg] * active[m.pair_msg], minlength=m.n_edges
        )
        top = load.max()
        crit = np.zeros(k)
        np.maximum.at(crit, m.pair_msg, load[m.pair_edge])
        total = np.bincount(m.pair_msg, weights=load[m.pair_edge], minlength=k)
        idx = np.flatnonzero(active)
        order = idx[np.lexsort((-w[idx], -total[idx], -crit[idx]))]
        chosen = np.array(_pick(order.tolist(), edges), dtype=np.int64)
        cap = np.zeros(m.n_edges)
        sel = np.isin(m.pair_msg, chosen)
        cap[m.pair_edge[sel]] = w[m.pair_msg[sel]]
        busy = load > 0
        delta = float((top - load[busy] + cap[busy]).min()) if busy.any() else 0.0
        delta = min(max(delta, quantum), float(w[chosen].max()))
        take = np.minimum(
            remaining[chosen], np.ceil(delta * m.rate[chosen] - 1e-9).astype(np.int64)
        )
        take = np.maximum(take, 1)
        out_phase.append(np.full(len(chosen), p))
        out_msg.append(chosen)
        out_off.append(m.count[chosen] - remaining[chosen])
        out_len.append(take)
        remaining[chosen] -= take
        p += 1
    pieces = (_cat(out_phase), _cat(out_msg), _cat(out_off), _cat(out_len))
    return _assemble("balanced", m, 0, pieces, None)


def run_scheduler(
    name: str, topo: Topology, pattern: np.ndarray, threshold: int = 0, chunk: int | None = None
) -> VSchedule:
    if name == "greedy":
        return greedy(topo, pattern, threshold)
    if name == "alltoall":
        return alltoall_based(topo, pattern, threshold)
    if name == "balanced":
        return balanced(topo, pattern, chunk)
    raise InputError(f"--scheduler: unknown scheduler '{name}' (use {', '.join(SCHEDULERS)})")


# ---------------------------------------------------------------------------------------------
# CLI: aapcgen vschedule TOPO.yaml PATTERN
# ---------------------------------------------------------------------------------------------
