"""Stage 3: the optimal contention-free AAPC phases (seed 002, sections 4.2 and 4.3).

``build_phases(tree) -> Schedule``.

Notation follows the paper: the root has subtrees T0..Tk-1 with |M0| >= |M1| >= ... machines;
``m[i][x]`` is machine x of subtree i; L = |M0| * (|M| - |M0|) is the number of phases.

Global message scheduling (4.2): the |Mi|*|Mj| messages of Ti -> Tj take consecutive phases from

* ``|Mi| * (|M_{i+1}| + ... + |M_{j-1}|)``                  when j > i,
* ``L - |Mj| * (|M_{j+1}| + ... + |M_i|)``                 when i > j.

Assignment (Figure 4), with q the offset of a message inside its block and p its phase:

1. T0 -> Tj: receiver ``m[j][(p - L) mod |Mj|]``; senders follow the *rotate* pattern with base
   sequence m[0][0..|M0|-1]: the base sequence is repeated b times (lcm(|M0|, |Mj|) phases), then
   rotated by the smallest n that gives a message not seen before, D = gcd times in all. Within a
   block of lcm phases each sender/receiver index pair has a fixed difference mod D, so the n-th
   block needs exactly n rotations: sender index ``(q + q // lcm) mod |M0|``. (tests compare this
   closed form with a literal implementation of the search.)
2. Ti -> T0: phases form rounds of |M0|; in round r the receiver is the T0 sender of that phase
   shifted by ``1 + (r mod (|M0| - 1))`` (Table 3). Table 3 lists a last identity round, but the
   paper's own Table 4 (|M0| = 2) shifts by 1 in every round; we follow Table 4: the rounds cycle
   through the |M0|-1 non-identity shifts, which keeps every round usable for local messages.
   Senders: broadcast pattern, ``m[i][q // |M0|]``.
3. Local messages of T0 in phases 0 .. |M0|(|M0|-1)-1: receiver-of-global -> sender-of-global.
4. Ti -> Tj, i > j >= 1: broadcast, sender ``m[i][q // |Mj|]``, receiver ``m[j][q mod |Mj|]``.
5. Local messages of Ti (i >= 1) in the phases of Ti -> T(i-1): at phase p the designated
   receiver is ``m[i][(p - L) mod |Mi|]``; the local message designated-receiver -> global sender
   is placed at the first phase of the sender's window where that receiver is designated.
6. Ti -> Tj, 1 <= i < j: broadcast pattern (as in the paper's Table 4).

Everything is computed with numpy over all messages at once: the scheduler never loops over
machines or phases in Python (a 4096-machine tree has 16.8 million messages).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aapcgen.alltoall.tree import TreeInfo


@dataclass(frozen=True)
class Schedule:
    """AAPC phases: message e goes from rank ``src[e]`` to rank ``dst[e]`` in phase ``phase[e]``.

    Messages are sorted by (phase, src). ``n_phases`` equals the bottleneck load.
    """

    n_machines: int
    n_phases: int
    phase: np.ndarray  # int32
    src: np.ndarray  # int32
    dst: np.ndarray  # int32

    def phase_lists(self) -> list[list[tuple[int, int]]]:
        """The phases as lists of (src, dst) pairs (for small schedules and the JSON contract)."""
        bounds = np.searchsorted(self.phase, np.arange(self.n_phases + 1))
        pairs = np.stack([self.src, self.dst], axis=1).tolist()
        return [[tuple(x) for x in pairs[bounds[p] : bounds[p + 1]]] for p in range(self.n_phases)]


def round_shift(rounds: np.ndarray, m0: int) -> np.ndarray:
    """Step 2 (Table 3, as used in Table 4): receiver = sender + shift in round r of |M0| phases."""
    if m0 == 1:
        return np.zeros_like(rounds)
    return 1 + rounds % (m0 - 1)


def _expand(block_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For blocks of the given sizes: the block index and the offset q of every element."""
    total = int(block_sizes.sum())
    block = np.repeat(np.arange(len(block_sizes)), block_sizes)
    first = np.cumsum(block_sizes) - block_sizes
    return block, np.arange(total, dtype=np.int64) - first[block]


def _block_starts(
    ii: np.ndarray, jj: np.ndarray, sizes: np.ndarray, offs: np.ndarray, load: int
) -> np.ndarray:
    """Section 4.2: first phase of Ti -> Tj (offs[x] = |M0| + ... + |M(x-1)|)."""
    forward = sizes[ii] * (offs[jj] - offs[ii + 1])
    backward = load - sizes[jj] * (offs[ii + 1] - offs[jj + 1])
    return np.where(jj > ii, forward, backward)


def _global_t0_out(sizes: np.ndarray, offs: np.ndarray, load: int) -> tuple[np.ndarray, ...]:
    """Step 1: T0 -> Tj, rotate senders, receivers aligned to (p - L) mod |Mj|."""
    jj = np.arange(1, len(sizes))
    ii = np.zeros_like(jj)
    m0, mj = sizes[0], sizes[jj]
    block, q = _expand(m0 * mj)
    phase = _block_starts(ii, jj, sizes, offs, load)[block] + q
    lcm = np.lcm(m0, mj)[block]
    x = (q + q // lcm) % m0
    y = (phase - load) % mj[block]
    return phase, x, jj[block], y


def _global_into_t0(
    sizes: np.ndarray, offs: np.ndarray, load: int, send0: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Step 2: Ti -> T0, receivers from Table 3, broadcast senders."""
    ii = np.arange(1, len(sizes))
    jj = np.zeros_like(ii)
    m0 = int(sizes[0])
    block, q = _expand(sizes[ii] * m0)
    phase = _block_starts(ii, jj, sizes, offs, load)[block] + q
    x = q // m0
    y = (send0[phase] + round_shift(phase // m0, m0)) % m0
    return phase, ii[block], x, y


def _global_between_others(
    sizes: np.ndarray, offs: np.ndarray, load: int
) -> tuple[np.ndarray, ...]:
    """Steps 4 and 6: Ti -> Tj with i, j >= 1, broadcast pattern."""
    k = len(sizes)
    if k < 3:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty, empty
    others = np.arange(1, k)
    ii, jj = np.meshgrid(others, others, indexing="ij")
    keep = ii != jj
    ii, jj = ii[keep], jj[keep]
    block, q = _expand(sizes[ii] * sizes[jj])
    mj = sizes[jj][block]
    phase = _block_starts(ii, jj, sizes, offs, load)[block] + q
    return phase, ii[block], q // mj, jj[block], q % mj


def _local_t0(m0: int, send0: np.ndarray, recv0: np.ndarray) -> tuple[np.ndarray, ...]:
    """Step 3: in phase p < |M0|(|M0|-1), T0's global receiver sends to T0's global sender."""
    phase = np.arange(m0 * (m0 - 1), dtype=np.int64)
    return phase, recv0[phase], send0[phase]


def _local_others(sizes: np.ndarray, load: int) -> tuple[np.ndarray, ...]:
    """Step 5: local messages of Ti in the phases of Ti -> T(i-1)."""
    subtrees = np.arange(1, len(sizes))
    subtrees = subtrees[sizes[subtrees] >= 2]
    empty = np.zeros(0, dtype=np.int64)
    if len(subtrees) == 0:
        return empty, empty, empty, empty
    mi, mprev = sizes[subtrees], sizes[subtrees - 1]
    block, e = _expand(mi * mi)
    mi_e, mprev_e = mi[block], mprev[block]
    sender, w = e // mi_e, e % mi_e  # w: position in the sender's window of |M(i-1)| phases
    receiver = (sender * mprev_e + w) % mi_e  # designated receiver, first |Mi| phases of window
    phase = load - mprev_e * mi_e + sender * mprev_e + w
    keep = receiver != sender
    return phase[keep], subtrees[block][keep], receiver[keep], sender[keep]


def build_phases(tree: TreeInfo) -> Schedule:
    """Stage 3 of the pipeline: the L = |M0|(|M|-|M0|) contention-free phases of Figure 4."""
    sizes = np.array([len(t) for t in tree.subtrees], dtype=np.int64)
    members = np.concatenate([np.asarray(t, dtype=np.int64) for t in tree.subtrees])
    offs = np.concatenate([[0], np.cumsum(sizes)])
    n, m0 = int(offs[-1]), int(sizes[0])
    load = m0 * (n - m0)

    p1, x1, j1, y1 = _global_t0_out(sizes, offs, load)
    send0 = np.empty(load, dtype=np.int64)
    send0[p1] = x1
    p2, i2, x2, y2 = _global_into_t0(sizes, offs, load, send0)
    recv0 = np.empty(load, dtype=np.int64)
    recv0[p2] = y2
    p3, u3, v3 = _local_t0(m0, send0, recv0)
    p4, i4, x4, j4, y4 = _global_between_others(sizes, offs, load)
    p5, i5, u5, v5 = _local_others(sizes, load)

    phase = np.concatenate([p1, p2, p3, p4, p5])
    src = np.concatenate(
        [
            members[x1],
            members[offs[i2] + x2],
            members[u3],
            members[offs[i4] + x4],
            members[offs[i5] + u5],
        ]
    )
    dst = np.concatenate(
        [
            members[offs[j1] + y1],
            members[y2],
            members[v3],
            members[offs[j4] + y4],
            members[offs[i5] + v5],
        ]
    )
    order = np.argsort(phase * n + src, kind="stable")
    return Schedule(
        n_machines=n,
        n_phases=load,
        phase=phase[order].astype(np.int32),
        src=src[order].astype(np.int32),
        dst=dst[order].astype(np.int32),
    )
