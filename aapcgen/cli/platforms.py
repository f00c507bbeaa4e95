"""``aapcgen emulate up|down|status`` and ``aapcgen export simgrid``: the platforms we measure on."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from aapcgen.cli.importers import register_export_slurm
from aapcgen.cli.options import check_output_dir, queue, rate
from aapcgen.codegen.generate import stderr_progress
from aapcgen.core.topology import load_topology, topology_or_builtin
from aapcgen.core.units import format_bandwidth, parse_rate_option
from aapcgen.platforms.emulate import (
    DEFAULT_PREFIX,
    DEFAULT_QUEUE,
    EmulationPlan,
    check_prefix,
    emulate_down,
    emulate_status,
    emulate_up,
    parse_queue,
    plan_emulation,
    require_root,
)
from aapcgen.platforms.simgrid import BASE_CFG, SCALE_CFG, export_simgrid


def _describe(plan: EmulationPlan) -> list[str]:
    rates = sorted({s.rate for s in plan.shapers})
    rate_text = ", ".join(format_bandwidth(r) for r in rates)
    n = len(plan.machine_ns)
    return [
        f"emulation of {plan.topology_name} up (prefix '{plan.prefix}'):",
        f"  {n} machine namespaces {plan.machine_ns[0]} .. {plan.machine_ns[-1]}, "
        f"eth0 {plan.machine_ip[0]} .. {plan.machine_ip[-1]} /{plan.prefixlen}",
        f"  switch namespace {plan.switch_ns}: {len(plan.bridges)} bridges, {len(plan.veths)} veth pairs",
        f"  tbf on both ends of every veth: rate {rate_text}, burst {plan.burst} B, "
        f"limit {plan.queue} B, MTU {plan.mtu} B",
        f"  run MPI:   mpiexec -genv UCX_TLS tcp -genv UCX_NET_DEVICES eth0 -genv MPIR_CVAR_NOLOCAL 1 "
        f"-n 1 ip netns exec {plan.machine_ns[0]} ./prog : -n 1 ip netns exec {plan.machine_ns[1]} ./prog : ...",
        f"  counters:  ip netns exec {plan.switch_ns} tc -s qdisc show",
        "  tear down: aapcgen emulate down"
        + ("" if plan.prefix == DEFAULT_PREFIX else f" --prefix {plan.prefix}"),
    ]


def cmd_up(args: argparse.Namespace) -> int:
    prefix = check_prefix(args.prefix)
    link_rate = parse_rate_option(args.rate)
    queue_bytes = parse_queue(args.queue)
    topo = load_topology(args.topology)
    plan = plan_emulation(topo, link_rate, queue_bytes, prefix)  # validate before needing root
    require_root()
    emulate_up(
        topo,
        link_rate,
        queue_bytes,
        prefix,
        stderr_progress if args.verbose else None,
        persistent=True,
    )
    print("\n".join(_describe(plan)))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    prefix = check_prefix(args.prefix)
    require_root()
    removed = emulate_down(prefix)
    if removed:
        print(f"removed {len(removed)}: " + ", ".join(removed))
    else:
        print(f"nothing to remove (no emulation with prefix '{prefix}')")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    prefix = check_prefix(args.prefix)
    left = emulate_status(prefix)  # read-only: works without root
    if not left:
        print(f"no emulation running (prefix '{prefix}')")
    for item in left:
        print(item)
    return 0


def register_emulate(sub: argparse._SubParsersAction) -> None:
    help_text = "Emulate the switch tree on this machine (root: namespaces, bridges, tbf)."
    p = sub.add_parser("emulate", help=help_text, description=help_text)
    esub = p.add_subparsers(dest="emulate_command", metavar="ACTION", required=True)

    def action(
        name: str, func: Callable[[argparse.Namespace], int], text: str
    ) -> argparse.ArgumentParser:
        a = esub.add_parser(name, help=text, description=text)
        a.add_argument(
            "--prefix",
            default=DEFAULT_PREFIX,
            help=f"name prefix of namespaces and interfaces (default: {DEFAULT_PREFIX})",
        )
        a.set_defaults(func=func)
        return a

    a = action(
        "up",
        cmd_up,
        "Build one namespace per machine, a bridge per switch, veth + tbf per link.",
    )
    a.add_argument("topology", metavar="TOPO.yaml", help="switch tree (see docs/topology.md)")
    a.add_argument(
        "--rate",
        type=rate,
        metavar="R",
        help="one rate for every link, e.g. 20Mbit (default: the YAML's)",
    )
    a.add_argument(
        "--queue",
        type=queue,
        metavar="BYTES",
        default=str(DEFAULT_QUEUE),
        help=f"tbf queue per link direction, the switch port buffer (default: {DEFAULT_QUEUE})",
    )
    a.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    action("down", cmd_down, "Remove every namespace and interface with the prefix (idempotent).")
    action("status", cmd_status, "List namespaces and interfaces left with the prefix.")


def cmd_export_simgrid(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    link_rate = parse_rate_option(args.rate)
    check_output_dir(args.output)
    platform, hosts = export_simgrid(topo, args.output, link_rate)
    print(f"wrote {platform} and {hosts} ({topo.n_machines} hosts, {len(topo.switches)} routers)")
    print(
        f"run:  smpirun -platform {platform} -hostfile {hosts} -np {topo.n_machines} "
        + " ".join(f"--cfg={c}" for c in (*BASE_CFG, *SCALE_CFG))
        + " ./your_program"
    )
    return 0


def register_export(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser(
        "export",
        help="Export the switch tree for a simulator.",
        description="Export the switch tree for a simulator.",
    )
    kinds = export.add_subparsers(dest="export_kind", metavar="KIND", required=True)
    text = "SimGrid SMPI platform XML (full-duplex links) and hostfile."
    p = kinds.add_parser("simgrid", help=text, description=text)
    p.add_argument(
        "topology", nargs="?", metavar="TOPO.yaml", help="switch tree (see docs/topology.md)"
    )
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="output directory")
    p.add_argument(
        "--rate",
        type=rate,
        metavar="R",
        help="bandwidth of every link instead of the topology's (e.g. 1Gbit)",
    )
    p.set_defaults(func=cmd_export_simgrid)
    register_export_slurm(kinds)
