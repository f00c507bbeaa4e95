"""Independent checker for Alltoallv schedules (``aapcgen/alltoallv/schedule.py``).

It shares no code with the schedulers (``tree.py``, ``phases.py``, ``vschedule.py``): it rebuilds
the tree with ``verify.py``'s helpers and reads a schedule only through its arrays. It proves:

1. exact delivery: for every ordered pair (s, d), s != d, the pieces tile [0, pattern[s, d])
   with no gap and no overlap (so every byte is sent exactly once); no piece on the diagonal;
2. contention-freedom: no directed edge carries two pieces of one phase, except in the phase the
   schedule marks as the small-message phase, whose pieces must all be whole messages below the
   schedule's threshold (at most one such phase);
3. cost: phase time = max over directed edges of (bytes on the edge in the phase) / bandwidth,
   recomputed here and compared with the schedule's; the bound = max over directed edges of
   (total bytes crossing it) / bandwidth, reported beside it (cost >= bound always holds: a sum
   over phases of maxima over edges is at least the maximum over edges of the sums).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Topology
from aapcgen.verify.tree import ancestors, hang_tree


@dataclass(frozen=True)
class VProof:
    n_machines: int
    n_messages: int
    n_pieces: int
    n_phases: int
    small_phases: int
    cost: float  # seconds
    bound: float  # seconds

    @property
    def ratio(self) -> float:
        return self.cost / self.bound if self.bound > 0 else 1.0

    def summary(self, name: str) -> str:
        small = (
            " except the small-message phase (contention allowed there)"
            if self.small_phases
            else ""
        )
        return (
            f"verified {name}: {self.n_messages} messages delivered exactly once in {self.n_pieces} "
            f"pieces; {self.n_phases} phases, contention-free{small}; cost {self.cost * 1e3:.3f} ms "
            f">= bound {self.bound * 1e3:.3f} ms (cost/bound {self.ratio:.4f})"
        )


def _edge_bandwidth(topo: Topology, names: list[str], parent: np.ndarray) -> np.ndarray:
    """Bandwidth of the link from each node up to its parent."""
    n = topo.n_machines
    bw = np.ones(len(names), dtype=np.float64)
    bw[:n] = topo.machine_bandwidth
    by_pair = {(ln.a, ln.b): ln.bandwidth for ln in topo.links}
    by_pair.update({(b, a): v for (a, b), v in by_pair.items()})
    for c in range(n, len(names)):
        if parent[c] >= 0:
            bw[c] = by_pair[(names[c], names[int(parent[c])])]
    return bw


def _check_tiling(pattern: np.ndarray, src: np.ndarray, dst: np.ndarray, off: np.ndarray,
                  ln: np.ndarray, names: list[str]) -> None:  # fmt: skip
    n = pattern.shape[0]
    if len(ln) and (ln.min() <= 0 or off.min() < 0):
        i = int(np.flatnonzero((ln <= 0) | (off < 0))[0])
        raise VerificationError(
            f"piece {names[src[i]]}->{names[dst[i]]} has offset {off[i]} length {ln[i]}"
        )
    diag = np.flatnonzero(src == dst)
    if len(diag):
        raise VerificationError(
            f"piece {names[src[diag[0]]]}->{names[src[diag[0]]]} sends to itself"
        )
    order = np.lexsort((off, dst, src))
    s, d, o, length = src[order], dst[order], off[order], ln[order]
    same = (s[1:] == s[:-1]) & (d[1:] == d[:-1])
    end = o + length
    bad = np.flatnonzero(same & (o[1:] != end[:-1]))
    if len(bad):
        i = bad[0]
        what = "overlap (a byte sent twice)" if o[i + 1] < end[i] else "gap (bytes never sent)"
        raise VerificationError(
            f"{names[s[i]]}->{names[d[i]]}: {what} between [{o[i]}, {end[i]}) and piece at {o[i + 1]}"
        )
    first = np.r_[True, ~same] if len(s) else np.zeros(0, bool)
    if (o[first] != 0).any():
        i = np.flatnonzero(first & (o != 0))[0]
        raise VerificationError(f"{names[s[i]]}->{names[d[i]]}: bytes [0, {o[i]}) never sent")
    # each pair's pieces now tile [0, sum of their lengths)
    sent = np.zeros((n, n), dtype=np.int64)
    np.add.at(sent, (s, d), length)
    want = pattern.astype(np.int64).copy()
    np.fill_diagonal(want, 0)
    if (sent != want).any():
        a, b = np.argwhere(sent != want)[0]
        raise VerificationError(
            f"{names[a]}->{names[b]}: {sent[a, b]} bytes delivered, pattern has {want[a, b]}"
        )


def verify_vschedule(topo: Topology, pattern: np.ndarray, schedule: Any) -> VProof:
    """Check delivery, contention and cost of a schedule with arrays phase, src, dst, offset,
    length, per-phase ``small`` and ``phase_time``, and ``threshold``, ``cost``; raise
    VerificationError naming the first violation."""
    n = topo.n_machines
    pattern = np.asarray(pattern, dtype=np.int64)
    if pattern.shape != (n, n):
        raise VerificationError(f"pattern is {pattern.shape}, expected {n}x{n}")
    ph, src, dst, off, ln = (
        np.asarray(getattr(schedule, a), dtype=np.int64)
        for a in ("phase", "src", "dst", "offset", "length")
    )
    if not (len(ph) == len(src) == len(dst) == len(off) == len(ln)):
        raise VerificationError("schedule arrays differ in length")
    if len(ph) and (
        ph.min() < 0 or min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n
    ):
        raise VerificationError("schedule has a phase below 0 or a rank outside 0..N-1")
    tree = hang_tree(topo)
    names = tree.names
    _check_tiling(pattern, src, dst, off, ln, names)
    n_phases = int(ph.max()) + 1 if len(ph) else 0
    small = np.zeros(n_phases, dtype=bool)
    marked = np.asarray(getattr(schedule, "small", np.zeros(0, bool)), dtype=bool)
    small[: min(len(marked), n_phases)] = marked[:n_phases]
    if small.sum() > 1:
        raise VerificationError(f"{int(small.sum())} phases are marked small; at most one may be")
    threshold = int(getattr(schedule, "threshold", 0))
    in_small = small[ph]
    whole = (off == 0) & (ln == pattern[src, dst])
    bad = np.flatnonzero(in_small & ~(whole & (ln < threshold)))
    if len(bad):
        i = bad[0]
        raise VerificationError(
            f"small-message phase {ph[i]} holds {names[src[i]]}->{names[dst[i]]} ({ln[i]} bytes at "
            f"offset {off[i]}), not a whole message below the threshold {threshold}"
        )
    # (piece, directed edge) pairs, depth by depth (every machine is at depth 1 or deeper)
    anc = ancestors(tree, n)
    bw = _edge_bandwidth(topo, names, tree.parent)
    n_nodes = len(names)
    pieces, edges = [], []
    for depth in range(1, anc.shape[0]):
        a_src, a_dst = anc[depth][src], anc[depth][dst]
        for end, down in ((a_src, 0), (a_dst, 1)):
            used = np.flatnonzero((a_src != a_dst) & (end >= 0))
            pieces.append(used)
            edges.append(2 * end[used] + down)
    piece, edge = np.concatenate(pieces), np.concatenate(edges)
    key = ph[piece] * (2 * n_nodes) + edge
    uses = np.bincount(key, minlength=n_phases * 2 * n_nodes)
    clash = np.flatnonzero((uses > 1) & ~np.repeat(small, 2 * n_nodes))
    if len(clash):
        k = int(clash[0])
        p, e = divmod(k, 2 * n_nodes)
        node = e // 2
        a, b = names[node], names[int(tree.parent[node])]
        link = f"{a}->{b}" if e % 2 == 0 else f"{b}->{a}"
        who = [f"{names[src[i]]}->{names[dst[i]]}" for i in piece[key == k][:2]]
        raise VerificationError(
            f"contention in phase {p}: {who[0]} and {who[1]} both use directed edge {link}"
        )
    secs = np.bincount(key, weights=ln[piece] / bw[edge // 2], minlength=n_phases * 2 * n_nodes)
    phase_time = secs.reshape(n_phases, 2 * n_nodes).max(axis=1)
    cost = float(phase_time.sum())
    claimed = float(getattr(schedule, "cost", cost))
    if not np.isclose(claimed, cost, rtol=1e-9, atol=1e-15):
        raise VerificationError(f"schedule claims cost {claimed:.9g} s, recomputed {cost:.9g} s")
    # after the tiling check the pieces carry exactly the pattern's bytes
    total = np.bincount(edge, weights=ln[piece] / bw[edge // 2], minlength=2 * n_nodes)
    bound = float(total.max())
    off_diag = pattern.copy()
    np.fill_diagonal(off_diag, 0)
    return VProof(
        n_machines=n,
        n_messages=int((off_diag > 0).sum()),
        n_pieces=len(ph),
        n_phases=n_phases,
        small_phases=int(small.sum()),
        cost=cost,
        bound=bound,
    )
