"""The verifiers' remaining corners, pinned: the tree they hang, the capacities they read, the
argument checks of verify_schedule, a one-machine job, grouping by block in the sync check, the
Alltoallv checker's counts, and the log-round checker's order, replay, loads and words. Each test
kills mutants that `make mutate` found alive (docs/scheduling.md "Mutation testing"); the ones
judged equivalent are listed with their reasons in tests/mutation-equivalent.md."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from trees import figure1, make_topology

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.core.errors import VerificationError
from aapcgen.core.model import Link
from aapcgen.verify.alltoall import (
    Proof,
    capacities,
    verify_hierarchical,
    verify_schedule,
    verify_sync,
)
from aapcgen.verify.alltoallv import verify_vschedule
from aapcgen.verify.loground import (
    LogroundProof,
    check_order,
    misdelivered,
    replay,
    round_loads,
    verify_loground,
)
from aapcgen.verify.tree import ancestors, hang_tree

BW = 12.5e6  # the trees' machine links (100 Mbit/s)

# ---- the tree ---------------------------------------------------------------------------------


def test_hang_tree_and_ancestors_of_figure1_exactly():
    """Seed 002's Figure 1 (n0@s0, n1@s4, n2@s3, n3 n4@s5; s1<-s0, s2<-s1, s3<-s2, s4<-s0,
    s5<-s3), hung from s0: every parent, depth and subtree size, and every machine's ancestor
    at every depth, as integer arrays (node ids index other arrays)."""
    tree = hang_tree(figure1())
    assert tree.names == ["n0", "n1", "n2", "n3", "n4", "s0", "s1", "s2", "s3", "s4", "s5"]
    assert tree.parent.tolist() == [5, 9, 8, 10, 10, -1, 5, 6, 7, 5, 8]
    assert tree.depth.tolist() == [1, 2, 4, 5, 5, 0, 1, 2, 3, 1, 4]
    assert tree.below.tolist() == [1, 1, 1, 1, 1, 5, 3, 3, 3, 1, 2]
    anc = ancestors(tree, 5)
    assert anc.tolist() == [
        [5, 5, 5, 5, 5],
        [0, 9, 6, 6, 6],
        [-1, 1, 7, 7, 7],
        [-1, -1, 8, 8, 8],
        [-1, -1, 2, 10, 10],
        [-1, -1, -1, 3, 4],
    ]
    for a in (tree.parent, tree.depth, tree.below, anc):
        assert a.dtype == np.int64


def test_a_switch_hanging_from_nothing_is_named():
    topo = replace(make_topology([0], [0, 1]), switches=("s0", "s1", "s9"))
    with pytest.raises(VerificationError, match=r"^<t>: topology is not connected$"):
        hang_tree(topo)


# ---- capacities: the child side of each link, the smaller side's machines ----------------------


@pytest.mark.parametrize(
    ("machine_switch", "link", "expected"),
    [
        # s1 (3 machines) below s0 (2), the link written child first: the s0 side binds
        ([0, 0, 1, 1, 1], Link("s1", "s0", 10 * BW), [1, 1, 1, 1, 1, 0, 2]),
        # s1 (2 machines) below s0 (3), parent first: the s1 side binds
        ([0, 0, 0, 1, 1], Link("s0", "s1", 10 * BW), [1, 1, 1, 1, 1, 0, 2]),
        # three times as fast, 3 + 3: the bandwidth binds
        ([0, 0, 0, 1, 1, 1], Link("s1", "s0", 3 * BW), [1, 1, 1, 1, 1, 1, 0, 3]),
    ],
    ids=["other-side", "own-side", "bandwidth"],
)
def test_capacities_exactly(machine_switch, link, expected):
    topo = replace(make_topology([0], machine_switch), links=(link,))
    assert capacities(topo, hang_tree(topo)).tolist() == expected


# ---- verify_schedule's arguments and a one-machine job -----------------------------------------

PAIR = make_topology([0, 0], [1, 1, 2, 2])
OUTSIDE = "schedule has a phase below 0 or a rank outside 0..N-1"


@pytest.mark.parametrize(
    ("phase", "src", "dst"),
    [([0], [0], [4]), ([0], [4], [0]), ([-1], [0], [1]), ([0, 0], [0, -1], [1, 0])],
    ids=["dst-is-n", "src-is-n", "phase-only", "src-negative"],
)
def test_schedule_arrays_out_of_range(phase, src, dst):
    with pytest.raises(VerificationError) as info:
        verify_schedule(PAIR, np.array(phase), np.array(src), np.array(dst))
    assert str(info.value) == OUTSIDE


def test_a_message_to_itself_is_named_by_its_numbers():
    with pytest.raises(VerificationError) as info:
        verify_schedule(PAIR, np.array([0, 3]), np.array([0, 2]), np.array([1, 2]))
    assert str(info.value) == "message 2->2 in phase 3 sends to itself"


def test_a_one_machine_job_needs_no_message():
    """A communicator on one machine: nothing crosses a link, 0 phases meet the bound 0."""
    one = make_topology([], [0])
    empty = np.zeros(0, np.int64)
    proof = verify_schedule(one, empty, empty, empty)
    assert proof == Proof(1, 0, 0, 0, ("n0-s0",), 2, 1)
    assert proof.optimal
    two_ranks = replace(one, ranks_per_machine=2)
    assert verify_hierarchical(two_ranks, empty, empty, empty) == (
        "hierarchical (2 ranks per machine, 2 ranks): every one of the 2 rank pairs delivered "
        "exactly once (2 inside machines); 0 machine-level phases of 4-block aggregates"
    )


def test_a_uniform_schedule_with_a_phase_more_than_the_bound():
    """Figure 1's optimal phases with one message moved to a phase of its own: still complete
    and contention-free, and refused as one phase over the bound."""
    sched = build_phases(analyze(figure1()))
    phase, src, dst = (a.astype(np.int64) for a in (sched.phase, sched.src, sched.dst))
    bound = verify_schedule(figure1(), phase, src, dst).lower_bound
    late = phase.copy()
    late[0] = bound
    with pytest.raises(VerificationError) as info:
        verify_schedule(figure1(), late, src, dst)
    assert str(info.value) == (
        f"{bound + 1} phases, but the lower bound (largest link load) is {bound}"
    )


# ---- verify_sync: capacity groups are blocks of phases -----------------------------------------

TRUNK = replace(make_topology([0], [0, 0, 0, 1, 1, 1]), links=(Link("s0", "s1", 2 * BW),))


def test_within_scope_groups_a_blocks_phases_together():
    """Three messages up the capacity-2 trunk s1->s0 in phases 4, 4, 5 of the second block of
    3 phases (none in its first phase), different senders and receivers, no sync: all three can
    be in flight at once."""
    phase, src, dst = np.array([4, 4, 5]), np.array([3, 4, 5]), np.array([0, 1, 2])
    none = tuple(np.zeros(0, np.int64) for _ in range(4))
    with pytest.raises(VerificationError) as info:
        verify_sync(TRUNK, phase, src, dst, "sender", "within", 3, none)
    assert str(info.value) == (
        "insufficient: 3 messages on directed edge s1->s0 can be in flight at once (none "
        "ordered before another), its capacity is 2"
    )
    # blocks of one phase: at most two messages in a block, as many as the trunk carries
    assert verify_sync(TRUNK, phase, src, dst, "sender", "within", 1, none).syncs == 0


# ---- verify_vschedule: counts ------------------------------------------------------------------

V_TOPO = make_topology([], [0, 0, 0])


def test_vschedule_counts_one_byte_messages_and_nothing_at_all():
    pattern = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 0]])
    one = SimpleNamespace(
        phase=np.array([0, 0]),
        src=np.array([0, 2]),
        dst=np.array([1, 0]),
        offset=np.zeros(2, np.int64),
        length=np.array([1, 2]),
    )
    proof = verify_vschedule(V_TOPO, pattern, one)
    assert (proof.n_messages, proof.n_pieces, proof.n_phases) == (2, 2, 1)
    empty = SimpleNamespace(**{k: np.zeros(0, np.int64) for k in vars(one)})
    nothing = verify_vschedule(V_TOPO, np.zeros((3, 3), np.int64), empty)
    assert (nothing.n_messages, nothing.n_pieces, nothing.n_phases, nothing.cost) == (0, 0, 0, 0)


def test_vschedule_first_pair_starting_late():
    """The first pair in the checker's order (n0->n1) starting at byte 1."""
    pattern = np.array([[0, 5, 0], [0, 0, 0], [0, 0, 0]])
    late = SimpleNamespace(
        phase=np.array([0]),
        src=np.array([0]),
        dst=np.array([1]),
        offset=np.array([1]),
        length=np.array([4]),
    )
    with pytest.raises(VerificationError) as info:
        verify_vschedule(V_TOPO, pattern, late)
    assert str(info.value) == "n0->n1: bytes [0, 1) never sent"


# ---- the log-round checker ---------------------------------------------------------------------


def test_order_on_a_subset_of_the_machines_and_a_long_bad_order():
    topo = make_topology([0, 0], [1, 1, 1, 1, 2, 2, 2, 2])
    check_order(topo, [0, 1, 4])  # machines 2, 3, 5, 6, 7 hold no member
    bad = list(range(8)) * 3 + [8]
    with pytest.raises(VerificationError) as info:
        check_order(topo, bad)
    assert str(info.value) == (f"loground order {bad[:20]}: not machines of the tree")


def test_replay_rounds_and_the_misdelivery_words():
    assert [replay(n) for n in (1, 2, 3, 4, 5, 9)] == [0, 1, 2, 2, 3, 4]
    n = 3
    want = np.array([[0 * n + 0, 2 * n + 0, 1 * n + 0], [1 * n + 1, 0 * n + 1, 2 * n + 1],
                     [2 * n + 2, 1 * n + 2, 0 * n + 2]])  # fmt: skip
    got = want.copy()
    got[1, 2] = 0 * n + 2  # member 1's slot 2 holds n0's block for n2
    assert misdelivered(got, want) == "loground: member 1 slot 2 ends with the block 0 -> 2"


# n0 holds two members, n1 and n2 one each, all on one switch; d = 1: n0->n0 (no link),
# n0->n1, n1->n2, n2->n0 (one message per machine link); d = 2: n0's two members send to n1 and
# n2 and receive from both: two messages on its link, capacity 1
ONE_SWITCH = make_topology([], [0, 0, 0])


def test_round_loads_on_a_machine_link_with_two_members():
    order = [0, 0, 1, 2]
    assert round_loads(ONE_SWITCH, order, 1) == (1, 1)
    assert round_loads(ONE_SWITCH, order, 2) == (2, 1)
    assert round_loads(ONE_SWITCH, [1, 1, 1], 1) == (0, 1)  # one machine: no link
    proof = verify_loground(ONE_SWITCH, order)
    assert proof == LogroundProof(4, 2, 8, ((1, 1, 1), (2, 2, 1)))
    assert proof.summary("j") == (
        "j: log-round exchange of 4 members in tree order: every block delivered exactly once "
        "in 2 rounds (8 messages); rounds sharing a link beyond its capacity: d=2: 2 on a link "
        "of capacity 1"
    )


def test_round_loads_against_a_trunks_capacity():
    """4 + 4 machines (machine 0 below the trunk), the trunk twice (then four times) as fast as
    the machines: at distance 4 every member crosses it, 4 messages each way against a capacity
    of 2 (then 4); a round of distance 1 puts one message each way on it."""
    base = make_topology([0], [1, 1, 1, 1, 0, 0, 0, 0], bandwidth=1e9 / 8)
    order = list(range(8))
    for ratio, within in ((2, False), (4, True)):
        topo = replace(base, links=(Link("s0", "s1", ratio * 1e9 / 8),))
        assert round_loads(topo, order, 4) == (4, ratio)
        assert round_loads(topo, order, 1) == (1, 1)  # machine links: 1 each, for 1
        proof = verify_loground(topo, order)
        # distance 2: 2 on the trunk; for capacity 4 the machine links (1 for 1) load more
        second = (2, 2, 2) if ratio == 2 else (2, 1, 1)
        assert proof.busiest == ((1, 1, 1), second, (4, 4, ratio))
        assert ("no round shares a link beyond its capacity" in proof.summary("t")) == within
    slow = replace(base, links=(Link("s0", "s1", 0.5e9 / 8),))  # slower than the machines
    assert round_loads(slow, order, 4) == (4, 1)


def test_log_round_summaries_without_and_with_two_shared_rounds():
    assert LogroundProof(2, 1, 2, ((1, 1, 1),)).summary("p") == (
        "p: log-round exchange of 2 members in tree order: every block delivered exactly once "
        "in 1 rounds (2 messages); no round shares a link beyond its capacity"
    )
    assert (
        LogroundProof(4, 2, 8, ((1, 2, 1), (2, 3, 2)))
        .summary("q")
        .endswith(
            "rounds sharing a link beyond its capacity: d=1: 2 on a link of capacity 1, d=2: 3 on a "
            "link of capacity 2"
        )
    )
