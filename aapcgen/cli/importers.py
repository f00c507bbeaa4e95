"""``aapcgen import slurm|lldp`` and ``aapcgen export slurm``: topology files from what a cluster
already has, and Slurm's topology.conf back. The work is in ``aapcgen/importers/``."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from aapcgen.core.errors import InputError
from aapcgen.core.hostlist import parse_hostlist, read_hostfile
from aapcgen.core.topology import load_topology, topology_or_builtin
from aapcgen.core.units import format_bandwidth, parse_rate_option
from aapcgen.importers import lldp, probing, slurm
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


def register(sub: argparse._SubParsersAction) -> None:
    """``import`` and ``discover`` (``export slurm`` is registered by cli/platforms.py)."""
    register_import(sub)
    register_discover(sub)


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


def cmd_discover(args: argparse.Namespace) -> int:
    size = 0 if args.bytes == "auto" else _size(args.bytes, "--bytes")
    settings = probing.Settings(bytes=size, reps=args.reps, speed_bytes=4 * size)
    state = Path(args.state) if args.state else None
    if state is None and args.output:
        state = Path(args.output + ".state")  # resumable by default
    say = None if args.quiet else _say
    try:
        report, checks = _discover(args, settings, state, say)
    except probing.BudgetExceeded:
        where = f"; rerun with --state {state} to go on" if state else " (no --state: nothing kept)"
        print(f"aapcgen: the --budget of {args.budget:.0f} s is spent{where}", file=sys.stderr)
        return 1
    for line in report.lines + checks:
        print(f"aapcgen: {line}", file=sys.stderr)
    print(
        f"aapcgen: {report.result.probes} probes, {report.measurements} measurements, "
        f"{report.seconds:.0f} s",
        file=sys.stderr,
    )
    if report.tree is None:
        print("aapcgen: no topology written: the discovery is incomplete", file=sys.stderr)
        return 1
    if args.name:
        report.tree.name = args.name
    comments = [
        f"discovered by aapcgen discover ({report.result.probes} probes, "
        f"{report.seconds:.0f} s); switch names are made up (d0 is machine 0's switch)",
        *report.lines,
    ]
    emit_tree(report.tree, args.output, comments)
    return 0


def _say(text: str) -> None:
    print(f"aapcgen: {text}", file=sys.stderr, flush=True)


def _discover(
    args: argparse.Namespace,
    settings: probing.Settings,
    state: Path | None,
    say: Callable[[str], None] | None,
) -> tuple[probing.Report, list[str]]:
    if args.backend == "emulate":
        if not args.topology:
            raise InputError("discover --backend emulate needs TOPO.yaml, the network to emulate")
        from aapcgen.platforms.emulate import check_prefix, parse_queue, require_root

        truth = load_topology(args.topology)
        prefix = check_prefix(args.prefix)
        queue = parse_queue(args.queue) if args.queue else None
        require_root()
        rate = parse_rate_option(args.rate)
        report = probing.discover_emulated(
            truth, settings, rate, queue, prefix, state, args.budget, say
        )
        checks = probing.compare(report, truth, settings)
    else:
        if not args.hostfile:
            raise InputError("discover needs --hostfile H (one host per line) or --backend emulate")
        hosts = read_hostfile(args.hostfile)
        name = _name(args, args.hostfile, "discovered")
        report = probing.discover_hosts(
            args.hostfile, hosts, name, settings, args.mpicc, state, args.budget, say
        )
        checks = []
    return report, checks


def _size(text: str, option: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if match is None or int(match[1]) == 0:
        raise InputError(f"{option}: '{text}' is not a size like 1M or 65536")
    return int(match[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match[2]]


def register_discover(sub: argparse._SubParsersAction) -> None:
    text = (
        "Measure the switch tree: an MPI probe job times concurrent transfers (a probe flow "
        "alone and beside a load flow) and builds the tree from which of them contend."
    )
    p = sub.add_parser("discover", help=text, description=text)
    p.add_argument(
        "topology", nargs="?", metavar="TOPO.yaml", help="--backend emulate: the network to emulate"
    )
    p.add_argument("--backend", choices=["mpiexec", "emulate"], default="mpiexec")
    p.add_argument("--hostfile", metavar="H", help="mpiexec: the machines, one host per line")
    p.add_argument("--mpicc", metavar="PATH", help="mpiexec: the MPI to probe with")
    p.add_argument("-o", "--output", metavar="FILE", help="write the YAML here (default stdout)")
    p.add_argument("--name", help="topology name")
    p.add_argument(
        "--state",
        metavar="FILE",
        help="keep every measurement here; a rerun with the same FILE resumes without "
        "measuring again",
    )
    p.add_argument("--budget", type=float, metavar="SECONDS", help="stop measuring after this long")
    p.add_argument(
        "--bytes",
        default="auto",
        help="bytes per flow in a probe, e.g. 1M (default auto: about 0.1 s per flow; speeds "
        "are timed with 4 times as many)",
    )
    p.add_argument("--reps", type=int, default=3, help="repetitions per measurement (median)")
    p.add_argument("--rate", metavar="R", help="emulate: every link at this speed")
    p.add_argument("--queue", metavar="BYTES", help="emulate: switch port buffer")
    p.add_argument("--prefix", default="aapcd", help="emulate: namespace prefix (default aapcd)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_discover)


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
