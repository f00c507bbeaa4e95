"""Load and validate a switch-tree topology file (YAML) into a :class:`Topology`.

The format is described in ``docs/topology.md``. Every problem is reported as an
:class:`InputError` whose message is one line: ``<source>: <element>: <what is wrong>``.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from aapcgen.core.errors import InputError
from aapcgen.core.model import Link, Topology
from aapcgen.core.resources import resource_dir
from aapcgen.core.units import parse_bandwidth

DEFAULT_BANDWIDTH = "1Gbit"
BUILTIN_NAME = "paper-fig1"

_TOP_KEYS = ("name", "bandwidth", "switches", "machines", "links", "ranks_per_machine")
_REQUIRED_TOP_KEYS = ("switches", "machines")
_MACHINE_KEYS = ("name", "switch", "host", "rank", "bandwidth")
_LINK_KEYS = ("ends", "bandwidth")

_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_HOST_RE = re.compile(r"[A-Za-z0-9_.:\-]+")
_NAME_CHARS = "letters, digits, '-', '_', '.'"
_RANGE_GROUP_RE = re.compile(r"\[([^\[\]]*)\]")
_RANGE_ITEM_RE = re.compile(r"(\d+)(?:-(\d+))?")
_MAX_EXPANSION = 1_000_000


# --------------------------------------------------------------------------- YAML reading


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a mapping with the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_line: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                earlier = first_line.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it below
                continue
            if earlier is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first given on line {earlier})",
                    key_node.start_mark,
                )
            first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _read_yaml(text: str, source: str) -> object:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = _one_line(": ".join(p for p in (exc.context, exc.problem) if p))
        if mark is None:
            raise InputError(f"{source}: malformed YAML: {problem}") from None
        position = f"{mark.line + 1}:{mark.column + 1}"
        if problem.startswith("duplicate key"):
            raise InputError(f"{source}:{position}: {problem}") from None
        raise InputError(f"{source}:{position}: malformed YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: malformed YAML: {_one_line(str(exc))}") from None


def load_topology(path: str | os.PathLike[str]) -> Topology:
    """Read, parse and validate the topology file ``path``."""
    source = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{source}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, not a topology file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise InputError(f"{source}: cannot read file: {exc.strerror or exc}") from None
    return parse_topology(_read_yaml(text, source), source)


def builtin_topology() -> Topology:
    """The topology of Figure 1 of the paper (6 switches, 5 machines), shipped with aapcgen."""
    path = resource_dir("topologies") / f"{BUILTIN_NAME}.yaml"
    source = f"<built-in {BUILTIN_NAME}>"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{source}: cannot read {path}: {exc.strerror or exc}") from None
    return parse_topology(_read_yaml(text, source), source)


def topology_or_builtin(path: str | None) -> Topology:
    """The topology in ``path``; without a path, the built-in example, saying so on stderr."""
    if path is None:
        topo = builtin_topology()
        print(
            f"aapcgen: no topology given; using the built-in example '{topo.name}' "
            "(seed 002 Figure 1). Pass TOPO.yaml for your cluster.",
            file=sys.stderr,
        )
        return topo
    return load_topology(path)


# --------------------------------------------------------------------------- small helpers


class _Context:
    """Carries the source name so that every error message starts with it."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, where: str, message: str) -> InputError:
        return InputError(f"{self.source}: {where}: {message}")


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _check_keys(
    ctx: _Context, where: str, mapping: dict, allowed: Sequence[str], required: Sequence[str]
) -> None:
    for key in mapping:
        if key not in allowed:
            hint = ""
            if isinstance(key, str):
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
            raise ctx.error(
                where, f"unknown key {key!r} ({hint}allowed: {', '.join(sorted(allowed))})"
            )
    for key in required:
        if key not in mapping:
            raise ctx.error(where, f"missing required key '{key}'")


def _expect_str(ctx: _Context, where: str, what: str, value: object) -> str:
    if not isinstance(value, str):
        hint = " (put it in quotes)" if isinstance(value, (bool, int, float)) else ""
        raise ctx.error(where, f"{what} must be a string, got {_kind(value)} {value!r}{hint}")
    if not value:
        raise ctx.error(where, f"{what} must not be empty")
    return value


def _bandwidth(ctx: _Context, where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ctx.error(
            where, f"bandwidth must be a string like '100Mbit', got {_kind(value)} {value!r}"
        )
    if not isinstance(value, str):
        raise ctx.error(where, f"bandwidth {value!r} has no unit (write e.g. {value}Mbit)")
    try:
        return parse_bandwidth(value)
    except ValueError as exc:
        raise ctx.error(where, f"bad bandwidth: {exc}") from None


def _expand_group(body: str) -> list[str]:
    if not body:
        raise ValueError("empty brackets")
    values: list[str] = []
    for item in body.split(","):
        match = _RANGE_ITEM_RE.fullmatch(item)
        if match is None:
            raise ValueError(f"'{item}' is not a number or a range like 00-31")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        low, high = int(low_text), int(high_text)
        if low > high:
            raise ValueError(f"range '{item}' goes backwards")
        if high - low >= _MAX_EXPANSION:
            raise ValueError(f"range '{item}' is too large")
        width = len(low_text)
        values.extend(str(i).zfill(width) for i in range(low, high + 1))
    return values


def expand_ranges(pattern: str) -> list[str]:
    """Expand hostlist-style brackets: ``"n[00-02,7]"`` -> ``["n00", "n01", "n02", "n07"]``.

    Several bracket groups give their product, the first group varying slowest
    (``"r[1-2]n[1-2]"`` -> ``r1n1 r1n2 r2n1 r2n2``). The lower bound's digits give the zero
    padding. Raises ValueError with a short reason for a malformed expression.
    """
    if "[" not in pattern and "]" not in pattern:
        return [pattern]
    parts: list[list[str]] = []
    position = 0
    for match in _RANGE_GROUP_RE.finditer(pattern):
        literal = pattern[position : match.start()]
        if "[" in literal or "]" in literal:
            raise ValueError("unbalanced or nested brackets")
        parts.append([literal])
        parts.append(_expand_group(match.group(1)))
        position = match.end()
    tail = pattern[position:]
    if "[" in tail or "]" in tail:
        raise ValueError("unbalanced or nested brackets")
    parts.append([tail])
    if math.prod(len(part) for part in parts) > _MAX_EXPANSION:
        raise ValueError(f"expands to more than {_MAX_EXPANSION} names")
    return ["".join(combination) for combination in itertools.product(*parts)]


def _expand(ctx: _Context, where: str, what: str, pattern: str) -> list[str]:
    try:
        return expand_ranges(pattern)
    except ValueError as exc:
        raise ctx.error(where, f"bad range in {what} '{pattern}': {exc}") from None


def _check_name(ctx: _Context, where: str, what: str, name: str, pattern: re.Pattern[str]) -> None:
    if pattern.fullmatch(name) is None:
        raise ctx.error(where, f"bad {what} '{name}': use only {_NAME_CHARS}")


def _spread(short: Sequence[str], long_count: int) -> list[str]:
    """Pair ``short`` with ``long_count`` items: each gets an equal consecutive block."""
    block = long_count // len(short)
    return [short[i // block] for i in range(long_count)]


def _pair(
    ctx: _Context, where: str, first: list[str], second: list[str], what: str
) -> list[tuple[str, str]]:
    """Pair two expansions: same length -> one to one; else the shorter spreads in blocks."""
    if len(first) == len(second):
        return list(zip(first, second, strict=True))
    if len(first) < len(second) and len(second) % len(first) == 0:
        return list(zip(_spread(first, len(second)), second, strict=True))
    if len(second) < len(first) and len(first) % len(second) == 0:
        return list(zip(first, _spread(second, len(first)), strict=True))
    raise ctx.error(where, f"{what}: {len(first)} and {len(second)} names cannot be paired evenly")


# --------------------------------------------------------------------------- parsing


@dataclass
class _Machine:
    name: str
    where: str  # e.g. "machines[3] (n3)"
    switch: str | None
    attached_by: str  # "machines[3]" or the link that attached it
    bandwidth: float | None
    host: str | None
    rank: int | None


def _topology_name(ctx: _Context, top: dict) -> str:
    if "name" not in top:
        stem = Path(ctx.source).stem
        if _NAME_RE.fullmatch(stem) is None:
            raise ctx.error(
                "name", f"missing, and the file stem '{stem}' is not a valid name; add name:"
            )
        return stem
    name = _expect_str(ctx, "name", "name", top["name"])
    _check_name(ctx, "name", "topology name", name, _NAME_RE)
    return name


def _parse_switches(ctx: _Context, value: object) -> dict[str, str]:
    """Return switch name -> where it was declared, in declaration order."""
    if not isinstance(value, list):
        raise ctx.error("switches", f"must be a list of switch names, got {_kind(value)}")
    if not value:
        raise ctx.error("switches", "must name at least one switch")
    switches: dict[str, str] = {}
    for index, entry in enumerate(value):
        where = f"switches[{index}]"
        pattern = _expect_str(ctx, where, "switch name", entry)
        for name in _expand(ctx, where, "switch name", pattern):
            here = f"switches[{index}] ({name})"
            _check_name(ctx, here, "switch name", name, _NAME_RE)
            if name in switches:
                raise ctx.error(here, f"duplicate switch name '{name}' (also {switches[name]})")
            switches[name] = here
    return switches


def _parse_machine_entry(ctx: _Context, index: int, entry: object) -> list[_Machine]:
    if not isinstance(entry, dict):
        raise ctx.error(
            f"machines[{index}]",
            f"must be a mapping like {{name: n0, switch: s0}}, got {_kind(entry)}",
        )
    label = entry.get("name")
    where = f"machines[{index}] ({label})" if isinstance(label, str) else f"machines[{index}]"
    _check_keys(ctx, where, entry, _MACHINE_KEYS, ("name",))
    pattern = _expect_str(ctx, where, "name", entry["name"])
    names = _expand(ctx, where, "name", pattern)
    is_range = len(names) > 1 or "[" in pattern

    switches: list[str | None] = [None] * len(names)
    if "switch" in entry:
        switch_pattern = _expect_str(ctx, where, "switch", entry["switch"])
        switch_names = _expand(ctx, where, "switch", switch_pattern)
        if len(switch_names) > len(names) or len(names) % len(switch_names):
            raise ctx.error(
                where,
                f"switch '{switch_pattern}' names {len(switch_names)} switches, which do not "
                f"divide the {len(names)} machines evenly",
            )
        switches = list(_spread(switch_names, len(names)))

    hosts: list[str | None] = [None] * len(names)
    if "host" in entry:
        host_pattern = _expect_str(ctx, where, "host", entry["host"])
        host_names = _expand(ctx, where, "host", host_pattern)
        if len(host_names) != len(names):
            raise ctx.error(
                where,
                f"host '{host_pattern}' expands to {len(host_names)} names but name "
                f"'{pattern}' to {len(names)}",
            )
        hosts = list(host_names)

    rank = entry.get("rank")
    if "rank" in entry:
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise ctx.error(where, f"rank must be an integer, got {_kind(rank)} {rank!r}")
        if is_range:
            raise ctx.error(where, "rank is not allowed on a range entry; list the machine alone")

    bandwidth = _bandwidth(ctx, where, entry["bandwidth"]) if "bandwidth" in entry else None

    machines = []
    for name, switch, host in zip(names, switches, hosts, strict=True):
        here = f"machines[{index}] ({name})"
        _check_name(ctx, here, "machine name", name, _NAME_RE)
        if switch is not None:
            _check_name(ctx, here, "switch name", switch, _NAME_RE)
        if host is not None:
            _check_name(ctx, here, "host", host, _HOST_RE)
        machines.append(_Machine(name, here, switch, f"machines[{index}]", bandwidth, host, rank))
    return machines


def _parse_machines(ctx: _Context, value: object, switches: dict[str, str]) -> list[_Machine]:
    if not isinstance(value, list):
        raise ctx.error("machines", f"must be a list of machine entries, got {_kind(value)}")
    machines: list[_Machine] = []
    for index, entry in enumerate(value):
        machines.extend(_parse_machine_entry(ctx, index, entry))

    seen: dict[str, str] = {}
    hosts: dict[str, str] = {}
    for machine in machines:
        if machine.name in switches:
            raise ctx.error(
                machine.where,
                f"name '{machine.name}' is already used by a switch ({switches[machine.name]})",
            )
        if machine.name in seen:
            raise ctx.error(
                machine.where,
                f"duplicate machine name '{machine.name}' (also {seen[machine.name]})",
            )
        seen[machine.name] = machine.where
        if machine.host is not None:
            if machine.host in hosts:
                raise ctx.error(
                    machine.where,
                    f"duplicate host '{machine.host}' (also the host of {hosts[machine.host]})",
                )
            hosts[machine.host] = machine.where

    for machine in machines:
        if machine.switch is not None and machine.switch not in switches:
            if machine.switch in seen:
                raise ctx.error(
                    machine.where, f"switch '{machine.switch}' is a machine, not a switch"
                )
            raise ctx.error(machine.where, f"unknown switch '{machine.switch}'")

    if len(machines) < 2:
        raise ctx.error("machines", f"needs at least 2 machines, found {len(machines)}")
    return machines


def _link_entry(
    ctx: _Context, index: int, entry: object
) -> tuple[list[tuple[str, str]], float | None]:
    """Return the (expanded) end pairs of ``links[index]`` and its bandwidth, if given."""
    where = f"links[{index}]"
    bandwidth = None
    if isinstance(entry, dict):
        _check_keys(ctx, where, entry, _LINK_KEYS, ("ends",))
        ends = entry["ends"]
        if "bandwidth" in entry:
            bandwidth = _bandwidth(ctx, where, entry["bandwidth"])
    elif isinstance(entry, list):
        ends = entry
    else:
        raise ctx.error(
            where,
            f"must be a list [a, b] or a mapping {{ends: [a, b], bandwidth: ...}}, "
            f"got {_kind(entry)}",
        )
    if not isinstance(ends, list) or len(ends) != 2:
        count = f"{len(ends)} ends" if isinstance(ends, list) else _kind(ends)
        raise ctx.error(where, f"a link must have exactly 2 ends, got {count}")
    first = _expand(ctx, where, "link end", _expect_str(ctx, where, "link end", ends[0]))
    second = _expand(ctx, where, "link end", _expect_str(ctx, where, "link end", ends[1]))
    return _pair(ctx, where, first, second, "link ends"), bandwidth


def _tree_path(adjacency: dict[str, list[str]], start: str, goal: str) -> list[str]:
    """The path from ``start`` to ``goal`` in the forest ``adjacency`` (they are connected)."""
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            break
        for neighbour in adjacency[node]:
            if neighbour not in parent:
                parent[neighbour] = node
                queue.append(neighbour)
    path = [goal]
    while (previous := parent[path[-1]]) is not None:
        path.append(previous)
    return path[::-1]


class _UnionFind:
    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {item: item for item in items}

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> bool:
        """Join the sets of ``a`` and ``b``; False if they were already one set."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        self.parent[root_a] = root_b
        return True


def _attach(
    ctx: _Context, where: str, machine: _Machine, switch: str, bandwidth: float | None
) -> None:
    if machine.switch == switch:
        raise ctx.error(
            where, f"machine {machine.name} is already attached to {switch} ({machine.attached_by})"
        )
    if machine.switch is not None:
        raise ctx.error(
            where, f"machine {machine.name} is on two switches ({machine.switch}, {switch})"
        )
    if bandwidth is not None:
        if machine.bandwidth is not None and machine.bandwidth != bandwidth:
            raise ctx.error(
                where,
                f"machine {machine.name} gets different bandwidths from its entry and this link",
            )
        machine.bandwidth = bandwidth
    machine.switch = switch
    machine.attached_by = where


def _parse_links(
    ctx: _Context,
    value: object,
    switches: dict[str, str],
    machines: dict[str, _Machine],
    default_bandwidth: float,
) -> list[Link]:
    """Return the switch-to-switch links; machine-to-switch links attach their machine."""
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ctx.error("links", f"must be a list of links, got {_kind(value)}")
    links: list[Link] = []
    declared: dict[frozenset[str], str] = {}
    adjacency: dict[str, list[str]] = {switch: [] for switch in switches}
    components = _UnionFind(switches)
    for index, entry in enumerate(value):
        pairs, bandwidth = _link_entry(ctx, index, entry)
        for a, b in pairs:
            where = f"links[{index}] [{a}, {b}]"
            for end in (a, b):
                if end not in switches and end not in machines:
                    raise ctx.error(where, f"unknown node '{end}'")
            if a == b:
                raise ctx.error(where, f"self-link: both ends are '{a}'")
            if a in machines and b in machines:
                raise ctx.error(
                    where, f"links two machines ({a}, {b}); a machine attaches to one switch"
                )
            if a in machines or b in machines:
                machine, switch = (machines[a], b) if a in machines else (machines[b], a)
                _attach(ctx, where, machine, switch, bandwidth)
                continue
            key = frozenset((a, b))
            if key in declared:
                raise ctx.error(where, f"duplicate link (also {declared[key]})")
            declared[key] = where
            if not components.union(a, b):
                cycle = [*_tree_path(adjacency, b, a), b]
                raise ctx.error(where, f"links form a cycle: {' - '.join(cycle)}")
            adjacency[a].append(b)
            adjacency[b].append(a)
            links.append(Link(a, b, default_bandwidth if bandwidth is None else bandwidth))

    first = next(iter(switches))
    for switch, where in switches.items():
        if components.find(switch) != components.find(first):
            raise ctx.error(
                where,
                f"switch '{switch}' is not connected to '{first}' "
                "(the switch links must form one tree)",
            )
    return links


def _assign_ranks(ctx: _Context, machines: list[_Machine]) -> list[_Machine]:
    """Return ``machines`` in rank order (explicit ranks first, the rest fill in list order)."""
    count = len(machines)
    by_rank: list[_Machine | None] = [None] * count
    for machine in machines:
        if machine.rank is None:
            continue
        if not 0 <= machine.rank < count:
            raise ctx.error(
                machine.where,
                f"rank {machine.rank} is out of range [0, {count}) for {count} machines",
            )
        holder = by_rank[machine.rank]
        if holder is not None:
            raise ctx.error(machine.where, f"duplicate rank {machine.rank} (also {holder.where})")
        by_rank[machine.rank] = machine
    free = (rank for rank, holder in enumerate(by_rank) if holder is None)
    for machine in machines:
        if machine.rank is None:
            by_rank[next(free)] = machine
    return [machine for machine in by_rank if machine is not None]


def parse_topology(data: object, source: str) -> Topology:
    """Validate ``data`` (a parsed YAML document) and return the :class:`Topology`.

    ``source`` names the input in error messages and becomes ``Topology.source``; when
    ``data`` has no ``name:``, the stem of ``source`` is used.
    """
    ctx = _Context(source)
    if data is None:
        raise InputError(f"{source}: empty file")
    if not isinstance(data, dict):
        raise ctx.error(
            "top level",
            f"must be a mapping with keys {', '.join(_TOP_KEYS)}, got {_kind(data)}",
        )
    _check_keys(ctx, "top level", data, _TOP_KEYS, _REQUIRED_TOP_KEYS)
    name = _topology_name(ctx, data)
    default_bandwidth = _bandwidth(ctx, "bandwidth", data.get("bandwidth", DEFAULT_BANDWIDTH))
    switches = _parse_switches(ctx, data["switches"])
    machine_list = _parse_machines(ctx, data["machines"], switches)
    machines = {machine.name: machine for machine in machine_list}
    links = _parse_links(ctx, data.get("links"), switches, machines, default_bandwidth)
    for machine in machine_list:
        if machine.switch is None:
            raise ctx.error(
                machine.where, "not attached to any switch (give switch: or a link to a switch)"
            )
    ordered = _assign_ranks(ctx, machine_list)
    ranks_per_machine = _ranks_per_machine(ctx, data.get("ranks_per_machine", 1))
    return Topology(
        name=name,
        source=source,
        bandwidth=default_bandwidth,
        switches=tuple(switches),
        machines=tuple(m.name for m in ordered),
        machine_switch=tuple(m.switch for m in ordered if m.switch is not None),
        machine_bandwidth=tuple(
            default_bandwidth if m.bandwidth is None else m.bandwidth for m in ordered
        ),
        hosts=tuple(m.host for m in ordered),
        links=tuple(links),
        ranks_per_machine=ranks_per_machine,
    )


def _ranks_per_machine(ctx: _Context, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
        raise ctx.error(
            "ranks_per_machine", f"must be a whole number from 1 to 1024, got {value!r}"
        )
    return value
