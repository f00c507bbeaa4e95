"""LLDP neighbour tables (``lldpctl -f json``, one file per node) -> :class:`ImportedTree`.

Each file ``DIR/<node>.json`` is what ``lldpctl -f json`` (or ``lldpcli -f json show neighbors
details``, or ``-f json0``) printed on that node: for each local interface, the neighbour
chassis (LLDP SysName, ChassisID) and its port. lldpd's ``json`` writer collapses one-element
lists and hoists ``name`` keys into wrapper objects, so one interface gives
``{"lldp": {"interface": {"eth0": {...}}}}`` and several give a list of such objects; ``json0``
keeps every list. Both are read.

A node's file names the switch it is cabled to: a machine-to-switch edge. Files of switches
(lldpd runs on SONiC, Cumulus and other Linux switches) name their neighbour switches: the
switch-to-switch edges. A file's node is a switch when another file's node sees it as a
neighbour and it has neighbours of its own that are switches or machines; see
:func:`classify`. The link speed is the neighbour port's MAU type when LLDP carries it
(``1000BaseTFD``: 1 Gbit/s), else the default.

What LLDP cannot tell (a switch whose uplink no file names, a node with no neighbour) is
reported one line each, with the YAML to add; cycles (LLDP also sees the links spanning tree
blocks) and nodes cabled to two switches are errors.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aapcgen.core.errors import InputError
from aapcgen.importers.tree import ImportedTree, Machine, SwitchLink, natural_key

_NAME_BAD = re.compile(r"[^A-Za-z0-9_.\-]+")
_MAU = re.compile(r"\s*(\d+)\s*(g(?:ig)?)?\s*base", re.IGNORECASE)
_CHASSIS_FIELDS = {"id", "descr", "mgmt-ip", "mgmt-iface", "capability", "name"}
MBIT = 125_000.0


@dataclass(frozen=True)
class Neighbour:
    """One LLDP neighbour of one local interface."""

    interface: str
    name: str | None  # SysName
    chassis_id: str | None
    port: str | None  # the neighbour's port (PortID, else PortDescr)
    bridge: bool | None  # Bridge capability enabled, when advertised
    speed: float | None  # bytes/s of the neighbour port's MAU type, when advertised

    @property
    def key(self) -> str:
        return self.name or f"id:{self.chassis_id}"


# --------------------------------------------------------------------------- lldpctl JSON


def _first(value: object) -> object:
    while isinstance(value, list) and value:
        value = value[0]
    return value


def _text(value: object) -> str | None:
    value = _first(value)
    if isinstance(value, dict):
        value = _first(value.get("value"))
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _interfaces(lldp: object) -> Iterator[tuple[str, dict]]:
    """(local interface, its neighbour object) of both JSON shapes."""
    for block in lldp if isinstance(lldp, list) else [lldp]:
        if not isinstance(block, dict):
            continue
        interfaces = block.get("interface")
        for item in interfaces if isinstance(interfaces, list) else [interfaces]:
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("name"), str):  # json0: {"name": "eth0", ...}
                yield item["name"], item
                continue
            for name, body in item.items():  # json: {"eth0": {...}}
                for one in body if isinstance(body, list) else [body]:
                    if isinstance(one, dict):
                        yield str(name), one


def _chassis(body: dict) -> tuple[str | None, dict]:
    """(SysName, chassis object): json wraps it as {"<sysname>": {...}}."""
    chassis = _first(body.get("chassis"))
    if not isinstance(chassis, dict):
        return None, {}
    if len(chassis) == 1:
        ((key, inner),) = chassis.items()
        if key not in _CHASSIS_FIELDS and isinstance(inner, dict):
            return key, inner
    return _text(chassis.get("name")), chassis


def _bridge(chassis: dict) -> bool | None:
    capabilities = chassis.get("capability")
    for cap in capabilities if isinstance(capabilities, list) else [capabilities]:
        cap = _first(cap)
        if isinstance(cap, dict) and cap.get("type") == "Bridge":
            return cap.get("enabled") in (True, "on", "yes")
    return None


def mau_speed(text: str | None) -> float | None:
    """Bytes/s of a MAU type: ``10GigBaseCX4`` 10 Gbit/s, ``1000BaseTFD`` 1 Gbit/s."""
    match = _MAU.match(text or "")
    if match is None:
        return None
    megabits = int(match[1]) * (1000 if match[2] else 1)
    return megabits * MBIT if megabits else None


def parse_lldpctl(text: str, source: str) -> list[Neighbour]:
    """The neighbours in one ``lldpctl -f json`` (or ``json0``) output."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}: not lldpctl JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise InputError(f'{source}: not lldpctl JSON (no top-level "lldp"): run lldpctl -f json')
    neighbours = []
    for interface, body in _interfaces(doc["lldp"]):
        name, chassis = _chassis(body)
        port = _first(body.get("port"))
        port = port if isinstance(port, dict) else {}
        port_id = _first(port.get("id"))
        chassis_id = _first(chassis.get("id"))
        negotiation = _first(port.get("auto-negotiation"))
        current = _text(negotiation.get("current")) if isinstance(negotiation, dict) else None
        neighbour = Neighbour(
            interface=interface,
            name=_clean(name) if name else None,
            chassis_id=_text(chassis_id),
            port=_text(port_id) or _text(port.get("descr")),
            bridge=_bridge(chassis),
            speed=mau_speed(current),
        )
        if neighbour.name or neighbour.chassis_id:
            neighbours.append(neighbour)
    return neighbours


def _clean(name: str) -> str:
    return _NAME_BAD.sub("-", name).strip("-") or "unnamed"


def read_dir(path: str) -> dict[str, list[Neighbour]]:
    """node (file stem) -> its neighbours, for every ``*.json`` in ``path``."""
    directory = Path(path)
    if not directory.is_dir():
        raise InputError(f"{path}: not a directory (give the directory of lldpctl -f json files)")
    views: dict[str, list[Neighbour]] = {}
    for file in sorted(directory.glob("*.json"), key=lambda f: natural_key(f.name)):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{file}: cannot read: {exc}") from None
        views[_clean(file.stem)] = parse_lldpctl(text, str(file))
    if not views:
        raise InputError(f"{path}: no *.json files (one lldpctl -f json output per node)")
    return views


# --------------------------------------------------------------------------- the tree


@dataclass
class LldpResult:
    tree: ImportedTree
    unknown: list[str] = field(default_factory=list)  # one line per link LLDP did not tell

    @property
    def complete(self) -> bool:
        return not self.unknown


def _short(name: str) -> str:
    return name.split(".", 1)[0]


def _canonical(views: dict[str, list[Neighbour]]) -> dict[str, str]:
    """Neighbour key -> node name: a chassis seen by id in one file and by name in another is
    one node; a chassis whose SysName (or its short form) is a file's stem is that file's node."""
    names_of_id: dict[str, str] = {}
    for neighbours in views.values():
        for n in neighbours:
            if n.name and n.chassis_id:
                names_of_id.setdefault(n.chassis_id, n.name)
    files = {_short(stem): stem for stem in views}
    mapping: dict[str, str] = {}
    for neighbours in views.values():
        for n in neighbours:
            name = n.name or names_of_id.get(n.chassis_id or "")
            if name is None:
                name = "sw-" + _clean((n.chassis_id or "").replace(":", ""))
            mapping[n.key] = files.get(_short(name), files.get(name, name))
    return mapping


def _degrees(
    views: dict[str, list[Neighbour]], canon: dict[str, str]
) -> tuple[dict[str, set[str]], dict[str, bool]]:
    """Every node's neighbour nodes (seen from either end), and its Bridge capability where a
    neighbour table advertises it."""
    adjacent: dict[str, set[str]] = {}
    bridge: dict[str, bool] = {}
    for owner, neighbours in views.items():
        adjacent.setdefault(owner, set())
        for n in neighbours:
            node = canon[n.key]
            if node == owner:
                continue
            adjacent[owner].add(node)
            adjacent.setdefault(node, set()).add(owner)
            if n.bridge is not None:
                bridge[node] = bridge.get(node, False) or n.bridge
    return adjacent, bridge


def classify(
    views: dict[str, list[Neighbour]], canon: dict[str, str]
) -> tuple[set[str], set[str], set[str], list[str]]:
    """(machines, switches, ignored, notes). In a switch tree machines are leaves. A node with a
    file is a switch when it advertises Bridge or sees only nodes that advertise no Bridge (a
    switch's table of hosts); a machine when it advertises no Bridge, or has one neighbour. A
    node no file names, with several neighbours, is a machine with several networks when
    another such node shares two of them (then --interface picks one), else a switch. A node
    without a file is a switch when a machine sees it (or it advertises Bridge), a machine when
    it advertises no Bridge, else an unknown device (ignored)."""
    adjacent, bridge = _degrees(views, canon)
    seen = {canon[n.key] for neighbours in views.values() for n in neighbours}
    machines: set[str] = set()
    switches: set[str] = set()
    several: dict[str, set[str]] = {}
    for node, neighbours in views.items():
        own = {canon[n.key] for n in neighbours} - {node}
        if bridge.get(node):
            switches.add(node)
        elif bridge.get(node) is False:
            machines.add(node)
        elif own and all(bridge.get(other) is False for other in own):
            switches.add(node)
        elif len(adjacent[node]) <= 1:
            machines.add(node)
        elif node in seen:
            switches.add(node)
        else:
            several[node] = own
    notes: list[str] = []
    for node, own in several.items():
        if any(len(own & theirs) >= 2 for other, theirs in several.items() if other != node):
            machines.add(node)
        else:
            switches.add(node)
            notes.append(
                f"took {node} for a switch: no file names it and it sees {len(own)} nodes "
                "(a machine on several networks? pass --interface)"
            )
    ignored: set[str] = set()
    for node in adjacent:
        if node in views:
            continue
        if bridge.get(node) or adjacent[node] & machines:
            switches.add(node)
        elif bridge.get(node) is False:
            machines.add(node)
        else:
            ignored.add(node)
    return machines, switches, ignored, notes


def _placement(
    machine: str,
    views: dict[str, list[Neighbour]],
    canon: dict[str, str],
    switches: set[str],
) -> tuple[str, float | None] | None:
    """(switch, link speed) of a machine: its own file's neighbour switch, else the switch
    whose file names it; None when neither tells."""
    own = [n for n in views.get(machine, []) if canon[n.key] in switches]
    distinct = sorted({canon[n.key] for n in own}, key=natural_key)
    if len(distinct) > 1:
        listed = ", ".join(f"{n.interface}: {canon[n.key]}" for n in own[:4])
        raise InputError(
            f"lldp: machine {machine} has neighbours on two switches ({listed}); aapcgen needs "
            "one switch per machine: pick the MPI network's interface with --interface"
        )
    seen_by = [
        (owner, n)
        for owner in sorted(switches & set(views), key=natural_key)
        for n in views[owner]
        if canon[n.key] == machine
    ]
    if own:
        other = [owner for owner, _ in seen_by if owner != distinct[0]]
        if other:
            raise InputError(
                f"lldp: machine {machine}: its own LLDP data names switch {distinct[0]}, but "
                f"{other[0]}'s names it too"
            )
        return distinct[0], own[0].speed
    owners = sorted({owner for owner, _ in seen_by}, key=natural_key)
    if len(owners) > 1:
        raise InputError(f"lldp: machine {machine} is named by two switches ({', '.join(owners)})")
    return (owners[0], seen_by[0][1].speed) if owners else None


def filter_interfaces(
    views: dict[str, list[Neighbour]], patterns: list[str] | None
) -> dict[str, list[Neighbour]]:
    """Keep the neighbours on interfaces matching ``patterns`` (shell globs), in each file that
    has such an interface (a switch's ports keep their names)."""
    if not patterns:
        return views
    kept = {}
    for owner, neighbours in views.items():
        match = [n for n in neighbours if any(fnmatch.fnmatch(n.interface, p) for p in patterns)]
        kept[owner] = match if match else neighbours
    return kept


def _switch_edges(
    views: dict[str, list[Neighbour]], canon: dict[str, str], switches: set[str]
) -> dict[frozenset[str], list[float | None]]:
    """Switch pair -> speeds of the cables between them (each cable once, seen from either end)."""
    cables: dict[frozenset[str], dict[tuple[str, str], float | None]] = {}
    for owner, neighbours in views.items():
        if owner not in switches:
            continue
        for n in neighbours:
            other = canon[n.key]
            if other not in switches or other == owner:
                continue
            pair = frozenset((owner, other))
            ends = tuple(sorted([(owner, n.interface), (other, n.port or "?")]))
            key = (f"{ends[0][0]}:{ends[0][1]}", f"{ends[1][0]}:{ends[1][1]}")
            cables.setdefault(pair, {})[key] = n.speed
    return {pair: list(found.values()) for pair, found in cables.items()}


def _components(nodes: list[str], edges: list[frozenset[str]]) -> list[list[str]]:
    adjacent: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        a, b = sorted(edge)
        adjacent[a].append(b)
        adjacent[b].append(a)
    seen: set[str] = set()
    parts = []
    for start in nodes:
        if start in seen:
            continue
        part, stack = [], [start]
        seen.add(start)
        while stack:
            node = stack.pop()
            part.append(node)
            for other in adjacent[node]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        parts.append(sorted(part, key=natural_key))
    return parts


def _find_cycle(nodes: list[str], edges: list[frozenset[str]]) -> list[str] | None:
    parent: dict[str, str] = {node: node for node in nodes}

    def root(node: str) -> str:
        while parent[node] != node:
            node = parent[node]
        return node

    adjacent: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        a, b = sorted(edge, key=natural_key)
        if root(a) == root(b):
            return [*_path(adjacent, a, b), a]
        parent[root(a)] = root(b)
        adjacent[a].append(b)
        adjacent[b].append(a)
    return None


def _path(adjacent: dict[str, list[str]], start: str, goal: str) -> list[str]:
    previous: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in adjacent[node]:
            if other not in previous:
                previous[other] = node
                queue.append(other)
    path = [goal]
    while (node := previous[path[-1]]) is not None:
        path.append(node)
    return path[::-1]


def _orient(
    part: list[str], edges: dict[frozenset[str], float]
) -> tuple[str, list[tuple[str, str, float]]]:
    """Root a component at its best-connected switch; (parent, child, speed) links."""
    degree = {node: sum(1 for e in edges if node in e) for node in part}
    root = max(part, key=lambda node: degree[node])  # the first of the best connected
    links, seen, queue = [], {root}, [root]
    while queue:
        node = queue.pop(0)
        for edge, speed in edges.items():
            if node in edge:
                (other,) = edge - {node}
                if other not in seen:
                    seen.add(other)
                    queue.append(other)
                    links.append((node, other, speed))
    return root, links


@dataclass(frozen=True)
class Speeds:
    machine: float = 125e6
    link: float | None = None  # switch-to-switch; None: the machine speed


def build_lldp_tree(
    views: dict[str, list[Neighbour]],
    name: str,
    speeds: Speeds | None = None,
    interfaces: list[str] | None = None,
    add_root: str | None = None,
) -> LldpResult:
    """The switch tree the LLDP tables show, and one line per link they do not."""
    speeds = speeds or Speeds()
    link_default = speeds.machine if speeds.link is None else speeds.link
    views = filter_interfaces(views, interfaces)
    canon = _canonical(views)
    machines, switches, ignored, notes = classify(views, canon)
    notes += [
        f"ignored {node}: seen only by switches, without a Bridge capability"
        for node in sorted(ignored)
    ]
    unknown: list[str] = []
    placed: list[Machine] = []
    for machine in sorted(machines, key=natural_key):
        where = _placement(machine, views, canon, switches)
        if where is None:
            unknown.append(
                f"machine {machine}: its LLDP data names no switch (LLDP off on that port?); "
                f"add '- {{name: {machine}, switch: SWITCH}}' under machines:"
            )
            continue
        if machine not in views:
            notes.append(f"machine {machine} has no file: placed by {where[0]}'s LLDP data")
        placed.append(Machine(machine, where[0], where[1] or speeds.machine))
    cable_speeds = _switch_edges(views, canon, switches)
    edges: dict[frozenset[str], float] = {}
    for pair, found in cable_speeds.items():
        known = [s for s in found if s is not None]
        edges[pair] = sum(known) if len(known) == len(found) else link_default * len(found)
        if len(found) > 1:
            a, b = sorted(pair, key=natural_key)
            notes.append(f"{a} - {b}: {len(found)} cables, taken as one link of their total speed")
    used = {m.switch for m in placed}
    nodes = sorted(switches, key=natural_key)
    cycle = _find_cycle(nodes, list(edges))
    if cycle:
        raise InputError(
            f"lldp: switch links form a cycle: {' - '.join(cycle)} (LLDP also sees the links "
            "spanning tree blocks); write the tree in YAML without the blocked link"
        )
    parts = [p for p in _components(nodes, list(edges)) if used & set(p)]
    for part in _components(nodes, list(edges)):
        if not used & set(part):
            notes.append(f"left out switch(es) {', '.join(part[:4])}: no machine below them")
    oriented = [_orient(part, {e: s for e, s in edges.items() if e <= set(part)}) for part in parts]
    links = [SwitchLink(p, c, s) for _, part_links in oriented for p, c, s in part_links]
    roots = [root for root, _ in oriented]
    if len(roots) > 1 and add_root is not None:
        links = [SwitchLink(add_root, r, link_default) for r in roots] + links
        notes.append(
            f"switch {add_root} is not in the LLDP data: --add-root joined {', '.join(roots)}"
        )
    elif len(roots) > 1:
        for root in roots[1:]:
            unknown.append(
                f"switch link: how {root} connects to {roots[0]} (no switch's LLDP data names it); "
                f"add e.g. '- [{roots[0]}, {root}]' under links: (or pass --add-root CORE)"
            )
    ordered = [s for part in parts for s in part]
    if add_root is not None and len(roots) > 1:
        ordered.insert(0, add_root)
    tree = ImportedTree(name, ordered, placed, links, notes)
    return LldpResult(tree, unknown)
