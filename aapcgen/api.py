"""The Python API: ``aapcgen.load``, ``schedule``, ``prove``, ``generate``, ``build``.

The stable entry points of the library, for scripts and notebooks; the command line does the
same work (``aapcgen info|schedule|verify|generate|build``). Errors in the input raise
``aapcgen.InputError`` (one line naming the offending element); a schedule that fails its
proof raises ``aapcgen.VerificationError``.

    import aapcgen
    topo = aapcgen.load("cluster.yaml")            # or a shipped example: "two-level-1024"
    sched = aapcgen.schedule(topo)                 # the optimal contention-free phases
    aapcgen.prove(topo, sched)                     # the independent proof (a summary line)
    aapcgen.generate(topo, "aapc/")                # C sources + runtime for mpicc
    aapcgen.build(topo, "libaapc.so")              # the library for LD_PRELOAD

The heavy modules (numpy, the schedulers, Jinja2) load at the first call, not at
``import aapcgen``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from aapcgen.alltoall.phases import Schedule
    from aapcgen.core.model import Topology

PathLike = str | os.PathLike[str]


def load(path: PathLike | None = None) -> Topology:
    """Read and validate a topology (docs/topology.md).

    ``path``: a YAML file, or the name of an example shipped with aapcgen (``"two-level-1024"``,
    ``"chain-4x4.yaml"``); None: the built-in example of seed 002 Figure 1 (``paper-fig1``).
    Returns an ``aapcgen.core.model.Topology``: ``name``, ``machines`` (rank order),
    ``switches``, ``links``, ``hosts``, ``ranks_per_machine``, ``n_machines``.
    """
    from aapcgen.core.topology import builtin_topology, load_topology, topology_path

    if path is None:
        return builtin_topology()
    return load_topology(topology_path(os.fspath(path)))


def schedule(topology: Topology, hosts: list[str] | None = None) -> Schedule:
    """The optimal contention-free phases of an all-to-all on ``topology`` (seed 002, with
    capacities where switch links are faster than machine links).

    ``hosts``: the host of every rank of one job (a host named twice runs two ranks), to get
    what the runtime schedules for that job; None: the whole cluster, one rank per machine.
    Returns an ``aapcgen.alltoall.phases.Schedule``: message e goes from rank ``src[e]`` to
    rank ``dst[e]`` in phase ``phase[e]`` (numpy arrays, sorted by phase), ``n_phases``,
    ``n_machines``; ``phase_lists()`` gives the phases as lists of (src, dst) rank pairs.
    """
    from aapcgen.alltoall.capacity import schedule_phases
    from aapcgen.alltoall.tree import analyze

    return schedule_phases(analyze(_job(topology, hosts)))


def prove(topology: Topology, sched: Schedule, hosts: list[str] | None = None) -> str:
    """Prove ``sched`` complete (every ordered pair of ranks once), contention-free (no
    directed link twice, or above its capacity, in a phase) and optimal (as many phases as the
    lower bound) with the independent checker; ``hosts`` as for ``schedule``. Returns the
    proof's summary line; raises ``aapcgen.VerificationError`` when any of it fails."""
    from aapcgen.verify.alltoall import verify_schedule

    topo = _job(topology, hosts)
    return verify_schedule(topo, sched.phase, sched.src, sched.dst).summary(topo.name)


def generate(
    topology: Topology,
    out_dir: PathLike,
    variant: str = "receiver-all",
    block_sizes: tuple[int, ...] | None = None,
) -> list[Path]:
    """Write the C routine of ``topology`` and the runtime into ``out_dir`` (created); return
    the files written. Compile them with a program: ``mpicc -DAAPC_INTERCEPT -I DIR prog.c
    DIR/*.c`` (then MPI_Alltoall runs the routine).

    ``variant``: any name AAPC_VARIANT takes (``receiver-all``, ``sender-partial-4``,
    ``runtime-receiver-all``, ``auto``) or ``all``; ``block_sizes``: the partial variants'
    phases per block (``all`` uses 4).
    """
    from aapcgen.codegen.generate import generate as generate_files
    from aapcgen.codegen.generate import intercept_default, variant_specs

    specs = variant_specs(variant, block_sizes)
    return generate_files(topology, specs, Path(out_dir), default=intercept_default(variant)).files


def build(
    topology: Topology,
    output: PathLike,
    variant: str = "receiver-all",
    mpicc: str | None = None,
) -> Path:
    """Compile the routine of ``topology`` into ``output`` (``libNAME.so`` for LD_PRELOAD or
    linking, ``libNAME.a``) with the MPI compiler wrapper ``mpicc`` (default: $MPICC, else
    mpicc on PATH); return its path. ``variant`` as for ``generate``. A failed compile raises
    ``aapcgen.AapcError`` naming the folder that keeps the sources and the compiler's output.
    """
    from aapcgen.codegen.generate import (
        build_library,
        find_mpicc,
        intercept_default,
        variant_specs,
    )

    out = Path(output)
    build_library(
        topology,
        variant_specs(variant, None),
        out,
        find_mpicc(mpicc, os.environ.get("MPICC")),
        lambda _: None,
        default=intercept_default(variant),
    )
    return out.resolve()


def _job(topology: Topology, hosts: list[str] | None) -> Topology:
    if hosts is None:
        return topology
    from aapcgen.alltoall.job import job_topology
    from aapcgen.core.hostlist import job_rank_machines

    return job_topology(topology, job_rank_machines(topology, list(hosts), "hosts"))
