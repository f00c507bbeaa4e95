"""The verifiers' verdicts and words, pinned: every summary and every error names exactly what it
should (the pairs, the edge and its direction, the capacity, the window), and each argument
check fires at its boundary. Written against the mutants `make mutate` found alive
(docs/scheduling.md "Mutation testing")."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_verify_faults import PAIR, TRUNK, parse
from trees import figure1, make_topology

from aapcgen.alltoall.capacity import schedule_phases
from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import variant_spec
from aapcgen.core.errors import VerificationError
from aapcgen.verify.alltoall import (
    SYNC_CHECK_MAX_MACHINES,
    Proof,
    SyncProof,
    verify_schedule,
    verify_sync,
)
from aapcgen.verify.alltoallv import VProof, verify_vschedule

HEAD = "verified t: 6 messages = every ordered pair of 3 machines exactly once; "


@pytest.mark.parametrize(
    ("fields", "tail"),
    [
        (
            dict(bound_links=(), max_capacity=1, n_phases=2, lower_bound=2),
            "no directed edge used twice in any phase (6 directed edges x 2 phases); 2 phases = "
            "the lower bound 2 (2 messages sent by every machine), so the schedule is optimal",
        ),
        (
            dict(bound_links=("a-s0",), max_capacity=1, n_phases=2, lower_bound=2),
            "no directed edge used twice in any phase (6 directed edges x 2 phases); 2 phases = "
            "the lower bound 2 (the load of link a-s0), so the schedule is optimal",
        ),
        (
            dict(bound_links=("a-s0", "b-s0"), max_capacity=3, n_phases=7, lower_bound=5),
            "no directed edge over its capacity in any phase (capacities up to 3 messages) (6 "
            "directed edges x 7 phases); 7 phases against the lower bound 5 (the load of link "
            "a-s0 and 1 other link(s) over its capacity), 1.4000x the bound",
        ),
        (
            dict(bound_links=("a-s0", "b-s0", "c-s0"), max_capacity=2, n_phases=5, lower_bound=5),
            "no directed edge over its capacity in any phase (capacities up to 2 messages) (6 "
            "directed edges x 5 phases); 5 phases = the lower bound 5 (the load of link a-s0 and "
            "2 other link(s) over its capacity), so the schedule is optimal",
        ),
    ],
    ids=["machines", "one-link", "capacity-not-optimal", "capacity-three-links"],
)
def test_proof_summary_words(fields, tail):
    proof = Proof(n_machines=3, n_messages=6, directed_edges=6, **fields)
    assert proof.summary("t") == HEAD + tail


def test_proof_of_figure1():
    phase, src, dst = (a.astype(np.int64) for a in _sched(figure1()))
    proof = verify_schedule(figure1(), phase, src, dst)
    assert proof == Proof(5, 20, 6, 6, ("s1-s0", "s2-s1", "s3-s2", "s5-s3"), 20, 1)


def test_sync_proof_summary_words():
    ordered = "all 12 contending pairs are ordered"
    windowed = (
        "no link can have more than 3 x its capacity of messages in flight (a window of 3 "
        "phases; 12 contending pairs)"
    )
    tail = (
        " by the 5 syncs plus program order (sufficient), and no sync is implied by the others "
        "plus program order, each ordering a contending pair (minimal)"
    )
    head = "verified synchronisation of v: "
    assert SyncProof(12, 5).summary("v") == head + ordered + tail
    assert SyncProof(12, 5, window=3).summary("v") == head + windowed + tail


def _sched(topo):
    s = build_phases(analyze(topo))
    return s.phase, s.src, s.dst


# ---- verify_schedule: the words of each rejection ----------------------------------------------


def test_arrays_of_different_lengths():
    phase, src, dst = _sched(figure1())
    with pytest.raises(VerificationError, match="^schedule arrays differ in length$"):
        verify_schedule(figure1(), phase[1:], src, dst)


def test_the_missing_message_is_named():
    phase, src, dst = _sched(figure1())
    keep = ~((src == 2) & (dst == 3))
    with pytest.raises(VerificationError, match="^message n2->n3 is missing$"):
        verify_schedule(figure1(), phase[keep], src[keep], dst[keep])


def test_machine_zero_receiving_twice():
    """n1 -> n0 and n2 -> n0 in phase 1 share only the link s1 -> n0 (machine 0's own link)."""
    text = "0:1>3 0:3>1 1:0>2 1:1>0 1:2>0 2:0>3 2:2>1 2:3>2 3:0>1 3:1>2 3:2>3 3:3>0"
    with pytest.raises(VerificationError) as info:
        verify_schedule(PAIR, *parse(text))
    assert (
        str(info.value)
        == "contention in phase 1: n1->n0, n2->n0 use directed edge s1->n0 (capacity 1)"
    )


def test_receiver_link_below_every_sender():
    """n0, n1 on s0 and n2 on s1 one level deeper: at n2's depth no sender crosses upward, and
    the two messages into n2 clash on s1 -> n2 (the deepest shared edge is named)."""
    topo = make_topology([0], [0, 0, 1])
    text = "0:0>2 0:1>2 0:2>0 1:0>1 1:1>0 1:2>1"
    with pytest.raises(VerificationError) as info:
        verify_schedule(topo, *parse(text))
    assert (
        str(info.value)
        == "contention in phase 0: n0->n2, n1->n2 use directed edge s1->n2 (capacity 1)"
    )


# ---- verify_sync: arguments, references, order of the inputs -----------------------------------


def _plan(topo, name, phases=build_phases, block_size=None):
    tree = analyze(topo)
    sched = phases(tree)
    spec = variant_spec(name, block_size)
    plan = plan_sync(tree, sched, spec)
    syncs = np.stack([plan.frm, plan.trigger, plan.to, plan.target], axis=1).astype(np.int64)
    arrays = tuple(a.astype(np.int64) for a in (sched.phase, sched.src, sched.dst))
    return arrays, spec, syncs


def _sync(topo, arrays, spec, syncs, **kw):
    cols = tuple(syncs[:, k] for k in range(4))
    return verify_sync(topo, *arrays, spec.kind, spec.scope, spec.block_size, cols, **kw)


def test_sync_check_size_limit_and_window_arguments():
    big = make_topology([], [0] * (SYNC_CHECK_MAX_MACHINES + 1))
    one = (np.array([0]), np.array([0]), np.array([1]))
    none = tuple(np.zeros(0, np.int64) for _ in range(4))
    with pytest.raises(
        VerificationError, match="^the sync check handles at most 64 machines, not 65$"
    ):
        verify_sync(big, *one, "sender", "all", 1, none)
    at_limit = make_topology([], [0] * SYNC_CHECK_MAX_MACHINES)  # a one-message schedule: quick
    assert verify_sync(at_limit, *one, "sender", "all", 1, none) == SyncProof(0, 0)
    arrays, spec, syncs = _plan(figure1(), "sender-all")
    for window, scope in ((0, "all"), (-1, "all"), (2, "cross"), (2, "within")):
        with pytest.raises(VerificationError, match=f"^a window of {window} phases is checked "
                           "for scope all only$"):  # fmt: skip
            verify_sync(figure1(), *arrays, "sender", scope, 2, tuple(syncs.T), window=window)


def test_syncs_that_refer_to_no_message_or_go_back():
    topo = figure1()
    arrays, spec, syncs = _plan(topo, "sender-all")
    assert _sync(topo, arrays, spec, syncs) == SyncProof(80, 16)
    f, t, to, q = syncs[0]
    assert (f, t, to, q) == (0, 0, 1, 1)
    cases = {
        (0, 0, 1, 99): "^sync n0@0 -> n1@99 refers to no message$",  # the waiting end
        (0, 77, 1, 1): "^sync n0@77 -> n1@1 refers to no message$",  # the firing end
        (0, 0, 1, 0): "^sync n0@0 -> n1@0 does not point to a later phase \\(a cycle of waits "
        "could hang\\)$",
        (0, 1, 1, 0): "^sync n0@1 -> n1@0 does not point to a later phase",
    }
    for row, message in cases.items():
        bad = syncs.copy()
        bad[0] = row
        with pytest.raises(VerificationError, match=message):
            _sync(topo, arrays, spec, bad)
    with pytest.raises(VerificationError, match="^sync n0@0 -> n1@1 is duplicated or implied "
                       "by program order$"):  # fmt: skip
        _sync(topo, arrays, spec, np.r_[syncs, syncs[:1]])


def test_a_sync_that_orders_nothing_or_is_implied_is_not_minimal():
    topo = figure1()
    arrays, spec, syncs = _plan(topo, "sender-all")
    phase, src, dst = arrays
    index = {(int(s), int(p)): m for m, (s, p) in enumerate(zip(src, phase))}
    # n0@0 -> n1@1 and n1@1 -> n4@2 (if planned) compose into n0@0 -> n4@2
    composed = [
        (a[0], a[1], b[2], b[3])
        for a in syncs
        for b in syncs
        if (a[2], a[3]) == (b[0], b[1]) and a[0] != b[2]
    ]
    # a firing message of index 2 or more: its event number (3x + 1) names it only divided by 3
    extra = np.array([next(c for c in composed if index[(int(c[0]), int(c[1]))] >= 2)])
    x, y = index[tuple(extra[0, :2])], index[tuple(extra[0, 2:])]
    with pytest.raises(VerificationError) as info:
        _sync(topo, arrays, spec, np.r_[syncs, extra])
    assert (
        str(info.value)
        == f"not minimal: the sync {x}->{y} (message indices) is implied by the others"
    )
    # without the minimality check the same syncs are sufficient
    assert _sync(topo, arrays, spec, np.r_[syncs, extra], minimal=False).syncs == len(syncs) + 1
    # a sync between two messages that share no edge, not ordered by anything yet
    found = None
    for a in range(2, len(src)):  # index 2 or more, as above
        for b in range(len(src)):
            if phase[b] <= phase[a] or src[a] == src[b] or _share_edge(topo, a, b, src, dst):
                continue
            row = np.array([[src[a], phase[a], src[b], phase[b]]])
            try:
                _sync(topo, arrays, spec, np.r_[syncs, row])
            except VerificationError as e:
                if "orders no contending pair" in str(e):
                    found = (a, b, str(e))
        if found:
            break
    assert found is not None
    a, b, message = found
    assert message == f"not minimal: the sync {a}->{b} (message indices) orders no contending pair"


def _share_edge(topo, a, b, src, dst) -> bool:
    """Whether messages a and b share a directed edge (the scheduler's own tree helpers)."""
    from aapcgen.alltoall.tree import hang, path_edges

    msg, edge = path_edges(hang(topo), src[[a, b]], dst[[a, b]])
    return len(set(edge[msg == 0].tolist()) & set(edge[msg == 1].tolist())) > 0


def test_the_order_of_the_messages_does_not_matter():
    """The same schedule and syncs, messages listed in reverse (latest phase first): the same
    proof, and each dropped sync still caught (program order and reachability are built from
    the phases, not from the listing)."""
    topo = make_topology([0], [0, 0, 0, 1, 1, 1])
    for name in ("sender-all", "receiver-all"):
        arrays, spec, syncs = _plan(topo, name)
        backwards = tuple(a[::-1].copy() for a in arrays)
        assert _sync(topo, backwards, spec, syncs) == _sync(topo, arrays, spec, syncs)
        for i in range(0, len(syncs), 3):
            with pytest.raises(VerificationError, match="^insufficient: "):
                _sync(topo, backwards, spec, np.delete(syncs, i, axis=0))


def test_a_machine_that_sends_nothing():
    """verify_sync takes any messages (Alltoallv patterns leave machines idle): n2 only receives;
    receiver-based syncs fire on its receives although it has no send to delay."""
    topo = make_topology([0], [0, 0, 1, 1])
    # n0 -> n2, n1 -> n2, n3 -> n2 in phases 0, 1, 2 share s1 -> n2, the first two s0 -> s1
    phase, src, dst = np.array([0, 1, 2]), np.array([0, 1, 3]), np.array([2, 2, 2])
    none = tuple(np.zeros(0, np.int64) for _ in range(4))
    with pytest.raises(VerificationError, match="^insufficient: n0->n2 \\(phase 0\\) is not "):
        verify_sync(topo, phase, src, dst, "receiver", "all", 1, none)
    # n2's receive of phase 0 releases n1's send of phase 1, its receive of phase 1 n3's
    syncs = tuple(np.array(v) for v in ([2, 2], [0, 1], [1, 3], [1, 2]))
    proof = verify_sync(topo, phase, src, dst, "receiver", "all", 1, syncs)
    assert proof == SyncProof(required_pairs=3, syncs=2)


# ---- verify_sync with capacities and windows: the edge, its direction and capacity -------------


@pytest.mark.parametrize("name", ["sender-all", "receiver-all"])
def test_capacity_insufficiency_names_the_edge_both_ways(name):
    arrays, spec, syncs = _plan(TRUNK, name, phases=schedule_phases)
    messages = set()
    for i in range(len(syncs)):
        try:
            _sync(TRUNK, arrays, spec, np.delete(syncs, i, axis=0))
        except VerificationError as e:
            messages.add(str(e))
    for edge in ("s0->s1", "s1->s0"):
        assert (
            f"insufficient: 3 messages on directed edge {edge} can be in flight at once (none "
            "ordered before another), its capacity is 2"
        ) in messages
    with pytest.raises(VerificationError) as info:
        _sync(TRUNK, arrays, spec, syncs[:0], window=2)
    assert str(info.value).endswith(" x a window of 2 phases")
    if name == "sender-all":  # no sync at all: the trunk's five messages of two phases
        assert str(info.value) == (
            "insufficient: 5 messages on directed edge s1->s0 can be in flight at once (none "
            "ordered before another), its capacity is 2 x a window of 2 phases"
        )
    proof = _sync(TRUNK, arrays, spec, syncs, window=1)
    assert proof.window == 1


def test_window_proof_carries_its_window():
    topo = figure1()
    arrays, spec, _ = _plan(topo, "sender-all")
    none = np.zeros((0, 4), np.int64)
    # every phase's messages at once, a window of all the phases: never more than ... in flight
    n_phases = int(arrays[0].max()) + 1
    proof = _sync(topo, arrays, spec, none, minimal=False, window=n_phases * 10)
    assert proof.window == n_phases * 10


# ---- verify_vschedule: each check at its boundary, word for word -------------------------------

V_TOPO = make_topology([], [0, 0, 0])  # one switch, n0 n1 n2
V_PATTERN = np.array([[0, 5, 6], [7, 0, 8], [9, 10, 0]])


def v_schedule(**changes):
    """Two contention-free phases of whole messages: 0->1, 1->2, 2->0, then 0->2, 1->0, 2->1."""
    base = dict(
        phase=np.array([0, 0, 0, 1, 1, 1]),
        src=np.array([0, 1, 2, 0, 1, 2]),
        dst=np.array([1, 2, 0, 2, 0, 1]),
        offset=np.zeros(6, dtype=np.int64),
        length=np.array([5, 8, 9, 6, 7, 10]),
    )
    return SimpleNamespace(**{**base, **changes})


def v_error(schedule, pattern=V_PATTERN) -> str:
    with pytest.raises(VerificationError) as info:
        verify_vschedule(V_TOPO, pattern, schedule)
    return str(info.value)


def test_vschedule_accepted_with_its_numbers():
    proof = verify_vschedule(V_TOPO, V_PATTERN, v_schedule())
    bw = 12.5e6
    assert proof.cost == pytest.approx((9 + 10) / bw, rel=1e-12)  # the phases' busiest links
    assert proof.bound == pytest.approx(19 / bw, rel=1e-12)  # n2's uplink: 9 + 10 bytes
    assert proof == VProof(3, 6, 6, 2, 0, proof.cost, proof.bound)
    assert proof.summary("v") == (
        "verified v: 6 messages delivered exactly once in 6 pieces; 2 phases, contention-free; "
        "cost 0.002 ms >= bound 0.002 ms (cost/bound 1.0000)"
    )
    assert VProof(3, 6, 7, 2, 1, 2e-3, 1e-3).summary("w") == (
        "verified w: 6 messages delivered exactly once in 7 pieces; 2 phases, contention-free "
        "except the small-message phase (contention allowed there); cost 2.000 ms >= bound "
        "1.000 ms (cost/bound 2.0000)"
    )
    assert VProof(3, 0, 0, 0, 0, 0.0, 0.0).ratio == 1.0


def test_vschedule_shapes_and_ranges():
    assert v_error(v_schedule(), V_PATTERN[:2, :2]) == "pattern is (2, 2), expected 3x3"
    short = v_schedule(src=np.array([0, 1, 2, 0, 1]))
    assert v_error(short) == "schedule arrays differ in length"
    for field, value in (("phase", -1), ("src", -1), ("dst", -1), ("src", 3), ("dst", 3)):
        bad = v_schedule()
        getattr(bad, field)[4] = value
        assert v_error(bad) == "schedule has a phase below 0 or a rank outside 0..N-1", field


def test_vschedule_piece_bounds():
    """A piece of length 0 or below, or at a negative offset, named by its own numbers; pieces of
    length 1 at offset 0 before it are fine."""
    pattern = V_PATTERN.copy()
    pattern[0, 1] = 1
    for length, offset in ((0, 0), (-2, 0), (3, -1)):
        ln = np.array([1, 8, 9, 6, 7, length])
        off = np.array([0, 0, 0, 0, 0, offset])
        message = v_error(v_schedule(length=ln, offset=off), pattern)
        assert message == f"piece n2->n1 has offset {offset} length {length}"


def test_vschedule_tiling_words():
    diag = v_schedule(dst=np.array([1, 2, 0, 2, 0, 2]))
    assert v_error(diag) == "piece n2->n2 sends to itself"
    # n0->n1 in two pieces: [0, 2) and [3, 5): a gap; [0, 3) and [2, 5): an overlap
    two = dict(phase=np.r_[np.arange(6) // 3, 2], src=np.r_[v_schedule().src, 0],
               dst=np.r_[v_schedule().dst, 1])  # fmt: skip
    gap = v_schedule(**two, offset=np.array([0, 0, 0, 0, 0, 0, 3]),
                     length=np.array([2, 8, 9, 6, 7, 10, 2]))  # fmt: skip
    assert v_error(gap) == "n0->n1: gap (bytes never sent) between [0, 2) and piece at 3"
    over = v_schedule(**two, offset=np.array([0, 0, 0, 0, 0, 0, 2]),
                      length=np.array([3, 8, 9, 6, 7, 10, 3]))  # fmt: skip
    assert v_error(over) == "n0->n1: overlap (a byte sent twice) between [0, 3) and piece at 2"
    late = v_schedule(offset=np.array([0, 0, 0, 0, 0, 1]), length=np.array([5, 8, 9, 6, 7, 9]))
    assert v_error(late) == "n2->n1: bytes [0, 1) never sent"
    short = v_schedule(length=np.array([5, 8, 9, 6, 7, 9]))
    assert v_error(short) == "n2->n1: 9 bytes delivered, pattern has 10"
    extra = V_PATTERN.copy()
    extra[1, 0] = 0  # the schedule still sends n1->n0
    assert v_error(v_schedule(), extra) == "n1->n0: 7 bytes delivered, pattern has 0"


def test_vschedule_small_phase_rules():
    together = dict(phase=np.zeros(6, dtype=np.int64))
    clash = v_error(v_schedule(**together))
    assert clash == "contention in phase 0: n0->n1 and n0->n2 both use directed edge n0->s0"
    ok = v_schedule(**together, small=np.array([True]), threshold=11)
    assert verify_vschedule(V_TOPO, V_PATTERN, ok).small_phases == 1
    # a marking longer than the phases is cut; one shorter is padded with False
    longer = v_schedule(**together, small=np.array([True, False, False]), threshold=11)
    assert verify_vschedule(V_TOPO, V_PATTERN, longer).small_phases == 1
    assert verify_vschedule(V_TOPO, V_PATTERN, v_schedule(small=np.array([True]),
                            threshold=11)).small_phases == 1  # fmt: skip
    two = v_schedule(small=np.array([True, True]), threshold=11)
    assert v_error(two) == "2 phases are marked small; at most one may be"
    at = v_schedule(**together, small=np.array([True]), threshold=10)  # 10 bytes: not below
    assert v_error(at) == (
        "small-message phase 0 holds n2->n1 (10 bytes at offset 0), not a whole message below "
        "the threshold 10"
    )
    split = v_schedule(phase=np.zeros(7, np.int64), src=np.r_[v_schedule().src, 2],
                       dst=np.r_[v_schedule().dst, 1], offset=np.array([0, 0, 0, 0, 0, 0, 4]),
                       length=np.array([5, 8, 9, 6, 7, 4, 6]), small=np.array([True]),
                       threshold=100)  # fmt: skip
    assert v_error(split) == (
        "small-message phase 0 holds n2->n1 (4 bytes at offset 0), not a whole message below "
        "the threshold 100"
    )


def test_vschedule_claimed_cost_tolerance():
    cost = verify_vschedule(V_TOPO, V_PATTERN, v_schedule()).cost
    verify_vschedule(V_TOPO, V_PATTERN, v_schedule(cost=cost * (1 + 5e-10)))
    message = v_error(v_schedule(cost=cost * (1 + 3e-9)))
    assert message.startswith("schedule claims cost ") and message.endswith(
        f"s, recomputed {cost:.9g} s"
    )
    assert v_error(v_schedule(cost=0.5 * cost)) == (
        f"schedule claims cost {0.5 * cost:.9g} s, recomputed {cost:.9g} s"
    )
