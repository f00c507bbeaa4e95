"""What a SimGrid network model charges one message: one-way times per size between two machines
of a topology, under the SMPI model (its default latency and bandwidth factors) and CM02.

    flock -s /tmp/aapc-cpu.lock .venv/bin/python tuning/sim_costs.py \\
        topologies/two-level-256.yaml --pairs 0:1,0:16

Each pair (ranks a:b) gets one run per model: after a barrier, rank a sends one message of each
size to b (blocking) and b notes its arrival, both on the simulated clock (one for all ranks);
a zero-byte reply follows.
Prints a Markdown table: size, wire time at the path's slowest link, one-way time per model and
pair, and the excess over the wire time (what the model adds: latency x its factor, bandwidth
factors). The platform is aapcgen's export (aapcgen/platforms/simgrid.py).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from aapcgen.alltoall.tree import hang, path_edges, uplink_bandwidths  # noqa: E402
from aapcgen.core.errors import AapcError  # noqa: E402
from aapcgen.core.model import Topology  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.platforms import simgrid  # noqa: E402

SIZES = (0, 1024, 16384, 32768, 65536, 262144, 1048576)

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* rank a sends one message of each size to rank b after a barrier; both print the simulated
   time (one clock for all ranks in SimGrid) of the send and of the arrival */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, a = atoi(argv[1]), b = atoi(argv[2]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static char buf[1 << 20];
    const int sizes[] = {%SIZES%};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == a) {
            printf("send %d %.9f\n", sizes[i], MPI_Wtime());
            fflush(stdout);
            MPI_Send(buf, sizes[i], MPI_BYTE, b, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 0, MPI_BYTE, b, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == b) {
            MPI_Recv(buf, sizes[i], MPI_BYTE, a, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("arrive %d %.9f\n", sizes[i], MPI_Wtime());
            fflush(stdout);
            MPI_Send(buf, 0, MPI_BYTE, a, 1, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
"""


def path_bandwidth(topo: Topology, a: int, b: int) -> float:
    """The slowest link on the path between machines a and b (bytes/s)."""
    ht = hang(topo)
    _, edges = path_edges(ht, np.array([a]), np.array([b]))
    bw = uplink_bandwidths(topo, ht)
    return float(min(bw[e // 2] for e in edges.tolist()))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("topology", type=Path)
    p.add_argument("--pairs", default="0:1", help="rank pairs a:b, comma-separated")
    p.add_argument("--models", default="SMPI,CM02")
    a = p.parse_args()
    topo = load_topology(a.topology)
    pairs = [tuple(int(x) for x in pr.split(":")) for pr in a.pairs.split(",") if pr]
    models = [m for m in a.models.split(",") if m]
    times: dict[tuple[str, tuple[int, int]], dict[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="aapc-simcost-") as tmp:
        work = Path(tmp)
        src = work / "oneway.c"
        src.write_text(PROGRAM.replace("%SIZES%", ", ".join(map(str, SIZES))))
        exe = simgrid.smpicc_compile([src], [], work / "oneway")
        platform, hosts = simgrid.export_simgrid(topo, work)
        for model in models:
            for pair in pairs:
                run = simgrid.run_simulated(
                    platform, hosts, topo.n_machines, exe, [str(pair[0]), str(pair[1])],
                    extra_cfg=[f"network/model:{model}"], timeout=600,
                )  # fmt: skip
                sent = dict(re.findall(r"^send (\d+) ([0-9.eE+-]+)$", run.stdout, re.M))
                got = re.findall(r"^arrive (\d+) ([0-9.eE+-]+)$", run.stdout, re.M)
                times[(model, pair)] = {int(s): float(t) - float(sent[s]) for s, t in got}
    head = ["size", "wire us"] + [f"{m} {x}:{y} us (excess)" for m in models for x, y in pairs]
    print(f"{topo.name}: per-link latency {simgrid.LATENCY}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for size in SIZES:
        wire = size / min(path_bandwidth(topo, x, y) for x, y in pairs)
        cells = [str(size), f"{wire * 1e6:.1f}"]
        for m in models:
            for pr in pairs:
                t = times[(m, pr)].get(size)
                bw = path_bandwidth(topo, *pr)
                cells.append("–" if t is None else f"{t * 1e6:.1f} (+{(t - size / bw) * 1e6:.1f})")
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AapcError as e:
        print(f"sim_costs: {e}", file=sys.stderr)
        sys.exit(2)
