"""``aapcgen bench | bench-alltoallv | bench-mcast``: measurements that print tables."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

from aapcgen.alltoall.variants import RUNTIME_PREFIX, RUNTIME_SYNC_C, variant_spec
from aapcgen.alltoallv.schedule import SCHEDULERS, load_pattern
from aapcgen.cli.options import (
    block_sizes,
    check_output_dir,
    check_phase_slots,
    command,
    prefix_name,
    rate,
    run_options,
    seconds,
    whole,
)
from aapcgen.codegen.generate import parse_block_sizes, stderr_progress, variant_specs
from aapcgen.core.errors import InputError
from aapcgen.core.topology import load_topology, topology_or_builtin
from aapcgen.core.units import parse_rate_option
from aapcgen.measure.bench import (
    BACKENDS,
    WAYS,
    BenchConfig,
    best_ratios,
    parse_sizes,
    peak_of,
    report_table,
    run_bench,
    summarize,
    write_outputs,
)
from aapcgen.measure.mcast_bench import (
    DEFAULT_SIZES,
    McastBenchConfig,
    crossovers,
    format_table,
    parse_ops,
    run_benchmark,
)
from aapcgen.measure.mcast_bench import write_outputs as write_mcast_outputs
from aapcgen.measure.vbench import MPICH_VNATIVES, VBenchRequest, run_vbench


def cmd_bench(a: argparse.Namespace) -> int:
    topo = topology_or_builtin(a.topology)
    sizes = parse_sizes(a.sizes)
    specs = []
    names = [v for v in a.variants.split(",") if v]
    runtime = tuple(v for v in names if v.startswith(RUNTIME_PREFIX) or v == "auto")
    ways = tuple(w for w in (a.ways or "").split(",") if w)
    for w in ways:
        if w not in WAYS:
            raise InputError(f"--ways: unknown way '{w}' (choose from: {', '.join(WAYS)})")
    if ways and "auto" not in runtime:
        runtime += ("auto",)
    for v in (v for v in runtime if v != "auto"):
        variant_spec(v.removeprefix(RUNTIME_PREFIX))  # a known variant ...
        if v.removeprefix(RUNTIME_PREFIX) not in RUNTIME_SYNC_C:  # ... that runs at run time
            raise InputError(
                f"--variants: '{v}' is not a run-time routine (choose from: "
                f"{', '.join(RUNTIME_PREFIX + s for s in RUNTIME_SYNC_C)})"
            )
    for v in (v for v in names if not v.startswith(RUNTIME_PREFIX)):
        specs += variant_specs(
            v, parse_block_sizes(a.block_size) if ("partial" in v or v == "all") else None
        )
    natives = tuple(x for x in a.natives.split(",") if x) if a.natives is not None else None
    out_dir = Path(a.output or f"bench-results/{topo.name}-{a.backend}")
    cfg = BenchConfig.from_args(a, topo, sizes, specs, natives, out_dir)
    if runtime and not specs:
        raise InputError("--variants: name a generated variant besides the runtime-* ones and auto")
    check_phase_slots(topo)
    check_output_dir(out_dir)  # before the benchmark, not after it
    cfg = replace(cfg, runtime=runtime, timeline=a.timeline, ways=ways)
    peak = peak_of(topo, cfg.rate)
    stderr_progress(
        f"bench {topo.name} on {a.backend}: {len(specs)} generated variant(s), natives "
        f"{'the MPI default ones' if natives is None else ', '.join(natives) or 'default only'}, sizes {a.sizes}, {a.repeats} repeats; "
        f"peak {peak / 1e6:.2f} MB/s"
    )
    rows = run_bench(cfg, stderr_progress)
    summary = summarize(rows, topo.n_machines * topo.ranks_per_machine, peak)
    files = write_outputs(cfg, rows, summary, peak)
    print(report_table(summary))
    print(best_ratios(summary))
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def cmd_bench_alltoallv(a: argparse.Namespace) -> int:
    topo = topology_or_builtin(a.topology)
    if a.scale < 1:
        raise InputError(f"--scale must be at least 1, got {a.scale}")
    if a.warmup < 0:
        raise InputError(f"--warmup must be at least 0, got {a.warmup}")
    if a.warmup > MAX_WARMUP:
        raise InputError(f"--warmup must be at most {MAX_WARMUP}, got {a.warmup}")
    specs = [s for v in a.variants.split(",") for s in variant_specs(v, None)]
    natives = tuple(x for x in (a.natives or "").split(",") if x)
    backends = tuple(b for b in BACKENDS if b != "simulate")
    cfg = BenchConfig.from_args(a, topo, (0,), specs, natives, Path(a.output), backends)
    pattern = load_pattern(a.pattern, topo)
    if int(pattern.max(initial=0)) * a.scale > 2**31 - 1:  # Python ints: no wrap-around
        raise InputError("pattern x --scale has an entry above 2^31-1 bytes (an MPI int count)")
    if not pattern.any():
        raise InputError(f"{a.pattern}: every count off the diagonal is 0: nothing to measure")
    pattern = pattern * a.scale
    check_phase_slots(topo)
    check_output_dir(cfg.out_dir)
    request = VBenchRequest(
        pattern, f"{a.pattern} x {a.scale}", a.pattern, a.scale, a.scheduler,
        a.runtime_scheduler, a.warmup, a.settle, a.only,
    )  # fmt: skip
    files = run_vbench(cfg, request)
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def cmd_bench_mcast(a: argparse.Namespace) -> int:
    if not a.target_seconds > 0:
        raise InputError("--target-seconds: must be positive")
    link_rate = parse_rate_option(a.rate)
    assert link_rate is not None  # the option has a default
    cfg = McastBenchConfig(
        load_topology(a.topology), parse_ops(a.ops), parse_sizes(a.sizes), link_rate, a.frag,
        a.prefix, a.target_seconds, a.verbose,
    )  # fmt: skip
    check_output_dir(a.output)
    start = time.time()
    rows = run_benchmark(cfg)
    meta = {
        "command": "aapcgen bench-mcast " + " ".join(sys.argv[2:]),
        "topology": str(a.topology),
        "rate": a.rate,
        "frag": a.frag,
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus",
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(start)),
        "seconds": round(time.time() - start, 1),
    }
    print("\n".join(format_table(rows)))
    print("crossovers (average time, multicast vs native):")
    for key, text in crossovers(rows).items():
        print(f"  {key}: {text}")
    csv_path, json_path = write_mcast_outputs(rows, meta, Path(a.output))
    print(f"wrote {csv_path} and {json_path}")
    return 0


MAX_WARMUP = 10_000  # untimed calls per candidate
MAX_FRAG = 65_000  # a UDP datagram's payload with the transport's header (runtime_c/mcast)


def register(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "bench",
        cmd_bench,
        "Benchmark generated routines against the MPI library's MPI_Alltoall.",
    )
    run_options(p, ", ".join(BACKENDS), repeats=5, max_iters=50, prefix="aapc")
    p.add_argument(
        "--sizes", default="1K,4K,16K,64K,256K,1M", help="message sizes per pair, e.g. 1K,64K,1M"
    )
    p.add_argument(
        "--variants",
        default="sender-all,no-sync",
        help="generated variants, comma-separated, or all; runtime-receiver-all (and the other "
        "runtime-* routines) times the routine scheduled at run time too, auto the default "
        "routine (its way chosen per call)",
    )
    p.add_argument(
        "--block-size",
        type=block_sizes,
        metavar="N[,N...]",
        help="block sizes for partial variants",
    )
    p.add_argument(
        "--natives", help="native algorithms to force besides the default (comma list; '' for none)"
    )
    p.add_argument(
        "--ways",
        help="also time the default routine (auto) with each of these ways forced through "
        f"AAPC_WAY, as auto/WAY (comma list of {', '.join(WAYS)})",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="results directory (default bench-results/NAME-BACKEND)",
    )
    p.add_argument(
        "--timeline",
        action="store_true",
        help="also trace the generated routines (AAPC_TRACE) and write, per candidate and size, "
        "a time-line plot and where the time went against the bound into DIR/timeline "
        "(tracing polls: its calls are slower; local, emulate and simulate backends)",
    )

    p = command(
        sub,
        "bench-alltoallv",
        cmd_bench_alltoallv,
        "Benchmark MPI_Alltoallv levels 1-3 against the MPI library's on one pattern.",
        topology="required",
    )
    p.add_argument("pattern", metavar="PATTERN", help="N x N byte counts or builtin:table3")
    run_options(p, "local, emulate, mpiexec", repeats=3, max_iters=20, prefix="aapcv")
    p.add_argument("--scale", type=whole(1), default=1, help="multiply every count (default 1)")
    p.add_argument("--scheduler", choices=SCHEDULERS, default="balanced", help="level 3")
    p.add_argument("--runtime-scheduler", choices=SCHEDULERS, default="greedy", help="levels 1, 2")
    p.add_argument("--variants", default="receiver-all,no-sync", help="level-3 variants")
    p.add_argument("--natives", default=",".join(MPICH_VNATIVES), help="forced MPICH algorithms")
    p.add_argument(
        "--only",
        help="measure only these candidates (timer names, e.g. "
        "native,level3-receiver-all,level1-receiver-all)",
    )
    p.add_argument(
        "--settle",
        type=seconds(allow_zero=True, high=3600),
        default=1.0,
        help="idle seconds before each candidate (default 1)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="untimed calls before each candidate's timed ones (default 2): the first call on "
        "connections another candidate left after heavy loss runs slow",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR")

    p = command(
        sub,
        "bench-mcast",
        cmd_bench_mcast,
        "Benchmark multicast Bcast/Scatter/Scatterv/Allgather against the MPI library's.",
        topology="required",
    )
    p.add_argument("--ops", default="bcast,scatter,allgather,scatterv", help="comma list")
    p.add_argument(
        "--sizes", default=DEFAULT_SIZES, help=f"bytes per rank (default {DEFAULT_SIZES})"
    )
    p.add_argument(
        "--rate", type=rate, default="100Mbit", help="every link's speed (default 100Mbit)"
    )
    p.add_argument(
        "--frag",
        type=whole(64, MAX_FRAG),
        default=16384,
        help=f"multicast payload bytes per datagram (64 to {MAX_FRAG})",
    )
    p.add_argument(
        "--target-seconds",
        type=seconds(high=3600),
        default=0.5,
        help="data time per job (sets the calls)",
    )
    p.add_argument(
        "--prefix", type=prefix_name, default="mcb", help="emulation name prefix (default mcb)"
    )
    p.add_argument("-o", "--output", default="build/bench-mcast", help="directory for CSV/JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="print rows as they are measured")
