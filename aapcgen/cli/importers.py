"""``aapcgen import slurm|lldp`` and ``aapcgen export slurm``: topology files from what a cluster
already has, and Slurm's topology.conf back. The work is in ``aapcgen/importers/``."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from aapcgen.core.errors import InputError
from aapcgen.core.hostlist import parse_hostlist
from aapcgen.core.topology import topology_or_builtin
from aapcgen.core.units import format_bandwidth, parse_rate_option
from aapcgen.importers import lldp, slurm
from aapcgen.importers.tree import ImportedTree, render_yaml, to_data, to_topology


def _name(args: argparse.Namespace, source: str, fallback: str) -> str:
    """--name, else the stem of -o, else the input's stem; made a valid topology name."""
    if args.name:
        return args.name
    stem = Path(args.output).stem if args.output else Path(source).stem
    if source.startswith("<") and not args.output:
        stem = fallback
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]+", "-", stem).strip("-.")
    return cleaned or fallback


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write: {exc.strerror or exc}") from None


def emit_tree(tree: ImportedTree, output: str | None, comments: list[str]) -> None:
    """Validate ``tree`` like a hand-written file, then write its YAML (stdout without -o);
    notes go to stderr."""
    topo = to_topology(tree, output or "<stdout>")
    _write(render_yaml(to_data(tree), [*comments, *tree.notes]), output)
    for note in tree.notes:
        print(f"aapcgen: note: {note}", file=sys.stderr)
    summary = (
        f"{topo.n_machines} machines, {len(topo.switches)} switches, {len(topo.links)} switch links"
    )
    if output is not None:
        print(f"wrote {output}: {summary}")
    else:
        print(f"aapcgen: {summary}", file=sys.stderr)


def _read_input(path: str) -> tuple[str, str]:
    """(text, source name) of a file, or of stdin for '-'."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    return slurm.read_text(path), path


def _defaults(args: argparse.Namespace) -> slurm.Defaults:
    machine = parse_rate_option(args.machine_bandwidth, "--machine-bandwidth")
    link = parse_rate_option(args.link_bandwidth, "--link-bandwidth")
    unit = parse_rate_option(args.link_speed_unit, "--link-speed-unit")
    return slurm.Defaults(
        machine_bandwidth=machine or slurm.DEFAULT_BANDWIDTH,
        link_bandwidth=link,
        link_speed_unit=unit or slurm.MBIT,
    )


def cmd_import_slurm(args: argparse.Namespace) -> int:
    text, source = _read_input(args.input)
    fmt = slurm.detect_format(text, source) if args.format == "auto" else args.format
    defaults = _defaults(args)
    lines = slurm.parse_slurm(text, source, fmt, args.topology)
    tree = slurm.build_tree(
        lines, _name(args, source, "slurm"), defaults, args.add_root, scontrol=fmt == "scontrol"
    )
    if args.nodes:
        tree = slurm.restrict_nodes(tree, parse_hostlist(args.nodes, "--nodes"), "--nodes")
    kind = {"conf": "topology.conf", "scontrol": "scontrol show topology", "yaml": "topology.yaml"}
    comments = [f"imported by aapcgen import slurm from {source} ({kind[fmt]})"]
    if slurm.uses_link_speed(lines, fmt == "scontrol"):
        comments.append(f"LinkSpeed read in units of {format_bandwidth(defaults.link_speed_unit)}")
    emit_tree(tree, args.output, comments)
    return 0


def cmd_import_lldp(args: argparse.Namespace) -> int:
    machine = parse_rate_option(args.machine_bandwidth, "--machine-bandwidth")
    link = parse_rate_option(args.link_bandwidth, "--link-bandwidth")
    views = lldp.read_dir(args.directory)
    result = lldp.build_lldp_tree(
        views,
        _name(args, args.directory.rstrip("/"), "lldp"),
        lldp.Speeds(machine or slurm.DEFAULT_BANDWIDTH, link),
        args.interface,
        args.add_root,
    )
    comments = [f"imported by aapcgen import lldp from {args.directory} ({len(views)} files)"]
    if result.complete:
        emit_tree(result.tree, args.output, comments)
        return 0
    todo = [f"TODO {line}" for line in result.unknown]
    _write(render_yaml(to_data(result.tree), [*comments, *todo, *result.tree.notes]), args.output)
    for line in result.unknown:
        print(f"aapcgen: unknown {line}", file=sys.stderr)
    where = args.output or "the YAML"
    print(
        f"aapcgen: {len(result.unknown)} link(s) unknown: wrote {where} without them "
        "(it loads once they are added)",
        file=sys.stderr,
    )
    return 1


def _speed_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--machine-bandwidth",
        metavar="R",
        help="speed of a machine's link when the input gives none (default 1Gbit)",
    )
    p.add_argument(
        "--link-bandwidth",
        metavar="R",
        help="speed of a switch-to-switch link when the input gives none "
        "(default: the machine bandwidth)",
    )


def _common_import_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write the YAML here (default stdout)")
    p.add_argument(
        "--name", help="topology name (default: the output's file name, else the input's)"
    )
    _speed_options(p)
    p.add_argument(
        "--add-root",
        metavar="NAME",
        help="join switch trees that have no common parent under a new switch NAME",
    )


def register_import(sub: argparse._SubParsersAction) -> None:
    text = "Write a topology file from what the cluster already has (Slurm, LLDP)."
    p = sub.add_parser("import", help=text, description=text)
    kinds = p.add_subparsers(dest="import_kind", metavar="KIND", required=True)

    text = (
        "From Slurm's topology/tree plugin: topology.conf, the output of "
        "'scontrol show topology', or topology.yaml."
    )
    s = kinds.add_parser("slurm", help=text, description=text)
    s.add_argument("input", metavar="FILE", help="topology.conf, topology.yaml, or - for stdin")
    _common_import_options(s)
    s.add_argument(
        "--format",
        choices=slurm.FORMATS,
        default="auto",
        help="input kind (default: auto: .yaml/.yml or a YAML list is topology.yaml, "
        "lines with Level= are scontrol output)",
    )
    s.add_argument("--topology", metavar="NAME", help="topology.yaml: the tree topology to read")
    s.add_argument(
        "--link-speed-unit",
        metavar="R",
        help="what LinkSpeed=1 means (default 1Mbit: LinkSpeed=10000 is 10 Gbit/s)",
    )
    s.add_argument(
        "--nodes",
        metavar="LIST",
        help='the cluster\'s nodes (e.g. "$(sinfo -h -o %%N)"): each must be on a switch; '
        "nodes of the file not in LIST are left out",
    )
    s.set_defaults(func=cmd_import_slurm)

    text = (
        "From LLDP: DIR holds one 'lldpctl -f json' output per node, named NODE.json "
        "(switches' files give the switch-to-switch links). Exit status 1 when some link "
        "stays unknown: the YAML is written with a TODO line for each."
    )
    s = kinds.add_parser("lldp", help=text, description=text)
    s.add_argument("directory", metavar="DIR", help="directory of NODE.json files")
    _common_import_options(s)
    s.add_argument(
        "--interface",
        metavar="GLOB",
        action="append",
        help="read only neighbours on these interfaces (e.g. 'eth0', 'enp*'; repeatable) in "
        "files that have such an interface: the MPI network when nodes have several",
    )
    s.set_defaults(func=cmd_import_lldp)


def cmd_export_slurm(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    unit = (
        None if args.no_link_speed else parse_rate_option(args.link_speed_unit, "--link-speed-unit")
    )
    if unit is None and not args.no_link_speed:
        unit = slurm.MBIT
    text = slurm.export_slurm(topo, unit, args.virtual_leaves)
    _write(text, args.output)
    if args.output:
        print(f"wrote {args.output}: {topo.n_machines} nodes, {len(topo.switches)} switches")
    return 0


def register_export_slurm(kinds: argparse._SubParsersAction) -> None:
    """``export slurm``, one more kind of ``aapcgen export`` (cli/platforms.py)."""
    text = "Slurm topology.conf (topology/tree plugin) of the switch tree."
    p = kinds.add_parser("slurm", help=text, description=text)
    p.add_argument(
        "topology", nargs="?", metavar="TOPO.yaml", help="switch tree (see docs/topology.md)"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default stdout)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--link-speed-unit",
        metavar="R",
        help="what LinkSpeed=1 means (default 1Mbit: 10 Gbit/s is LinkSpeed=10000)",
    )
    g.add_argument("--no-link-speed", action="store_true", help="write no LinkSpeed")
    p.add_argument(
        "--virtual-leaves",
        action="store_true",
        help="give the machines of a switch that also has child switches a leaf switch "
        "SWITCH-nodes of their own (topology.conf allows nodes only on leaves)",
    )
    p.set_defaults(func=cmd_export_slurm)
