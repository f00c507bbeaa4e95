"""``aapcgen generate | build``: C sources (and the runtime) or a compiled library."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from aapcgen.alltoall.variants import DEFAULT_VARIANT
from aapcgen.alltoallv.schedule import load_pattern
from aapcgen.cli.alltoallv import alltoallv_options
from aapcgen.cli.options import (
    check_output_dir,
    check_output_file,
    check_phase_slots,
    command,
    variant_options,
)
from aapcgen.cli.pipeline import PROGRESS_MACHINES, specs_of
from aapcgen.codegen.generate import (
    AlltoallvRequest,
    build_library,
    find_mpicc,
    generate,
    intercept_default,
    stderr_progress,
)
from aapcgen.codegen.render import intercept_file_name, runtime_compile_args
from aapcgen.core.errors import InputError
from aapcgen.core.model import Topology
from aapcgen.core.topology import topology_or_builtin
from aapcgen.tune.model import read_model


def other_topology_files(out: Path, topo: Topology) -> list[str]:
    """The routines of other topologies already in the folder ``out`` (each
    ``aapc_*_intercept.c`` defines MPI_Alltoall: two of them in one program do not link)."""
    mine = intercept_file_name(topo.name)
    if not out.is_dir():
        return []
    return sorted(p.name for p in out.glob("aapc_*_intercept.c") if p.name != mine)


def check_generate_target(out: Path, topo: Topology) -> None:
    """``-o DIR`` takes files now, and holds no other topology's routine."""
    check_output_dir(out)
    others = other_topology_files(out, topo)
    if others:
        raise InputError(
            f"-o: the folder holds another topology's routine ({others[0]}); two in one "
            "program give 'multiple definition of MPI_Alltoall': use another folder"
        )


def cmd_generate(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = specs_of(args)
    out = Path(args.output)
    check_generate_target(out, topo)
    check_phase_slots(topo)
    gen = generate(
        topo,
        specs,
        out,
        stderr_progress if topo.n_machines >= PROGRESS_MACHINES or args.verbose else lambda _: None,
        _alltoallv_request(args, topo),
        args.runtime_scheduler,
        copy_runtime=not args.no_runtime,
        default=intercept_default(args.variant),
        model=read_model(args.model) if args.model else None,
    )
    for line in written_lines(gen.files, out, topo, args.verbose):
        print(line)
    labels = ", ".join(v.label for v in gen.variants)
    print(f"variants: {labels}; MPI_Alltoall runs {gen.default} (AAPC_VARIANT picks another)")
    print(
        "MPI_Alltoall runs it on the whole cluster, and schedules any other communicator at its "
        "first call when every rank's machine is known (docs/generate.md)"
    )
    if gen.alltoallv is not None:
        v = gen.alltoallv
        print(
            f"MPI_Alltoallv for {v.source}: {v.schedule.scheduler} schedule, {v.schedule.n_phases} "
            f"phases, cost/bound {v.schedule.ratio:.4f}; level3-{v.default} by default "
            "(calls with other counts use PMPI_Alltoallv)"
        )
    runtime = "" if not args.no_runtime else " " + runtime_compile_args()
    print(
        f"compile them with your program:  mpicc -I {out} -DAAPC_INTERCEPT your_program.c "
        f"{out}/*.c{runtime}"
    )
    if gen.phased_over_bound > PHASED_WARN:
        print(phased_warning(topo, gen.phased_over_bound), file=sys.stderr)
    return 0


def written_lines(files: list[Path], out: Path, topo: Topology, every: bool) -> list[str]:
    """What generate wrote: the topology's files by name, then the runtime's (by name with -v,
    else counted)."""
    prefix = intercept_file_name(topo.name).removesuffix("_intercept.c")
    own = [f.name for f in files if f.name.startswith(prefix)]
    runtime = [f.name for f in files if not f.name.startswith(prefix)]
    lines = [f"wrote {len(files)} files to {out}/ for {topo.name}:", "  " + " ".join(own)]
    if runtime and every:
        lines.append("  runtime: " + " ".join(runtime))
    elif runtime:
        lines.append(
            f"  and the {len(runtime)} files of the runtime (aapc_*.c, aapc_*.h; -v names them)"
        )
    return lines


# phases that need this much more than the bound, even back to back, are worth a warning
PHASED_WARN = 1.05


def phased_warning(topo: Topology, over: float) -> str:
    return (
        f"aapcgen: warning: {topo.name}: the contention-free phases, run back to back, need at "
        f"least {over:.1f}x the bandwidth bound: a link carries floor(its speed / the slowest "
        "machine link) messages per phase and idles for the fraction left over; the phased variants reach at "
        f"most {100 / over:.0f}% of the peak; `aapcgen tune` measures them against no-sync and "
        "the MPI library's algorithms on your cluster (docs/scheduling.md, 'Mixed link speeds')"
    )


def _alltoallv_request(args: argparse.Namespace, topo: Topology) -> AlltoallvRequest | None:
    if args.alltoallv is None:
        return None
    pattern = load_pattern(args.alltoallv, topo)
    if not np.any(pattern):
        raise InputError(
            f"{args.alltoallv}: every count off the diagonal is 0: there is nothing for a "
            "generated MPI_Alltoallv to schedule (leave out --alltoallv)"
        )
    return AlltoallvRequest(pattern, args.alltoallv, args.scheduler, args.threshold, args.chunk)


def venv_mpicc() -> str | None:
    """The MPI compiler wrapper installed beside the running Python (the venv's MPICH), so that
    ``.venv/bin/aapcgen build`` works without .venv/bin on PATH."""
    local = Path(sys.executable).parent / "mpicc"
    return str(local) if local.exists() and os.access(local, os.X_OK) else None


def mpicc_of(explicit: str | None) -> str:
    """--mpicc, else $MPICC, else the venv's mpicc, else PATH's."""
    env = os.environ.get("MPICC")
    if explicit or env:
        return find_mpicc(explicit, env)
    return venv_mpicc() or find_mpicc(None)


def cmd_build(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = specs_of(args)
    if Path(args.output).suffix in (".so", ".a"):  # build_library says what else is wrong
        check_output_file(args.output)
    check_phase_slots(topo)
    mpicc = mpicc_of(args.mpicc)
    for line in build_library(
        topo,
        specs,
        Path(args.output),
        mpicc,
        stderr_progress if args.verbose else lambda _: None,
        default=intercept_default(args.variant),
        model=read_model(args.model) if args.model else None,
    ):
        print(line)
    return 0


def model_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        metavar="FILE",
        help="the per-call selection's constants measured on the cluster (`aapcgen tune`'s "
        "DIR/model.json; default: built-in constants measured on emulated trees)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub, "generate", cmd_generate, "Write the C routine(s) and the runtime into a directory."
    )
    variant_options(p, DEFAULT_VARIANT)
    model_option(p)
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="output directory")
    p.add_argument(
        "--no-runtime",
        action="store_true",
        help="write only the topology's own files; compile them with -I for every folder of "
        "runtime_c/ and its sources (generated/README.md)",
    )
    alltoallv_options(p)
    p = command(
        sub,
        "build",
        cmd_build,
        "Compile a generated routine into libaapc.so or libaapc.a with mpicc.",
    )
    variant_options(p, DEFAULT_VARIANT)
    model_option(p)
    p.add_argument("-o", "--output", metavar="LIB", required=True, help="libNAME.so or libNAME.a")
    p.add_argument(
        "--mpicc",
        metavar="PATH",
        help="MPI compiler wrapper (default: $MPICC, then the one beside aapcgen's Python, then "
        "mpicc on PATH)",
    )
