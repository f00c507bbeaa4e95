"""Topology builders and hypothesis strategies shared by the tests (no loader involved)."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from aapcgen.core.model import Link, Topology

MBIT100 = 12.5e6


def make_topology(
    parents: list[int], machine_switch: list[int], name: str = "t", bandwidth: float = MBIT100
) -> Topology:
    """Switch i > 0 hangs from switch parents[i-1]; machine r sits on switch machine_switch[r]."""
    switches = tuple(f"s{i}" for i in range(len(parents) + 1))
    links = tuple(Link(switches[p], switches[i + 1], bandwidth) for i, p in enumerate(parents))
    n = len(machine_switch)
    return Topology(
        name=name,
        source=f"<{name}>",
        bandwidth=bandwidth,
        switches=switches,
        machines=tuple(f"n{r}" for r in range(n)),
        machine_switch=tuple(switches[s] for s in machine_switch),
        machine_bandwidth=(bandwidth,) * n,
        hosts=(None,) * n,
        links=links,
    )


def star_of_subtrees(sizes: list[int]) -> Topology:
    """A root switch s0 with one switch per subtree holding sizes[i] machines (ranks in order)."""
    parents = [0] * len(sizes)
    machine_switch = [i + 1 for i, size in enumerate(sizes) for _ in range(size)]
    return make_topology(parents, machine_switch)


def figure1() -> Topology:
    """Seed 002 Figure 1: n0@s0, n1@s4, n2@s3, n3@s5, n4@s5."""
    t = make_topology([0, 1, 2, 0, 3], [0, 4, 3, 5, 5], name="paper-fig1")
    return t


@st.composite
def switch_trees(draw: st.DrawFn, min_machines: int = 3, max_machines: int = 200) -> Topology:
    """Random switch trees: random shapes, chains, stars, machine-less switches, shuffled ranks."""
    n_switches = draw(st.integers(1, 40))
    shape = draw(st.sampled_from(["random", "chain", "star", "caterpillar"]))
    if shape == "chain":
        parents = list(range(n_switches - 1))
    elif shape == "star":
        parents = [0] * (n_switches - 1)
    elif shape == "caterpillar":
        parents = [max(0, i - draw(st.integers(0, 1))) for i in range(n_switches - 1)]
    else:
        parents = [draw(st.integers(0, i)) for i in range(n_switches - 1)]
    n = draw(st.integers(min_machines, max_machines))
    # machines crowd onto a few switches or spread out; some switches stay empty
    used = draw(st.lists(st.integers(0, n_switches - 1), min_size=1, max_size=n_switches))
    placement = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    machine_switch = [placement[order[r]] for r in range(n)]
    return make_topology(parents, machine_switch)


def grouped_tree(k: int, e: int, m: int, core: float, agg: float, machine: float) -> Topology:
    """A core switch s0 over k aggregation switches, each over e edge switches of m machines (e
    = 0: m machines on each aggregation switch); links core-aggregation at `core`,
    aggregation-edge at `agg`, machines at `machine` bytes/s (the shape of three-level-4096)."""
    parents = [0] * k + [1 + a for a in range(k) for _ in range(e)]
    if e == 0:
        machine_switch = [1 + a for a in range(k) for _ in range(m)]
    else:
        machine_switch = [1 + k + s for s in range(k * e) for _ in range(m)]
    t = make_topology(parents, machine_switch, name=f"grouped-{k}x{e}x{m}", bandwidth=machine)
    links = tuple(
        Link(ln.a, ln.b, core if ln.a == "s0" else agg) for ln in t.links
    )  # fmt: skip
    return Topology(**{**t.__dict__, "links": links})


@st.composite
def uniform_trees(draw: st.DrawFn) -> tuple[Topology, list[int], tuple[int, ...]]:
    """A tree whose job machines hang uniformly: radices (bottom-up) of 1-3 levels, with the
    variations that keep it uniform: a switch's first leaf group attached to it directly, chains
    of one-child switches, empty switches, faster switch links, and machines outside the job
    on a switch of their own. Returns (topology, the job's machines, the radices)."""
    radix = tuple(draw(st.lists(st.integers(2, 4), min_size=1, max_size=3)))
    parents: list[int] = []
    speeds: list[float] = []
    machine_switch: list[int] = []

    def switch(parent: int) -> int:
        parents.append(parent)
        speeds.append(MBIT100 * draw(st.sampled_from([1, 2, 4, 10])))
        return len(parents)

    def hang(node: int, level: int) -> None:  # the subtree of `level` digits below switch node
        for child in range(radix[level - 1]):
            if level == 1:
                machine_switch.append(node)
                continue
            if level == 2 and child == 0 and draw(st.booleans()):
                machine_switch.extend([node] * radix[0])  # the leaf group on its parent
                continue
            below = switch(node)
            if draw(st.integers(0, 3)) == 0:
                below = switch(below)  # a chain
            if draw(st.integers(0, 4)) == 0:
                switch(node)  # an empty switch
            hang(below, level - 1)

    hang(0, len(radix))
    job = list(range(len(machine_switch)))
    if draw(st.booleans()):
        machine_switch += [switch(0)] * draw(st.integers(1, 3))  # outside the job
    order = draw(st.permutations(range(len(machine_switch))))
    topo = make_topology(parents, [machine_switch[i] for i in order])
    links = tuple(Link(ln.a, ln.b, s) for ln, s in zip(topo.links, speeds))
    topo = dataclasses.replace(topo, links=links)
    return topo, sorted(order.index(m) for m in job), radix
