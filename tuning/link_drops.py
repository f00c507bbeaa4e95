"""Packets dropped by the emulated switch buffers, per link, for each candidate (root).

    sudo .venv/bin/python tuning/link_drops.py [TOPO.yaml] [--bytes 65536] [--iters 20]
        [--candidates native,receiver-all,sender-all,no-sync] [--queue 100000]

Brings up the emulation, runs each candidate alone (runtime_c/bench/alltoall_timer.c) and reads
the tbf counters of every switch port before and after: contention shows up as drops (and the TCP
retransmissions they cause), a contention-free schedule as none.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.topology import load_topology
from aapcgen.measure.timer import parse_timer_lines
from aapcgen.platforms import emulate

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topology", nargs="?", default=str(ROOT / "topologies/two-switch-4-4.yaml"))
    ap.add_argument("--bytes", default="65536")
    ap.add_argument("--iters", default="20")
    ap.add_argument("--candidates", default="native,receiver-all,sender-all,no-sync")
    ap.add_argument("--queue", type=int, default=100_000)
    args = ap.parse_args()
    topo = load_topology(args.topology)
    wanted = [c for c in args.candidates.split(",") if c != "native"]
    with tempfile.TemporaryDirectory(prefix="aapc-drops-") as tmp:
        gen = Path(tmp) / "gen"
        generate(topo, [s for v in wanted for s in variant_specs(v, None)], gen)
        exe = Path(tmp) / "timer"
        sources = [str(p) for p in gen.glob("*.c")]
        subprocess.run(
            [
                str(BIN / "mpicc"),
                "-O2",
                f"-I{gen}",
                str(ROOT / "runtime_c/bench/alltoall_timer.c"),
                *sources,
                "-o",
                str(exe),
            ],
            check=True,
        )
        print(
            f"{topo.name}: {args.bytes} B per message, {args.iters} calls per candidate, queue {args.queue} B"
        )
        print("| candidate | seconds per call | drops on switch links | drops on machine links |")
        print("|---|---|---|---|")
        with emulate.emulated(topo, queue=args.queue, prefix="aapcd") as em:
            for cand in args.candidates.split(","):
                before = emulate.link_counters(em, machines=True)
                argv = [
                    str(exe),
                    "--bytes",
                    args.bytes,
                    "--repeats",
                    "1",
                    "--iters",
                    args.iters,
                    "--warmup",
                    "1",
                    "--only",
                    cand,
                ]
                cmd = emulate.mpiexec_command(em, str(BIN / "mpiexec"), argv, {"AAPC_QUIET": "1"})
                out = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=1800, check=True
                ).stdout
                after = emulate.link_counters(em, machines=True)
                drops = {k: after[k][2] - before[k][2] for k in after}
                machine_names = set(topo.machines)
                on_machine = sum(v for k, v in drops.items() if set(k.split("->")) & machine_names)
                seconds = parse_timer_lines(out)[0].seconds
                print(
                    f"| {cand} | {float(seconds):.4f} | {sum(drops.values()) - on_machine} | {on_machine} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
