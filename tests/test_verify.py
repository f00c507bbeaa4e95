"""The verifier rejects broken schedules (mutation tests) and accepts correct ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trees import figure1, make_topology, switch_trees

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.core.errors import VerificationError
from aapcgen.verify.alltoall import verify_schedule


def arrays(topo):
    s = build_phases(analyze(topo))
    return s.phase.astype(np.int64), s.src.astype(np.int64), s.dst.astype(np.int64)


def test_accepts_figure1():
    proof = verify_schedule(figure1(), *arrays(figure1()))
    assert (proof.n_messages, proof.n_phases, proof.lower_bound) == (20, 6, 6)
    assert "optimal" in proof.summary("fig1")


def test_rejects_swapped_message():
    phase, src, dst = arrays(figure1())
    src[3], dst[3] = dst[3], src[3]
    with pytest.raises(VerificationError, match="missing|sent 2 times"):
        verify_schedule(figure1(), phase, src, dst)


def test_rejects_dropped_message():
    phase, src, dst = arrays(figure1())
    with pytest.raises(VerificationError, match="missing"):
        verify_schedule(figure1(), phase[1:], src[1:], dst[1:])


def test_rejects_duplicated_message():
    phase, src, dst = arrays(figure1())
    dup = lambda a: np.append(a, a[0])  # noqa: E731
    with pytest.raises(VerificationError, match="sent 2 times"):
        verify_schedule(figure1(), np.append(phase, 5), dup(src), dup(dst))


def test_rejects_contending_message():
    phase, src, dst = arrays(figure1())
    # n0->n3 (phase 0) moved into phase 1, where n1->n4 also crosses s2->s3->s5
    e = int(np.flatnonzero((src == 0) & (dst == 3))[0])
    phase[e] = 1
    with pytest.raises(VerificationError, match="contention in phase 1: .* directed edge"):
        verify_schedule(figure1(), phase, src, dst)


def test_rejects_extra_phase():
    phase, src, dst = arrays(figure1())
    phase[0] = 6  # still complete and contention-free, but 7 phases > lower bound 6
    with pytest.raises(VerificationError, match="7 phases, but the lower bound .* is 6"):
        verify_schedule(figure1(), phase, src, dst)


def test_rejects_self_message_and_bad_rank():
    phase, src, dst = arrays(figure1())
    dst[0] = src[0]
    with pytest.raises(VerificationError, match="to itself"):
        verify_schedule(figure1(), phase, src, dst)
    dst[0] = 99
    with pytest.raises(VerificationError, match="outside"):
        verify_schedule(figure1(), phase, src, dst)


def test_shared_port_on_one_switch_is_contention():
    topo = make_topology([], [0, 0, 0])
    # n0->n1 and n2->n1 in one phase share the directed edge s0->n1
    phase = np.array([0, 0, 1, 1, 2, 2])
    src = np.array([0, 2, 1, 0, 1, 2])
    dst = np.array([1, 1, 0, 2, 2, 0])
    with pytest.raises(VerificationError, match="s0->n1"):
        verify_schedule(topo, phase, src, dst)


@settings(max_examples=100, deadline=None)
@given(
    switch_trees(max_machines=60),
    st.sampled_from(["swap", "drop", "duplicate", "contend"]),
    st.randoms(),
)
def test_random_mutations_rejected(topo, kind, rnd):
    phase, src, dst = arrays(topo)
    e = rnd.randrange(len(phase))
    if kind == "swap":
        src[e], dst[e] = dst[e], src[e]
    elif kind == "drop":
        phase, src, dst = (np.delete(a, e) for a in (phase, src, dst))
    elif kind == "duplicate":
        phase, src, dst = (np.append(a, a[e]) for a in (phase, src, dst))
    else:  # move a message into a phase where its source already sends: its first edge contends
        others = np.flatnonzero((src == src[e]) & (phase != phase[e]))
        phase[e] = phase[rnd.choice(list(others))]
    with pytest.raises(VerificationError):
        verify_schedule(topo, phase, src, dst)
