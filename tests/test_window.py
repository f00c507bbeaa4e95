"""Windowed variants (``*-w<w>``): a rank keeps up to w phases of sends in flight, and the syncs
keep at most w messages per link lane in flight. Planned by aapcgen/alltoall/sync.py, proved by
the independent checker (aapcgen/verify/alltoall.py) under the windowed program order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trees import figure1, make_topology, switch_trees

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import MAX_WINDOW, split_label, split_window, variant_spec
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.core.topology import load_topology
from aapcgen.tune.decide import simplicity
from aapcgen.tune.render import spec_of
from aapcgen.verify.alltoall import verify_sync

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"


def plan(topo, label):
    tree = analyze(topo)
    sched = build_phases(tree)
    spec = variant_spec(label)
    return sched, spec, plan_sync(tree, sched, spec)


def prove(topo, sched, spec, syncs, window, minimal=True):
    return verify_sync(
        topo,
        sched.phase,
        sched.src,
        sched.dst,
        spec.kind,
        spec.scope,
        spec.block_size,
        syncs,
        minimal=minimal,
        window=window,
    )


def syncs_of(p):
    return (p.frm, p.trigger, p.to, p.target)


def test_labels_round_trip_and_bad_windows_are_one_line_errors():
    spec = variant_spec("receiver-all-w4")
    assert (spec.name, spec.window, spec.label) == ("receiver-all", 4, "receiver-all-w4")
    assert variant_spec("sender-all-w1").label == "sender-all"  # a window of 1 is the plain one
    assert split_window("no-sync-w2") == ("no-sync", 2)
    assert split_label("receiver-all-w4") == ("receiver-all-w4", None)
    with pytest.raises(InputError, match="window must be 1 to 4096"):
        variant_spec("receiver-all-w0")
    with pytest.raises(InputError, match="window must be 1 to 4096"):
        variant_spec("receiver-all-w4097")
    with pytest.raises(InputError, match="unknown variant 'barrier-all-w2'"):
        variant_spec("barrier-all-w2")  # barriers and partial variants have no window
    # tune's tie-break: the plain variant before its windows, smaller windows first
    assert (
        simplicity("receiver-all") < simplicity("receiver-all-w2") < simplicity("receiver-all-w4")
    )
    # a tuned routine renders a windowed winner from its label
    assert spec_of("sender-all-w8") == variant_spec("sender-all-w8")
    assert spec_of("sender-partial-4").block_size == 4


@pytest.mark.parametrize("name", ["paper-fig1", "two-switch-4-4", "chain-4x4", "fat-4-4"])
@pytest.mark.parametrize("kind", ["sender", "receiver"])
@pytest.mark.parametrize("window", [2, 3, 4])
def test_windowed_syncs_are_proved_for_their_window_and_not_for_a_smaller_one(name, kind, window):
    topo = load_topology(TOPOLOGIES / f"{name}.yaml")
    sched, spec, p = plan(topo, f"{kind}-all-w{window}")
    proof = prove(topo, sched, spec, syncs_of(p), window)
    assert proof.syncs == p.counts.after_removal
    # every message w places later on a lane waits, so w - 1 phases of slack are too few
    with pytest.raises(VerificationError, match="insufficient"):
        prove(topo, sched, spec, syncs_of(p), window - 1, minimal=False)


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_dropping_each_windowed_sync_is_caught_somewhere(kind):
    """Minimality holds in the checker's sense (no sync implied by the others); a window lets
    some single syncs go unnoticed by the in-flight bound, but most are needed for it."""
    topo = make_topology([0, 1, 2], [i // 4 for i in range(16)])  # chain 4 x 4
    sched, spec, p = plan(topo, f"{kind}-all-w2")
    caught = 0
    for k in range(0, len(p.frm), 7):
        keep = np.ones(len(p.frm), dtype=bool)
        keep[k] = False
        try:
            prove(topo, sched, spec, tuple(a[keep] for a in syncs_of(p)), 2)
        except VerificationError as e:
            assert "insufficient" in str(e)
            caught += 1
    assert caught >= len(range(0, len(p.frm), 7)) // 2


def test_a_sync_that_does_not_point_forward_is_rejected():
    topo = figure1()
    sched, spec, p = plan(topo, "receiver-all-w2")
    frm, trig, to, tgt = (a.copy() for a in syncs_of(p))
    tgt[0] = trig[0]  # same phase: a wait that could close a cycle
    with pytest.raises(VerificationError, match="later phase"):
        prove(topo, sched, spec, (frm, trig, to, tgt), 2, minimal=False)


@settings(max_examples=30, deadline=None)
@given(
    switch_trees(max_machines=16),
    st.sampled_from(["sender-all", "receiver-all"]),
    st.integers(1, 4),
)
def test_random_trees_windowed_sufficient_and_minimal(topo, name, window):
    sched, spec, p = plan(topo, f"{name}-w{window}")
    proof = prove(topo, sched, spec, syncs_of(p), window)
    c = p.counts
    assert c.chain >= c.after_program_order >= c.after_removal == proof.syncs
    if window == 1:  # the plain variant, unchanged
        plain = plan_sync(analyze(topo), sched, variant_spec(name))
        assert np.array_equal(plain.frm, p.frm) and np.array_equal(plain.target, p.target)


def test_the_largest_window_is_one_fact_in_python_and_c():
    header = (TOPOLOGIES.parent / "runtime_c/common/aapc_phased.h").read_text()
    assert f"#define AAPC_MAX_WINDOW {MAX_WINDOW}\n" in header
