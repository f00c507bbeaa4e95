"""The per-call selection (runtime_c/cluster/aapc_cluster_shape.c, aapc_cluster_select.c) and
its fitted constants (aapcgen/tune/model.py).

The shape the C library reads at run time is checked against the Python pipeline's own view of
the same job (the job tree of aapcgen/alltoall/job.py, its link loads and capacity bound), on
random trees and placements; the choice against the costs it is made from; the fit against
calls the model itself generated.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cluster_c import TOPOS, placements
from trees import MBIT100, make_topology, star_of_subtrees, switch_trees, uniform_trees

from aapcgen.alltoall.capacity import capacity_model
from aapcgen.alltoall.cjob import (
    WAYS,
    Digits,
    Shape,
    choose_way,
    cluster_digits,
    default_model,
    inflight_window,
    job_phases,
    job_shape,
    library_only,
    machine_order,
    way_costs,
)
from aapcgen.alltoall.job import job_topology
from aapcgen.alltoall.tree import analyze
from aapcgen.codegen.cluster import COST_FIELDS
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.tune.model import Call, fit_model, nonnegative_fit, relative_errors
from aapcgen.verify.loground import (
    check_order,
    rank_digits,
    replay,
    replay_digits,
    tree_digits,
    verify_loground,
)


def python_shape(topo, rank_machine: list[int]) -> Shape:  # noqa: ANN001
    """The shape from the Python pipeline: the job tree's capacity bound (rank phases), the same
    for one rank per machine (machine phases), and the largest load / bandwidth of its links."""
    jt = analyze(job_topology(topo, rank_machine))
    machines = sorted(set(rank_machine), key=rank_machine.index)
    counts = [rank_machine.count(m) for m in machines]
    rank_phases = capacity_model(jt).lower_bound
    if len(machines) >= 2:
        machine_tree = analyze(job_topology(topo, machines))
        machine_phases, machine_load = capacity_model(machine_tree).lower_bound, machine_tree.load
    else:
        machine_phases = machine_load = 0
    bound = max(link.seconds_per_byte for link in jt.links)
    # one message per link and phase (MPI_Alltoallv's schedulers): seed 002's load, at the
    # slowest machine link's speed (or the topology's reference)
    bref = topo.reference_bandwidth or min(topo.machine_bandwidth[m] for m in machines)
    return Shape(
        len(rank_machine), len(machines), max(counts), int(min(counts) == max(counts)),
        float(rank_phases), float(machine_phases), bound, float(machine_load), float(jt.load),
        jt.load / bref,
        int(machine_phases >= machine_load),  # seed 002's phases stream (C adds its groups')
        topo.inflight or 65536.0,  # the windows' budget: the topology's, or the library's
    )  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(placements())
def test_c_shape_is_the_python_pipelines(case):
    topo, rank_machine = case
    c, py = job_shape(topo, rank_machine), python_shape(topo, rank_machine)
    assert dataclasses.astuple(c)[:6] == dataclasses.astuple(py)[:6]
    assert math.isclose(c.bound_s_per_byte, py.bound_s_per_byte, rel_tol=1e-12)
    assert c.machine_load == py.machine_load
    assert c.rank_load == py.rank_load
    assert math.isclose(c.unit_s_per_byte, py.unit_s_per_byte, rel_tol=1e-12)
    assert c.inflight == py.inflight


@pytest.mark.parametrize(
    "rank_machine",
    [[0, 1, 2, 3, 4, 5, 6, 7], [m for m in range(8) for _ in range(2)], [0, 0, 0, 1, 5, 5, 6]],
)
def test_rank_phases_are_what_the_scheduler_runs(rank_machine):
    """On the 4+4 tree (seed 002's phases are exact there) the phases the selection counts are
    the phases the run-time scheduler builds, per rank and per machine."""
    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, rank_machine)
    assert shape.rank_phases == job_phases(topo, rank_machine).n_phases
    machines = sorted(set(rank_machine), key=rank_machine.index)
    assert shape.machine_phases == job_phases(topo, machines).n_phases
    # 4+4, 100 Mbit/s: the trunk carries (ranks left) x (ranks right) blocks each way
    left = sum(1 for m in rank_machine if m < 4)
    assert shape.bound_s_per_byte == pytest.approx(left * (len(rank_machine) - left) / MBIT100)


def test_a_machine_link_faster_than_the_others_carries_several_messages():
    """Capacity: a 1 Gbit/s machine among 100 Mbit/s ones is a link of capacity 10 (at most the
    ranks on either side), as the capacity-aware scheduler counts it."""
    topo = make_topology([0], [0, 0, 1, 1])
    fast = list(topo.machine_bandwidth)
    fast[0] = 10 * MBIT100
    topo = dataclasses.replace(topo, machine_bandwidth=tuple(fast))
    rank_machine = [0, 0, 0, 1, 2, 3]
    c, py = job_shape(topo, rank_machine), python_shape(topo, rank_machine)
    assert dataclasses.replace(c, digits=py.digits, rank_digits=py.rank_digits) == py
    assert c.digits.radix == tree_digits(topo, [0, 1, 2, 3]) == (2, 2)


def shapes() -> st.SearchStrategy[Shape]:
    return st.builds(
        lambda n, r, bound, extra: Shape(
            n * r, n, r, 1, float(max(n * r - 1, extra)), float(max(n - 1, extra // (r * r))),
            bound, float(max(n - 1, extra // (r * r))), float(max(n * r - 1, extra)), bound, 1,
        ),
        st.integers(2, 64),
        st.integers(1, 16),
        st.floats(1e-9, 1e-3),
        st.integers(0, 4096),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("machines", "phases", "load", "streamed", "fits"),
    [(1024, 1000.0, 2000.0, 0, True), (1025, 1000.0, 2000.0, 0, False),
     (4096, 2e6, 2e6, 1, True), (4097, 2e6, 2e6, 1, False), (2048, 1e6, 1e6, 1, True),
     (4096, 45876.0, 1835008.0, 1, True), (1, 0.0, 0.0, 1, False)],
)  # fmt: skip
def test_the_leaders_take_4096_machines_where_they_stream_their_phases(
    machines, phases, load, streamed, fits
):
    """The aggregated ways take up to 1024 machines whose phases are computed whole (the
    general capacity-aware ones), up to 4096 where they stream (seed 002's, or the groups'
    construction: three-level-4096's file speeds); never one machine."""
    shape = Shape(machines * 16, machines, 16, 1, 1e9, phases, 1e-9, load, 1e9, 1e-9, streamed)
    assert ("leaders" in way_costs(default_model(), shape, 1 << 20)) == fits


@pytest.mark.parametrize(
    ("name", "machines", "streamed"),
    [("three-level-4096", 4096, 1), ("two-level-1024", 1024, 1), ("fat-4-4", 8, 0),
     ("chain-4x4", 16, 1)],
)  # fmt: skip
def test_the_shape_says_where_the_leaders_stream(name, machines, streamed):
    """machine_streamed: seed 002's phases (one link speed: chain-4x4), or faster root links
    that set the bound (aapc_cluster_groups.c: three-level-4096, two-level-1024); fat-4-4's
    uplinks carry as many machines as they have (C = N), which the construction does not take."""
    from aapcgen.core.topology import load_topology

    topo = load_topology(TOPOS / f"{name}.yaml")
    shape = job_shape(topo, [m for m in range(machines) for _ in range(2)])
    assert shape.machine_streamed == streamed


models = st.fixed_dictionaries(
    {k: st.floats(0.0, 0.5) if k == "guard" else st.floats(1e-10, 1e-2) for k in COST_FIELDS}
)


@settings(max_examples=300, deadline=None)
@given(shapes(), models, st.integers(0, 1 << 24))
def test_the_choice_is_the_cheapest_allowed_way(shape, model, block):
    costs = way_costs(model, shape, block)
    assert "library" in costs and "phases" in costs
    assert ("leaders" in costs) == (shape.max_per_machine > 1)
    chosen = choose_way(model, shape, block)
    costs["library"] *= 1 - model["guard"]  # ours must win by the guard
    assert costs[chosen] == min(costs.values())
    # ties go to the earlier way: the library first
    assert all(costs[w] > costs[chosen] for w in WAYS[: WAYS.index(chosen)] if w in costs)
    ours = choose_way(model, shape, block, allowed=("phases", "leaders", "loground"))
    assert ours != "library" and costs[ours] == min(v for k, v in costs.items() if k != "library")


def test_the_library_serves_small_blocks_and_our_phases_large_ones():
    """With the defaults on the emulated 4+4 tree: the library below the crossover, our phases
    above it, and the crossover where the model's two costs meet."""
    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, list(range(8)))
    m = default_model()
    assert choose_way(m, shape, 8) == "library"
    assert choose_way(m, shape, 1 << 20) != "library"
    lo, hi = 8, 1 << 20
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if choose_way(m, shape, mid) == "library" else (lo, mid)
    costs_lo, costs_hi = way_costs(m, shape, lo), way_costs(m, shape, hi)
    assert costs_lo["library"] <= min(costs_lo.values())
    assert costs_hi["library"] > min(costs_hi.values())


@settings(max_examples=300, deadline=None)
@given(
    message=st.floats(min_value=0, max_value=1e9),
    phases=st.integers(min_value=1, max_value=100_000),
    budget=st.sampled_from([0, 1, 1000, 65536, 1 << 24]),
)
def test_the_window_keeps_the_budget_and_covers_no_more_than_the_phases(message, phases, budget):
    """A power of two, at least 1 and at most 4096; its blocks fit the budget (64 KiB for 0)
    unless it is 1; and it is the largest such: doubling it would pass the budget, or already
    covers every phase, or is the executor's limit."""
    w = inflight_window(message, phases, budget)
    cap = budget or 65536
    assert 1 <= w <= 4096 and w & (w - 1) == 0
    assert w == 1 or (w * message <= cap and w // 2 < phases)
    assert 2 * w * message > cap or w >= phases or w == 4096


def test_small_blocks_cost_a_window_of_phases_not_one_per_phase():
    """The leaders' per-phase term counts windows: 2 ranks on each of 8 machines of the 4+4
    tree, 16 machine-level phases (the trunk carries 4 x 4 machine pairs); at 8 B per block the
    32-byte machine blocks fit one window of 16 phases, at 16 KiB (64 KiB machine blocks) each
    phase is a window of its own, at 2 KiB (8 KiB) two windows of 8."""
    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, [m for m in range(8) for _ in range(2)])
    unit = {k: 1.0 if k == "phase_alpha" else 0.0 for k in COST_FIELDS}
    assert shape.machine_phases == 16
    assert inflight_window(2 * 2 * 8, 16) == 16 and inflight_window(2 * 2 * 16384, 16) == 1
    assert way_costs(unit, shape, 8)["leaders"] == 1
    assert way_costs(unit, shape, 16384)["leaders"] == 16
    assert way_costs(unit, shape, 2048)["leaders"] == 2
    # the per-rank phases by one block: 64 phases (the trunk's 8 x 8 rank pairs)
    assert shape.rank_phases == 64
    assert way_costs(unit, shape, 8)["phases"] == 1  # one window of 64 phases
    assert way_costs(unit, shape, 4096)["phases"] == 4  # windows of 16 phases of 4 KiB
    assert way_costs(unit, shape, 65536)["phases"] == 64
    per_message = {k: 1.0 if k == "msg_alpha" else 0.0 for k in COST_FIELDS}
    assert way_costs(per_message, shape, 8)["phases"] == 64  # every message still costs
    assert way_costs(per_message, shape, 8)["leaders"] == 16


def test_the_topology_s_inflight_is_the_budget_the_model_prices():
    """The same job with `inflight: 16MiB` (a lossless fabric): 16 KiB blocks, whose leaders'
    64 KiB messages run a phase per window under the default budget, fit all 16 machine phases
    in one window; the per-rank phases' 64 phases of 64 KiB likewise; a call whose P - 1 blocks
    then fit carries its agreement (no agree_alpha); `inflight: 1` runs one phase at a time."""
    topo = star_of_subtrees([4, 4])
    placement = [m for m in range(8) for _ in range(2)]
    unit = {k: 1.0 if k == "phase_alpha" else 0.0 for k in COST_FIELDS}
    agree = {k: 1.0 if k == "agree_alpha" else 0.0 for k in COST_FIELDS}
    lossless = job_shape(dataclasses.replace(topo, inflight=float(1 << 24)), placement)
    shallow = job_shape(dataclasses.replace(topo, inflight=1.0), placement)
    assert lossless.inflight == 1 << 24 and shallow.inflight == 1
    assert way_costs(unit, job_shape(topo, placement), 16384)["leaders"] == 16
    assert way_costs(unit, lossless, 16384)["leaders"] == 1
    assert way_costs(unit, lossless, 65536)["phases"] == 1
    assert way_costs(agree, lossless, 65536)["phases"] == 0
    assert way_costs(agree, job_shape(topo, placement), 65536)["phases"] == 4  # lg 16
    assert way_costs(unit, shallow, 8)["leaders"] == 16
    assert way_costs(unit, shallow, 8)["phases"] == 64


def test_the_library_costs_bruck_rounds_up_to_256_bytes_then_a_message_per_peer():
    """MPICH's (and SimGrid's MPICH selector's) all-to-all: Bruck up to 256 B per block on 8 or
    more ranks, each block forwarded lg P / 2 times on average (lib_fwd_beta); above, P - 1
    messages per rank (lib_msg_alpha)."""
    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, [m for m in range(8) for _ in range(2)])  # P = 16
    s_b = shape.bound_s_per_byte
    fwd = {k: 1.0 if k == "lib_fwd_beta" else 0.0 for k in COST_FIELDS}
    per_peer = {k: 1.0 if k == "lib_msg_alpha" else 0.0 for k in COST_FIELDS}
    assert way_costs(fwd, shape, 256)["library"] == pytest.approx(s_b * 256 * 4 * 16 / 30)
    assert way_costs(fwd, shape, 257)["library"] == 0
    assert way_costs(per_peer, shape, 256)["library"] == 0
    assert way_costs(per_peer, shape, 257)["library"] == 15
    small = job_shape(topo, [0, 1, 2, 3])  # 4 ranks: no Bruck in MPICH
    assert way_costs(fwd, small, 64)["library"] == 0
    assert way_costs(per_peer, small, 64)["library"] == 3


def test_the_agreement_is_paid_by_every_way_of_ours_but_phases_in_one_window():
    """agree_alpha lg P: the argument agreement before our exchange, which the per-rank phases
    carry in their messages where they all fit one window (alltoall/aapc_alltoall_carried.c);
    the library pays none of it."""
    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, [m for m in range(8) for _ in range(2)])  # P = 16: lg P = 4
    unit = {k: 1.0 if k == "agree_alpha" else 0.0 for k in COST_FIELDS}
    small, large = way_costs(unit, shape, 8), way_costs(unit, shape, 65536)
    assert small["phases"] == 0 and large["phases"] == 4  # one window of 64 phases; 64 windows
    assert small["library"] == large["library"] == 0
    assert small["leaders"] == large["leaders"] == small["loground"] == 4


@settings(max_examples=100, deadline=None)
@given(shapes(), models, st.integers(1, 1 << 20))
def test_ours_must_win_by_the_guard(shape, model, block):
    """With guard g the library keeps a call unless a way of ours costs below (1 - g) times its
    cost: the same model without the guard may pick ours, never the other way round."""
    bare = {**model, "guard": 0.0}
    costs = way_costs(bare, shape, block)
    ours = min(t for w, t in costs.items() if w != "library")
    guarded = choose_way(model, shape, block)
    if ours >= costs["library"] * (1 - model["guard"]):
        assert guarded == "library"
    else:
        assert guarded == choose_way(bare, shape, block) != "library"


def point_of(shape: Shape, block: float, best: tuple[str, ...]) -> tuple:
    """A measured point of ``shape`` at ``block`` bytes where the ``best`` way(s) ran fastest."""
    return (shape.machines, shape.max_per_machine, shape.bound_s_per_byte, shape.inflight,
            float(block), best)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    shapes(),
    models,
    st.integers(1, 1 << 20),
    st.integers(1, 1 << 20),
    st.sets(st.sampled_from(WAYS), min_size=1),
    st.sets(st.sampled_from(WAYS), min_size=1),
    st.integers(1, 1 << 21),
    st.booleans(),
)
def test_a_measured_size_takes_its_fastest_way(shape, model, b1, b2, best1, best2, block, close):
    """At a measured size of a job's shape the choice is the model's among the way(s) measured
    fastest there, between two measured sizes at most a factor 2 apart among the fastest at
    either (none of them possible: the model's among all); farther apart, outside them, on
    another shape, for MPI_Alltoallv and without windows, the model's alone."""
    if close:  # the second size within 3x of the first, the call's near them
        b2 = b1 + b2 % (2 * b1 + 1)
        block = max(1, min(b1, b2) - 1 + block % (abs(b2 - b1) + 3))
    lo, hi = sorted((b1, b2))
    if lo == hi:
        best1 = best2 = best1 | best2
    points = (point_of(shape, lo, tuple(sorted(best1))), point_of(shape, hi, tuple(sorted(best2))))
    tuned = {**model, "points": points}
    best = best1 if block == lo else best2 if block == hi else best1 | best2  # at a size: its own
    free = [w for w in WAYS if w in way_costs(model, shape, 1.0) and w in best]
    near = lo <= block <= hi and (hi <= 2 * lo or block in (lo, hi))  # AAPC_POINTS_SPAN
    expect = choose_way(model, shape, block, free or WAYS) if near else None
    assert choose_way(tuned, shape, block) == (expect or choose_way(model, shape, block))
    if block in (lo, hi) and free:
        assert choose_way(tuned, shape, block) in best
    other = dataclasses.replace(shape, machines=shape.machines + 1)
    assert choose_way(tuned, other, block) == choose_way(model, other, block)
    for kw in ({"windows": False}, {"alltoallv": True}):
        assert choose_way(tuned, shape, block, **kw) == choose_way(model, shape, block, **kw)


def test_the_measured_points_are_the_fastest_way_s_and_need_the_library():
    """A point per shape and size where the library and one of ours were timed, with the way of
    least time (a way's least time counts; a tie keeps both); a size timed for the library alone
    makes no point."""
    from aapcgen.tune.model import measured_points

    shape = job_shape(star_of_subtrees([4, 4]), [m for m in range(8) for _ in range(2)])
    calls = [
        Call(shape, "library", 64, 2.0), Call(shape, "phases", 64, 3.0),
        Call(shape, "phases", 64, 1.0), Call(shape, "leaders", 64, 1.0),
        Call(shape, "loground", 64, 1.5), Call(shape, "library", 512, 1.0),
        Call(shape, "leaders", 4096, 1.0),
    ]  # fmt: skip
    assert measured_points(calls) == (point_of(shape, 64, ("phases", "leaders")),)
    lossless = dataclasses.replace(shape, inflight=float(1 << 24))
    more = calls + [Call(lossless, "library", 64, 1.0), Call(lossless, "phases", 64, 2.0)]
    assert measured_points(more)[1] == point_of(lossless, 64, ("library",))


def test_measured_points_go_into_the_model_file_and_the_generated_table(tmp_path):
    """fit_model keeps the points, write_model and read_model carry them, the cluster table
    holds them as aapc_way_point_t rows that compile, and a bad entry is a one-line error."""
    import shutil
    import subprocess

    from aapcgen.alltoall.selection import selection_lines
    from aapcgen.codegen.cluster import cluster_tables, render_cluster_c
    from aapcgen.tune.model import read_model, write_model

    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, list(range(8)))
    calls = [Call(shape, "library", b, 1e-3 * b) for b in (64, 4096)]
    calls += [Call(shape, "phases", b, 2e-3 * b if b == 64 else 5e-4 * b) for b in (64, 4096)]
    model = fit_model(calls)
    assert model["points"] == (
        point_of(shape, 64, ("library",)), point_of(shape, 4096, ("phases",)),
    )  # fmt: skip
    path = tmp_path / "model.json"
    write_model(path, model, calls, "test")
    assert read_model(str(path)) == model
    c = render_cluster_c(cluster_tables(topo, model), "aapc_x_cluster")
    assert "static const aapc_way_point_t aapc_x_cluster_points[2] = {" in c
    assert ", .n_points = 2, .points = aapc_x_cluster_points" in c
    src = tmp_path / "t.c"
    src.write_text('#include "aapc_cluster.h"\n#include <stddef.h>\n' + c)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc is not None
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
    subprocess.run([cc, *flags, "-Iruntime_c/cluster", str(src)], check=True)
    assert "2 measured points, 2 of this job's shape" in " ".join(selection_lines(topo, model))
    data = json.loads(path.read_text())
    data["model"]["points"][1][5] = ["quick"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"model.points\[1\] must be \[machines"):
        read_model(str(path))
    data["model"]["points"].reverse()
    data["model"]["points"][0][5] = ["phases"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="model.points must be sorted and unique"):
        read_model(str(path))


def test_info_shows_a_measured_size_that_holds_a_way_of_its_own():
    """A point alone (no measured size within 2x) binds at its size only: the ranges aapcgen
    info prints have it as a range of one size, between the model's."""
    from aapcgen.alltoall.selection import WayRange, ranges_text, way_ranges

    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, list(range(8)))
    model = default_model()
    assert choose_way(model, shape, 1 << 20) == "phases"
    tuned = {**model, "points": (point_of(shape, 1 << 20, ("library",)),)}
    ranges = way_ranges(tuned, shape)
    assert WayRange("library", 1 << 20, 1 << 20) in ranges
    assert ranges == sorted(ranges, key=lambda r: r.first) and ranges[-1].way == "phases"
    assert "library at 1 MB" in ranges_text(ranges)
    assert all(a.last + 1 == b.first and a.way != b.way for a, b in zip(ranges, ranges[1:]))


def test_the_guard_is_the_fits_median_error():
    from aapcgen.tune.model import MAX_GUARD, guard_of

    assert guard_of([0.1, -0.3, 0.05]) == pytest.approx(0.1)
    assert guard_of([]) == 0.0
    assert guard_of([2.0, -3.0]) == MAX_GUARD


def test_nonnegative_fit_drops_a_column_that_would_go_negative():
    import numpy as np

    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    y = np.array([3.0, 2.0, 1.0])  # unconstrained: slope -1
    x = nonnegative_fit(a, y)
    assert x[1] == 0 and x[0] == pytest.approx(2.0)


@settings(max_examples=25, deadline=None)
@given(models)
def test_the_fit_recovers_the_constants_that_made_the_calls(model):
    """Calls timed exactly as a model predicts give that model back."""
    topo = star_of_subtrees([4, 4])
    calls = []
    for r in (1, 2, 4):
        shape = job_shape(topo, [m for m in range(8) for _ in range(r)])
        for b in (8, 256, 512, 4096, 65536, 1 << 20):
            for way, t in way_costs(model, shape, b).items():
                if way != "loground":
                    calls.append(Call(shape, way, b, t))
    fitted = fit_model(calls)
    # to a relative 1e-6, or 10 ps where a constant is that far below the others (the features
    # of a window and of a message are nearly parallel: the least squares resolve no finer)
    for k in ("lib_alpha", "lib_beta", "phase_alpha", "phase_beta", "copy_beta", "msg_alpha"):
        assert fitted[k] == pytest.approx(model[k], rel=1e-6, abs=1e-11)
    assert fitted["agree_alpha"] == pytest.approx(model["agree_alpha"], rel=1e-6, abs=1e-10)
    for k in ("lib_msg_alpha", "lib_fwd_beta"):  # the library's two regimes
        assert fitted[k] == pytest.approx(model[k], rel=1e-6, abs=1e-9)
    assert max(map(abs, relative_errors(fitted, calls))) < 1e-6
    assert fitted["guard"] < 1e-6  # exact calls: no margin needed


@pytest.mark.parametrize("name", ["fat-4-4", "two-level-256-fat", "trunk-8-8", "tree-24"])
def test_shapes_of_shipped_trees_with_fast_links(name):
    """Trees whose switch links are faster than their machine links (capacities above 1)."""
    from test_cluster_c import TOPOS

    from aapcgen.core.topology import load_topology

    topo = load_topology(TOPOS / f"{name}.yaml")
    n = topo.n_machines
    for rank_machine in (
        list(range(n)),
        [m for m in range(0, n, 3) for _ in range(2)],
        [m % 5 for m in range(17)] if n >= 5 else list(range(n)),
    ):
        c, py = job_shape(topo, rank_machine), python_shape(topo, rank_machine)
        assert dataclasses.astuple(c)[:6] == dataclasses.astuple(py)[:6], rank_machine
        assert math.isclose(c.bound_s_per_byte, py.bound_s_per_byte, rel_tol=1e-12)


# --------------------------------------------------------------------------- the log-round way


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(switch_trees(min_machines=2, max_machines=120))
def test_the_c_tree_order_keeps_every_switchs_machines_together(topo):
    """The order the runtime numbers the log-round members in (C) passes the checker's test:
    the machines below every switch hold consecutive places."""
    order = machine_order(topo)
    assert sorted(order) == list(range(topo.n_machines))
    check_order(topo, order)


def test_the_order_checker_refuses_a_split_switch():
    topo = star_of_subtrees([4, 4])
    with pytest.raises(VerificationError, match="below s1 are not consecutive"):
        check_order(topo, [0, 4, 1, 2, 3, 5, 6, 7])
    with pytest.raises(VerificationError, match="not machines of the tree"):
        check_order(topo, [0, 1, 2, 3, 4, 5, 6, 8])
    with pytest.raises(VerificationError, match="below n0 are not consecutive"):
        check_order(topo, [0, 1, 0, 2, 3, 4, 5, 6, 7])  # the two ranks of n0 apart
    check_order(topo, [0, 0, 1, 2, 3, 4, 5, 6, 7])  # several ranks per machine, together


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 16, 33, 100])
def test_bruck_delivers_every_block_for_any_number_of_members(n):
    assert replay(n) == math.ceil(math.log2(n))


def test_log_round_proof_on_the_chain_counts_the_shared_trunks():
    from test_cluster_c import TOPOS

    from aapcgen.core.topology import load_topology

    topo = load_topology(TOPOS / "chain-4x4.yaml")
    proof = verify_loground(topo, machine_order(topo))
    assert (proof.n_members, proof.rounds, proof.messages) == (16, 4, 64)
    # distance 1 crosses a switch link once per switch boundary; distance 8 puts all 8
    # messages of the left half on the middle trunk
    assert [d for d, _, _ in proof.busiest] == [1, 2, 4, 8]
    assert proof.busiest[0][1] == 1 and proof.busiest[-1][1] == 8


# --------------------------------------------------------------------------- tuned constants


def test_a_model_file_compiles_into_the_cluster_table_and_info_shows_it(tmp_path, capsys):
    from aapcgen.cli import main
    from aapcgen.codegen.cluster import cluster_tables, render_cluster_c
    from aapcgen.tune.model import write_model

    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, list(range(8)))
    model = {k: v * 2 for k, v in default_model().items()}
    path = tmp_path / "model.json"
    write_model(path, model, [Call(shape, "phases", 4096, 0.01)], "test")
    c = render_cluster_c(cluster_tables(topo, model), "aapc_x_cluster")
    assert "static const aapc_cost_model_t aapc_x_cluster_model = {.lib_alpha = " in c
    assert ".tuned = 1}" in c and c.rstrip().endswith("&aapc_x_cluster_model, 0x0.0p+0};")
    plain = render_cluster_c(cluster_tables(topo), "aapc_x_cluster").rstrip()
    assert plain.endswith("NULL, 0x0.0p+0};")
    lossless = cluster_tables(dataclasses.replace(topo, inflight=float(1 << 24)))
    assert (
        render_cluster_c(lossless, "aapc_x_cluster")
        .rstrip()
        .endswith("NULL, 0x1.0000000000000p+24};")
    )
    with pytest.raises(SystemExit) as done:
        main(["info", "--model", str(path)])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "constants measured on this cluster by aapcgen tune" in out


def test_a_model_file_without_the_per_message_constant_reads_it_as_zero(tmp_path):
    """Model files written before msg_alpha, the library's two regimes and the guard existed:
    they read with those 0, so every way costs what it did and no margin applies; a bad value
    is still refused."""
    from aapcgen.tune.model import OPTIONAL_FIELDS, read_model

    old = {k: v for k, v in default_model().items() if k not in OPTIONAL_FIELDS}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"model": old}))
    assert read_model(str(path)) == {**old, **dict.fromkeys(OPTIONAL_FIELDS, 0.0), "points": ()}
    path.write_text(json.dumps({"model": {**old, "msg_alpha": -1}}))
    with pytest.raises(InputError, match="model.msg_alpha must be a number of seconds >= 0"):
        read_model(str(path))
    path.write_text(json.dumps({"model": {**old, "guard": 0.7}}))
    with pytest.raises(InputError, match=r"model.guard must be a fraction in \[0, 0.5\]"):
        read_model(str(path))


@pytest.mark.parametrize(
    "text, words",
    [
        ("{", "malformed JSON"),
        ('{"x": 1}', "no 'model' object"),
        ('{"model": {"lib_alpha": -1}}', "model.lib_alpha must be a number of seconds >= 0"),
        ('{"model": {"lib_alpha": 1e-4}}', "model.lib_beta must be a number"),
    ],
)
def test_bad_model_files_are_one_line_errors(tmp_path, capsys, text, words):
    from aapcgen.cli import main

    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as done:
        main(["info", "--model", str(path)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_info_gives_alltoallv_its_ways_at_the_same_crossover_with_the_phases():
    """MPI_Alltoallv chooses among the library, the phases, run one phase at a time, and the log
    rounds among the ranks in the tree's digits (never chosen here by the built-in constants):
    where MPI_Alltoall's choice priced without windows is one of them, MPI_Alltoallv's is the
    same. Windows make MPI_Alltoall's phases cheaper for small blocks: between the library and
    the phases alone, its crossover comes earlier."""
    from aapcgen.alltoall.selection import ALLTOALLV_WAYS, selection_lines, way_ranges

    topo = star_of_subtrees([4, 4])
    shape = job_shape(topo, [m for m in range(8) for _ in range(2)])
    m = default_model()
    vr = way_ranges(m, shape, ALLTOALLV_WAYS, windows=False, alltoallv=True)
    assert [r.way for r in vr] == ["library", "phases"]
    assert vr[0].first == 1 and vr[0].last + 1 == vr[1].first
    for r in way_ranges(m, shape, windows=False):
        if r.way in ALLTOALLV_WAYS:
            for b in (r.first, r.last):
                got = choose_way(m, shape, b, ALLTOALLV_WAYS, windows=False, alltoallv=True)
                assert got == r.way, (r, b)
    windowed = way_ranges(m, shape, ("library", "phases"))
    assert [r.way for r in windowed] == ["library", "phases"] and windowed[0].last < vr[0].last
    lines = selection_lines(dataclasses.replace(topo, ranks_per_machine=2))
    assert (
        lines[1]
        .strip()
        .startswith("phases in flight (64 KB of messages, the default; AAPC_INFLIGHT):")
    )
    assert "the per-rank phases all 64 at once up to 1 KB" in lines[1]
    assert "the leaders' all 16 at once up to 1 KB, one at a time from 8193 B" in lines[1]
    deep = selection_lines(dataclasses.replace(topo, ranks_per_machine=2, inflight=1 << 24))[1]
    assert "(16 MB of messages, the topology's inflight; AAPC_INFLIGHT)" in deep
    assert "the leaders' all 16 at once up to 256 KB, one at a time from 2097153 B" in deep
    assert lines[2].strip() == (
        "log-round way: among the machines' leaders in the tree's digits 4 x 2 (machines' "
        "switches first), each phase of a level in 1, 4 contention-free sub-phases"
    )
    assert lines[3].strip().startswith("MPI_Alltoallv, by the busiest rank's bytes over P - 1:")
    assert f"library up to {vr[0].last} B, phases from {vr[1].first} B" in lines[3]


# --------------------------------------------------------------------------- the tree's digits


def job_order(topo, machines: list[int]) -> list[int]:  # noqa: ANN001
    """The job's machines in the tree's depth-first order (C), as the runtime numbers them."""
    wanted = set(machines)
    return [m for m in machine_order(topo) if m in wanted]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(uniform_trees())
def test_uniform_trees_have_their_digits_and_the_exchange_is_proved(case):
    """On trees built uniform (leaf groups on their parent, chains, empty switches, faster
    links, machines outside the job), C's digits are the radices the tree was built with and
    the checker's own; the exchange in them is proved: delivery, every level inside its
    switches, every level's sub-phases contention-free with C's groups."""
    topo, machines, radix = case
    got = cluster_digits(topo, machines)
    assert got.radix == radix == tree_digits(topo, machines)
    proof = verify_loground(topo, job_order(topo, machines), got.radix, got.groups)
    assert [f for f, _, _ in proof.levels] == list(radix)
    assert proof.messages == len(machines) * sum(f - 1 for f in radix)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(placements())
def test_c_digits_are_the_checkers_on_random_jobs(case):
    """Any tree, any job: C finds digits exactly where the checker's own derivation does."""
    topo, rank_machine = case
    machines = sorted(set(rank_machine))
    assert cluster_digits(topo, machines).radix == tree_digits(topo, machines)
    shape = job_shape(topo, rank_machine)
    assert shape.digits == cluster_digits(topo, machines)
    assert shape.rank_digits.radix == rank_digits(topo, rank_machine)
    if shape.rank_digits.radix:  # the exchange among the ranks, proved
        order = [m for m in job_order(topo, machines) for _ in range(rank_machine.count(m))]
        verify_loground(topo, order, shape.rank_digits.radix, shape.rank_digits.groups)


@pytest.mark.parametrize(
    ("name", "radix", "groups"),
    [("two-level-64x", (8, 8), (1, 1)), ("two-switch-4-4", (4, 2), (1, 4)),
     ("three-level-4096", (32, 16, 8), (1, 4, 13)), ("chain-4x4", (), ()),
     ("trunk-8-8", (8, 2), (1, 2))],
)  # fmt: skip
def test_the_digits_of_the_shipped_trees(name, radix, groups):
    """Two switches linked directly are a level of 2 (a switch's own machines are its first
    child); three-level-4096's aggregation uplinks (40 machine links) carry 40 of the 512
    messages of a level-2 phase at once: 13 sub-phases; a chain of four switches has none."""
    from aapcgen.core.topology import load_topology

    topo = load_topology(TOPOS / f"{name}.yaml")
    got = cluster_digits(topo, list(range(topo.n_machines)))
    assert (got.radix, got.groups) == (radix, groups)


def test_the_checker_refuses_digits_that_are_not_the_trees():
    topo = star_of_subtrees([4, 4])
    order = job_order(topo, list(range(8)))
    verify_loground(topo, order, (4, 2), (1, 4))
    with pytest.raises(VerificationError, match="phase 1 sub-phase 0: 4 messages"):
        verify_loground(topo, order, (4, 2), (1, 1))  # the trunk carries one at a time
    with pytest.raises(VerificationError, match="not the tree's digits"):
        verify_loground(topo, order, (2, 4), (1, 2))
    with pytest.raises(VerificationError, match="do not multiply"):
        replay_digits(8, (2, 2))
    two = make_topology([0], [0, 0, 0, 0, 1, 1, 1, 1])  # s1's machines stay consecutive
    with pytest.raises(VerificationError, match="level 0: blocks 0 and 1 share the link"):
        verify_loground(two, [1, 2, 3, 4, 5, 6, 7, 0], (4, 2), (1, 4))


@pytest.mark.parametrize("radix", [(2,), (3, 2), (2, 3, 4), (5, 5), (4, 4, 4)])
def test_the_mixed_radix_exchange_delivers_every_block(radix):
    assert replay_digits(math.prod(radix), radix) == sum(f - 1 for f in radix)


def test_the_digits_cost_fewer_rounds_than_radix_two():
    """The selection prices the exchange in the tree's digits: on two-level-64x (8 x 8), one
    rank per machine, 64-byte blocks: 2 windows (all 7 messages of a level in flight) against
    radix 2's 6 rounds, and a block forwarded 7/8 + 7/8 times against 3; with 16 ranks per
    machine a leader's level message is 8 x 256 x 64 B = 128 KiB, over the 64 KiB in flight:
    one message per round, 14 rounds."""
    from aapcgen.core.topology import load_topology

    topo = load_topology(TOPOS / "two-level-64x.yaml")
    shape = job_shape(topo, list(range(64)))
    none = Digits((), (), ())
    plain = dataclasses.replace(shape, digits=none, rank_digits=none)
    model = {name: 0.0 for name in COST_FIELDS} | {"round_alpha": 1.0}
    assert way_costs(model, shape, 64)["loground"] == 2
    assert way_costs(model, plain, 64)["loground"] == 6
    sixteen = job_shape(topo, [m for m in range(64) for _ in range(16)])
    assert way_costs(model, sixteen, 64)["loground"] == 14
    model = {name: 0.0 for name in COST_FIELDS} | {"phase_beta": 1.0}
    ratio = way_costs(model, shape, 64)["loground"] / way_costs(model, plain, 64)["loground"]
    assert ratio == pytest.approx((7 / 8 + 7 / 8) / 3)


def test_alltoallv_runs_the_log_rounds_only_in_the_trees_digits():
    """MPI_Alltoallv has no radix-2 log-round form and no aggregated one: its log rounds run
    among the ranks in the tree's digits (R on every machine: a digit of R below the machines'),
    and where the ranks have none the way is not offered."""
    topo = star_of_subtrees([4, 4])
    only = {name: 0.0 for name in COST_FIELDS} | {"round_alpha": 1.0, "lib_alpha": 10.0}
    only |= {"phase_alpha": 10.0}
    for rank_machine, want in (
        (list(range(8)), "loground"),
        ([m for m in range(8) for _ in range(2)], "loground"),
        ([0, 0, 0, 1, 5, 5, 6], "library"),  # unequal: no digits, the next cheapest
    ):
        shape = job_shape(topo, rank_machine)
        got = choose_way(only, shape, 64, ("library", "phases", "loground"), False, True)
        assert got == want, (rank_machine, got)
    shape = job_shape(topo, [m for m in range(8) for _ in range(2)])
    assert shape.rank_digits == Digits((2, 4, 2), (65535, 1, 1), (1, 2, 8))


def _replay_runs():  # noqa: ANN202 (the tuning script as a module)
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("replay_runs", root / "tuning" / "replay_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, root


def test_the_per_message_constant_replayed_on_the_cpu_fair_chain_run():
    """The recorded chain-4x4 run against ch3:sock, one rank per machine (docs/measurements/
    selection.md, "The per-message constant from CPU-fair runs"): at 4 KB the built-in constants
    take the phases (24.38 ms, 0.99x MPICH's best, its pairwise); with the old split of a phase
    (100 us per window, 200 per message) they took the library (MPICH's default, 0.82x). Every
    other point chooses the same."""
    replay, root = _replay_runs()
    run = root / "docs" / "bench" / "cpu-fair-sock" / "chain-r1.json"
    now = replay.points_of(run, default_model(), root / "topologies")
    before = {**default_model(), "msg_alpha": 200e-6, "phase_alpha": 100e-6}
    old = replay.points_of(run, before, root / "topologies")
    at = {p.block: p for p in now}
    assert at[4096].way == "phases" and at[4096].ratio > 0.95, at[4096]
    assert {p.block: p.way for p in old}[4096] == "library"
    assert [p.way for p in now if p.block != 4096] == [p.way for p in old if p.block != 4096]
    fair = [p for p in now if p.cpu_fair()]
    assert fair and all(p.ratio >= 0.95 for p in fair), fair


def test_alltoallv_is_priced_by_the_phases_its_schedulers_make():
    """MPI_Alltoallv's job-tree schedulers put one message on a link per phase, so where the
    leaf switches' uplinks are faster than the machines' (two-level-16x: 10 Gbit/s over 1
    Gbit/s) a uniform exchange of 16 machines, one rank each, takes the uplinks' load in phases
    (4 x 12 = 48), not the 15 of the capacity-aware MPI_Alltoall: the selection prices those 48,
    and hands MPI_Alltoallv to the library where MPI_Alltoall takes its phases (under SimGrid the
    48 phases took 178 ms a call at 256 KiB, the library's 43). Where no link is faster than the
    machines' (4+4) both count the same."""
    from aapcgen.alltoallv.schedule import greedy
    from aapcgen.core.topology import load_topology

    topo, ranks = load_topology(TOPOS / "two-level-16x.yaml"), list(range(16))
    shape = job_shape(topo, ranks)
    pattern = np.full((16, 16), 1 << 18, dtype=np.int64)
    np.fill_diagonal(pattern, 0)
    made = greedy(job_topology(topo, ranks), pattern).n_phases  # what the C scheduler makes
    assert (shape.rank_phases, shape.rank_load, made) == (15, 48, 48)
    assert shape.unit_s_per_byte == pytest.approx(48 / topo.machine_bandwidth[0])
    ways_v = ("library", "phases", "loground")
    for b in (1 << 16, 1 << 18, 1 << 20):
        assert choose_way(default_model(), shape, b, ways_v, windows=False, alltoallv=True) == (
            "library"
        )
    assert choose_way(default_model(), shape, 1 << 18, WAYS) == "phases"
    # the library at every size there: MPI_Alltoallv need not agree on its block at all
    assert library_only(default_model(), shape, ways_v, windows=False, alltoallv=True)
    assert not library_only(default_model(), shape, WAYS)  # MPI_Alltoall's phases win there
    even = job_shape(star_of_subtrees([4, 4]), [m for m in range(8) for _ in range(2)])
    assert even.rank_load == even.rank_phases == 64
    assert even.unit_s_per_byte == pytest.approx(even.bound_s_per_byte)
    assert not library_only(default_model(), even, ways_v, windows=False, alltoallv=True)
