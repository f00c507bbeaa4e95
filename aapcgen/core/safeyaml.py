"""Safe YAML reading for every input file (topologies, patterns).

* Only plain data (PyYAML's safe loader; libyaml's C parser when installed).
* A first pass over the parser's events, which never recurses, rejects a document nested
  deeper than ``limits.YAML_DEPTH`` or holding more than ``limits.YAML_NODES`` nodes once its
  aliases are expanded (an "alias bomb": ten lines that expand to 10^9 nodes) before anything
  is built; the expanded structure is never printed.
* A key given twice in one mapping is an error (YAML would keep the last one silently).
* An integer of more than ``MAX_INT_DIGITS`` digits is an error, not a ValueError.
* Errors are one-line :class:`InputError` messages ``<source>:<line>:<column>: ...``.

:func:`read_yaml` also returns the line of every top-level key and of the items (and their
keys) of top-level lists, so that a later check can point at a line (``Lines``).
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from aapcgen.core import limits
from aapcgen.core.errors import InputError

MAX_INT_DIGITS = 40
PROBLEM_CHARS = 120  # characters of a YAML error's own text kept in our message

Lines = dict[str, int]  # "machines[3]" -> line (1-based); "" -> 1

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loading; a mapping with the same key twice and oversized integers are errors."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_line: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                earlier = first_line.get(key)
            except TypeError:  # unhashable key: the safe constructor reports it below
                continue
            if earlier is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {_clip(repr(key), 60)} (first given on line {earlier})",
                    key_node.start_mark,
                )
            first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(node.value)
        if len(text) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"a number of {len(text)} characters is too large (at most {MAX_INT_DIGITS})",
                node.start_mark,
            )
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _events(text: str) -> Iterator[yaml.Event]:
    loader = _Loader(text)
    try:
        while loader.check_event():
            yield loader.get_event()
    finally:
        loader.dispose()


def check_size(text: str, source: str, max_nodes: int | None = None) -> None:
    """Reject ``text`` when it nests deeper than the depth limit or expands (aliases included)
    to more nodes than ``max_nodes`` (default: the YAML_NODES limit). Runs on events only."""
    depth_limit = limits.value(limits.YAML_DEPTH)
    node_limit = limits.value(limits.YAML_NODES) if max_nodes is None else max_nodes
    anchors: dict[str, int] = {}
    stack: list[list] = []  # [expanded size so far, anchor] of each open collection
    total = 0
    for event in _events(text):
        size = 0
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            stack.append([1, event.anchor])
            if len(stack) > depth_limit:
                line = event.start_mark.line + 1
                raise InputError(
                    f"{source}:{line}: nested more than {depth_limit} levels deep "
                    f"(set {limits.YAML_DEPTH.env} to raise the limit)"
                )
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            size, anchor = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = 1, event.anchor
        elif isinstance(event, yaml.AliasEvent):
            size, anchor = anchors.get(event.anchor, 1), None
        else:
            continue
        if anchor is not None:
            anchors[anchor] = size
        if stack:
            stack[-1][0] += size
            size = stack[-1][0]
        else:
            total += size
            size = total
        if size > node_limit:
            line = event.start_mark.line + 1
            raise InputError(
                f"{source}:{line}: the document expands to more than {node_limit:,} nodes "
                f"(aliases included; set {limits.YAML_NODES.env} to raise the limit)"
            )


def _lines(node: yaml.Node | None) -> Lines:
    lines: Lines = {"": 1}
    if isinstance(node, yaml.SequenceNode):  # a list at the top (a pattern): "[i]" per item
        for i, item in enumerate(node.value):
            lines[f"[{i}]"] = item.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        return lines
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        key = str(key_node.value)
        lines.setdefault(key, key_node.start_mark.line + 1)
        if not isinstance(value_node, yaml.SequenceNode):
            continue
        for i, item in enumerate(value_node.value):
            path = f"{key}[{i}]"
            lines.setdefault(path, item.start_mark.line + 1)
            if isinstance(item, yaml.MappingNode):
                for k, _ in item.value:
                    if isinstance(k, yaml.ScalarNode):
                        lines.setdefault(f"{path}.{k.value}", k.start_mark.line + 1)
    return lines


def read_yaml(text: str, source: str, max_nodes: int | None = None) -> tuple[object, Lines]:
    """Parse one YAML document safely; return the data and the lines of its parts."""
    try:
        check_size(text, source, max_nodes)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = _clip(": ".join(p for p in (exc.context, exc.problem) if p), PROBLEM_CHARS)
        if mark is None:
            raise InputError(f"{source}: malformed YAML: {problem}") from None
        position = f"{mark.line + 1}:{mark.column + 1}"
        if problem.startswith("duplicate key") or problem.startswith("a number of"):
            raise InputError(f"{source}:{position}: {problem}") from None
        raise InputError(f"{source}:{position}: malformed YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: malformed YAML: {_clip(str(exc), PROBLEM_CHARS)}") from None
    return data, _lines(node)
