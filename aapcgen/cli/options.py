"""Option groups shared by several commands: one definition each."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from aapcgen.alltoall.job import job_topology, rank_machines
from aapcgen.alltoall.variants import help_text
from aapcgen.core.hostlist import job_machines, parse_hostlist, read_hostfile
from aapcgen.core.model import Topology

Handler = Callable[[argparse.Namespace], int]


def command(
    sub: argparse._SubParsersAction,
    name: str,
    func: Handler,
    help_text: str,
    topology: str = "optional",
) -> argparse.ArgumentParser:
    """A subcommand with its handler and, unless ``topology`` is "none", the TOPO.yaml argument
    ("optional": the built-in example when absent; "required")."""
    p = sub.add_parser(name, help=help_text, description=help_text)
    if topology != "none":
        p.add_argument(
            "topology",
            nargs="?" if topology == "optional" else None,
            metavar="TOPO.yaml",
            help="switch tree (see docs/topology.md)",
        )
    p.set_defaults(func=func)
    return p


def variant_options(p: argparse.ArgumentParser, default: str | None) -> None:
    """``--variant``, ``--block-size`` and ``-v`` (sync, generate, build)."""
    p.add_argument("--variant", default=default, metavar="V", help=help_text(default))
    p.add_argument(
        "--block-size", metavar="N[,N...]", help="phases per block for the partial variants"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")


def run_options(
    p: argparse.ArgumentParser,
    backends: str,
    repeats: int,
    max_iters: int,
    prefix: str,
    repeats_help: str = "interleaved repeats (median and spread)",
) -> None:
    """Where and how long MPI jobs run (bench, bench-alltoallv, tune): the fields of
    ``measure.bench.BenchConfig.from_args``."""
    p.add_argument("--backend", default="local", help=f"one of {backends} (default local)")
    p.add_argument("--repeats", type=int, default=repeats, help=repeats_help)
    p.add_argument(
        "--target-seconds", type=float, default=1.0, help="timed seconds per measurement"
    )
    p.add_argument(
        "--max-iters",
        type=int,
        default=max_iters,
        help="at most this many timed calls per measurement",
    )
    p.add_argument("--rate", help="emulate/simulate: every link at this speed (e.g. 100Mbit)")
    p.add_argument(
        "--queue", type=int, default=100_000, help="emulate: switch port buffer in bytes"
    )
    p.add_argument(
        "--prefix", default=prefix, help="emulate: prefix of namespace and interface names"
    )
    p.add_argument("--hostfile", help="mpiexec backend: hostfile for mpiexec -f")
    p.add_argument(
        "--launcher", help="mpiexec backend: launch command, e.g. 'srun -N 16 --ntasks-per-node=1'"
    )
    p.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds before one MPI job is killed"
    )
    p.add_argument(
        "--mpicc",
        metavar="PATH",
        help="compiler wrapper of the MPI to measure; its mpiexec is the one beside it "
        "(default: the venv's MPICH, then PATH's)",
    )


def job_options(p: argparse.ArgumentParser) -> None:
    """``--hosts`` / ``--hostfile``: look at one job's machines, as the runtime schedules them."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--hosts",
        metavar="LIST",
        help="the job's hosts, Slurm hostlist syntax (e.g. 'n[0-3],n9'); default: "
        "$SLURM_JOB_NODELIST when set, else the whole cluster",
    )
    g.add_argument("--hostfile", metavar="FILE", help="the job's hosts, one per line")


def job_topology_of(args: argparse.Namespace, cluster: Topology) -> Topology:
    """The cluster, or the job tree of ``--hosts``/``--hostfile``/``$SLURM_JOB_NODELIST`` (one
    rank per machine, in host order): what the runtime schedules for that job."""
    if args.hostfile:
        hosts = read_hostfile(args.hostfile)
    elif args.hosts is not None:
        hosts = parse_hostlist(args.hosts)
    elif os.environ.get("SLURM_JOB_NODELIST"):
        hosts = parse_hostlist(os.environ["SLURM_JOB_NODELIST"], "$SLURM_JOB_NODELIST")
    else:
        return cluster
    machines = job_machines(cluster, hosts, "--hostfile" if args.hostfile else "--hosts")
    return job_topology(cluster, rank_machines(cluster, machines))
