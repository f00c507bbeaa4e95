"""The ``aapcgen`` command line. Errors on bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable

import numpy as np

from aapcgen import __version__
from aapcgen.errors import AapcError, InputError, VerificationError
from aapcgen.model import Topology
from aapcgen.phases import Schedule, build_phases
from aapcgen.report import info_json, info_text, schedule_json_chunks, schedule_text
from aapcgen.topology import builtin_topology, load_topology
from aapcgen.tree import TreeInfo, analyze
from aapcgen.verify import verify_schedule

PROGRESS_MACHINES = 512  # topologies at least this big print stage progress on stderr


def _progress(topo: Topology, message: str) -> None:
    if topo.n_machines >= PROGRESS_MACHINES:
        print(f"aapcgen: {message}", file=sys.stderr, flush=True)


def _topology(path: str | None) -> Topology:
    if path is None:
        topo = builtin_topology()
        print(
            f"aapcgen: no topology given; using the built-in example '{topo.name}' "
            "(seed 002 Figure 1). Pass TOPO.yaml for your cluster.",
            file=sys.stderr,
        )
        return topo
    return load_topology(path)


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
    tree = analyze(_topology(args.topology))
    print(info_json(tree) if args.format == "json" else info_text(tree))
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    topo = _topology(args.topology)
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
    topo = _topology(args.topology)
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
