"""Topology builders and hypothesis strategies shared by the tests (no loader involved)."""

from __future__ import annotations

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
