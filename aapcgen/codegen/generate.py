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
    AUTO,
    BLOCKED,
    RUNTIME_PREFIX,
    VARIANTS,
    VariantSpec,
    default_variant,
    precomputed_name,
    split_label,
    variant_spec,
)
from aapcgen.alltoallv.schedule import run_scheduler
from aapcgen.codegen.render import (
    AlltoallvCode,
    RankTables,
    VariantCode,
    c_identifier,
    intercept_label,
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
    """``--variant V`` or ``--variant all`` (partial variants once per block size). V is any
    name AAPC_VARIANT takes: a variant, its label with a block size (``sender-partial-4``),
    ``runtime-<variant>`` or ``auto`` (their precomputed variant: variants.precomputed_name)."""
    variant = precomputed_name(variant)
    if variant not in BLOCKED and block_sizes is None:
        try:
            name, block = split_label(variant)
        except ValueError:
            name, block = variant, None
        if block is not None:
            return [variant_spec(name, block)]
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


def intercept_default(variant: str) -> str | None:
    """The routine MPI_Alltoall runs by default for ``--variant``: a run-time routine or auto
    when named, else None (generate's choice: auto over the default variant)."""
    return variant if variant == AUTO or variant.startswith(RUNTIME_PREFIX) else None


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
    default: str | None = None,
    model: dict[str, float] | None = None,
) -> Generated:
    """``runtime_scheduler``: the C scheduler of MPI_Alltoallv levels 1 and 2 (greedy: 10 ms
    per call for 256 machines, dense; balanced is closer to the bound but takes seconds there,
    docs/measurements/alltoallv-scheduling-in-c.md). ``copy_runtime=False`` writes only the topology's own files (the
    repository's generated/ references runtime_c/ instead of copying it). ``model``: the
    per-call selection's constants (`aapcgen tune`'s DIR/model.json; None: the built-in ones)."""
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
    chosen = default_variant(v.label for v in variants)
    vcode = None
    if alltoallv is not None:
        vspecs = [s for s in specs if not s.dummy] if len(specs) > 1 else specs
        vcode = alltoallv_code(tree, alltoallv, vspecs, progress)
    start = time.perf_counter()
    vlevel = vlevel_code(topo, runtime_scheduler, 0, None)
    files = render(
        topo,
        sched,
        plain,
        variants,
        chosen,
        out_dir,
        vcode,
        vlevel,
        copy_runtime=copy_runtime,
        intercept=default,
        model=model,
    )
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise AapcError(f"{missing[0]}: was written but is not there (a full disk?)")
    progress(f"wrote {len(files)} files to {out_dir} ({time.perf_counter() - start:.1f} s)")
    return Generated(
        files=files,
        variants=variants,
        default=default or intercept_label(chosen, variants),
        alltoallv=vcode,
        phased_over_bound=over,
    )


MPI_HINT = (
    "install an MPI (your cluster's: `module load mpi`, `apt install mpich`; or MPICH from PyPI: "
    "`pip install 'aapcgen[mpi]'`) or pass --mpicc PATH"
)


def find_mpicc(explicit: str | None, env: str | None = None) -> str:
    """The MPI compiler wrapper: ``explicit`` (--mpicc), else ``env`` ($MPICC), else mpicc on
    PATH; an AapcError naming which one is missing."""
    for given, what in ((explicit, "--mpicc"), (env, "$MPICC")):
        if given:
            found = shutil.which(given)
            if found is None:
                kind = "not an executable file" if os.path.exists(given) else "not found"
                where = "" if os.sep in given else " on PATH"
                raise AapcError(f"{what} {given}: {kind}{where}; {MPI_HINT}")
            return found
    found = shutil.which("mpicc")
    if found is None:
        raise AapcError(f"mpicc not found on PATH (no MPI compiler); {MPI_HINT}")
    return found


COMPILE_LOG = "compile.log"


def link_lines(output: Path) -> list[str]:
    """How a Makefile links the shared library ``output``: -L/-l for lib<name>.so, the path
    itself for any other name (``-lfoo`` would look for libfoo.so)."""
    lib_dir = output.parent
    if output.name.startswith("lib") and output.suffix == ".so" and len(output.stem) > 3:
        return [f"  LDLIBS += -L{lib_dir} -Wl,-rpath,{lib_dir} -l{output.stem.removeprefix('lib')}"]
    return [f"  LDLIBS += {output} -Wl,-rpath,{lib_dir}"]


def compile_failed(cmd: list[str], proc: subprocess.CompletedProcess[str], kept: Path) -> AapcError:
    """The error of a failed compile: the compiler's first error line, and where its whole
    output and the sources were kept."""
    lines = (proc.stderr + proc.stdout).strip().splitlines()
    first = next(
        (ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "(no output)"
    )
    return AapcError(
        f"compiling failed: the compiler's whole output is in {kept / COMPILE_LOG} (the sources "
        f"beside it); {Path(cmd[0]).name}: {first.strip()}"
    )


def build_library(
    topo: Topology,
    specs: list[VariantSpec],
    output: Path,
    mpicc: str,
    progress: Callable[[str], None],
    default: str | None = None,
    model: dict[str, float] | None = None,
) -> list[str]:
    """Compile the generated routine into ``output`` (.so or .a); return how to use it. A failed
    compile keeps the sources and the compiler's output (``compile.log``) in a folder it names;
    ``default``: the routine MPI_Alltoall runs unless AAPC_VARIANT says otherwise (generate)."""
    if output.suffix not in (".so", ".a"):
        raise InputError(f"-o {output}: the library name must end in .so (shared) or .a (static)")
    tmp = Path(tempfile.mkdtemp(prefix="aapcgen-build-"))
    try:
        gen = generate(topo, specs, tmp, progress, default=default, model=model)
        sources = sorted(str(f) for f in gen.files if f.suffix == ".c")
        flags = ["-std=c11", "-O2", "-fPIC", "-DAAPC_INTERCEPT", f"-I{tmp}"]
        output = output.resolve()
        if output.suffix == ".so":
            # -ldl: dladdr (runtime_c/nbc/aapc_nbc_caller.c) on a glibc older than 2.34
            commands = [[mpicc, *flags, "-shared", *sources, "-ldl", "-o", str(output)]]
        else:
            objects = [str(tmp / (Path(s).stem + ".o")) for s in sources]
            commands = [[mpicc, *flags, "-c", s, "-o", o] for s, o in zip(sources, objects)]
            commands.append(["ar", "rcs", str(output), *objects])
        for cmd in commands:
            progress(shlex.join(cmd[:3] + ["..."]))
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True)
            except OSError as exc:
                raise AapcError(f"cannot run {cmd[0]}: {exc.strerror or exc}; {MPI_HINT}") from None
            if proc.returncode != 0:
                (tmp / COMPILE_LOG).write_text(
                    f"$ {shlex.join(cmd)}\n{proc.stdout}{proc.stderr}", encoding="utf-8"
                )
                raise compile_failed(cmd, proc, tmp)
    except AapcError as exc:
        if (tmp / COMPILE_LOG).exists():
            raise exc  # the folder stays: the error names it
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    built = (
        f"built {output} (variants: {', '.join(v.label for v in gen.variants)}; MPI_Alltoall "
        f"runs {gen.default})"
    )
    after = [
        "pick another routine at run time with AAPC_VARIANT=<name>; "
        "AAPC_REPORT=1 prints what ran at MPI_Finalize",
    ]
    if output.suffix == ".so":
        return [
            built,
            "use it without relinking:",
            f"  LD_PRELOAD={output} mpiexec -n {topo.n_machines} ./your_program",
            "or link it (Makefile):",
            *link_lines(output),
            "or (CMake):",
            f"  target_link_libraries(your_program PRIVATE {output})",
            *after,
        ]
    return [
        built,
        "link it before the MPI library (Makefile):",
        f"  LDLIBS += -Wl,--whole-archive {output} -Wl,--no-whole-archive",
        "or (CMake):",
        f"  target_link_libraries(your_program PRIVATE -Wl,--whole-archive {output} -Wl,--no-whole-archive)",
        *after,
    ]


def stderr_progress(message: str) -> None:
    print(f"aapcgen: {message}", file=sys.stderr, flush=True)
