"""Synchronisation variants: sufficiency and minimality, checked independently and by networkx."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trees import figure1, make_topology, switch_trees

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import (
    BLOCKED,
    DEFAULT_VARIANT,
    RUNTIME_SYNC_C,
    VARIANTS,
    WINDOWED,
    nonblocking_sync,
    variant_spec,
)
from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.verify.alltoall import verify_sync

PAIRWISE = [
    ("sender-all", None),
    ("receiver-all", None),
    ("sender-partial", 2),
    ("receiver-partial", 3),
    ("barrier-partial-sender", 2),
    ("barrier-partial-receiver", 4),
]


def check(topo, name, bs, phases=build_phases):
    """Plan a variant's syncs on ``phases(tree)`` and prove them with the independent checker."""
    tree = analyze(topo)
    sched = phases(tree)
    spec = variant_spec(name, bs)
    plan = plan_sync(tree, sched, spec)
    syncs = (plan.frm, plan.trigger, plan.to, plan.target)
    proof = verify_sync(
        topo, sched.phase, sched.src, sched.dst, spec.kind, spec.scope, spec.block_size, syncs
    )
    return sched, spec, plan, proof


def networkx_reference(topo, sched, spec):
    """The paper's construction: every contending pair as an edge, plus program order, then
    networkx.transitive_reduction; the syncs are the remaining non-program-order edges."""
    ph, src, dst = sched.phase.tolist(), sched.src.tolist(), sched.dst.tolist()
    tree = analyze(topo)
    from aapcgen.alltoall.tree import hang, path_edges

    msg, edge = path_edges(
        hang(tree.topology), sched.src.astype(np.int64), sched.dst.astype(np.int64)
    )
    uses = {}
    for m, e in zip(msg.tolist(), edge.tolist()):
        uses.setdefault(e, []).append(m)
    g = nx.DiGraph()
    g.add_nodes_from(("S", m) for m in range(len(ph)))
    by_src = sorted(range(len(ph)), key=lambda m: (src[m], ph[m]))
    for a, b in zip(by_src, by_src[1:]):
        if src[a] == src[b]:
            g.add_edge(("S", a), ("S", b))
    if spec.kind == "receiver":
        for m in range(len(ph)):
            g.add_edge(("S", m), ("R", m))
            later = [x for x in by_src if src[x] == dst[m] and ph[x] > ph[m]]
            if later:
                g.add_edge(("R", m), ("S", later[0]))
    program_order = set(g.edges())
    fire = "S" if spec.kind == "sender" else "R"
    bs = spec.block_size
    for ms in uses.values():
        for a, b in itertools.combinations(sorted(ms, key=lambda m: ph[m]), 2):
            same = ph[a] // bs == ph[b] // bs
            if (
                spec.scope == "all"
                or (spec.scope == "cross" and not same)
                or (spec.scope == "within" and same)
            ):
                g.add_edge((fire, a), ("S", b))
    reduced = nx.transitive_reduction(g)
    frm = src if spec.kind == "sender" else dst
    return {
        (frm[x[1]], ph[x[1]], src[y[1]], ph[y[1]])
        for x, y in reduced.edges()
        if (x, y) not in program_order and x[0] == fire and y[0] == "S"
    }


@pytest.mark.parametrize("name, bs", PAIRWISE)
def test_figure1_matches_networkx_transitive_reduction(name, bs):
    topo = figure1()
    sched, spec, plan, proof = check(topo, name, bs)
    got = set(zip(plan.frm.tolist(), plan.trigger.tolist(), plan.to.tolist(), plan.target.tolist()))
    assert got == networkx_reference(topo, sched, spec)
    assert proof.syncs == plan.counts.after_removal


@settings(max_examples=40, deadline=None)
@given(switch_trees(max_machines=10), st.sampled_from(PAIRWISE))
def test_random_small_trees_match_networkx(topo, variant):
    sched, spec, plan, _ = check(topo, *variant)
    got = set(zip(plan.frm.tolist(), plan.trigger.tolist(), plan.to.tolist(), plan.target.tolist()))
    assert got == networkx_reference(topo, sched, spec)


@settings(max_examples=40, deadline=None)
@given(switch_trees(max_machines=24), st.sampled_from(PAIRWISE))
def test_random_trees_sufficient_and_minimal(topo, variant):
    _, _, plan, proof = check(topo, *variant)
    c = plan.counts
    assert c.contending == proof.required_pairs  # counted independently on both sides
    assert c.chain >= c.after_program_order >= c.after_removal == proof.syncs


def test_dropping_a_sync_is_insufficient():
    topo = make_topology([0, 1, 2], [i // 4 for i in range(16)])  # chain 4 x 4
    sched, spec, plan, _ = check(topo, "sender-all", None)
    syncs = tuple(a[1:] for a in (plan.frm, plan.trigger, plan.to, plan.target))
    with pytest.raises(VerificationError, match="insufficient"):
        verify_sync(topo, sched.phase, sched.src, sched.dst, "sender", "all", 1, syncs)


def test_an_implied_sync_is_not_minimal():
    topo = make_topology([0, 1, 2], [i // 4 for i in range(16)])
    sched, spec, plan, _ = check(topo, "sender-all", None)
    # add the composition of two consecutive syncs a->b, b->c as a direct sync a->c
    k = next(
        k
        for k in range(len(plan.frm))
        for j in range(len(plan.frm))
        if plan.to[k] == plan.frm[j]
        and plan.target[k] == plan.trigger[j]
        and plan.frm[k] != plan.to[j]
    )
    j = next(
        j
        for j in range(len(plan.frm))
        if plan.to[k] == plan.frm[j] and plan.target[k] == plan.trigger[j]
    )
    extra = (plan.frm[k], plan.trigger[k], plan.to[j], plan.target[j])
    syncs = tuple(
        np.append(a, x) for a, x in zip((plan.frm, plan.trigger, plan.to, plan.target), extra)
    )
    with pytest.raises(VerificationError, match="not minimal|duplicated"):
        verify_sync(topo, sched.phase, sched.src, sched.dst, "sender", "all", 1, syncs)


def test_no_sync_variants_have_no_syncs_and_dummies_fill_idle_machines():
    topo = figure1()
    tree = analyze(topo)
    sched = build_phases(tree)
    for name in ("no-sync", "barrier-all"):
        assert len(plan_sync(tree, sched, variant_spec(name)).frm) == 0
    plan = plan_sync(tree, sched, variant_spec("dummy"))
    busy = {(p, m) for p, s, d in zip(sched.phase, sched.src, sched.dst) for m in (s, d)}
    dummies = list(zip(plan.dummy_phase.tolist(), plan.dummy_src.tolist(), plan.dummy_dst.tolist()))
    for p in range(sched.n_phases):
        for m in range(topo.n_machines):
            if (p, m) not in busy:  # idle: it takes part in a dummy of that phase
                assert any(dp == p and m in (ds, dd) for dp, ds, dd in dummies)
    for _, s, d in dummies:  # a dummy stays on one switch
        assert topo.machine_switch[s] == topo.machine_switch[d]


def test_variant_names_and_block_sizes():
    assert len(VARIANTS) == 10
    assert variant_spec("sender-partial", 4).label == "sender-partial-4"
    with pytest.raises(InputError, match="needs --block-size"):
        variant_spec("sender-partial")
    with pytest.raises(InputError, match="takes no --block-size"):
        variant_spec("sender-all", 2)
    with pytest.raises(InputError, match="unknown variant"):
        variant_spec("fast")


@pytest.mark.parametrize("name", ["sender-all", "receiver-partial", "dummy"])
def test_a_schedule_without_messages_needs_no_sync(name):
    # an Alltoallv pattern of zeros schedules no message: no sync and no crash
    from aapcgen.alltoall.phases import Schedule

    topo = make_topology([0, 0], [1, 1, 2, 2])
    none = np.zeros(0, dtype=np.int32)
    sched = Schedule(topo.n_machines, 0, none, none, none)
    plan = plan_sync(analyze(topo), sched, variant_spec(name, 2 if "partial" in name else None))
    assert len(plan.frm) == 0 and plan.counts.after_removal == 0


@pytest.mark.parametrize("name", VARIANTS)
def test_nonblocking_calls_keep_the_defaults_pairwise_syncs_and_drop_barriers(name):
    spec = variant_spec(name, 2 if name in BLOCKED else None)
    nb = variant_spec(nonblocking_sync(spec))
    assert nb.name in RUNTIME_SYNC_C and nb.barrier_every == 0 and not nb.dummy
    if spec.kind != "none":
        assert (nb.kind, nb.scope) == (spec.kind, "all")
    if spec.name in RUNTIME_SYNC_C and spec.barrier_every == 0:
        assert nb == spec  # its own, whatever its window (below)
    if name in WINDOWED:
        assert nonblocking_sync(variant_spec(f"{name}-w3")) == name
    if spec.kind == "none" and (spec.barrier_every or spec.dummy):
        assert nb.name == DEFAULT_VARIANT


@pytest.mark.parametrize(
    "label, block, sync",
    [("barrier-all", None, "AAPC_VSYNC_RECEIVER"), ("sender-partial", [2], "AAPC_VSYNC_SENDER")],
)
def test_a_library_with_barriers_runs_pairwise_syncs_in_its_nonblocking_calls(
    tmp_path, label, block, sync
):
    gen = tmp_path / "gen"
    generate(figure1(), variant_specs(label, block), gen)
    intercept = next(gen.glob("*_intercept.c")).read_text()
    calls = [ln for ln in intercept.splitlines() if "aapc_nbc_alltoall(&" in ln]
    assert len(calls) == 2 and all(f"_cluster, {sync}," in ln for ln in calls), calls
    prog = sync.removeprefix("AAPC_VSYNC_").lower()
    alltoallv = next(gen.glob("*_alltoallv.c")).read_text()
    assert f"_nbc_vprog = &prog_{prog}_all;" in alltoallv
