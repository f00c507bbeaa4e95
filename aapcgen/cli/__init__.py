"""The ``aapcgen`` command line. Errors on bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from aapcgen import __version__
from aapcgen.alltoall.phases import Schedule, build_phases
from aapcgen.alltoall.report import info_json, info_text, schedule_json_chunks, schedule_text
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import TreeInfo, analyze
from aapcgen.alltoallv import schedule as vschedule
from aapcgen.alltoallv.schedule import load_pattern
from aapcgen.codegen.generate import (
    AlltoallvRequest,
    build_library,
    find_mpicc,
    generate,
    parse_block_sizes,
    stderr_progress,
    variant_specs,
)
from aapcgen.core.errors import AapcError, InputError, VerificationError
from aapcgen.core.model import Topology
from aapcgen.core.topology import topology_or_builtin
from aapcgen.measure import bench, vbench
from aapcgen.measure import mcast_bench as mcast
from aapcgen.platforms import emulate, simgrid
from aapcgen.tune import sweep as tune
from aapcgen.verify.alltoall import (
    SYNC_CHECK_MAX_MACHINES,
    verify_hierarchical,
    verify_schedule,
    verify_sync,
)

PROGRESS_MACHINES = 512  # topologies at least this big print stage progress on stderr


def _progress(topo: Topology, message: str) -> None:
    if topo.n_machines >= PROGRESS_MACHINES:
        print(f"aapcgen: {message}", file=sys.stderr, flush=True)


def _pipeline(topo: Topology) -> tuple[TreeInfo, Schedule]:
    start = time.perf_counter()
    tree = analyze(topo)
    _progress(
        topo, f"root {tree.root}, {tree.load} phases; scheduling {topo.n_machines} machines ..."
    )
    sched = build_phases(tree)
    _progress(topo, f"scheduled {len(sched.src)} messages in {time.perf_counter() - start:.1f} s")
    return tree, sched


def _write(chunks: Iterable[str], output: str | None) -> None:
    if output is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        return
    with open(output, "w", encoding="utf-8") as f:
        for chunk in chunks:
            f.write(chunk)


def cmd_info(args: argparse.Namespace) -> int:
    tree = analyze(topology_or_builtin(args.topology))
    print(info_json(tree) if args.format == "json" else info_text(tree))
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    tree, sched = _pipeline(topo)
    chunks = (
        schedule_json_chunks(tree, sched) if args.format == "json" else schedule_text(tree, sched)
    )
    _write(chunks, args.output)
    return 0


def _load_schedule_json(path: str, topo: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a schedule in the JSON contract of ``aapcgen schedule --format json``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("phases"), list):
        raise InputError(f"{path}: expected an object with a 'phases' list")
    if data.get("machines") != list(topo.machines):
        raise InputError(f"{path}: 'machines' does not match the topology's machines in rank order")
    rows = []
    for p, phase in enumerate(data["phases"]):
        for item in phase if isinstance(phase, list) else [None]:
            if not (
                isinstance(item, list) and len(item) == 2 and all(type(x) is int for x in item)
            ):
                raise InputError(
                    f"{path}: phases[{p}]: expected [src_rank, dst_rank] pairs, got {item!r}"
                )
            rows.append((p, item[0], item[1]))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def cmd_verify(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    if args.schedule:
        phase, src, dst = _load_schedule_json(args.schedule, topo)
        what = f"{args.schedule} for {topo.name}"
    else:
        _, sched = _pipeline(topo)
        phase, src, dst = sched.phase, sched.src, sched.dst
        what = topo.name
    start = time.perf_counter()
    proof = verify_schedule(topo, phase, src, dst)
    _progress(topo, f"verified in {time.perf_counter() - start:.1f} s")
    print(proof.summary(what))
    if topo.ranks_per_machine > 1:
        print(verify_hierarchical(topo, phase, src, dst))
    return 0


def _specs(args: argparse.Namespace) -> list:
    return variant_specs(args.variant, parse_block_sizes(args.block_size))


def cmd_sync(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = _specs(args)
    tree, sched = _pipeline(topo)
    print(
        f"{topo.name}: {topo.n_machines} machines, {sched.n_phases} phases, {len(sched.src)} messages"
    )
    print(
        f"{'variant':<28} {'contending pairs':>16} {'chain pairs':>12} {'not in program order':>21} {'after removal':>14}"
    )
    for spec in specs:
        plan = plan_sync(tree, sched, spec)
        c = plan.counts
        print(
            f"{spec.label:<28} {c.contending:>16} {c.chain:>12} {c.after_program_order:>21} {c.after_removal:>14}"
        )
        if spec.kind == "none":
            extra = (
                f"{len(plan.dummy_phase)} dummy messages" if spec.dummy else "no pair-wise syncs"
            )
            barriers = (
                f", a barrier every {spec.barrier_every} phase(s)" if spec.barrier_every else ""
            )
            print(f"    {extra}{barriers}")
        elif topo.n_machines <= SYNC_CHECK_MAX_MACHINES:
            syncs = (plan.frm, plan.trigger, plan.to, plan.target)
            proof = verify_sync(
                topo,
                sched.phase,
                sched.src,
                sched.dst,
                spec.kind,
                spec.scope,
                spec.block_size,
                syncs,
            )
            print("    " + proof.summary(spec.label))
        else:
            print(f"    (independent sync check runs up to {SYNC_CHECK_MAX_MACHINES} machines)")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = _specs(args)
    out = Path(args.output)
    gen = generate(
        topo,
        specs,
        out,
        stderr_progress if topo.n_machines >= PROGRESS_MACHINES or args.verbose else lambda _: None,
        _alltoallv_request(args, topo),
        args.runtime_scheduler,
    )
    labels = ", ".join(v.label for v in gen.variants)
    print(
        f"wrote {len(gen.files)} files to {out}/ for {topo.name} ({labels}; default {gen.default})"
    )
    if gen.alltoallv is not None:
        v = gen.alltoallv
        print(
            f"MPI_Alltoallv for {v.source}: {v.schedule.scheduler} schedule, {v.schedule.n_phases} "
            f"phases, cost/bound {v.schedule.ratio:.4f}; level3-{v.default} by default "
            "(calls with other counts use PMPI_Alltoallv)"
        )
    print(
        f"compile them with your program:  mpicc -I {out} -DAAPC_INTERCEPT your_program.c {out}/*.c"
    )
    if gen.phased_over_bound > PHASED_WARN:
        print(phased_warning(topo, gen.phased_over_bound), file=sys.stderr)
    return 0


# phases that need this much more than the bound, even back to back, are worth a warning
PHASED_WARN = 1.05


def phased_warning(topo: Topology, over: float) -> str:
    return (
        f"aapcgen: warning: {topo.name}: the contention-free phases, run back to back, need at "
        f"least {over:.1f}x the bandwidth bound: every phase moves one message per link, and its "
        "links faster than the machine links idle for most of it; the phased variants reach at "
        f"most {100 / over:.0f}% of the peak; `aapcgen tune` measures them against no-sync and "
        "the MPI library's algorithms on your cluster (docs/scheduling.md, 'Mixed link speeds')"
    )


def _alltoallv_request(args: argparse.Namespace, topo: Topology) -> AlltoallvRequest | None:
    if args.alltoallv is None:
        return None
    pattern = load_pattern(args.alltoallv, topo)
    return AlltoallvRequest(pattern, args.alltoallv, args.scheduler, args.threshold, args.chunk)


def cmd_build(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = _specs(args)
    mpicc = find_mpicc(args.mpicc)
    for line in build_library(
        topo, specs, Path(args.output), mpicc, stderr_progress if args.verbose else lambda _: None
    ):
        print(line)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aapcgen",
        description="Generate contention-free MPI all-to-all routines for one cluster's switch tree.",
        epilog="With no TOPO.yaml the commands use the built-in example of seed 002 Figure 1.",
    )
    parser.add_argument("--version", action="version", version=f"aapcgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(
        name: str, func: Callable[[argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "topology", nargs="?", metavar="TOPO.yaml", help="switch tree (see docs/topology.md)"
        )
        p.set_defaults(func=func)
        return p

    p = command(
        "info", cmd_info, "Root, subtrees, bottleneck link(s), load and peak aggregate throughput."
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p = command("schedule", cmd_schedule, "Print the optimal contention-free AAPC phases.")
    p.add_argument(
        "--format", choices=["text", "json"], default="text", help="json is the documented contract"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p = command(
        "verify",
        cmd_verify,
        "Independently prove a schedule complete, contention-free and optimal.",
    )
    p.add_argument(
        "--schedule",
        metavar="FILE.json",
        help="verify this schedule (JSON contract) instead of ours",
    )

    def variant_options(p: argparse.ArgumentParser, default: str | None) -> None:
        p.add_argument(
            "--variant",
            default=default,
            metavar="V",
            help="seed 002 Table 5 variant: no-sync, dummy, sender-all, sender-partial, receiver-all, "
            "receiver-partial, barrier-all, barrier-partial-none, barrier-partial-sender, "
            f"barrier-partial-receiver, or all (default: {default})",
        )
        p.add_argument(
            "--block-size", metavar="N[,N...]", help="phases per block for the partial variants"
        )
        p.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")

    p = command(
        "sync",
        cmd_sync,
        "Synchronisation messages of a variant before and after redundancy removal.",
    )
    variant_options(p, "all")
    p = command(
        "generate", cmd_generate, "Write the C routine(s) and the runtime into a directory."
    )
    variant_options(p, "receiver-all")
    p.add_argument("-o", "--output", metavar="DIR", required=True, help="output directory")
    vschedule.alltoallv_options(p)
    p = command(
        "build", cmd_build, "Compile a generated routine into libaapc.so or libaapc.a with mpicc."
    )
    variant_options(p, "receiver-all")
    p.add_argument("-o", "--output", metavar="LIB", required=True, help="libNAME.so or libNAME.a")
    p.add_argument(
        "--mpicc", metavar="PATH", help="MPI compiler wrapper (default: $MPICC, then mpicc on PATH)"
    )
    # commands of other modules: each module's register(sub) adds its subparsers (one line each)
    bench.register(sub)
    emulate.register(sub)
    simgrid.register(sub)
    vschedule.register(sub)
    tune.register(sub)
    mcast.register(sub)
    vbench.register(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
    except VerificationError as exc:
        print(f"aapcgen: verification FAILED: {exc}", file=sys.stderr)
        code = 1
    except AapcError as exc:
        print(f"aapcgen: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        print("aapcgen: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
