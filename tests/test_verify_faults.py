"""Planted faults, one per check of the verifiers: each schedule below is complete and breaks
exactly one rule in exactly one place, so a verifier that skips that check accepts it.

Contention (aapcgen/verify/alltoall.py): two messages on a switch link deep in a chain, on a
switch link's upward and downward direction, on a receiver's own link, three messages on a
trunk of capacity 2. Alltoallv (aapcgen/verify/alltoallv.py): two pieces that share nothing but
one switch edge, upward, downward and deep. Synchronisation: a sync dropped between two
messages that share only switch links (different senders, different receivers), so that only
the switch links say they must be ordered.

The schedules were found by a search over phase assignments and are written out here as
``phase:src>dst`` so that each test reads its input.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from trees import make_topology

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import variant_spec
from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Link
from aapcgen.verify.alltoall import verify_schedule, verify_sync
from aapcgen.verify.alltoallv import verify_vschedule


def parse(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``"0:1>2 0:2>0 ..."`` -> phase, src, dst arrays."""
    rows = [(int(p), int(s), int(d)) for p, sd in (w.split(":") for w in text.split())
            for s, d in [sd.split(">")]]  # fmt: skip
    return tuple(np.array(c, dtype=np.int64) for c in zip(*rows))


# chain s0-s1-s2-s3; n0, n1 on s2 and n2, n3 on s3: the link s2-s3 hangs at depth 3
CHAIN = make_topology([0, 1, 2], [2, 2, 3, 3])
DEEP_DOWN = "0:0>2 0:1>3 0:3>0 1:0>3 1:1>0 1:2>1 1:3>2 2:0>1 2:1>2 2:2>0 3:2>3 3:3>1"
DEEP_UP = "0:0>3 0:1>0 0:2>1 0:3>2 1:1>2 1:2>0 1:3>1 2:0>2 2:2>3 3:0>1 3:1>3 3:3>0"

# star s0 with s1 (n0-n2), s2 (n3, n4), s3 (n5, n6): s1's link is the bottleneck (12 phases),
# s2's link has room, so two messages on it in one phase are its only fault
STAR = make_topology([0, 0, 0], [1, 1, 1, 2, 2, 3, 3])
STAR_UP = (
    "0:0>3 0:5>0 1:0>6 1:2>0 1:4>2 1:5>4 2:2>3 2:3>1 2:4>5 2:5>6 3:1>4 3:3>5 3:4>3 3:5>1 "
    "4:2>4 4:4>6 4:6>0 5:0>4 5:3>6 5:5>2 6:0>5 6:1>2 6:2>1 6:4>0 6:6>4 7:1>3 7:3>4 7:6>1 "
    "8:0>1 8:1>0 8:2>5 8:3>2 8:6>3 9:2>6 9:6>2 10:0>2 10:1>6 10:3>0 10:5>3 10:6>5 11:1>5 11:4>1"
)
STAR_DOWN = (
    "0:0>6 0:3>0 0:6>3 1:2>5 1:4>2 1:5>4 2:0>1 2:2>4 2:4>6 2:5>0 2:6>5 3:0>4 3:3>6 3:6>1 "
    "4:2>3 4:4>5 4:6>2 5:0>2 5:1>4 5:4>0 5:5>6 6:0>5 6:1>0 6:3>1 7:0>3 7:1>2 7:3>5 7:6>0 "
    "8:1>3 8:4>1 8:6>4 9:2>6 9:3>4 9:5>2 10:1>5 10:2>1 10:3>2 10:5>3 11:1>6 11:2>0 11:4>3 11:5>1"
)

# two switches of 2 + 2 machines: n2 receives twice in phase 2
PAIR = make_topology([0, 0], [1, 1, 2, 2])
RECEIVER_TWICE = "0:1>2 0:2>0 0:3>2 1:0>3 1:2>1 2:0>2 2:1>0 2:2>3 2:3>1 3:0>1 3:1>3 3:3>0"

# 3 + 3 machines, a trunk twice as fast as the machines: capacity 2, 5 phases at least
TRUNK = replace(make_topology([0], [0, 0, 0, 1, 1, 1]), links=(Link("s0", "s1", 2 * 12.5e6),))
TRUNK_THREE = (
    "0:0>2 0:1>3 0:2>5 0:3>0 0:4>1 0:5>4 1:0>3 1:1>5 1:2>4 1:4>0 1:5>1 2:0>1 2:1>4 2:3>5 "
    "2:4>2 2:5>3 3:1>0 3:2>3 3:3>2 3:4>5 4:0>4 4:2>0 4:3>1 4:5>2 5:0>5 5:1>2 5:2>1 5:3>4 "
    "5:4>3 5:5>0"
)


CASES = {  # topology, schedule, the phase, the messages sharing the edge, the edge, its capacity
    "deep-down": (CHAIN, DEEP_DOWN, 0, "n0->n2, n1->n3", "s2->s3", 1),
    "deep-up": (CHAIN, DEEP_UP, 1, "n2->n0, n3->n1", "s3->s2", 1),
    "switch-up": (STAR, STAR_UP, 2, "n3->n1, n4->n5", "s2->s0", 1),
    "switch-down": (STAR, STAR_DOWN, 8, "n1->n3, n6->n4", "s0->s2", 1),
    "receiver-link": (PAIR, RECEIVER_TWICE, 0, "n1->n2, n3->n2", "s2->n2", 1),
    "trunk": (TRUNK, TRUNK_THREE, 1, "n0->n3, n1->n5 and 1 more", "s0->s1", 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_contention_is_named_and_is_the_only_fault(case):
    topo, text, phase, messages, edge, cap = CASES[case]
    expected = f"contention in phase {phase}: {messages} use directed edge {edge} (capacity {cap})"
    with pytest.raises(VerificationError) as info:
        verify_schedule(topo, *parse(text))
    assert str(info.value) == expected
    # the second message moved to a phase of its own: contention-free, one phase too many
    # (with one link speed) or accepted (the trunk's capacity bound is 5, 7 phases may do)
    p, s, d = parse(text)
    a, b = messages.split(", ")[1].split()[0].split("->")
    p[np.flatnonzero((s == int(a[1:])) & (d == int(b[1:])))[0]] = p.max() + 1
    if cap == 1:
        bound = int(p.max())
        with pytest.raises(VerificationError, match=f"^{bound + 1} phases, but the lower bound "
                           f"\\(largest link load\\) is {bound}$"):  # fmt: skip
            verify_schedule(topo, p, s, d)
    else:
        proof = verify_schedule(topo, p, s, d)
        assert (proof.lower_bound, proof.n_phases, proof.max_capacity) == (5, 7, 2)


# ---- Alltoallv: two pieces that share only one switch edge -----------------------------------

# star s0 with s1 (n0, n1), s2 (n2, n3), s3 (n4, n5); chain s0-s1-s2-s3 with n0 on s0, n1 on
# s1, n2, n3 on s3 (the edge s2-s3 at depth 3)
V_STAR = make_topology([0, 0, 0], [1, 1, 2, 2, 3, 3])
V_CHAIN = make_topology([0, 1, 2], [0, 1, 3, 3])


@pytest.mark.parametrize(
    ("topo", "first", "second", "edge"),
    [
        (V_STAR, (0, 2), (4, 3), "s0->s2"),  # down only: different senders, receivers, subtrees
        (V_STAR, (2, 0), (3, 4), "s2->s0"),  # up only
        (V_CHAIN, (0, 2), (1, 3), "s2->s3"),  # deep: s1->s2 and s2->s3 shared, s2->s3 deepest
    ],
    ids=["down", "up", "deep"],
)
def test_alltoallv_pieces_sharing_one_switch_edge(topo, first, second, edge):
    n = topo.n_machines
    pattern = np.zeros((n, n), dtype=np.int64)
    pattern[first], pattern[second] = 1000, 3000
    apart = SimpleNamespace(
        phase=np.array([0, 1]),
        src=np.array([first[0], second[0]]),
        dst=np.array([first[1], second[1]]),
        offset=np.array([0, 0]),
        length=np.array([1000, 3000]),
    )
    proof = verify_vschedule(topo, pattern, apart)  # one phase each: fine
    assert (proof.n_phases, proof.n_pieces) == (2, 2)
    together = replace_ns(apart, phase=np.array([0, 0]))
    names = [f"n{a}->n{b}" for a, b in (first, second)]
    with pytest.raises(VerificationError) as info:
        verify_vschedule(topo, pattern, together)
    want = f"contention in phase 0: {names[0]} and {names[1]} both use directed edge "
    assert str(info.value).startswith(want)
    if topo is not V_CHAIN:  # the chain's pieces also share s1->s2; the first clash is named
        assert str(info.value) == want + edge
    else:
        assert str(info.value).endswith(("s1->s2", "s2->s3"))
    # marked as the small-message phase, whole messages below the threshold may share it
    small = replace_ns(together, small=np.array([True]), threshold=4000)
    assert verify_vschedule(topo, pattern, small).small_phases == 1


def replace_ns(ns: SimpleNamespace, **changes) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(ns), **changes})


# ---- synchronisation: a sync between messages that share only switch links -------------------


@pytest.mark.parametrize("variant", ["sender-all", "receiver-all"])
def test_dropping_a_sync_ordering_a_switch_only_pair_is_insufficient(variant):
    """Two switches of 3 machines: a sync whose two messages have different senders and
    different receivers orders them only because they share the trunk; dropping it must leave
    that pair (or one it carried) unordered."""
    topo = make_topology([0], [0, 0, 0, 1, 1, 1])
    tree = analyze(topo)
    sched = build_phases(tree)
    spec = variant_spec(variant)
    plan = plan_sync(tree, sched, spec)
    ph, src, dst = (a.astype(np.int64) for a in (sched.phase, sched.src, sched.dst))
    by_sender = {(int(s), int(p)): k for k, (s, p) in enumerate(zip(src, ph))}
    by_receiver = {(int(d), int(p)): k for k, (d, p) in enumerate(zip(dst, ph))}
    fired_by = by_sender if spec.kind == "sender" else by_receiver
    syncs = np.stack([plan.frm, plan.trigger, plan.to, plan.target], axis=1).astype(np.int64)
    pairs = [(fired_by[(int(f), int(t))], by_sender[(int(to), int(q))]) for f, t, to, q in syncs]
    switch_only = [i for i, (a, b) in enumerate(pairs) if src[a] != src[b] and dst[a] != dst[b]]
    assert switch_only, "this tree's plan has a sync ordering a switch-only pair"
    full = tuple(syncs[:, k] for k in range(4))
    verify_sync(topo, ph, src, dst, spec.kind, spec.scope, 1, full)
    for i in switch_only[:3]:
        kept = np.delete(syncs, i, axis=0)
        with pytest.raises(VerificationError, match="^insufficient: .* is not ordered before "):
            verify_sync(topo, ph, src, dst, spec.kind, spec.scope, 1,
                        tuple(kept[:, k] for k in range(4)))  # fmt: skip
