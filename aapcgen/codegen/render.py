"""Stage 5: per-rank tables and rendering of the generated C (templates/ lay out the data).

``rank_tables(tree, schedule, plan) -> RankTables`` turns the phases and one variant's syncs into
the CSR tables of runtime_c/common/aapc_phased.h (a rank reads only its own rows);
``render(...)`` writes the files an application compiles together with its own sources.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from aapcgen.alltoall.phases import Schedule
from aapcgen.alltoall.sync import SyncPlan
from aapcgen.alltoall.variants import (
    AUTO,
    DEFAULT_VARIANT,
    KIND_C,
    RUNTIME_SYNC_C,
    VariantSpec,
    nonblocking_sync,
    runtime_label,
)
from aapcgen.alltoallv.schedule import VSchedule
from aapcgen.codegen.cluster import cluster_tables, render_cluster_c
from aapcgen.codegen.vtree import render_vtree_c, vtree_tables
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.resources import resource_dir

NUMBERS_PER_LINE = 20


def c_identifier(name: str) -> str:
    """A variant name as part of a C identifier: ``receiver-all`` -> ``receiver_all``."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name).lower()
    return ident if not ident[:1].isdigit() else f"t{ident}"


# The namespace of everything generated for a topology. The runtime (runtime_c/) names no file,
# function, variable or macro aapc_topo_*, aapc_alltoall_topo_*, aapc_alltoallv_topo_* or
# AAPC_TOPO_* (tests/test_site.py checks it), so no topology name can collide with it: a topology
# named cluster, comm or registry writes aapc_topo_cluster.h, never runtime_c's aapc_cluster.h.
TOPOLOGY_PREFIX = "topo_"
RESERVED_PREFIXES = ("aapc_topo_", "aapc_alltoall_topo_", "aapc_alltoallv_topo_", "AAPC_TOPO_")


def topology_c_name(name: str) -> str:
    """The C name of a topology's files and symbols: ``paper-fig1`` -> ``topo_paper_fig1``
    (files ``aapc_topo_paper_fig1*.c``, ``aapc_topo_paper_fig1.h``; functions
    ``aapc_alltoall_topo_paper_fig1_<variant>``)."""
    return TOPOLOGY_PREFIX + re.sub(r"[^0-9A-Za-z_]", "_", name).lower()


def intercept_file_name(topology_name: str) -> str:
    """The generated file that defines MPI_Alltoall for a topology (two in one folder clash)."""
    return f"aapc_{topology_c_name(topology_name)}_intercept.c"


def _csr(owner: np.ndarray, n: int) -> np.ndarray:
    """Row offsets for entries already sorted by owner (0..n-1)."""
    return np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n))])


@dataclass(frozen=True)
class RankTables:
    """The arrays of one aapc_schedule_t (names as in runtime_c/common/aapc_phased.h)."""

    send_off: np.ndarray
    send_phase: np.ndarray
    send_peer: np.ndarray
    recv_off: np.ndarray
    recv_phase: np.ndarray
    recv_peer: np.ndarray
    syncin_off: np.ndarray
    syncin_peer: np.ndarray
    wait_off: np.ndarray
    wait_idx: np.ndarray
    fire_off: np.ndarray
    fire_peer: np.ndarray


def _entries(
    phase: np.ndarray, owner: np.ndarray, peer: np.ndarray, n: int
) -> tuple[np.ndarray, ...]:
    order = np.lexsort((phase, owner))
    return _csr(owner[order], n), phase[order], peer[order], owner[order]


def _entry_index(
    owner_sorted: np.ndarray,
    phase_sorted: np.ndarray,
    owner: np.ndarray,
    phase: np.ndarray,
    n_phases: int,
) -> np.ndarray:
    """Global entry index of (owner, phase) in entries sorted by (owner, phase)."""
    keys = owner_sorted.astype(np.int64) * n_phases + phase_sorted
    return np.searchsorted(keys, owner.astype(np.int64) * n_phases + phase)


def rank_tables(sched: Schedule, plan: SyncPlan) -> RankTables:
    """Stage 5 of the pipeline: CSR tables for the executor."""
    n, n_phases = sched.n_machines, sched.n_phases
    phase = np.concatenate([sched.phase, plan.dummy_phase]).astype(np.int64)
    src = np.concatenate([sched.src, plan.dummy_src]).astype(np.int64)
    dst = np.concatenate([sched.dst, plan.dummy_dst]).astype(np.int64)
    dummy = np.r_[
        np.zeros(len(sched.phase), dtype=bool), np.ones(len(plan.dummy_phase), dtype=bool)
    ]
    send_off, send_phase, send_peer, send_owner = _entries(
        phase, src, np.where(dummy, -dst - 1, dst), n
    )
    recv_off, recv_phase, recv_peer, recv_owner = _entries(
        phase, dst, np.where(dummy, -src - 1, src), n
    )
    # sync k fires at entry `event` of machine frm and is awaited before send entry `target` of `to`
    events = (send_owner, send_phase) if plan.spec.kind == "sender" else (recv_owner, recv_phase)
    # a rank with several entries in one phase (the small-message phase of an Alltoallv
    # schedule) fires after the last of them and waits before the first: conservative, and the
    # same entry when there is one entry per phase (every MPI_Alltoall schedule)
    event = _entry_index(*events, plan.frm, plan.trigger + 1, n_phases) - 1
    target = _entry_index(send_owner, send_phase, plan.to, plan.target, n_phases)
    # a source sends its syncs in (event, destination, target) order; every receiver posts its
    # receives from one source in that same order, so MPI's non-overtaking rule pairs them up
    fire_order = np.lexsort((target, plan.to, event))
    n_events = len(events[0])
    fire_off = _csr(event[fire_order], n_events)
    post_order = np.lexsort((target, event, plan.frm, plan.to))
    syncin_off = _csr(plan.to[post_order], n)
    post_index = np.empty(len(post_order), dtype=np.int64)
    post_index[post_order] = np.arange(len(post_order)) - syncin_off[plan.to[post_order]]
    wait_order = np.lexsort((post_index, target))
    return RankTables(
        send_off=send_off,
        send_phase=send_phase,
        send_peer=send_peer,
        recv_off=recv_off,
        recv_phase=recv_phase,
        recv_peer=recv_peer,
        syncin_off=syncin_off,
        syncin_peer=plan.frm[post_order],
        wait_off=_csr(target[wait_order], len(send_owner)),
        wait_idx=post_index[wait_order],
        fire_off=fire_off,
        fire_peer=plan.to[fire_order],
    )


def c_array(values: np.ndarray) -> str:
    """An int32 array as the body of a C initializer, NUMBERS_PER_LINE numbers a line."""
    if len(values) == 0:
        return "0 /* empty */"
    text = np.asarray(values, dtype=np.int64).astype(str)
    lines = (
        ", ".join(text[i : i + NUMBERS_PER_LINE]) for i in range(0, len(text), NUMBERS_PER_LINE)
    )
    return ",\n    ".join(lines)


def host_table(topo: Topology) -> list[str] | None:
    """Hostnames for rank mapping, all or none (InputError if only some machines give one)."""
    given = [h for h in topo.hosts if h is not None]
    if not given:
        return None
    if len(given) != topo.n_machines:
        missing = next(m for m, h in zip(topo.machines, topo.hosts) if h is None)
        raise InputError(
            f"{topo.source}: machines ({missing}): host: is given for some machines but not this one; give it for all or none"
        )
    return list(topo.hosts)  # type: ignore[arg-type]


def template_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclass(frozen=True)
class PieceTables:
    """Alltoallv: the byte range of every send and recv entry of a RankTables, same order."""

    send_pos: np.ndarray
    send_len: np.ndarray
    recv_pos: np.ndarray
    recv_len: np.ndarray


def piece_tables(
    phase: np.ndarray, src: np.ndarray, dst: np.ndarray, pos: np.ndarray, length: np.ndarray
) -> PieceTables:
    """Pieces in schedule order -> their ranges in rank_tables' entry order (its sort is stable:
    owner, then phase, then schedule order)."""
    send = np.lexsort((phase, src))
    recv = np.lexsort((phase, dst))
    return PieceTables(pos[send], length[send], pos[recv], length[recv])


@dataclass(frozen=True)
class VariantCode:
    label: str  # e.g. "sender-partial-4"
    ident: str  # e.g. "sender_partial_4"
    tables: RankTables
    plan: SyncPlan

    pieces: PieceTables | None = None  # Alltoallv (level 3) variants only

    @property
    def own_phases(self) -> bool:
        """Dummy messages change the send/receive rows, so that variant carries its own."""
        return len(self.plan.dummy_phase) > 0


VSCHEDULER_C = {
    "greedy": "AAPC_VSCHED_GREEDY",
    "alltoall": "AAPC_VSCHED_ALLTOALL",
    "balanced": "AAPC_VSCHED_BALANCED",
}
TEMPLATE_MAX_MACHINES = 1024  # the run-time scheduler's n*n template table (4 MB of C at 1024)
# runtime_c subdirectories whose files go into every generated directory (flattened)
RUNTIME_SUBDIRS = (
    "common",
    "alltoall",
    "alltoallv",
    "hier",
    "shm",
    "vsched",
    "cluster",
    "coll",
    "mcast",
    "nbc",
    "fortran",
)


@dataclass(frozen=True)
class RuntimeVariant:
    """An MPI_Alltoall scheduled at run time (the whole cluster's tree, any communicator)."""

    label: str  # e.g. "runtime-receiver-all"
    ident: str
    sync_c: str


def runtime_variants() -> list[RuntimeVariant]:
    return [
        RuntimeVariant(runtime_label(s), c_identifier(runtime_label(s)), c)
        for s, c in RUNTIME_SYNC_C.items()
    ]


@dataclass(frozen=True)
class AutoVariant:
    """The default MPI_Alltoall: scheduled at run time when every rank's machine is known, else
    the precomputed ``precomputed_ident`` routine of the whole cluster."""

    sync_c: str
    precomputed_ident: str
    precomputed_label: str


def auto_variant(default: str, variants: list[VariantCode]) -> AutoVariant | None:
    """``auto`` when the default is a precomputed variant the run-time routine can run."""
    if default not in RUNTIME_SYNC_C or not any(v.label == default for v in variants):
        return None
    return AutoVariant(RUNTIME_SYNC_C[default], c_identifier(default), default)


def intercept_label(default: str, variants: list[VariantCode]) -> str:
    """What MPI_Alltoall runs by default: auto when the default variant has a run-time
    routine, else the default variant itself."""
    return AUTO if auto_variant(default, variants) else default


def nbc_sync(default: VariantSpec | None) -> str:
    """The synchronisation (C enum) MPI_Ialltoall and MPI_Alltoall_init run at run time for the
    default routine ``default`` (nonblocking_sync), or -1: no default variant, the library's
    routine serves them."""
    return RUNTIME_SYNC_C[nonblocking_sync(default)] if default else "-1"


def nbc_vprog(default: VariantSpec | None) -> str | None:
    """The level-1 Alltoallv program (its C identifier) MPI_Ialltoallv and MPI_Alltoallv_init
    run: the one of nbc_sync's synchronisation, or None (the library's routine serves them)."""
    return c_identifier(nonblocking_sync(default)) if default else None


def default_spec(default: str, variants: list[VariantCode]) -> VariantSpec | None:
    """The synchronisation variant of the default routine among those generated."""
    return next((v.plan.spec for v in variants if v.label == default), None)


def runtime_sources() -> list[Path]:
    """The runtime files a generated directory needs, by name (their names are unique)."""
    runtime = resource_dir("runtime_c")
    files = [f for d in RUNTIME_SUBDIRS for f in (runtime / d).glob("*.[ch]")]
    return sorted(files, key=lambda f: f.name)


def runtime_compile_args() -> str:
    """What to add to an mpicc line to compile a directory written without the runtime: an
    -I flag and the sources of every runtime folder."""
    runtime = resource_dir("runtime_c")
    return " ".join(
        [f"-I {runtime / d}" for d in RUNTIME_SUBDIRS]
        + [f"{runtime / d}/*.c" for d in RUNTIME_SUBDIRS]
    )


@dataclass(frozen=True)
class VLevelProgram:
    label: str  # synchronisation, e.g. "sender-all"
    ident: str
    sync_c: str


@dataclass(frozen=True)
class VLevelCode:
    """Levels 1 and 2: the tree tables for the run-time scheduler and one program per sync."""

    scheduler: str
    scheduler_c: str
    threshold: int
    chunk: int
    tree_c: str
    programs: list[VLevelProgram]


def vlevel_code(topo: Topology, scheduler: str, threshold: int, chunk: int | None) -> VLevelCode:
    # greedy breaks size ties by the template phase, as the Python scheduler does; the n*n
    # table is left out above TEMPLATE_MAX_MACHINES (greedy then breaks ties by source and
    # destination, all-to-all based is unavailable)
    if scheduler == "alltoall" and topo.n_machines > TEMPLATE_MAX_MACHINES:
        raise InputError(
            f"--runtime-scheduler alltoall needs the {topo.n_machines}^2 template table; "
            f"use greedy or balanced above {TEMPLATE_MAX_MACHINES} machines"
        )
    with_template = scheduler in ("greedy", "alltoall") and topo.n_machines <= TEMPLATE_MAX_MACHINES
    tables = vtree_tables(topo, with_template=with_template)
    programs = [VLevelProgram(s, c_identifier(s), c) for s, c in RUNTIME_SYNC_C.items()]
    return VLevelCode(
        scheduler,
        VSCHEDULER_C[scheduler],
        threshold,
        chunk or 0,
        render_vtree_c(tables, "vtree"),
        programs,
    )


@dataclass(frozen=True)
class AlltoallvCode:
    """Level 3: one Alltoallv schedule of a compiled pattern and its variants."""

    schedule: VSchedule
    pattern: np.ndarray  # machines x machines byte counts
    source: str  # where the pattern came from (a comment in the C)
    variants: list[VariantCode]
    default: str


def render(
    topo: Topology,
    sched: Schedule,
    plain: RankTables,
    variants: list[VariantCode],
    default: str,
    out_dir: Path,
    alltoallv: AlltoallvCode | None = None,
    vlevel: VLevelCode | None = None,
    *,
    copy_runtime: bool = True,
    intercept: str | None = None,
    model: dict[str, float] | None = None,
) -> list[Path]:
    """Write the generated sources and (unless ``copy_runtime`` is false) a flat copy of the
    runtime into ``out_dir``; ``intercept``: what MPI_Alltoall runs by default (a run-time
    routine or auto; None: intercept_label); ``model``: the selection's constants measured by
    `aapcgen tune` (None: the library's built-in ones)."""
    env = template_environment()
    topo_id = topology_c_name(topo.name)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    runtime, auto = runtime_variants(), auto_variant(default, variants)
    common = {
        "topology": topo,
        "topo_id": topo_id,
        "n_phases": sched.n_phases,
        "hosts": host_table(topo),
        "default": default,
        "variants": variants,
        "c_array": c_array,
        "sync_kind": KIND_C,
        "vvariants": alltoallv.variants if alltoallv else [],
        "vdefault": f"level3-{alltoallv.default}" if alltoallv else f"level1-{DEFAULT_VARIANT}",
        "vlevel": vlevel or vlevel_code(topo, "greedy", 0, None),
        "vpattern": alltoallv.pattern.ravel() if alltoallv else np.zeros(0),
        "runtime_variants": runtime,
        "auto": auto,
        "nbc_sync_c": nbc_sync(default_spec(default, variants)),
        "nbc_vprog_ident": nbc_vprog(default_spec(default, variants)),
        "intercept_default": intercept or intercept_label(default, variants),
        "n_variants": len(variants) + len(runtime) + (1 if auto else 0),
        "cluster_c": render_cluster_c(cluster_tables(topo, model), f"aapc_{topo_id}_cluster"),
    }
    outputs = [
        ("header.h.j2", f"aapc_{topo_id}.h", {}),
        ("phases.c.j2", f"aapc_{topo_id}_phases.c", {"tables": plain}),
        ("intercept.c.j2", f"aapc_{topo_id}_intercept.c", {}),
        ("alltoallv.c.j2", f"aapc_{topo_id}_alltoallv.c", {}),
        ("cluster.c.j2", f"aapc_{topo_id}_cluster.c", {}),
    ]
    outputs += [("variant.c.j2", f"aapc_{topo_id}_{v.ident}.c", {"v": v}) for v in variants]
    if alltoallv is not None:
        vextra = {"vs": alltoallv.schedule, "pattern_source": alltoallv.source}
        outputs += [
            ("vvariant.c.j2", f"aapc_{topo_id}_alltoallv_{v.ident}.c", {"v": v, **vextra})
            for v in alltoallv.variants
        ]
    runtime = runtime_sources() if copy_runtime else []
    check_unique_names([name for _, name, _ in outputs] + [f.name for f in runtime])
    for template, name, extra in outputs:
        path = out_dir / name
        path.write_text(env.get_template(template).render(**common, **extra))
        written.append(path)
    for source in runtime:
        shutil.copyfile(source, out_dir / source.name)
        written.append(out_dir / source.name)
    return written


def check_unique_names(names: list[str]) -> None:
    """Every file of a generated folder has its own name (one would overwrite the other)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AapcError(
                f"two generated files would be named {name}: one would overwrite the other"
            )
        seen.add(name)
