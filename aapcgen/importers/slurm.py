"""Slurm's tree topology -> :class:`ImportedTree`, and a Topology -> Slurm's ``topology.conf``.

Three inputs, one tree:

* ``topology.conf`` of the topology/tree plugin (topology.conf(5)): one ``SwitchName=`` line per
  switch with ``Nodes=`` (a leaf switch's nodes) or ``Switches=`` (child switches), and an
  optional ``LinkSpeed=`` (an integer in units the site chooses). The syntax is Slurm's
  configuration-file syntax (src/common/parse_config.c): ``Key=Value`` pairs, keys in any case,
  a value in double quotes may hold spaces, ``#`` starts a comment, ``\\`` escapes a character,
  a line ending in an odd number of backslashes continues on the next line, ``Include FILE``
  reads another file. Names are Slurm host lists (``tux[0-3,12]``, ``s[0-2,4]``).
* the output of ``scontrol show topology``: the same keys plus ``Level=``; a switch above the
  leaves lists all the nodes below it in ``Nodes=`` (checked, not used), and ``LinkSpeed=1`` is
  Slurm's value when none was configured (read as "not given").
* ``topology.yaml`` (topology.yaml(5), Slurm 25.05+): a list of topologies; the one with a
  ``tree:`` (``--topology NAME``, else the only one, else the ``cluster_default: true`` one)
  has ``switches:`` entries with ``switch``, ``children`` and ``nodes``.

``LinkSpeed=K`` on a switch's line is the speed of the links that line declares, from the switch
down to each of its nodes or child switches: K times ``link_speed_unit`` (default 1 Mbit/s).
Lines without it take the default machine or switch-link speed.

What Slurm accepts but a tree cannot be is an error naming the file and line: a node under two
switches, a switch under two parents (a fat tree's spines), an unknown child switch, a cycle, and
switches that form several trees (``add_root`` joins them under one new switch).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from aapcgen.core.errors import InputError
from aapcgen.core.hostlist import split_hostlist
from aapcgen.core.model import Topology
from aapcgen.core.topology import expand_ranges
from aapcgen.core.units import format_bandwidth
from aapcgen.importers.tree import ImportedTree, Machine, SwitchLink, join_hostlist

MBIT = 125_000.0  # bytes/s of 1 Mbit/s: the default LinkSpeed unit
DEFAULT_BANDWIDTH = 125e6  # 1 Gbit/s, the loader's default
FORMATS = ("auto", "conf", "scontrol", "yaml")
_MAX_INCLUDE_DEPTH = 8
_UINT32_MAX = 2**32 - 1
_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
# parse_config.c keyvalue_pattern: key, optional operator, '=', quoted or bare value
_KEY_VALUE = re.compile(r'\s*([A-Za-z0-9_.]+)\s*([-*+/]?)=\s*(?:"([^"]*)"|(\S*))(?=\s|$)')
_TREE_KEYS = {"switchname": "SwitchName", "nodes": "Nodes", "switches": "Switches"}
_KEYS = {**_TREE_KEYS, "linkspeed": "LinkSpeed", "level": "Level"}
_OTHER_PLUGINS = {
    "blockname": "topology/block",
    "blocksizes": "topology/block",
    "ringname": "topology/ring",
}


@dataclass(frozen=True)
class SwitchLine:
    """One switch as a file declares it; ``where`` is ``file:line``."""

    name: str
    where: str
    nodes: tuple[str, ...] | None = None
    children: tuple[str, ...] | None = None
    link_speed: int | None = None
    level: int | None = None  # scontrol show topology only


@dataclass(frozen=True)
class Defaults:
    """Speeds for links the input gives none, and the unit of ``LinkSpeed``, in bytes/s."""

    machine_bandwidth: float = DEFAULT_BANDWIDTH
    link_bandwidth: float | None = None  # switch-to-switch; None: the machine bandwidth
    link_speed_unit: float = MBIT

    @property
    def switch_link(self) -> float:
        return self.machine_bandwidth if self.link_bandwidth is None else self.link_bandwidth


# --------------------------------------------------------------------------- config-file syntax


def _strip_comment(line: str) -> str:
    """Cut at the first '#' not escaped by an odd number of backslashes."""
    backslashes = 0
    for i, ch in enumerate(line):
        if ch == "#" and backslashes % 2 == 0:
            return line[:i]
        backslashes = backslashes + 1 if ch == "\\" else 0
    return line


def _continues(line: str) -> tuple[str, bool]:
    """``line`` without a continuation backslash, and whether it had one (an odd number of
    backslashes at its end, after any trailing blanks)."""
    body = line.rstrip()
    count = len(body) - len(body.rstrip("\\"))
    if count % 2 == 1:
        return body[:-1], True
    return line, False


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Slurm's lines of ``text``: comments cut, continuations joined, escapes removed; each with
    the number of its first physical line. Blank lines are dropped."""
    result: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        body, more = _continues(_strip_comment(raw))
        pending.append(body)
        if more:
            continue
        joined = _unescape("".join(pending))
        pending = []
        if joined.strip():
            result.append((start, joined))
    if pending and "".join(pending).strip():
        result.append((start, _unescape("".join(pending))))
    return result


def key_values(line: str, where: str) -> list[tuple[str, str]]:
    """The ``Key=Value`` pairs of one logical line, in order; anything else is an error."""
    pairs: list[tuple[str, str]] = []
    position = 0
    while line[position:].strip():
        match = _KEY_VALUE.match(line, position)
        if match is None:
            rest = line[position:].strip()
            raise InputError(f"{where}: expected Key=Value, got '{_clip(rest)}'")
        if match[2]:
            raise InputError(f"{where}: '{match[1]}{match[2]}=' is not allowed here")
        pairs.append((match[1], match[3] if match[3] is not None else match[4]))
        position = match.end()
    return pairs


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- host lists


def expand_hostlist(text: str, where: str, key: str) -> tuple[str, ...]:
    """A Slurm host list (``tux[0-3,12],tux20``) expanded with the YAML range code."""
    names: list[str] = []
    for item in split_hostlist(text):
        try:
            names += expand_ranges(item)
        except ValueError as exc:
            raise InputError(
                f"{where}: {key}={_clip(text)}: bad host list item '{item}': {exc}"
            ) from None
    for name in names:
        if _NAME_RE.fullmatch(name) is None:
            raise InputError(
                f"{where}: {key}=: name '{_clip(name)}' has characters aapcgen names cannot "
                "hold (letters, digits, '-', '_', '.')"
            )
    return tuple(names)


# --------------------------------------------------------------------------- topology.conf


def _switch_line(pairs: list[tuple[str, str]], where: str, scontrol: bool) -> SwitchLine:
    first = pairs[0][0].lower()
    if first in _OTHER_PLUGINS:
        raise InputError(
            f"{where}: {pairs[0][0]}= belongs to the {_OTHER_PLUGINS[first]} plugin; aapcgen "
            "imports switch trees (topology/tree: SwitchName= lines)"
        )
    if first == "include":
        raise InputError(f"{where}: Include needs a file name: Include FILE")
    if first != "switchname":
        raise InputError(f"{where}: a line must start with SwitchName=, got {pairs[0][0]}=")
    values: dict[str, str] = {}
    for key, value in pairs:
        canonical = _KEYS.get(key.lower())
        if canonical is None or (canonical == "Level" and not scontrol):
            allowed = "Nodes, Switches, LinkSpeed" + (", Level" if scontrol else "")
            raise InputError(f"{where}: unknown key '{key}' (a SwitchName line takes {allowed})")
        if canonical in values:
            raise InputError(f"{where}: {canonical}= given twice")
        values[canonical] = value
    name = values["SwitchName"]
    if not name:
        raise InputError(f"{where}: SwitchName= is empty")
    if _NAME_RE.fullmatch(name) is None:
        raise InputError(
            f"{where}: switch name '{_clip(name)}' has characters aapcgen names cannot hold "
            "(letters, digits, '-', '_', '.')"
        )
    nodes = expand_hostlist(values["Nodes"], where, "Nodes") if "Nodes" in values else None
    children = (
        expand_hostlist(values["Switches"], where, "Switches") if "Switches" in values else None
    )
    if nodes is not None and children is not None and not scontrol:
        raise InputError(
            f"{where}: switch {name} has both Nodes= and Switches= (Slurm rejects this: nodes "
            "belong on leaf switches)"
        )
    return SwitchLine(
        name=name,
        where=where,
        nodes=nodes,
        children=children,
        link_speed=_integer(values, "LinkSpeed", where),
        level=_integer(values, "Level", where),
    )


def _integer(values: dict[str, str], key: str, where: str) -> int | None:
    if key not in values:
        return None
    text = values[key]
    if not text.isdigit() or int(text) > _UINT32_MAX:
        raise InputError(f"{where}: {key}={_clip(text)}: must be a whole number 0..{_UINT32_MAX}")
    return int(text)


def _include_target(line: str) -> str | None:
    match = re.match(r"\s*include\s+(\S+)\s*$", line, re.IGNORECASE)
    return match[1] if match else None


def parse_conf(text: str, source: str, scontrol: bool = False, depth: int = 0) -> list[SwitchLine]:
    """The switch lines of a ``topology.conf`` (or of ``scontrol show topology`` output)."""
    lines: list[SwitchLine] = []
    for number, line in logical_lines(text):
        where = f"{source}:{number}"
        target = _include_target(line)
        if target is not None:
            lines += _include(target, source, where, scontrol, depth)
            continue
        pairs = key_values(line, where)
        lines.append(_switch_line(pairs, where, scontrol))
    return lines


def _include(target: str, source: str, where: str, scontrol: bool, depth: int) -> list[SwitchLine]:
    if depth >= _MAX_INCLUDE_DEPTH:
        raise InputError(f"{where}: Include nested more than {_MAX_INCLUDE_DEPTH} deep")
    if source.startswith("<"):
        raise InputError(f"{where}: Include {target}: not possible when reading stdin")
    path = Path(target) if os.path.isabs(target) else Path(source).parent / target
    text = read_text(str(path), where=f"{where}: Include")
    return parse_conf(text, str(path), scontrol, depth + 1)


def read_text(path: str, where: str | None = None) -> str:
    """The text of ``path`` or an InputError naming it."""
    prefix = f"{where} {path}" if where else path
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{prefix}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{prefix}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{prefix}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{prefix}: cannot read: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- topology.yaml


def _node_text(node: yaml.Node, where: str, key: str) -> str:
    """A host list given as a YAML string, or a list of strings (joined with commas)."""
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    if isinstance(node, yaml.SequenceNode) and all(
        isinstance(item, yaml.ScalarNode) for item in node.value
    ):
        return ",".join(str(item.value) for item in node.value)
    raise InputError(f"{where}: {key}: must be a host list string like 'node[01-04]'")


def _mapping(node: yaml.Node, where: str, what: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise InputError(f"{where}: {what} must be a mapping")
    return {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _line(source: str, node: yaml.Node) -> str:
    return f"{source}:{node.start_mark.line + 1}"


def _pick_tree(entries: list[yaml.Node], source: str, topology: str | None) -> yaml.Node:
    """The ``tree:`` topology of a topology.yaml: by name, the only one, or the default one."""
    trees: list[tuple[str, bool, yaml.Node, str]] = []
    names: list[str] = []
    for entry in entries:
        where = _line(source, entry)
        fields = _mapping(entry, where, "a topology entry")
        name = fields["topology"].value if "topology" in fields else "?"
        names.append(str(name))
        if "tree" in fields:
            default = fields.get("cluster_default")
            is_default = default is not None and str(default.value).lower() == "true"
            trees.append((str(name), is_default, fields["tree"], where))
    if topology is not None:
        chosen = [t for t in trees if t[0] == topology]
        if not chosen:
            raise InputError(
                f"{source}: no tree topology named '{topology}' (tree topologies: "
                f"{', '.join(t[0] for t in trees) or 'none'})"
            )
        return chosen[0][2]
    if not trees:
        raise InputError(
            f"{source}: no tree topology (topologies: {', '.join(names) or 'none'}); aapcgen "
            "imports switch trees (tree: switches:)"
        )
    if len(trees) > 1:
        defaults = [t for t in trees if t[1]]
        if not defaults:
            raise InputError(
                f"{source}: {len(trees)} tree topologies ({', '.join(t[0] for t in trees)}); "
                "choose one with --topology NAME"
            )
        return defaults[0][2]
    return trees[0][2]


def parse_topology_yaml(text: str, source: str, topology: str | None = None) -> list[SwitchLine]:
    """The switches of the tree topology of a Slurm ``topology.yaml``."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InputError(f"{source}{line}: malformed YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: malformed YAML: {_clip(str(exc), 120)}") from None
    if not isinstance(root, yaml.SequenceNode):
        raise InputError(f"{source}: a topology.yaml is a list of topologies (- topology: NAME)")
    tree = _mapping(_pick_tree(root.value, source, topology), _line(source, root), "tree:")
    if "switches" not in tree or not isinstance(tree["switches"], yaml.SequenceNode):
        raise InputError(f"{source}: tree: needs a list of switches:")
    lines = []
    for entry in tree["switches"].value:
        where = _line(source, entry)
        fields = _mapping(entry, where, "a switch entry")
        for key in fields:
            if key not in ("switch", "children", "nodes"):
                raise InputError(
                    f"{where}: unknown key '{key}' (a switch takes switch, children, nodes)"
                )
        if "switch" not in fields:
            raise InputError(f"{where}: switch entry without 'switch:'")
        pairs = [("SwitchName", _node_text(fields["switch"], where, "switch"))]
        if "nodes" in fields:
            pairs.append(("Nodes", _node_text(fields["nodes"], where, "nodes")))
        if "children" in fields:
            pairs.append(("Switches", _node_text(fields["children"], where, "children")))
        lines.append(_switch_line(pairs, where, scontrol=False))
    return lines


# --------------------------------------------------------------------------- format detection


def detect_format(text: str, source: str) -> str:
    """``yaml`` (a list of topologies), ``scontrol`` (lines with ``Level=``) or ``conf``."""
    if source.endswith((".yaml", ".yml")):
        return "yaml"
    for _, line in logical_lines(text):
        stripped = line.strip()
        if stripped.startswith(("---", "- ", "topology:")):
            return "yaml"
        if re.search(r"(^|\s)level\s*=", stripped, re.IGNORECASE):
            return "scontrol"
    return "conf"


def parse_slurm(
    text: str, source: str, fmt: str = "auto", topology: str | None = None
) -> list[SwitchLine]:
    """The switch lines of any of the three inputs."""
    if fmt == "auto":
        fmt = detect_format(text, source)
    if fmt == "yaml":
        return parse_topology_yaml(text, source, topology)
    lines = parse_conf(text, source, scontrol=fmt == "scontrol")
    if not lines:
        raise InputError(f"{source}: no SwitchName= lines")
    return lines


# --------------------------------------------------------------------------- the tree


@dataclass
class _Tree:
    by_name: dict[str, SwitchLine] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    node_switch: dict[str, str] = field(default_factory=dict)
    own_nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _declare(lines: Sequence[SwitchLine]) -> _Tree:
    tree = _Tree()
    for line in lines:
        if line.name in tree.by_name:
            first = tree.by_name[line.name]
            raise InputError(
                f"{line.where}: switch {line.name} is defined twice (also {first.where})"
            )
        tree.by_name[line.name] = line
    return tree


def _link_children(tree: _Tree) -> None:
    for line in tree.by_name.values():
        seen: set[str] = set()
        for child in line.children or ():
            if child not in tree.by_name:
                raise InputError(
                    f"{line.where}: switch {line.name}: unknown child switch '{child}' "
                    f"(no SwitchName={child} line)"
                )
            if child == line.name:
                raise InputError(f"{line.where}: switch {line.name} lists itself in Switches=")
            if child in seen:
                raise InputError(f"{line.where}: switch {line.name} lists {child} twice")
            seen.add(child)
            if child in tree.parent:
                other = tree.by_name[tree.parent[child]]
                raise InputError(
                    f"{line.where}: switch {child} is under {line.name} and under {other.name} "
                    f"({other.where}); a tree gives each switch one parent"
                )
            tree.parent[child] = line.name


def _uses_own_nodes(line: SwitchLine) -> bool:
    """scontrol lists all the nodes below a switch; only a leaf's are its own."""
    return line.nodes is not None and not (line.level is not None and line.children is not None)


def _place_nodes(tree: _Tree) -> None:
    for line in tree.by_name.values():
        if not _uses_own_nodes(line):
            continue
        assert line.nodes is not None
        for node in line.nodes:
            if node in tree.by_name:
                raise InputError(f"{line.where}: node {node} has the name of a switch")
            if node in tree.node_switch:
                other = tree.by_name[tree.node_switch[node]]
                where = (
                    "twice on this line"
                    if other is line
                    else f"also under {other.name} ({other.where})"
                )
                raise InputError(
                    f"{line.where}: node {node} is under {line.name} and {where}; in a tree "
                    "each node has one switch"
                )
            tree.node_switch[node] = line.name
        tree.own_nodes[line.name] = line.nodes


def _check_cycles(tree: _Tree) -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: reaches a root
    for start in tree.by_name:
        path: list[str] = []
        node: str | None = start
        while node is not None and state.get(node) is None:
            state[node] = 1
            path.append(node)
            node = tree.parent.get(node)
        if node is not None and state[node] == 1:
            cycle = path[path.index(node) :]
            line = max((tree.by_name[s] for s in cycle), key=lambda s: _line_number(s.where))
            ring = list(reversed(cycle))  # parent to child
            first = min(range(len(ring)), key=lambda i: _line_number(tree.by_name[ring[i]].where))
            ring = ring[first:] + ring[:first]
            raise InputError(f"{line.where}: switches form a cycle: {' - '.join([*ring, ring[0]])}")
        for name in path:
            state[name] = 2


def _line_number(where: str) -> int:
    tail = where.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _check_descendants(tree: _Tree, children: dict[str, list[str]]) -> None:
    """scontrol prints every node below an upper switch: they must be its subtree's nodes."""
    for line in tree.by_name.values():
        if line.level is None or line.children is None or line.nodes is None:
            continue
        below: set[str] = set()
        stack = [line.name]
        while stack:
            name = stack.pop()
            below.update(tree.own_nodes.get(name, ()))
            stack += children.get(name, [])
        listed = set(line.nodes)
        if listed != below:
            odd = sorted(listed ^ below)[:3]
            raise InputError(
                f"{line.where}: switch {line.name}: Nodes= does not match the nodes of its "
                f"child switches (differ: {', '.join(odd)})"
            )


def _subtree_has_nodes(name: str, tree: _Tree, children: dict[str, list[str]]) -> bool:
    stack = [name]
    while stack:
        current = stack.pop()
        if tree.own_nodes.get(current):
            return True
        stack += children.get(current, [])
    return False


def _roots(
    tree: _Tree, children: dict[str, list[str]], add_root: str | None, notes: list[str]
) -> list[str]:
    """The roots of the switch trees that hold nodes; one unless ``add_root`` joins them."""
    roots = [name for name in tree.by_name if name not in tree.parent]
    with_nodes = [r for r in roots if _subtree_has_nodes(r, tree, children)]
    for r in roots:
        if r not in with_nodes:
            notes.append(f"left out switch {r} and the switches below it: no nodes")
    if not with_nodes:
        first = next(iter(tree.by_name.values()))
        raise InputError(f"{first.where}: no switch has Nodes=")
    if len(with_nodes) > 1 and add_root is None:
        a, b = tree.by_name[with_nodes[0]], tree.by_name[with_nodes[1]]
        raise InputError(
            f"{b.where}: switch {b.name} has no parent, nor has {a.name} ({a.where}): "
            f"{len(with_nodes)} separate trees; add 'SwitchName=top Switches="
            f"{join_hostlist(with_nodes)}' or pass --add-root top"
        )
    return with_nodes


def build_tree(
    lines: Sequence[SwitchLine],
    name: str,
    defaults: Defaults | None = None,
    add_root: str | None = None,
    scontrol: bool = False,
) -> ImportedTree:
    """The tree of the switch lines, checked; machines in the order the lines list them."""
    defaults = defaults or Defaults()
    tree = _declare(lines)
    _link_children(tree)
    _place_nodes(tree)
    _check_cycles(tree)
    children: dict[str, list[str]] = {}
    for child, parent in tree.parent.items():
        children.setdefault(parent, []).append(child)
    _check_descendants(tree, children)
    notes: list[str] = []
    roots = _roots(tree, children, add_root, notes)
    if add_root is not None and add_root in tree.by_name:
        raise InputError(f"--add-root {add_root}: a switch of that name exists already")
    if add_root is not None and len(roots) == 1:
        add_root = None  # one tree already
    kept: set[str] = set(roots)
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            kept.add(child)
            stack.append(child)

    def speed(line: SwitchLine, default: float) -> float:
        if not uses_link_speed([line], scontrol):
            return default
        assert line.link_speed is not None
        return line.link_speed * defaults.link_speed_unit

    switches = [s for s in tree.by_name if s in kept]
    machines = [
        Machine(node, line.name, speed(line, defaults.machine_bandwidth))
        for line in lines
        if line.name in kept
        for node in tree.own_nodes.get(line.name, ())
    ]
    links = [
        SwitchLink(line.name, child, speed(line, defaults.switch_link))
        for line in lines
        if line.name in kept
        for child in line.children or ()
    ]
    if add_root is not None:
        switches.insert(0, add_root)
        links = [SwitchLink(add_root, r, defaults.switch_link) for r in roots] + links
        notes.append(
            f"switch {add_root} is not in the input: --add-root joined {join_hostlist(roots)}"
        )
    if len(machines) < 2:
        first = lines[0]
        raise InputError(f"{first.where}: the tree has {len(machines)} node(s); aapcgen needs 2")
    return ImportedTree(name=name, switches=switches, machines=machines, links=links, notes=notes)


def uses_link_speed(lines: Sequence[SwitchLine], scontrol: bool) -> bool:
    """Whether some line gives a LinkSpeed that counts (scontrol prints 1 when none was set)."""
    return any(
        line.link_speed not in (None, 0) and not (scontrol and line.link_speed == 1)
        for line in lines
    )


def restrict_nodes(tree: ImportedTree, nodes: Iterable[str], what: str) -> ImportedTree:
    """Keep the machines named in ``nodes`` (the cluster's nodes, e.g. ``sinfo -h -o %N``), in the
    tree's order; a named node that no switch holds is an error."""
    wanted = list(dict.fromkeys(nodes))
    present = {m.name for m in tree.machines}
    missing = [n for n in wanted if n not in present]
    if missing:
        raise InputError(
            f"{what}: {len(missing)} node(s) on no switch of the topology: "
            f"{_clip(join_hostlist(missing), 120)} (aapcgen needs every machine in the tree)"
        )
    keep = set(wanted)
    dropped = [m.name for m in tree.machines if m.name not in keep]
    machines = [m for m in tree.machines if m.name in keep]
    if len(machines) < 2:
        raise InputError(f"{what}: {len(machines)} node(s) left; aapcgen needs 2")
    notes = list(tree.notes)
    if dropped:
        notes.append(
            f"left out {len(dropped)} node(s) not in {what}: {_clip(join_hostlist(dropped), 120)}"
        )
    return ImportedTree(tree.name, tree.switches, machines, tree.links, notes)


# --------------------------------------------------------------------------- export


def _adjacency(topo: Topology) -> dict[str, list[tuple[str, float]]]:
    adjacent: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    for link in topo.links:
        adjacent[link.a].append((link.b, link.bandwidth))
        adjacent[link.b].append((link.a, link.bandwidth))
    return adjacent


def _machines_of(topo: Topology) -> dict[str, list[tuple[str, float]]]:
    held: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    for name, switch, bandwidth in zip(topo.machines, topo.machine_switch, topo.machine_bandwidth):
        held[switch].append((name, bandwidth))
    return held


def _rooted(
    topo: Topology, root: str, adjacent: dict[str, list[tuple[str, float]]]
) -> dict[str, list[tuple[str, float]]]:
    """Children of each switch (with the link's speed) when the tree hangs from ``root``."""
    children: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    seen = {root}
    stack = [root]
    while stack:
        current = stack.pop()
        for neighbour, bandwidth in adjacent[current]:
            if neighbour not in seen:
                seen.add(neighbour)
                children[current].append((neighbour, bandwidth))
                stack.append(neighbour)
    return children


def _fits(
    children: dict[str, list[tuple[str, float]]],
    held: dict[str, list[tuple[str, float]]],
    uniform: bool,
) -> bool:
    """Slurm's shape: nodes only on leaf switches; with ``uniform``, one speed for all the links
    from a switch down (one LinkSpeed per line)."""
    for switch, kids in children.items():
        if kids and held[switch]:
            return False
        down = {bw for _, bw in kids or held[switch]}
        if uniform and len(down) > 1:
            return False
    return True


def _choose_root(topo: Topology, virtual_leaves: bool, uniform: bool) -> tuple[str, dict]:
    """A root that leaves every switch with machines a leaf (machine-less switches first) and,
    if it can, gives each switch one speed down."""
    adjacent = _adjacency(topo)
    held = _machines_of(topo)
    candidates = [s for s in topo.switches if not held[s]] + [s for s in topo.switches if held[s]]
    for check_speed in (uniform, False) if uniform else (False,):
        for root in candidates:
            children = _rooted(topo, root, adjacent)
            if _fits(children, held, check_speed):
                return root, children
    root = candidates[0]
    children = _rooted(topo, root, adjacent)
    if not virtual_leaves:
        inner = next(s for s in topo.switches if held[s] and children[s])
        raise InputError(
            f"{topo.source}: topology.conf puts nodes only on leaf switches, and no root makes "
            f"every switch with machines a leaf (e.g. {inner}); --virtual-leaves adds a leaf "
            f"switch {inner}-nodes for them"
        )
    return root, children


def _link_speed(speeds: list[float], unit: float, what: str, source: str) -> str:
    if len(set(speeds)) > 1:
        listed = ", ".join(sorted({format_bandwidth(s) for s in speeds}))
        raise InputError(
            f"{source}: the links of {what} have different speeds ({listed}); topology.conf "
            "has one LinkSpeed per switch (--no-link-speed leaves them out)"
        )
    value = speeds[0] / unit
    whole = round(value)
    if abs(value - whole) > 1e-9 * max(1.0, value) or not 1 <= whole <= _UINT32_MAX:
        raise InputError(
            f"{source}: {what}: {format_bandwidth(speeds[0])} is not a whole number of "
            f"{format_bandwidth(unit)} (choose --link-speed-unit)"
        )
    return f" LinkSpeed={whole}"


def export_slurm(
    topo: Topology,
    unit: float | None = MBIT,
    virtual_leaves: bool = False,
) -> str:
    """``topology.conf`` text for ``topo``: one line per switch, in the topology's switch order,
    nodes only on leaves. ``unit``: bytes/s of one LinkSpeed unit (None: no LinkSpeed)."""
    root, children = _choose_root(topo, virtual_leaves, unit is not None)
    held = _machines_of(topo)
    header = [
        f"# topology.conf for {topo.name}, written by aapcgen export slurm (topology/tree)",
        f"# {topo.n_machines} nodes, {len(topo.switches)} switches, root {root}",
    ]
    if unit is not None:
        header.append(
            f"# LinkSpeed: speed of a switch's links to its children, in {format_bandwidth(unit)}"
        )
    header += _lost_in_export(topo, held)
    body: list[str] = []
    for switch in topo.switches:
        kids = [(name, bw) for name, bw in children[switch]]
        nodes = held[switch]
        if kids and nodes:  # only with virtual_leaves: _choose_root refused otherwise
            leaf = f"{switch}-nodes"
            if leaf in held or leaf in topo.machines:
                raise InputError(f"{topo.source}: cannot add virtual leaf {leaf}: name in use")
            header.append(
                f"# {leaf} is virtual: the nodes of {switch}, which also has child switches"
            )
            speed = _line_suffix(unit, [bw for _, bw in nodes], f"switch {leaf}", topo.source)
            body.append(f"SwitchName={leaf} Nodes={join_hostlist([n for n, _ in nodes])}{speed}")
            kids = [*kids, (leaf, kids[0][1])]
            nodes = []
        if nodes:
            speed = _line_suffix(unit, [bw for _, bw in nodes], f"switch {switch}", topo.source)
            body.append(f"SwitchName={switch} Nodes={join_hostlist([n for n, _ in nodes])}{speed}")
        elif kids:
            speed = _line_suffix(unit, [bw for _, bw in kids], f"switch {switch}", topo.source)
            body.append(
                f"SwitchName={switch} Switches={join_hostlist([n for n, _ in kids])}{speed}"
            )
        else:
            body.append(f"SwitchName={switch}")
    return "\n".join(header + body) + "\n"


def _lost_in_export(topo: Topology, held: dict[str, list[tuple[str, float]]]) -> list[str]:
    """Header lines naming what topology.conf cannot carry, so nobody relies on it."""
    lost = []
    if any(host is not None for host in topo.hosts):
        lost.append("host names")
    if topo.ranks_per_machine > 1:
        lost.append(f"ranks_per_machine {topo.ranks_per_machine}")
    listed = [name for s in topo.switches for name, _ in held[s]]
    if listed != list(topo.machines):
        lost.append("the rank order (an import lists the nodes switch by switch)")
    return [f"# not in this file: {', '.join(lost)}"] if lost else []


def _line_suffix(unit: float | None, speeds: list[float], what: str, source: str) -> str:
    return "" if unit is None else _link_speed(speeds, unit, what, source)
