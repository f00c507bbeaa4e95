"""Infer a switch tree from timed concurrent transfers: the part that needs no network.

The measurement primitive is a *contention probe*: a probe flow ``src -> dst`` and a load flow
run alone and together; together they take longer when one directed link carries both and
cannot carry both at full speed. In a switch tree machine links are private, so a probe
``x -> rho`` contends with a load ``a -> b`` exactly when one switch-to-switch link has ``x`` and
``a`` on one side and ``rho`` and ``b`` on the other: the quartet ``xa|rho b``. (Loads that
share no link among themselves, such as a ring between siblings, check several at once.)

The tree is built by inserting machines one at a time into a hierarchy rooted at the switch of
machine ``rho`` (the first one). Every switch-to-switch link below that switch is a *cluster*:
the machines beyond it. Inserting ``x`` walks down from the root; at each switch it asks, child
by child, largest first, "does ``x`` join this child?" (probe ``x -> rho``, load from the child
to a sibling); a child machine that ``x`` joins becomes a new switch of the two; a child
cluster that ``x`` joins is entered, or, when ``x`` is outside it (probe ``x -> a`` into the
cluster, load from a sibling into its other children), wrapped with ``x`` in a new switch.
Nobody joined: ``x`` sits on this switch. One insertion costs about one probe per child of the
switches on its way down: n machines under switches of d children cost about ``n * d`` probes
per level (one switch of n machines: about 0.75 n^2 with the checks), against the
``n(n-1) (n(n-1)-1) / 2`` pairs of flows (:func:`all_pairs_of_pairs`).

What bandwidth cannot show, no probe order can: a switch link as fast as the traffic its
machines can offer is not a bottleneck and looks like part of one switch; a switch with one
machine looks like that machine's own link; a switch with no machines and two links looks like
one link. :func:`identifiable` reduces a known tree to what discovery can see, for tests and
for comparing a discovery with the truth.

Every answer carries its ratio; answers between the two thresholds are *undecided* and make the
discovery incomplete instead of wrong. After the build, every link and every pair of siblings
is checked once more with other machines, and random probes are compared with what the found
tree predicts (:func:`verify`, :func:`cross_check`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aapcgen.core.model import Link, Topology
from aapcgen.importers.tree import ImportedTree, Machine, SwitchLink

Flow = tuple[int, int]  # (source machine, destination machine)
SIBLING_BATCH = 4  # siblings checked by one probe: a ring of loads that share no link


@dataclass(frozen=True)
class Answer:
    """Whether the probe slowed down under the load; None: undecided."""

    contend: bool | None
    ratio: float  # probe time with the load / alone (1.0 in models without timing)


# (probe, loads, phase) -> answer; phase "build" or "check": a check is measured afresh even
# when it asks what the build asked (a cached answer could never disagree with itself)
Oracle = Callable[[Flow, Sequence[Flow], str], Answer]


@dataclass
class Cluster:
    """A switch of the hierarchy; ``children`` are machines (int) and switches below it."""

    children: list[int | Cluster] = field(default_factory=list)
    evidence: list[Answer] = field(default_factory=list)  # the answers that made it

    def machines(self) -> list[int]:
        found: list[int] = []
        for child in self.children:
            found += child.machines() if isinstance(child, Cluster) else [child]
        return found


class Undecided(Exception):
    """A probe stayed between the thresholds: the part of the tree it decides is unknown."""

    def __init__(self, question: str, answer: Answer) -> None:
        super().__init__(f"{question}: ratio {answer.ratio:.2f} is between the thresholds")
        self.question = question
        self.answer = answer


@dataclass
class Discovery:
    root: Cluster
    probes: int
    undecided: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)
    # the checks that failed, to ask again: (probe, loads, the answer the tree predicts)
    failed_questions: list[tuple[Flow, tuple[Flow, ...], bool]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.undecided and not self.failed_checks


def _rep(child: int | Cluster) -> int:
    return child if isinstance(child, int) else child.machines()[0]


def _members(child: int | Cluster) -> list[int]:
    return [child] if isinstance(child, int) else child.machines()


class _Builder:
    def __init__(self, oracle: Oracle, rho: int, load: int, name: Callable[[int], str]) -> None:
        self.oracle = oracle
        self.rho = rho
        self.load = load  # load flows per probe (more saturate faster switch links)
        self.name = name
        self.probes = 0
        self.phase = "build"
        self.failed: list[tuple[Flow, tuple[Flow, ...], bool]] = []

    def ask(self, probe: Flow, loads: Sequence[Flow], question: str) -> Answer:
        self.probes += 1
        answer = self.oracle(probe, loads, self.phase)
        if answer.contend is None:
            raise Undecided(question, answer)
        return answer

    def _pairs(self, sources: list[int], targets: list[int], busy: set[int]) -> list[Flow]:
        sources = [s for s in sources if s not in busy]
        targets = [t for t in targets if t not in busy and t not in sources]
        return list(zip(sources, targets))[: self.load]

    def joins(self, node: Cluster, child: int | Cluster, x: int) -> Answer | None:
        """Does ``x`` lie beyond the link above ``child`` (or form a new switch with it)?
        Probe x -> rho; load from ``child`` to the other children of ``node``."""
        others = [m for c in node.children if c is not child for m in _members(c)]
        loads = self._pairs(_members(child), others, {x, self.rho})
        if not loads:
            return None
        names = ", ".join(self.name(m) for m in _members(child)[:3])
        return self.ask((x, self.rho), loads, f"is {self.name(x)} beside {names}")

    def outside(self, cluster: Cluster, parent: Cluster, x: int) -> Answer:
        """``x`` joined ``cluster``: is it outside it (a new switch above it)? Probe x -> a into
        the cluster; load from the parent's other machines into the cluster's other children."""
        first, *rest = cluster.children
        a = _rep(first)
        inside = [m for c in rest for m in _members(c)]
        outer = [m for c in parent.children if c is not cluster for m in _members(c)]
        loads = self._pairs(outer, inside, {x, a})
        if not loads:  # rho alone outside: load rho -> another child of the cluster
            loads = [(self.rho, inside[0])]
        question = f"is {self.name(x)} outside the switch of {self.name(a)}"
        return self.ask((x, a), loads, question)

    def insert(self, root: Cluster, x: int) -> None:
        node = root
        while True:
            ordered = sorted(
                (c for c in node.children if c != self.rho),
                key=lambda c: -len(_members(c)),
            )
            joined: tuple[int | Cluster, Answer] | None = None
            for child in ordered:
                answer = self.joins(node, child, x)
                if answer is not None and answer.contend:
                    joined = (child, answer)
                    break
            if joined is None:
                node.children.append(x)
                if node is root:
                    self.regroup_root(root, x)
                return
            child, answer = joined
            index = next(i for i, c in enumerate(node.children) if c is child)
            if isinstance(child, int):
                node.children[index] = Cluster([child, x], [answer])
                return
            out = self.outside(child, node, x)
            if out.contend:
                node.children[index] = Cluster([child, x], [answer, out])
                return
            node = child

    def regroup_root(self, root: Cluster, x: int) -> None:
        """``x`` joined the root switch: the machines beyond a link that had only ``rho`` on its
        near side are now a visible cluster (probe o1 -> rho, load o2 -> x)."""
        others = [c for c in root.children if c not in (self.rho, x)]
        if len(others) < 2:
            return
        o1, o2 = _rep(others[0]), _rep(others[1])
        answer = self.ask(
            (o1, self.rho), [(o2, x)], f"is {self.name(x)} beside {self.name(self.rho)}"
        )
        if answer.contend:
            root.children = [self.rho, x, Cluster(others, [answer])]


def infer(
    n: int,
    oracle: Oracle,
    load: int = 1,
    name: Callable[[int], str] = str,
    order: Sequence[int] | None = None,
    checks: int | None = None,
    on_insert: Callable[[int], None] | None = None,
) -> Discovery:
    """The hierarchy of machines 0..n-1 rooted at the switch of ``order[0]`` (default 0);
    ``checks`` random probes (default n) compare the result's predictions with the network."""
    order = list(range(n)) if order is None else list(order)
    builder = _Builder(oracle, order[0], load, name)
    root = Cluster(order[:3])
    undecided: list[str] = []
    for done, x in enumerate(order[3:], start=4):
        try:
            builder.insert(root, x)
            if on_insert is not None:
                on_insert(done)
        except Undecided as exc:
            undecided.append(str(exc))
            break  # the rest of the tree depends on this answer
    result = Discovery(root, builder.probes, undecided)
    if not undecided:
        builder.phase = "check"
        result.failed_checks = verify(root, builder) + cross_check(root, n, builder, checks)
        result.failed_questions = list(builder.failed)
        result.probes = builder.probes
    return result


def verify(root: Cluster, builder: _Builder) -> list[str]:
    """Check the hierarchy once more, with other machines than the build used:

    * every cluster slows a probe from its last machine to ``rho`` under load from its other
      machines to outside (its link exists);
    * no child of a switch is grouped with a sibling: probe child -> ``rho`` under loads from
      siblings to other siblings, in batches, must not slow down;
    * a machine beside a cluster is outside it: probe into the cluster under load from outside
      into its other children must slow down.

    A failure names the place; about ``k^2 / load`` probes for a switch of k children."""
    failures: list[str] = []
    rho = builder.rho

    def check(probe: Flow, loads: list[Flow], expect: bool, question: str) -> None:
        if not loads:
            return
        try:
            answer = builder.ask(probe, loads, question)
        except Undecided as exc:
            failures.append(str(exc))
            builder.failed.append((probe, tuple(loads), expect))
            return
        if answer.contend != expect:
            said = "contention" if answer.contend else "no contention"
            failures.append(f"{question}: {said} (ratio {answer.ratio:.2f})")
            builder.failed.append((probe, tuple(loads), expect))

    def siblings(node: Cluster) -> None:
        kids = [c for c in node.children if c != rho]
        for child in kids:
            x = _members(child)[-1]
            others = [c for c in kids if c is not child]
            for start in range(0, len(others), SIBLING_BATCH):
                batch = [_members(c)[-1] for c in others[start : start + SIBLING_BATCH]]
                if len(batch) >= 2:  # each sibling sends to the next: every one is a source
                    loads = list(zip(batch, batch[1:] + batch[:1]))
                else:
                    pool = [_rep(c) for c in others if _members(c)[-1] not in batch]
                    loads = [(batch[0], pool[0])] if pool else []
                name = builder.name(x)
                check((x, rho), loads, False, f"recheck that {name} has no closer sibling")

    def walk(node: Cluster, parent: Cluster | None) -> None:
        siblings(node)
        for child in node.children:
            if not isinstance(child, Cluster):
                continue
            # the probe from the cluster's last child, loads from its other children (one
            # child alone could share a link further down), to machines beside the cluster
            # under the same switch (beyond it, a load shares the parent's own link)
            source = _members(child.children[-1])[-1]
            others = [m for c in child.children[:-1] for m in _members(c)][::-1]
            beside = [m for c in node.children if c is not child for m in _members(c)]
            loads = builder._pairs(others, [m for m in beside if m != rho][::-1], {source, rho})
            name = builder.name(source)
            check((source, rho), loads, True, f"recheck the link above {name}")
            a = _members(child.children[-1])[-1]
            into = [m for c in child.children[:-1] for m in _members(c)]
            for x in (c for c in node.children if isinstance(c, int) and c != rho):
                outer = [m for m in beside if m != x]
                loads = builder._pairs(outer, into, {x, a})
                question = f"recheck that {builder.name(x)} is outside the switch of {name}"
                check((x, a), loads, True, question)
            walk(child, node)

    walk(root, None)
    return failures


def cross_check(root: Cluster, n: int, builder: _Builder, checks: int | None) -> list[str]:
    """Random probes (seeded) whose outcome the inferred tree predicts: a mismatch means the
    tree is wrong somewhere, whatever the structured checks said."""
    if n < 4:
        return []
    predicted = model_oracle(hierarchy_topology(root, n))
    rng = random.Random(n)
    failures = []
    for _ in range(n if checks is None else checks):
        a, b, c, d = rng.sample(range(n), 4)
        expect = predicted((a, c), [(b, d)]).contend
        question = f"check {builder.name(a)}->{builder.name(c)} beside {builder.name(b)}->{builder.name(d)}"
        try:
            answer = builder.ask((a, c), [(b, d)], question)
        except Undecided as exc:
            failures.append(str(exc))
            builder.failed.append(((a, c), ((b, d),), bool(expect)))
            continue
        if answer.contend != expect:
            said = "contention" if answer.contend else "no contention"
            failures.append(
                f"{question}: {said} (ratio {answer.ratio:.2f}), the tree says otherwise"
            )
            builder.failed.append(((a, c), ((b, d),), bool(expect)))
    return failures


def switches_of(root: Cluster) -> list[tuple[Cluster, Cluster | None]]:
    """Every switch of the hierarchy with its parent, root first (depth-first)."""
    found: list[tuple[Cluster, Cluster | None]] = []

    def walk(node: Cluster, parent: Cluster | None) -> None:
        found.append((node, parent))
        for child in node.children:
            if isinstance(child, Cluster):
                walk(child, node)

    walk(root, None)
    return found


def to_tree(
    root: Cluster,
    names: Sequence[str],
    name: str,
    machine_speed: Sequence[float],
    link_speed: dict[int, float] | None = None,
) -> ImportedTree:
    """The hierarchy as a switch tree: switches ``d0`` (the root), ``d1``..., machines in
    rank order; ``link_speed`` maps a switch's index to the speed of its link up."""
    nodes = switches_of(root)
    label = {id(node): f"d{i}" for i, (node, _) in enumerate(nodes)}
    switch_of = {}
    for node, _ in nodes:
        for child in node.children:
            if isinstance(child, int):
                switch_of[child] = label[id(node)]
    machines = [Machine(names[m], switch_of[m], machine_speed[m]) for m in range(len(names))]
    links = []
    for i, (node, parent) in enumerate(nodes):
        if parent is not None:
            speed = (link_speed or {}).get(i, min(machine_speed))
            links.append(SwitchLink(label[id(parent)], label[id(node)], speed))
    return ImportedTree(name, [label[id(node)] for node, _ in nodes], machines, links)


def hierarchy_topology(root: Cluster, n: int, speed: float = 1.0) -> Topology:
    """The hierarchy as a Topology with every link at ``speed`` (for predictions)."""
    tree = to_tree(root, [f"m{i}" for i in range(n)], "inferred", [speed] * n)
    return Topology(
        name="inferred",
        source="<inferred>",
        bandwidth=speed,
        switches=tuple(tree.switches),
        machines=tuple(m.name for m in tree.machines),
        machine_switch=tuple(m.switch for m in tree.machines),
        machine_bandwidth=tuple(m.bandwidth for m in tree.machines),
        hosts=(None,) * n,
        links=tuple(Link(ln.parent, ln.child, ln.bandwidth) for ln in tree.links),
    )


# --------------------------------------------------------------------------- known trees


def _adjacency(topo: Topology) -> dict[str, list[tuple[str, float]]]:
    adjacent: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    adjacent.update({m: [] for m in topo.machines})
    for link in topo.links:
        adjacent[link.a].append((link.b, link.bandwidth))
        adjacent[link.b].append((link.a, link.bandwidth))
    for m, s, bw in zip(topo.machines, topo.machine_switch, topo.machine_bandwidth):
        adjacent[m].append((s, bw))
        adjacent[s].append((m, bw))
    return adjacent


def path(topo: Topology, src: str, dst: str) -> list[tuple[str, str, float]]:
    """Directed links (from, to, bandwidth) from machine ``src`` to machine ``dst``."""
    adjacent = _adjacency(topo)
    previous: dict[str, tuple[str, float] | None] = {src: None}
    queue = [src]
    while queue:
        node = queue.pop(0)
        for other, bw in adjacent[node]:
            if other not in previous:
                previous[other] = (node, bw)
                queue.append(other)
    hops = []
    node = dst
    while (step := previous[node]) is not None:
        hops.append((step[0], node, step[1]))
        node = step[0]
    return hops[::-1]


def model_oracle(topo: Topology) -> Oracle:
    """Exact answers of a fluid model of the measurement: flows of one unit each take as long
    as their busiest directed link needs (its units over its bandwidth); they contend when
    together they take longer than the probe alone and the loads alone."""
    paths: dict[Flow, list[tuple[str, str, float]]] = {}

    def route(flow: Flow) -> list[tuple[str, str, float]]:
        if flow not in paths:
            paths[flow] = path(topo, topo.machines[flow[0]], topo.machines[flow[1]])
        return paths[flow]

    def duration(flows: Sequence[Flow]) -> float:
        units: dict[tuple[str, str], float] = {}
        speed: dict[tuple[str, str], float] = {}
        for flow in flows:
            for a, b, bw in route(flow):
                units[(a, b)] = units.get((a, b), 0.0) + 1.0
                speed[(a, b)] = bw
        return max(units[link] / speed[link] for link in units)

    def oracle(probe: Flow, loads: Sequence[Flow], phase: str = "build") -> Answer:
        together = duration([probe, *loads])
        alone = max(duration([probe]), duration(loads) if loads else 0.0)
        ratio = together / alone
        return Answer(ratio > 1 + 1e-9, ratio)

    return oracle


def clusters_of(root: Cluster) -> set[frozenset[int]]:
    found: set[frozenset[int]] = set()

    def walk(node: Cluster) -> None:
        for child in node.children:
            if isinstance(child, Cluster):
                found.add(frozenset(child.machines()))
                walk(child)

    walk(root)
    return found


def identifiable(topo: Topology, rho: int = 0, load: int = 1) -> set[frozenset[int]]:
    """The clusters (machines beyond a switch link, seen from machine ``rho``) that the probes
    can find: links with at least two machines on each side, slower than the flows that can
    cross them at once (one probe and ``load`` load flows, between distinct machines)."""
    found: set[frozenset[int]] = set()
    everyone = set(range(topo.n_machines))
    for link in topo.links:
        far = _side(topo, link.b, link.a)
        if rho in far:
            far = _side(topo, link.a, link.b)
        near = everyone - far
        if len(far) < 2 or len(near) < 2:
            continue
        flows = min(load + 1, len(far), len(near))
        offer = min(topo.machine_bandwidth) * flows
        if link.bandwidth < offer * (1 - 1e-9):
            found.add(frozenset(far))
    return found


def _side(topo: Topology, start: str, avoid: str) -> frozenset[int]:
    """Machines reached from switch ``start`` without crossing to ``avoid``."""
    adjacent = _adjacency(topo)
    seen, stack = {start, avoid}, [start]
    while stack:
        node = stack.pop()
        for other, _ in adjacent[node]:
            if other not in seen:
                seen.add(other)
                stack.append(other)
    index = {m: i for i, m in enumerate(topo.machines)}
    return frozenset(index[n] for n in seen if n in index)


def all_pairs_of_pairs(n: int) -> int:
    """What testing every two flows against each other would cost: for comparison."""
    flows = n * (n - 1)
    return flows * (flows - 1) // 2
