"""Option groups shared by several commands, and the checks every option value gets before any
work starts (numbers finite and in range, output paths writable): one definition each."""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from aapcgen.alltoall.job import job_topology
from aapcgen.alltoall.variants import help_text
from aapcgen.core import limits
from aapcgen.core.errors import InputError, one_line
from aapcgen.core.hostlist import (
    job_rank_machines,
    parse_hostlist,
    parse_hostlist_ranks,
    read_hostfile_ranks,
    slurm_tasks_per_node,
)
from aapcgen.core.model import Topology
from aapcgen.core.units import parse_rate_option

Handler = Callable[[argparse.Namespace], int]

C_INT_MAX = 2**31 - 1  # counts, sizes and block sizes reach C as int


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a misused option is one line (exit 2), not the usage block."""

    def error(self, message: str) -> NoReturn:
        option = re.match(r"argument ([^:]+): (.*)", message, re.DOTALL)
        if option:  # "argument --rate: ..." -> "--rate: ..."
            message = f"{option.group(1)}: {option.group(2)}"
        else:
            command = self.prog.removeprefix("aapcgen").strip()
            message = f"{command}: {message}" if command else message
        self.exit(2, one_line(f"aapcgen: {message} (see {self.prog} --help)") + "\n")


# --------------------------------------------------------------------------- value checks
# argparse ``type=`` functions: a bad value is a one-line error before the command runs.


def whole(low: int, high: int = C_INT_MAX) -> Callable[[str], int]:
    """A whole number in [low, high]."""

    def check(text: str) -> int:
        stripped = text.strip()
        digits = stripped.removeprefix("-").removeprefix("+")
        if not digits.isascii() or not digits.isdigit() or len(digits) > 19:
            raise argparse.ArgumentTypeError(f"expected a whole number, got '{text[:40]}'")
        value = int(stripped)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value

    return check


WEEK_S = 7 * 24 * 3600.0


def seconds(allow_zero: bool = False, high: float = WEEK_S) -> Callable[[str], float]:
    """A number of seconds, positive (or >= 0 with ``allow_zero``) and at most ``high``."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got '{text[:40]}'"
            ) from None
        if not (math.isfinite(value) and 0 <= value <= high) or (value == 0 and not allow_zero):
            low = "0" if allow_zero else "more than 0"
            raise argparse.ArgumentTypeError(
                f"must be from {low} to {high:g} seconds, got '{text[:40]}'"
            )
        return value

    return check


def block_sizes(text: str) -> str:
    """``--block-size N[,N...]``: each from 1 to C_INT_MAX; the text itself is passed on."""
    for item in text.split(","):
        whole(1)(item)
    return text


MAX_REPEATS = 10_000
MAX_QUEUE = 2**30  # bytes of one tbf queue (tc takes 32 bits)


def rate(text: str) -> str:
    """``--rate``: a bandwidth (core/units.py); the text is passed on."""
    try:
        parse_rate_option(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--rate: ")) from None
    return text


def queue(text: str) -> int:
    """``--queue``: bytes of switch port buffer, from one frame to MAX_QUEUE."""
    from aapcgen.platforms.emulate import MTU_FRAME

    return whole(MTU_FRAME, MAX_QUEUE)(text)


def prefix_name(text: str) -> str:
    """``--prefix``: 1-8 lower-case letters and digits (namespace and interface names)."""
    from aapcgen.platforms.emulate import check_prefix

    try:
        return check_prefix(text)
    except InputError:
        raise argparse.ArgumentTypeError(
            f"'{text[:40]}': use 1-8 lower-case letters and digits, starting with a letter"
        ) from None


def check_output_dir(path: str | os.PathLike[str], option: str = "-o") -> Path:
    """Create the output folder ``path`` (and its parents) now and prove it writable, so that a
    bad ``-o`` fails before the work, not after it."""
    out = Path(path)
    try:
        if out.exists() and not out.is_dir():
            raise InputError(f"{option} {path}: exists and is not a folder")
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        _cannot(option, path, exc)
    return out


def check_output_file(path: str | os.PathLike[str], option: str = "-o") -> Path:
    """The output file ``path``: its folder exists and takes new files, and ``path`` is not a
    folder. (A device such as /dev/stdout is allowed; a write error then is one line too.)"""
    out = Path(path)
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise InputError(f"{option} {path}: is a folder, not a file")
    if not parent.is_dir():
        raise InputError(f"{option} {path}: folder {parent} does not exist")
    if not out.exists():
        try:
            with tempfile.TemporaryFile(dir=parent):
                pass
        except OSError as exc:
            _cannot(option, path, exc)
    elif not os.access(out, os.W_OK):
        raise InputError(f"{option} {path}: not writable")
    return out


def _cannot(option: str, path: str | os.PathLike[str], exc: OSError) -> NoReturn:
    raise InputError(f"{option} {path}: cannot write there: {exc.strerror or exc}") from None


def phase_count(topo: Topology) -> int:
    """The phases the pipeline schedules for ``topo`` (the capacity lower bound, which the
    schedule reaches), computed without scheduling."""
    from aapcgen.alltoall.capacity import capacity_model
    from aapcgen.alltoall.tree import analyze

    return capacity_model(analyze(topo)).lower_bound


def check_phase_slots(topo: Topology, phases: int | None = None) -> None:
    """The guards of the commands that build per-phase tables of every machine (sync, generate,
    build, bench, tune): phases x machines, and the memory that takes."""
    phases = phase_count(topo) if phases is None else phases
    n = topo.n_machines
    message = limits.exceeded(limits.PHASE_SLOTS, phases * n)
    if message is not None:
        raise InputError(f"{topo.source}: {phases:,} phases x {n:,} machines: {message}")
    need = limits.BASE_BYTES + max(
        limits.BYTES_PER_PAIR * n * (n - 1), limits.BYTES_PER_SLOT * phases * n
    )
    limits.check_memory(need, f"scheduling {n:,} machines in {phases:,} phases", topo.source)


def check_proof_work(topo: Topology) -> None:
    """The guard of the proof of `verify`: every message checked on every link of its path."""
    from aapcgen.alltoall.tree import analyze

    crossings = 2 * sum(link.load for link in analyze(topo).links)
    limits.check(limits.CROSSINGS, crossings, topo.source)


def check_schedule_memory(topo: Topology) -> None:
    """The memory guard of schedule and verify: every ordered machine pair is a message."""
    n = topo.n_machines
    need = limits.BASE_BYTES + limits.BYTES_PER_PAIR * n * (n - 1)
    limits.check_memory(need, f"scheduling {n:,} machines", topo.source)


RANK_PAIR_BYTES = 200  # the rank-level proof holds every rank pair (measured: 0.85 GiB at 4096)


def check_ranks(topo: Topology) -> None:
    """The guards of the rank-level proof (machines x ranks_per_machine ranks)."""
    ranks = topo.n_machines * topo.ranks_per_machine
    where = f"{topo.source}: ranks_per_machine {topo.ranks_per_machine}"
    limits.check(limits.RANKS, ranks, where)
    need = limits.BASE_BYTES + RANK_PAIR_BYTES * ranks * ranks
    limits.check_memory(need, f"the proof for {ranks:,} ranks", where)


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
        "--block-size",
        type=block_sizes,
        metavar="N[,N...]",
        help="phases per block for the partial variants",
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
    p.add_argument("--repeats", type=whole(1, MAX_REPEATS), default=repeats, help=repeats_help)
    p.add_argument(
        "--target-seconds",
        type=seconds(high=3600),
        default=1.0,
        help="timed seconds per measurement",
    )
    p.add_argument(
        "--max-iters",
        type=whole(1),
        default=max_iters,
        help="at most this many timed calls per measurement",
    )
    p.add_argument(
        "--rate", type=rate, help="emulate/simulate: every link at this speed (e.g. 100Mbit)"
    )
    p.add_argument(
        "--queue", type=queue, default=100_000, help="emulate: switch port buffer in bytes"
    )
    p.add_argument(
        "--prefix",
        type=prefix_name,
        default=prefix,
        help="emulate: prefix of namespace and interface names",
    )
    p.add_argument("--hostfile", help="mpiexec backend: hostfile for mpiexec -f")
    p.add_argument(
        "--launcher", help="mpiexec backend: launch command, e.g. 'srun -N 16 --ntasks-per-node=1'"
    )
    p.add_argument(
        "--timeout", type=seconds(), default=3600.0, help="seconds before one MPI job is killed"
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
        help="the host of every rank, Slurm hostlist syntax (e.g. 'n[0-3],n9'; 'n0:2' or a "
        "repeated host: two ranks there); default: $SLURM_JOB_NODELIST (and "
        "$SLURM_TASKS_PER_NODE) when set, else the whole cluster",
    )
    g.add_argument(
        "--hostfile",
        metavar="FILE",
        help="the job's hosts, one per line, as mpiexec reads it ('host:N', 'host slots=N')",
    )


def job_topology_of(args: argparse.Namespace, cluster: Topology) -> Topology:
    """The cluster, or the job tree of ``--hosts``/``--hostfile``/``$SLURM_JOB_NODELIST`` (with
    ``$SLURM_TASKS_PER_NODE``): every rank on the machine of its host, in rank order, several
    ranks per machine where the list gives them (``n0:2``, a repeated host, ``n0:2`` or
    ``slots=2`` in a host file): what the runtime schedules for that job."""
    ranks = job_ranks_of(args, cluster)
    return cluster if ranks is None else job_topology(cluster, ranks)


def job_ranks_of(args: argparse.Namespace, cluster: Topology) -> list[int] | None:
    """The machine (index into ``cluster``) of every rank of the job ``--hosts``/``--hostfile``/
    ``$SLURM_JOB_NODELIST`` give, in rank order; None when none is given (the whole cluster)."""
    what = "--hosts"
    if args.hostfile:
        ranks, what = read_hostfile_ranks(args.hostfile), "--hostfile"
    elif args.hosts is not None:
        ranks = parse_hostlist_ranks(args.hosts)
    elif os.environ.get("SLURM_JOB_NODELIST"):
        what = "$SLURM_JOB_NODELIST"
        nodes = parse_hostlist(os.environ["SLURM_JOB_NODELIST"], what)
        tasks = os.environ.get("SLURM_TASKS_PER_NODE")
        counts = slurm_tasks_per_node(tasks, len(nodes)) if tasks else [1] * len(nodes)
        ranks = [host for host, k in zip(nodes, counts) for _ in range(k)]
    else:
        return None
    return list(job_rank_machines(cluster, ranks, what))
