"""The ``aapcgen`` command line. Errors on bad input: one line on stderr, exit status 2.

Each module of this package registers the commands of one part of the product; the work is done
by the library packages (alltoall, alltoallv, verify, codegen, measure, tune, platforms):

* pipeline.py: info, schedule, verify, sync;
* generate.py: generate, build;
* alltoallv.py: vschedule;
* measure.py: bench, bench-alltoallv, bench-mcast;
* tune.py: tune;
* platforms.py: emulate, export;
* importers.py: import slurm|lldp, discover, export slurm.
"""

from __future__ import annotations

import argparse
import sys

from aapcgen import __version__
from aapcgen.cli import failure


def build_parser() -> argparse.ArgumentParser:
    # the commands' modules (numpy, ...) load here, inside main's error handling: Ctrl-C while
    # they load is one line too
    from aapcgen.cli import alltoallv, generate, importers, measure, pipeline, platforms, tune
    from aapcgen.cli.options import OneLineParser

    parser = OneLineParser(
        prog="aapcgen",
        description="Generate contention-free MPI all-to-all routines for one cluster's switch tree.",
        epilog="With no TOPO.yaml the commands use the built-in example of seed 002 Figure 1.",
    )
    parser.add_argument("--version", action="version", version=f"aapcgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    pipeline.register(sub)
    generate.register(sub)
    measure.register(sub)
    platforms.register_emulate(sub)
    platforms.register_export(sub)
    alltoallv.register(sub)
    tune.register(sub)
    importers.register(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    try:
        with failure.deferred_interrupts():
            parser = build_parser()
        args = parser.parse_args(argv)
        code = args.func(args)
    except BaseException as exc:  # one line and an exit status, never a traceback
        code = failure.report(exc)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
