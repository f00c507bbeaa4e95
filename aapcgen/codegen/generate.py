"""`aapcgen generate` and `aapcgen build`: the whole pipeline from a topology to C sources or a library.

topology -> analyze (root, bottleneck) -> build_phases -> plan_sync (per variant) -> rank_tables
-> render. Each step is a pure function of the previous step's object; this module only strings
them together, writes files and runs the compiler.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aapcgen.alltoall.capacity import phased_seconds_per_byte, schedule_phases
from aapcgen.alltoall.phases import Schedule
from aapcgen.alltoall.sync import SyncCounts, SyncPlan, plan_sync
from aapcgen.alltoall.tree import TreeInfo, analyze
from aapcgen.alltoall.variants import (
    BLOCKED,
    VARIANTS,
    VariantSpec,
    default_variant,
    variant_spec,
)
from aapcgen.alltoallv.schedule import run_scheduler
from aapcgen.codegen.render import (
    AlltoallvCode,
    RankTables,
    VariantCode,
    c_identifier,
    piece_tables,
    rank_tables,
    render,
    vlevel_code,
)
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology

DEFAULT_BLOCK_SIZES = (4,)


def parse_block_sizes(text: str | None) -> tuple[int, ...] | None:
    """``--block-size`` value: one size or a comma-separated list (``2,4,8,16``)."""
    if text is None:
        return None
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(
            f"--block-size: expected N or N,N,... (phases per block), got '{text}'"
        ) from None
    if any(bs < 1 for bs in sizes):
        raise InputError(f"--block-size must be at least 1, got '{text}'")
    return sizes


def variant_specs(variant: str, block_sizes: tuple[int, ...] | None) -> list[VariantSpec]:
    """``--variant V`` or ``--variant all`` (partial variants once per block size)."""
    names = list(VARIANTS) if variant == "all" else [variant]
    specs = []
    for name in names:
        if name in BLOCKED:
            for bs in block_sizes or (DEFAULT_BLOCK_SIZES if variant == "all" else (None,)):
                specs.append(variant_spec(name, bs))
        else:
            specs.append(
                variant_spec(
                    name, None if variant == "all" else (block_sizes[0] if block_sizes else None)
                )
            )
    return specs


def empty_plan(spec: VariantSpec) -> SyncPlan:
    e = np.zeros(0, dtype=np.int64)
    return SyncPlan(spec, e, e, e, e, e, e, e, SyncCounts(0, 0, 0, 0))


@dataclass(frozen=True)
class Generated:
    files: list[Path]
    variants: list[VariantCode]
    default: str
    alltoallv: AlltoallvCode | None = None
    phased_over_bound: float = 1.0  # least time of the phases back to back / the peak bound


@dataclass(frozen=True)
class AlltoallvRequest:
    """``generate --alltoallv PATTERN``: compile one count pattern into level-3 routines."""

    pattern: np.ndarray
    source: str
    scheduler: str = "balanced"
    threshold: int = 0
    chunk: int | None = None


def alltoallv_code(
    tree: TreeInfo,
    request: AlltoallvRequest,
    specs: list[VariantSpec],
    progress: Callable[[str], None],
) -> AlltoallvCode:
    """Schedule the pattern, verify it independently, and plan each variant's syncs on it."""
    from aapcgen.verify.alltoallv import verify_vschedule  # the independent checker

    topo = tree.topology
    vs = run_scheduler(request.scheduler, topo, request.pattern, request.threshold, request.chunk)
    verify_vschedule(topo, request.pattern, vs)
    progress(
        f"alltoallv {request.source}: {request.scheduler}, {vs.n_phases} phases, "
        f"{len(vs.src)} pieces, cost/bound {vs.ratio:.4f} (verified)"
    )
    as_phases = Schedule(topo.n_machines, vs.n_phases, vs.phase, vs.src, vs.dst)
    pieces = piece_tables(vs.phase, vs.src, vs.dst, vs.offset, vs.length)
    variants = []
    for spec in specs:
        if spec.window > 1:
            raise InputError(
                f"--alltoallv: variant {spec.label} has a window, which Alltoallv schedules do "
                "not have; use the variant without -w"
            )
        if spec.dummy:
            raise InputError(
                f"--alltoallv: variant {spec.label} sends dummy messages, which Alltoallv "
                "schedules do not have; use no-sync, sender-*, receiver-* or barrier-*"
            )
        plan = plan_sync(tree, as_phases, spec, reduce=False)  # direct syncs: see plan_sync
        tables = rank_tables(as_phases, plan)
        variants.append(VariantCode(spec.label, c_identifier(spec.label), tables, plan, pieces))
    labels = [v.label for v in variants]
    default = default_variant(labels)
    return AlltoallvCode(
        vs, np.asarray(request.pattern, dtype=np.int64), request.source, variants, default
    )


def generate(
    topo: Topology,
    specs: list[VariantSpec],
    out_dir: Path,
    progress: Callable[[str], None] = lambda _: None,
    alltoallv: AlltoallvRequest | None = None,
    runtime_scheduler: str = "greedy",
    *,
    copy_runtime: bool = True,
) -> Generated:
    """``runtime_scheduler``: the C scheduler of MPI_Alltoallv levels 1 and 2 (greedy: 10 ms
    per call for 256 machines, dense; balanced is closer to the bound but takes seconds there,
    docs/performance.md). ``copy_runtime=False`` writes only the topology's own files (the
    repository's generated/ references runtime_c/ instead of copying it)."""
    tree = analyze(topo)
    start = time.perf_counter()
    sched: Schedule = schedule_phases(tree)
    progress(
        f"{sched.n_phases} phases, {len(sched.src)} messages ({time.perf_counter() - start:.1f} s)"
    )
    over = phased_seconds_per_byte(tree, sched) / max(x.seconds_per_byte for x in tree.links)
    plain: RankTables = rank_tables(sched, empty_plan(variant_spec("no-sync")))
    variants = []
    for spec in specs:
        start = time.perf_counter()
        plan = plan_sync(tree, sched, spec)
        variants.append(
            VariantCode(spec.label, c_identifier(spec.label), rank_tables(sched, plan), plan)
        )
        c = plan.counts
        progress(
            f"{spec.label}: {c.after_removal} sync messages after redundancy removal "
            f"(from {c.after_program_order}; {len(plan.dummy_phase)} dummies) ({time.perf_counter() - start:.1f} s)"
        )
    default = default_variant(v.label for v in variants)
    vcode = None
    if alltoallv is not None:
        vspecs = [s for s in specs if not s.dummy] if len(specs) > 1 else specs
        vcode = alltoallv_code(tree, alltoallv, vspecs, progress)
    start = time.perf_counter()
    vlevel = vlevel_code(topo, runtime_scheduler, 0, None)
    files = render(
        topo, sched, plain, variants, default, out_dir, vcode, vlevel, copy_runtime=copy_runtime
    )
    progress(f"wrote {len(files)} files to {out_dir} ({time.perf_counter() - start:.1f} s)")
    return Generated(
        files=files, variants=variants, default=default, alltoallv=vcode, phased_over_bound=over
    )


def find_mpicc(explicit: str | None) -> str:
    candidates = [explicit] if explicit else [os.environ.get("MPICC"), "mpicc"]
    for c in candidates:
        if c and shutil.which(c):
            return str(shutil.which(c))
    raise AapcError(
        f"{explicit or 'mpicc'} not found on PATH; install an MPI (e.g. `make demo` puts MPICH in .venv/bin) "
        "or pass --mpicc PATH"
    )


def build_library(
    topo: Topology,
    specs: list[VariantSpec],
    output: Path,
    mpicc: str,
    progress: Callable[[str], None],
) -> list[str]:
    """Compile the generated routine into ``output`` (.so or .a); return how to use it."""
    if output.suffix not in (".so", ".a"):
        raise InputError(f"-o {output}: the library name must end in .so (shared) or .a (static)")
    with tempfile.TemporaryDirectory(prefix="aapcgen-build-") as tmp:
        gen = generate(topo, specs, Path(tmp), progress)
        sources = sorted(str(f) for f in gen.files if f.suffix == ".c")
        flags = ["-std=c11", "-O2", "-fPIC", "-DAAPC_INTERCEPT", f"-I{tmp}"]
        output = output.resolve()
        if output.suffix == ".so":
            commands = [[mpicc, *flags, "-shared", *sources, "-o", str(output)]]
        else:
            objects = [str(Path(tmp) / (Path(s).stem + ".o")) for s in sources]
            commands = [[mpicc, *flags, "-c", s, "-o", o] for s, o in zip(sources, objects)]
            commands.append(["ar", "rcs", str(output), *objects])
        for cmd in commands:
            progress(shlex.join(cmd[:3] + ["..."]))
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                detail = (proc.stderr.strip().splitlines() or ["(no output)"])[0]
                raise AapcError(f"compiling failed: {shlex.join(cmd[:2])} ...: {detail}")
    lib_dir, stem = output.parent, output.stem.removeprefix("lib")
    if output.suffix == ".so":
        return [
            f"built {output} (variants: {', '.join(v.label for v in gen.variants)}; default {gen.default})",
            "use it without relinking:",
            f"  LD_PRELOAD={output} mpiexec -n {topo.n_machines} ./your_program",
            "or link it (Makefile):",
            f"  LDLIBS += -L{lib_dir} -Wl,-rpath,{lib_dir} -l{stem}",
            "or (CMake):",
            f"  target_link_libraries(your_program PRIVATE {output})",
            "pick a variant at run time with AAPC_VARIANT=<name>",
        ]
    return [
        f"built {output} (variants: {', '.join(v.label for v in gen.variants)}; default {gen.default})",
        "link it before the MPI library (Makefile):",
        f"  LDLIBS += -Wl,--whole-archive {output} -Wl,--no-whole-archive",
        "or (CMake):",
        f"  target_link_libraries(your_program PRIVATE -Wl,--whole-archive {output} -Wl,--no-whole-archive)",
        "pick a variant at run time with AAPC_VARIANT=<name>",
    ]


def stderr_progress(message: str) -> None:
    print(f"aapcgen: {message}", file=sys.stderr, flush=True)
