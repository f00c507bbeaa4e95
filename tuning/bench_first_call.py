"""Benchmark: the first MPI_Alltoall on a communicator of a large job, per rank, for the ways
that serve jobs past the per-rank schedule's limit (AAPC_JOB_MAX_RANKS): the job's shape and
the log-round members' tree order (every rank), and the leaders' machine-level phases with one
leader's rows (one rank per machine). tests/c/cluster_driver.c --first-call, compiled with -O2;
no MPI call is made (the Allgather of 12 bytes per rank that precedes it is not timed).

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_first_call.py

Jobs: 4,096 ranks (256 machines x 16 of two-level-1024), 16,384 (1,024 x 16), 65,536 (1,024 x
64; and 4,096 x 16 of three-level-4096), every link at one speed (seed 002's phases, which a
leader streams into its rows: "streamed"), then the 16,384- and 65,536-rank jobs again with the
topology file's faster switch links (the capacity-aware phases: on both trees the root links
set the bound, so runtime_c/cluster/aapc_cluster_groups.c streams them too; where it does not
fit they are computed whole: "stored"). Prints a Markdown table: milliseconds (minimum and
median) of each part, which build the leader's rows took, and the peak resident memory of the
process (a leader's) above the driver's own (a 2-rank job), against the target of 250 ms and
16 MiB per rank. About a minute on the 2-core VM.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.core.topology import load_topology  # noqa: E402

# (topology, machines, ranks per machine, with the file's link speeds): without them every link
# has one speed, so the phases are seed 002's (a leader streams them: none stored); with them the
# faster switch links make them the capacity-aware ones (here the groups' construction, streamed)
JOBS = [("two-level-1024", 256, 16, False), ("two-level-1024", 1024, 16, False),
        ("two-level-1024", 1024, 64, False), ("three-level-4096", 4096, 16, False),
        ("two-level-1024", 1024, 16, True), ("three-level-4096", 4096, 16, True)]  # fmt: skip


def driver_input(name: str, machines: int, r: int, speeds: bool = False) -> str:
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    index = {s: i for i, s in enumerate(topo.switches)}
    ranks = [m for m in range(machines) for _ in range(r)]
    lines = [f"{len(topo.switches)} {topo.n_machines} {len(topo.links)} {len(ranks)}"]
    lines.append(" ".join(str(index[s]) for s in topo.machine_switch))
    lines += [f"{index[ln.a]} {index[ln.b]}" for ln in topo.links]
    lines.append(" ".join(map(str, ranks)))
    if speeds:
        lines.append(
            " ".join(map(repr, [*topo.machine_bandwidth, *(ln.bandwidth for ln in topo.links)]))
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    cluster = ROOT / "runtime_c" / "cluster"
    sources = [*cluster.glob("*.c"), ROOT / "runtime_c" / "alltoall" / "aapc_alltoall_rows.c",
               ROOT / "runtime_c" / "alltoallv" / "aapc_vtables.c"]  # fmt: skip
    includes = [
        f"-I{ROOT / 'runtime_c' / d}"
        for d in ("cluster", "common", "alltoall", "alltoallv", "vsched")
    ]
    mpicc = str(Path(sys.executable).parent / "mpicc")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "driver"
        cmd = [mpicc, "-std=c11", "-O2", "-DAAPC_WITH_VTABLES", *includes,
               str(ROOT / "tests" / "c" / "cluster_driver.c"), *map(str, sources), "-lm", "-o", str(exe)]  # fmt: skip
        subprocess.run(cmd, check=True, timeout=300)

        def measure(name: str, machines: int, r: int, speeds: bool = False) -> dict[str, list[str]]:
            out = subprocess.run([str(exe), "--first-call", "5"], input=driver_input(name, machines, r, speeds),
                                 capture_output=True, text=True, timeout=3600, check=True).stdout  # fmt: skip
            return {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()}

        base = int(measure("two-level-1024", 2, 1)["maxrss_kib"][0]) / 1024  # the process alone
        print(f"host {platform.node()}, {platform.processor() or platform.machine()}; "
              f"memory above the driver's own {base:.1f} MiB")  # fmt: skip
        print(
            "| job | links | ranks | shape ms | tree order ms | leader's phases + rows ms | leader's build | peak MiB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for name, machines, r, speeds in JOBS:
            got = measure(name, machines, r, speeds)
            ms = {
                k: "/".join(f"{1e3 * float(x):.2f}" for x in got[k])
                for k in ("shape", "order", "leader")
            }
            links = "the file's speeds" if speeds else "one speed"
            print(
                f"| {machines} machines x {r} of {name} | {links} | {machines * r:,} | {ms['shape']} | "
                f"{ms['order']} | {ms['leader']} | {got['leader_build'][0]} | "
                f"{int(got['maxrss_kib'][0]) / 1024 - base:.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
