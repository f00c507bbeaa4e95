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

from aapcgen.core import limits
from aapcgen.core.errors import InputError
from aapcgen.core.inputs import read_text
from aapcgen.core.model import Link, Topology
from aapcgen.core.resources import resource_dir
from aapcgen.core.safeyaml import Lines, read_yaml
from aapcgen.core.units import parse_bandwidth

DEFAULT_BANDWIDTH = "1Gbit"
BUILTIN_NAME = "paper-fig1"

_TOP_KEYS = (
    "name",
    "bandwidth",
    "switches",
    "machines",
    "links",
    "ranks_per_machine",
    "inflight",
)
# `inflight`: at most this many bytes (a rank's blocks in flight in the windows of small blocks)
MAX_INFLIGHT = 2**40
_REQUIRED_TOP_KEYS = ("switches", "machines")
_MACHINE_KEYS = ("name", "switch", "host", "rank", "bandwidth")
_LINK_KEYS = ("ends", "bandwidth")

_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_HOST_RE = re.compile(r"[A-Za-z0-9_.:\-]+")
_NAME_CHARS = "letters, digits, '-', '_', '.'"
_RANGE_GROUP_RE = re.compile(r"\[([^\[\]]*)\]")
_RANGE_ITEM_RE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_MAX_EXPANSION = 1_000_000


# --------------------------------------------------------------------------- YAML reading


def _read_text(path: str | os.PathLike[str], source: str) -> str:
    """The file's text; every failure (missing, a folder, a device, too big, not UTF-8) as
    InputError (core/inputs.py)."""
    return read_text(path, source, "topology file")


def load_topology(path: str | os.PathLike[str]) -> Topology:
    """Read, parse and validate the topology file ``path``."""
    source = os.fspath(path)
    data, lines = read_yaml(_read_text(path, source), source)
    return parse_topology(data, source, lines)


def builtin_topology() -> Topology:
    """The topology of Figure 1 of the paper (6 switches, 5 machines), shipped with aapcgen."""
    path = resource_dir("topologies") / f"{BUILTIN_NAME}.yaml"
    source = f"<built-in {BUILTIN_NAME}>"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{source}: cannot read {path}: {exc.strerror or exc}") from None
    data, lines = read_yaml(text, source)
    return parse_topology(data, source, lines)


def shipped_examples() -> list[str]:
    """The names of the example topologies shipped with aapcgen (topologies/*.yaml)."""
    return sorted(p.stem for p in resource_dir("topologies").glob("*.yaml"))


def topology_path(path: str) -> str:
    """``path``, or the shipped example of that name when no such file exists and the name has
    no folder in it (``two-level-1024``, ``two-level-1024.yaml``). InputError for a bare name
    that is neither, with the closest examples."""
    if os.path.exists(path) or os.sep in path or (os.altsep and os.altsep in path):
        return path
    name = path.removesuffix(".yaml")
    shipped = resource_dir("topologies") / f"{name}.yaml"
    if shipped.is_file():
        return str(shipped)
    close = difflib.get_close_matches(name, shipped_examples(), n=3, cutoff=0.5)
    hint = (
        f"did you mean {', '.join(close)}?"
        if close
        else f"the shipped examples are in {resource_dir('topologies')}"
    )
    raise InputError(f"{path}: file not found, nor a shipped example of that name ({hint})")


def topology_or_builtin(path: str | None) -> Topology:
    """The topology in ``path`` (a file, or the name of a shipped example); without a path, the
    built-in example, saying so on stderr."""
    if path is None:
        topo = builtin_topology()
        print(
            f"aapcgen: no topology given; using the built-in example '{topo.name}' "
            "(seed 002 Figure 1). Pass TOPO.yaml for your cluster.",
            file=sys.stderr,
        )
        return topo
    return load_topology(topology_path(path))


# --------------------------------------------------------------------------- small helpers


class _Context:
    """Carries the source name (and the lines of the file's parts, when read from a file) so
    that every error message starts with ``<source>:<line>:``."""

    def __init__(self, source: str, lines: Lines | None = None) -> None:
        self.source = source
        self.lines = lines or {}

    def error(self, where: str, message: str, at: str | None = None) -> InputError:
        """``<source>:<line>: <where>: <message>``; the line is that of ``at`` (a path such as
        ``machines[3].rank``) or of the part ``where`` names (``machines[3] (n3)``)."""
        line = self._line(at) or self._line(_path_of(where))
        position = f"{self.source}:{line}" if line else self.source
        return InputError(f"{position}: {where}: {message}")

    def _line(self, path: str | None) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path.rpartition(".")[0] if "." in path else path.partition("[")[0]
            if path in self.lines:
                return self.lines[path]
            if "[" not in path and "." not in path:
                break
        return None


_PATH_RE = re.compile(r"[a-z_]+(\[\d+\])?")
SHOWN_CHARS = 40  # characters of a user's value quoted in a message


def _path_of(where: str) -> str | None:
    """``machines[3] (n3)`` -> ``machines[3]``; ``top level`` -> None (line 1)."""
    if where == "top level":
        return ""
    match = _PATH_RE.match(where)
    return match.group(0) if match else None


def _clip(text: str, width: int = SHOWN_CHARS) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _show(value: object) -> str:
    """A scalar as Python writes it, at most SHOWN_CHARS characters; never a container's
    contents (they may be huge)."""
    if isinstance(value, (list, dict)):
        return f"of {len(value)} items"
    return _clip(repr(value))


def _q(name: str, width: int = SHOWN_CHARS) -> str:
    """A name from the file, quoted and clipped, for messages."""
    return f"'{_clip(name, width)}'"


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
    ctx: _Context,
    where: str,
    mapping: dict,
    allowed: Sequence[str],
    required: Sequence[str],
    path: str = "",
) -> None:
    for key in mapping:
        if key not in allowed:
            hint = ""
            if isinstance(key, str):
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
            raise ctx.error(
                where,
                f"unknown key {_show(key)} ({hint}allowed: {', '.join(sorted(allowed))})",
                f"{path}.{key}" if path else str(key),
            )
    for key in required:
        if key not in mapping:
            raise ctx.error(where, f"missing required key '{key}'")


def _expect_str(ctx: _Context, where: str, what: str, value: object) -> str:
    if not isinstance(value, str):
        hint = " (put it in quotes)" if isinstance(value, (bool, int, float)) else ""
        raise ctx.error(where, f"{what} must be a string, got {_kind(value)} {_show(value)}{hint}")
    if not value:
        raise ctx.error(where, f"{what} must not be empty")
    return value


def _bandwidth(ctx: _Context, where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ctx.error(
            where, f"bandwidth must be a string like '100Mbit', got {_kind(value)} {_show(value)}"
        )
    if not isinstance(value, str):
        raise ctx.error(where, f"bandwidth {_show(value)} has no unit (write e.g. 100Mbit)")
    try:
        return parse_bandwidth(value)
    except ValueError as exc:
        raise ctx.error(where, f"bad bandwidth: {exc}") from None


RANGE_DIGITS = 18  # digits of a range bound (a name of 10^18 machines is no cluster)


def _group_ranges(body: str) -> list[tuple[int, int, int]]:
    """The (low, high, zero-padding width) ranges of one bracket group, checked."""
    if not body:
        raise ValueError("empty brackets")
    ranges = []
    for item in body.split(","):
        match = _RANGE_ITEM_RE.fullmatch(item)
        if match is None:
            raise ValueError(f"{_q(item, 20)} is not a number or a range like 00-31")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        if max(len(low_text), len(high_text)) > RANGE_DIGITS:
            raise ValueError(f"range {_q(item, 20)} has a bound of more than {RANGE_DIGITS} digits")
        low, high = int(low_text), int(high_text)
        if low > high:
            raise ValueError(f"range {_q(item, 20)} goes backwards")
        if high - low >= _MAX_EXPANSION:
            raise ValueError(f"range {_q(item, 20)} is too large")
        ranges.append((low, high, len(low_text)))
    return ranges


def _range_groups(pattern: str) -> tuple[list[str], list[list[tuple[int, int, int]]]]:
    """The literal parts of ``pattern`` (one more than its groups) and its bracket groups."""
    literals: list[str] = []
    groups: list[list[tuple[int, int, int]]] = []
    position = 0
    for match in _RANGE_GROUP_RE.finditer(pattern):
        literal = pattern[position : match.start()]
        if "[" in literal or "]" in literal:
            raise ValueError("unbalanced or nested brackets")
        literals.append(literal)
        groups.append(_group_ranges(match.group(1)))
        position = match.end()
    tail = pattern[position:]
    if "[" in tail or "]" in tail:
        raise ValueError("unbalanced or nested brackets")
    literals.append(tail)
    return literals, groups


def range_size(pattern: str) -> int:
    """How many names ``pattern`` expands to, without expanding it (ValueError if malformed)."""
    _, groups = _range_groups(pattern)
    return math.prod(sum(high - low + 1 for low, high, _ in group) for group in groups)


def expand_ranges(pattern: str) -> list[str]:
    """Expand hostlist-style brackets: ``"n[00-02,7]"`` -> ``["n00", "n01", "n02", "n07"]``.

    Several bracket groups give their product, the first group varying slowest
    (``"r[1-2]n[1-2]"`` -> ``r1n1 r1n2 r2n1 r2n2``). The lower bound's digits give the zero
    padding. Raises ValueError with a short reason for a malformed expression.
    """
    if "[" not in pattern and "]" not in pattern:
        return [pattern]
    if range_size(pattern) > _MAX_EXPANSION:
        raise ValueError(f"expands to more than {_MAX_EXPANSION} names")
    literals, groups = _range_groups(pattern)
    parts: list[list[str]] = []
    for literal, group in zip(literals, groups):
        parts.append([literal])
        parts.append([str(i).zfill(w) for low, high, w in group for i in range(low, high + 1)])
    parts.append([literals[-1]])
    return ["".join(combination) for combination in itertools.product(*parts)]


def _size(ctx: _Context, where: str, what: str, pattern: str) -> int:
    """How many names ``pattern`` expands to (it is not expanded)."""
    try:
        return range_size(pattern)
    except ValueError as exc:
        raise ctx.error(where, f"bad range in {what} {_q(pattern)}: {exc}") from None


def _expand(
    ctx: _Context,
    where: str,
    what: str,
    pattern: str,
    limit: limits.Limit | None = None,
    before: int = 0,
) -> list[str]:
    """Expand ``pattern``; with ``limit``, first refuse more than it allows together with the
    ``before`` names already read."""
    if limit is not None:
        message = limits.exceeded(limit, before + _size(ctx, where, what, pattern))
        if message is not None:
            raise ctx.error(where, message)
    try:
        return expand_ranges(pattern)
    except ValueError as exc:
        raise ctx.error(where, f"bad range in {what} {_q(pattern)}: {exc}") from None


def _check_name(ctx: _Context, where: str, what: str, name: str, pattern: re.Pattern[str]) -> None:
    if pattern.fullmatch(name) is None:
        raise ctx.error(where, f"bad {what} {_q(name)}: use only {_NAME_CHARS}")


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


NAME_CHARS_MAX = 64  # a topology name is part of C identifiers and file names


def _topology_name(ctx: _Context, top: dict) -> str:
    if "name" not in top:
        stem = Path(ctx.source).stem
        if _NAME_RE.fullmatch(stem) is None or len(stem) > NAME_CHARS_MAX:
            raise ctx.error(
                "name", f"missing, and the file stem {_q(stem)} is not a valid name; add name:"
            )
        return stem
    name = _expect_str(ctx, "name", "name", top["name"])
    _check_name(ctx, "name", "topology name", name, _NAME_RE)
    if len(name) > NAME_CHARS_MAX:
        raise ctx.error(
            "name", f"{_q(name)} is longer than {NAME_CHARS_MAX} characters (C names, file names)"
        )
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
        names = _expand(ctx, where, "switch name", pattern, limits.SWITCHES, len(switches))
        for name in names:
            here = f"switches[{index}] ({_clip(name)})"
            _check_name(ctx, here, "switch name", name, _NAME_RE)
            if name in switches:
                raise ctx.error(here, f"duplicate switch name {_q(name)} (also {switches[name]})")
            switches[name] = here
    return switches


def _parse_machine_entry(ctx: _Context, index: int, entry: object, before: int) -> list[_Machine]:
    """The machines of ``machines[index]``; ``before`` machines precede it (for the limit)."""
    if not isinstance(entry, dict):
        raise ctx.error(
            f"machines[{index}]",
            f"must be a mapping like {{name: n0, switch: s0}}, got {_kind(entry)}",
        )
    label = entry.get("name")
    path = f"machines[{index}]"
    where = f"{path} ({_clip(label)})" if isinstance(label, str) else path
    _check_keys(ctx, where, entry, _MACHINE_KEYS, ("name",), path)
    pattern = _expect_str(ctx, where, "name", entry["name"])
    names = _expand(ctx, where, "name", pattern, limits.MACHINES, before)
    is_range = len(names) > 1 or "[" in pattern

    switches: list[str | None] = [None] * len(names)
    if "switch" in entry:
        switch_pattern = _expect_str(ctx, where, "switch", entry["switch"])
        count = _size(ctx, where, "switch", switch_pattern)
        if count > len(names) or len(names) % count:
            raise ctx.error(
                where,
                f"switch {_q(switch_pattern)} names {count} switches, which do not "
                f"divide the {len(names)} machines evenly",
            )
        switch_names = _expand(ctx, where, "switch", switch_pattern)
        switches = list(_spread(switch_names, len(names)))

    hosts: list[str | None] = [None] * len(names)
    if "host" in entry:
        host_pattern = _expect_str(ctx, where, "host", entry["host"])
        count = _size(ctx, where, "host", host_pattern)
        if count != len(names):
            raise ctx.error(
                where,
                f"host {_q(host_pattern)} expands to {count} names but name "
                f"{_q(pattern)} to {len(names)}",
            )
        hosts = list(_expand(ctx, where, "host", host_pattern))

    rank = entry.get("rank")
    if "rank" in entry:
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise ctx.error(where, f"rank must be an integer, got {_kind(rank)} {_show(rank)}")
        if is_range:
            raise ctx.error(where, "rank is not allowed on a range entry; list the machine alone")

    bandwidth = _bandwidth(ctx, where, entry["bandwidth"]) if "bandwidth" in entry else None

    machines = []
    for name, switch, host in zip(names, switches, hosts, strict=True):
        here = f"machines[{index}] ({_clip(name)})"
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
        machines.extend(_parse_machine_entry(ctx, index, entry, len(machines)))

    seen: dict[str, str] = {}
    hosts: dict[str, str] = {}
    for machine in machines:
        if machine.name in switches:
            raise ctx.error(
                machine.where,
                f"name {_q(machine.name)} is already used by a switch ({switches[machine.name]})",
            )
        if machine.name in seen:
            raise ctx.error(
                machine.where,
                f"duplicate machine name {_q(machine.name)} (also {seen[machine.name]})",
            )
        seen[machine.name] = machine.where
        if machine.host is not None:
            if machine.host in hosts:
                raise ctx.error(
                    machine.where,
                    f"duplicate host {_q(machine.host)} (also the host of {hosts[machine.host]})",
                )
            hosts[machine.host] = machine.where

    for machine in machines:
        if machine.switch is not None and machine.switch not in switches:
            if machine.switch in seen:
                raise ctx.error(
                    machine.where, f"switch {_q(machine.switch)} is a machine, not a switch"
                )
            raise ctx.error(
                machine.where,
                f"unknown switch {_q(machine.switch)}{_closest(machine.switch, switches)}",
            )

    if len(machines) < 2:
        raise ctx.error("machines", f"needs at least 2 machines, found {len(machines)}")
    return machines


def _link_entry(
    ctx: _Context, index: int, entry: object, nodes: int
) -> tuple[list[tuple[str, str]], float | None]:
    """Return the (expanded) end pairs of ``links[index]`` and its bandwidth, if given; an end
    may not name more than the ``nodes`` switches and machines there are."""
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
    expanded = []
    for end in ends:
        pattern = _expect_str(ctx, where, "link end", end)
        count = _size(ctx, where, "link end", pattern)
        if count > nodes:
            raise ctx.error(
                where, f"link end {_q(pattern)} names {count} nodes; there are only {nodes}"
            )
        expanded.append(_expand(ctx, where, "link end", pattern))
    return _pair(ctx, where, expanded[0], expanded[1], "link ends"), bandwidth


def _closest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close known name (a typo), else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {_q(close[0])}?)" if close else ""


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
            where,
            f"machine {_clip(machine.name)} is already attached to {_clip(switch)} "
            f"({machine.attached_by})",
        )
    if machine.switch is not None:
        raise ctx.error(
            where,
            f"machine {_clip(machine.name)} is on two switches "
            f"({_clip(machine.switch)}, {_clip(switch)})",
        )
    if bandwidth is not None:
        if machine.bandwidth is not None and machine.bandwidth != bandwidth:
            raise ctx.error(
                where,
                f"machine {_clip(machine.name)} gets different bandwidths from its entry and "
                "this link",
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
        pairs, bandwidth = _link_entry(ctx, index, entry, len(switches) + len(machines))
        for a, b in pairs:
            where = f"links[{index}] [{_clip(a)}, {_clip(b)}]"
            for end in (a, b):
                if end not in switches and end not in machines:
                    close = _closest(end, [*switches, *machines])
                    raise ctx.error(where, f"unknown node {_q(end)}{close}")
            if a == b:
                raise ctx.error(where, f"self-link: both ends are {_q(a)}")
            if a in machines and b in machines:
                raise ctx.error(
                    where,
                    f"links two machines ({_clip(a)}, {_clip(b)}); a machine attaches to one "
                    "switch",
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
                cycle = [_clip(x, 20) for x in [*_tree_path(adjacency, b, a), b]]
                if len(cycle) > 8:
                    cycle = [*cycle[:4], f"... ({len(cycle) - 7} more)", *cycle[-3:]]
                raise ctx.error(where, f"links form a cycle: {' - '.join(cycle)}")
            adjacency[a].append(b)
            adjacency[b].append(a)
            links.append(Link(a, b, default_bandwidth if bandwidth is None else bandwidth))

    first = next(iter(switches))
    for switch, where in switches.items():
        if components.find(switch) != components.find(first):
            raise ctx.error(
                where,
                f"switch {_q(switch)} is not connected to {_q(first)} "
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
                f"rank {_show(machine.rank)} is out of range [0, {count}) for {count} machines",
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


def parse_topology(data: object, source: str, lines: Lines | None = None) -> Topology:
    """Validate ``data`` (a parsed YAML document) and return the :class:`Topology`.

    ``source`` names the input in error messages and becomes ``Topology.source``; when
    ``data`` has no ``name:``, the stem of ``source`` is used. ``lines`` (from
    ``safeyaml.read_yaml``) puts the line of the offending part into messages.
    """
    ctx = _Context(source, lines)
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
    inflight = _inflight(ctx, data["inflight"]) if "inflight" in data else None
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
        inflight=inflight,
    )


def _inflight(ctx: _Context, value: object) -> float:
    """The bytes of `inflight:` (a whole number, or an amount such as 64KiB or 16MiB)."""
    amount = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str):
        amount = limits.parse_bytes(value)
    if amount is None or not 1 <= amount <= MAX_INFLIGHT:
        raise ctx.error(
            "inflight",
            f"must be a number of bytes from 1 to 1TiB such as 64KiB or 16MiB, got {_show(value)}",
        )
    return float(amount)


def _ranks_per_machine(ctx: _Context, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
        raise ctx.error(
            "ranks_per_machine", f"must be a whole number from 1 to 1024, got {_show(value)}"
        )
    return value
