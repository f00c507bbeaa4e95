"""The tree an importer found, and the YAML topology file written from it.

An :class:`ImportedTree` is a rooted description: switches, each switch's parent link, machines in
rank order with their switch. :func:`to_data` turns it into the YAML document of
docs/topology.md, with host-list ranges where names run consecutively (``n[00-31]``), and
:func:`render_yaml` prints that document in the style of the shipped topologies. The loader
(:func:`aapcgen.core.topology.parse_topology`) validates the result like any hand-written file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

from aapcgen.core.model import Topology
from aapcgen.core.topology import expand_ranges, parse_topology
from aapcgen.core.units import format_bandwidth

_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_FLOW_WIDTH = 100


@dataclass(frozen=True)
class Machine:
    name: str
    switch: str
    bandwidth: float  # bytes/s of the machine's own link


@dataclass(frozen=True)
class SwitchLink:
    parent: str
    child: str
    bandwidth: float  # bytes/s


@dataclass
class ImportedTree:
    """A switch tree as an importer found it; ``machines`` in rank order."""

    name: str
    switches: list[str]
    machines: list[Machine]
    links: list[SwitchLink]
    notes: list[str] = field(default_factory=list)  # header comments of the YAML file


# --------------------------------------------------------------------------- host-list ranges


def _split_number(name: str) -> tuple[str, str, str] | None:
    match = _LAST_NUMBER.match(name)
    return (match[1], match[2], match[3]) if match else None


def _follows(previous: str, following: str) -> bool:
    """``following`` is the next name after ``previous`` in one bracket range: same prefix and
    suffix, number plus one, printed as the range would print it."""
    a, b = _split_number(previous), _split_number(following)
    if a is None or b is None or a[0] != b[0] or a[2] != b[2]:
        return False
    return b[1] == str(int(a[1]) + 1).zfill(len(a[1]))


def _runs(names: Sequence[str]) -> list[list[str]]:
    """Split ``names`` into maximal runs of consecutive numbers (each run at least one name)."""
    runs: list[list[str]] = []
    for name in names:
        if runs and _follows(runs[-1][-1], name) and _same_width(runs[-1][0], name):
            runs[-1].append(name)
        else:
            runs.append([name])
    return runs


def _same_width(first: str, name: str) -> bool:
    """A range pads every number to the width of its lower bound: ``n[08-10]`` but ``n[8-10]``."""
    low, number = _split_number(first), _split_number(name)
    assert low is not None and number is not None
    return number[1] == str(int(number[1])).zfill(len(low[1]))


def _range_item(run: list[str]) -> str:
    low = _split_number(run[0])
    high = _split_number(run[-1])
    assert low is not None and high is not None
    if len(run) == 1:
        return low[1]
    return f"{low[1]}-{str(int(high[1])).zfill(len(low[1]))}"


def compress_names(names: Sequence[str]) -> list[str]:
    """Host-list patterns that expand (``expand_ranges``, in order) to exactly ``names``:
    ``[n0, n1, n2, n3, n7, x]`` -> ``["n[0-3,7]", "x"]``. Names with brackets stay literal only
    if they expand to themselves; the result is checked by expanding it back."""
    patterns: list[str] = []
    groups: list[tuple[tuple[str, str] | None, list[list[str]]]] = []
    for run in _runs(names):
        parts = _split_number(run[0])
        key = None if parts is None else (parts[0], parts[2])
        if key is not None and groups and groups[-1][0] == key:
            groups[-1][1].append(run)
        else:
            groups.append((key, [run]))
    for key, runs in groups:
        if key is None or (len(runs) == 1 and len(runs[0]) == 1):
            patterns.append(runs[0][0])
        else:
            prefix, suffix = key
            patterns.append(f"{prefix}[{','.join(_range_item(r) for r in runs)}]{suffix}")
    expanded = [name for pattern in patterns for name in expand_ranges(pattern)]
    if expanded != list(names):  # e.g. a name with brackets of its own: list the names
        return list(names)
    return patterns


def join_hostlist(names: Sequence[str]) -> str:
    """A Slurm host list for ``names`` in order: ``n[0-3,7],x``."""
    return ",".join(compress_names(names))


# --------------------------------------------------------------------------- YAML document


def short_bandwidth(bytes_per_s: float) -> str:
    """``125e6`` -> ``"1Gbit"``: the loader's unit syntax, exact for whole numbers of bits."""
    return format_bandwidth(bytes_per_s).replace(" ", "").replace("bit/s", "bit")


def _common_bandwidth(tree: ImportedTree) -> float:
    counts = Counter([m.bandwidth for m in tree.machines] + [ln.bandwidth for ln in tree.links])
    return counts.most_common(1)[0][0]


def _blocks(items: Sequence[tuple[str, float, str]]) -> list[tuple[list[str], float, list[str]]]:
    """Consecutive (owner, bandwidth, name) items grouped into blocks of one owner and speed,
    then equal-sized consecutive blocks merged where owners and names each compress to one
    range: ``n[0000-1023]`` on ``e[0-31]`` (the loader spreads them in equal blocks)."""
    single: list[tuple[str, float, list[str]]] = []
    for owner, bandwidth, name in items:
        if single and single[-1][0] == owner and single[-1][1] == bandwidth:
            single[-1][2].append(name)
        else:
            single.append((owner, bandwidth, [name]))
    merged: list[tuple[list[str], float, list[str]]] = []
    for owner, bandwidth, names in single:
        if merged:
            owners, speed, known = merged[-1]
            size = len(known) // len(owners)
            if (
                speed == bandwidth
                and size == len(names)
                and len(compress_names([*owners, owner])) == 1
                and len(compress_names([*known, *names])) == 1
            ):
                owners.append(owner)
                known.extend(names)
                continue
        merged.append(([owner], bandwidth, list(names)))
    return merged


def _entries_of(
    items: Sequence[tuple[str, float, str]], default: float, machine: bool
) -> list[object]:
    entries: list[object] = []
    for owners, bandwidth, names in _blocks(items):
        owner = compress_names(owners)[0] if len(owners) > 1 else owners[0]
        for pattern in compress_names(names):  # one pattern when owners were merged
            speed = {} if bandwidth == default else {"bandwidth": short_bandwidth(bandwidth)}
            if machine:
                entries.append({"name": pattern, "switch": owner, **speed})
            elif speed:
                entries.append({"ends": [owner, pattern], **speed})
            else:
                entries.append([owner, pattern])
    return entries


def to_data(tree: ImportedTree) -> dict:
    """The YAML document (docs/topology.md) of ``tree``, ranges compressed."""
    default = _common_bandwidth(tree) if tree.machines else 125e6
    data: dict = {
        "name": tree.name,
        "bandwidth": short_bandwidth(default),
        "switches": compress_names(tree.switches),
        "machines": _entries_of(
            [(m.switch, m.bandwidth, m.name) for m in tree.machines], default, machine=True
        ),
    }
    links = _entries_of([(ln.parent, ln.bandwidth, ln.child) for ln in tree.links], default, False)
    if links:
        data["links"] = links
    return data


def to_topology(tree: ImportedTree, source: str) -> Topology:
    """Validate ``tree`` with the loader of hand-written files."""
    return parse_topology(to_data(tree), source)


def _scalar(value: object) -> str:
    if isinstance(value, str) and _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def _flow(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def render_yaml(data: dict, comments: Sequence[str] = ()) -> str:
    """The document as the shipped topologies write it: one flow entry per line."""
    lines = [f"# {c}" if c else "#" for c in comments]
    for key, value in data.items():
        if not isinstance(value, list):
            lines.append(f"{key}: {_scalar(value)}")
            continue
        flow = f"{key}: {_flow(value)}"
        if key == "switches" and len(flow) <= _FLOW_WIDTH:
            lines.append(flow)
            continue
        lines.append(f"{key}:")
        lines += [f"  - {_flow(item)}" for item in value]
    return "\n".join(lines) + "\n"


def natural_key(name: str) -> tuple:
    """Sort key that puts ``n2`` before ``n10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))
