"""``aapcgen info | schedule | verify | sync``: the pipeline up to synchronisation, as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from aapcgen.alltoall.capacity import capacity_model, schedule_phases
from aapcgen.alltoall.job import job_topology
from aapcgen.alltoall.phases import Schedule
from aapcgen.alltoall.report import info_json, info_text, schedule_json_chunks, schedule_text
from aapcgen.alltoall.selection import selection_lines
from aapcgen.alltoall.sync import plan_sync
from aapcgen.alltoall.tree import TreeInfo, analyze
from aapcgen.alltoall.variants import VariantSpec
from aapcgen.cli.options import (
    check_output_file,
    check_phase_slots,
    check_proof_work,
    check_ranks,
    check_schedule_memory,
    command,
    job_options,
    job_ranks_of,
    job_topology_of,
    variant_options,
)
from aapcgen.codegen.generate import parse_block_sizes, variant_specs
from aapcgen.core import limits
from aapcgen.core.errors import InputError, VerificationError
from aapcgen.core.inputs import read_bytes
from aapcgen.core.model import Topology
from aapcgen.core.topology import topology_or_builtin
from aapcgen.tune.model import read_model
from aapcgen.verify.alltoall import (
    SYNC_CHECK_MAX_MACHINES,
    verify_hierarchical,
    verify_schedule,
    verify_sync,
)
from aapcgen.verify.loground import verify_loground

PROGRESS_MACHINES = 512  # topologies at least this big print stage progress on stderr


def progress(topo: Topology, message: str) -> None:
    if topo.n_machines >= PROGRESS_MACHINES:
        print(f"aapcgen: {message}", file=sys.stderr, flush=True)


def pipeline(topo: Topology) -> tuple[TreeInfo, Schedule]:
    start = time.perf_counter()
    tree = analyze(topo)
    progress(
        topo, f"root {tree.root}, {tree.load} phases; scheduling {topo.n_machines} machines ..."
    )
    sched = schedule_phases(tree)
    progress(topo, f"scheduled {len(sched.src)} messages in {time.perf_counter() - start:.1f} s")
    return tree, sched


def _write(chunks: Iterable[str], output: str | None) -> None:
    if output is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        return
    try:
        with open(output, "w", encoding="utf-8") as f:
            for chunk in chunks:
                f.write(chunk)
    except OSError as exc:
        raise InputError(f"-o {output}: cannot write: {exc.strerror or exc}") from None


def cmd_info(args: argparse.Namespace) -> int:
    tuned = read_model(args.model) if args.model else None
    cluster = topology_or_builtin(args.topology)
    ranks = job_ranks_of(args, cluster)  # the runtime's shape is the cluster's and the ranks'
    tree = analyze(cluster if ranks is None else job_topology(cluster, ranks))
    model = capacity_model(tree)
    n_phases = tree.load if model.lower_bound >= tree.load else schedule_phases(tree).n_phases
    if args.format == "json":
        print(info_json(tree, model, n_phases))
        return 0
    print(info_text(tree, model, n_phases))
    print("\n".join(selection_lines(cluster, tuned, ranks)))
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output_file(args.output)
    topo = job_topology_of(args, topology_or_builtin(args.topology))
    check_schedule_memory(topo)
    tree, sched = pipeline(topo)
    chunks = (
        schedule_json_chunks(tree, sched) if args.format == "json" else schedule_text(tree, sched)
    )
    _write(chunks, args.output)
    return 0


SCHEDULE_BYTES_PER_PAIR = 128  # a schedule JSON file larger than this per rank pair is refused


def _read_json(path: str, max_bytes: int) -> object:
    """A JSON file of at most ``max_bytes``; any failure is a one-line InputError."""
    data = read_bytes(path, path, "schedule file")
    if len(data) > max_bytes:
        raise InputError(
            f"{path}: {len(data):,} bytes is more than a schedule of this topology needs "
            f"({max_bytes:,})"
        )
    try:
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except RecursionError:
        raise InputError(f"{path}: malformed JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise InputError(f"{path}: malformed JSON: {str(exc)[:80]}") from None


def _load_schedule_json(
    path: str, topo: Topology
) -> tuple[Topology, np.ndarray, np.ndarray, np.ndarray, int]:
    """Read a schedule in the JSON contract of ``aapcgen schedule --format json``: the job's
    topology, the (phase, src, dst) arrays and the number of phases the file lists. A schedule
    the runtime dumped (AAPC_DUMP_SCHEDULE) also names the machine of every rank
    (``rank_machines``): it is checked against that job's tree (aapcgen/alltoall/job.py)."""
    ranks = topo.n_machines * topo.ranks_per_machine
    max_bytes = min(limits.value(limits.INPUT_BYTES), 2**20 + SCHEDULE_BYTES_PER_PAIR * ranks**2)
    data = _read_json(path, max_bytes)
    if not isinstance(data, dict) or not isinstance(data.get("phases"), list):
        raise InputError(f"{path}: expected an object with a 'phases' list")
    if "rank_machines" in data:
        names = data["rank_machines"]
        index = {m: i for i, m in enumerate(topo.machines)}
        if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
            raise InputError(f"{path}: 'rank_machines' must be a list of machine names")
        if len(names) < 2:
            raise InputError(f"{path}: rank_machines: a job needs at least 2 ranks")
        bad = next((m for m in names if m not in index), None)
        if bad is not None:
            raise InputError(f"{path}: rank_machines: '{bad[:80]}' is not a machine of {topo.name}")
        topo = job_topology(topo, [index[m] for m in names])
    if data.get("machines") != list(topo.machines):
        raise InputError(f"{path}: 'machines' does not match the topology's machines in rank order")
    n = len(topo.machines)
    rows = []
    for p, phase in enumerate(data["phases"]):
        for item in phase if isinstance(phase, list) else [None]:
            if not (
                isinstance(item, list)
                and len(item) == 2
                and all(type(x) is int and 0 <= x < n for x in item)
            ):
                shown = repr(item) if len(repr(item)) <= 40 else repr(item)[:37] + "..."
                raise InputError(
                    f"{path}: phases[{p}]: expected [src_rank, dst_rank] pairs of ranks 0 to "
                    f"{n - 1}, got {shown}"
                )
            rows.append((p, item[0], item[1]))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return topo, arr[:, 0], arr[:, 1], arr[:, 2], len(data["phases"])


def _verify_loground(path: str, topo: Topology, data: dict) -> None:
    """A log-round member order the runtime dumped (kind "loground"): aapcgen/verify/loground.py."""
    names = data.get("members")
    index = {m: i for i, m in enumerate(topo.machines)}
    if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
        raise InputError(f"{path}: 'members' must be a list of machine names")
    bad = next((m for m in names if m not in index), None)
    if bad is not None:
        raise InputError(f"{path}: members: '{bad[:80]}' is not a machine of {topo.name}")
    if len(names) < 2:
        raise InputError(f"{path}: members: a log-round exchange needs at least 2 members")
    radix, groups = data.get("radix", 2), data.get("groups")
    ints = isinstance(radix, list) and all(isinstance(f, int) for f in radix)
    if radix != 2 and not (
        ints
        and isinstance(groups, list)
        and len(groups) == len(radix)
        and all(isinstance(g, int) for g in groups)
    ):
        raise InputError(f"{path}: 'radix' must be 2 or a list of radices with as many 'groups'")
    proof = verify_loground(topo, [index[m] for m in names], *((radix, groups) if ints else ()))
    print(proof.summary(f"{path} for {topo.name}"))


def schedule_files(given: list[str]) -> list[str]:
    """``--schedule`` values: files, and folders for their dumped schedules
    (``aapc-schedule-*.json``, else every ``*.json``), each folder's in name order."""
    files: list[str] = []
    for item in given:
        folder = Path(item)
        if not folder.is_dir():
            files.append(item)
            continue
        found = sorted(folder.glob("aapc-schedule-*.json")) or sorted(folder.glob("*.json"))
        if not found:
            raise InputError(f"--schedule {item}: the folder holds no schedule (*.json)")
        files += [str(f) for f in found]
    return files


def prove_file(path: str, cluster: Topology) -> None:
    """Prove one dumped file: a log-round members' order (kind "loground") or a schedule."""
    data = _read_json(path, limits.value(limits.INPUT_BYTES))
    if isinstance(data, dict) and data.get("kind") == "loground":
        _verify_loground(path, cluster, data)
        return
    topo, phase, src, dst, listed = _load_schedule_json(path, cluster)
    prove(topo, phase, src, dst, listed, f"{path} for {topo.name}")


def cmd_verify(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    if args.schedule:
        if args.hosts is not None or args.hostfile:
            raise InputError(
                "--schedule: the file names its own job (rank_machines); drop --hosts/--hostfile"
            )
        files = schedule_files(args.schedule)
        if len(files) == 1:  # one file: its failure is the command's
            prove_file(files[0], topo)
            return 0
        failed = [path for path in files if not verify_file(path, topo)]
        if failed:
            raise VerificationError(
                f"{len(failed)} schedule file(s) failed: {', '.join(failed[:5])}"
                + (" ..." if len(failed) > 5 else "")
            )
        return 0
    verify_job(job_topology_of(args, topo))
    return 0


def verify_file(path: str, cluster: Topology) -> bool:
    """Prove one schedule file (printing its result); False when its proof fails (said on
    stderr; bad input stays an InputError)."""
    try:
        prove_file(path, cluster)
    except VerificationError as exc:
        print(f"aapcgen: {path}: verification FAILED: {exc}", file=sys.stderr, flush=True)
        return False
    return True


def verify_job(topo: Topology) -> None:
    """Schedule ``topo`` (the cluster or a job's tree) and prove the schedule."""
    check_schedule_memory(topo)
    check_proof_work(topo)
    if topo.ranks_per_machine > 1:
        check_ranks(topo)  # before anything is scheduled
    _, sched = pipeline(topo)
    prove(topo, sched.phase, sched.src, sched.dst, sched.n_phases, topo.name)


def prove(
    topo: Topology, phase: np.ndarray, src: np.ndarray, dst: np.ndarray, listed: int, what: str
) -> None:
    """The proof of one schedule of ``topo``, printed (VerificationError when it fails)."""
    check_schedule_memory(topo)
    check_proof_work(topo)
    if topo.ranks_per_machine > 1:
        check_ranks(topo)  # before the rank-level proof allocates its rank pairs
    start = time.perf_counter()
    proof = verify_schedule(topo, phase, src, dst)
    if listed != proof.n_phases:  # empty phases at the end: the messages do not show them
        raise VerificationError(
            f"{listed} phases listed ({listed - proof.n_phases} of them empty at the end), but "
            f"the lower bound (largest link load) is {proof.lower_bound}"
        )
    progress(topo, f"verified in {time.perf_counter() - start:.1f} s")
    print(proof.summary(what))
    if topo.ranks_per_machine > 1:
        print(verify_hierarchical(topo, phase, src, dst))


def specs_of(args: argparse.Namespace) -> list[VariantSpec]:
    return variant_specs(args.variant, parse_block_sizes(args.block_size))


def cmd_sync(args: argparse.Namespace) -> int:
    topo = topology_or_builtin(args.topology)
    specs = specs_of(args)
    check_phase_slots(topo)
    tree, sched = pipeline(topo)
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
                window=spec.window,
            )
            print("    " + proof.summary(spec.label))
        else:
            print(f"    (independent sync check runs up to {SYNC_CHECK_MAX_MACHINES} machines)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "info",
        cmd_info,
        "Root, subtrees, bottleneck link(s), load and peak aggregate throughput.",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--model",
        metavar="FILE",
        help="show the way per block size with these measured constants (aapcgen tune's "
        "DIR/model.json)",
    )
    job_options(p)
    p = command(sub, "schedule", cmd_schedule, "Print the optimal contention-free AAPC phases.")
    p.add_argument(
        "--format", choices=["text", "json"], default="text", help="json is the documented contract"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    job_options(p)
    p = command(
        sub,
        "verify",
        cmd_verify,
        "Independently prove a schedule complete, contention-free and optimal.",
    )
    p.add_argument(
        "--schedule",
        nargs="+",
        metavar="FILE.json|DIR",
        help="verify these schedules (JSON contract; a folder: the runtime's dumps in it, "
        "AAPC_DUMP_SCHEDULE) instead of ours",
    )
    job_options(p)
    p = command(
        sub,
        "sync",
        cmd_sync,
        "Synchronisation messages of a variant before and after redundancy removal.",
    )
    variant_options(p, "all")
