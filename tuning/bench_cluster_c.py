"""Benchmark: the first-call scheduling cost per rank of the run-time MPI_Alltoall (runtime_c/
cluster + the receiver-all tables of runtime_c/alltoallv/aapc_vtables.c), one rank per machine.

Jobs: 64 machines of topologies/two-level-256.yaml (its first 64), all of two-level-256,
all of two-level-1024, and 2048 of three-level-4096. It compiles tests/c/cluster_driver.c with
-O2 (mpicc: the executor's header includes mpi.h; no MPI call is made) and times, per job, the
phases alone, and the job tree and one rank's executor rows with their receiver-all syncs
(runtime_c/alltoall/aapc_alltoall_rows.c: everything aapc_alltoall_cluster.c does on a rank
after its one Allgather: seed 002's phases streamed into the rows where they are the job's, else
the phases computed whole and the rows read off them), minimum and median of several
calls, with the peak resident memory of the process. Prints a Markdown table; record it in
docs/measurements/runtime-scheduling.md. Take the exclusive CPU lock while measuring:

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_cluster_c.py

Targets (issue "One library per cluster"): <= 5 ms at 64 machines, <= 50 ms at 256, <= 500 ms
at 1024, and <= 64 MiB per rank at 1024.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.core.model import Topology  # noqa: E402
from aapcgen.core.topology import load_topology  # noqa: E402

TARGETS = {64: (5.0, None), 256: (50.0, None), 1024: (500.0, 64.0)}
# (topology, ranks, speeds): speeds False runs every link at one speed (seed 002's phases);
# True takes the file's speeds (fast uplinks: the capacity-aware phases of
# runtime_c/cluster/aapc_cluster_capacity.c)
JOBS = [
    ("two-level-256", 64, False),
    ("two-level-256", 256, False),
    ("two-level-1024", 1024, False),
    ("three-level-4096", 2048, False),
    ("two-level-256-fat", 256, True),
    ("two-level-1024", 1024, True),
    ("three-level-4096", 2048, True),
]


def driver_input(topo: Topology, ranks: int, speeds: bool) -> str:
    index = {s: i for i, s in enumerate(topo.switches)}
    lines = [f"{len(topo.switches)} {topo.n_machines} {len(topo.links)} {ranks}"]
    lines.append(" ".join(str(index[s]) for s in topo.machine_switch))
    lines.append(" ".join(f"{index[ln.a]} {index[ln.b]}" for ln in topo.links))
    lines.append(" ".join(map(str, range(ranks))))
    if speeds:
        bws = [*topo.machine_bandwidth, *(ln.bandwidth for ln in topo.links)]
        lines.append(" ".join(map(repr, bws)))
    return "\n".join(lines) + "\n"


def measure(exe: Path, text: str, sync: int, repeat: int) -> tuple[float, float, float]:
    out = subprocess.run(
        [str(exe), "--repeat", str(repeat), "--sync", str(sync)],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    ).stdout.split()
    return float(out[1]) * 1e3, float(out[2]) * 1e3, int(out[4]) / 1024


def main() -> None:
    src = ROOT / "runtime_c"
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "cluster_driver"
        cmd = [str(Path(sys.executable).parent / "mpicc"), "-std=c11", "-O2", "-DAAPC_WITH_VTABLES"]
        cmd += [f"-I{src / d}" for d in ("cluster", "alltoallv", "alltoall", "common", "vsched")]
        cmd += [str(ROOT / "tests/c/cluster_driver.c"), *map(str, (src / "cluster").glob("*.c"))]
        cmd += [
            str(src / "alltoallv" / "aapc_vtables.c"),
            str(src / "alltoall" / "aapc_alltoall_rows.c"),
        ]
        cmd += ["-o", str(exe)]
        subprocess.run(cmd, check=True)
        print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}")
        print(
            "| ranks (1 per machine) | tree | link speeds | phases only, ms (min / median) "
            "| all a rank computes: its receiver-all rows, ms (min / median) | peak RSS, MiB | target |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, ranks, speeds in JOBS:
            topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
            text = driver_input(topo, ranks, speeds)
            repeat = 9 if ranks <= 256 else 3
            p_min, p_med, _ = measure(exe, text, 0, repeat)
            s_min, s_med, rss = measure(exe, text, 2, repeat)
            ms, mib = TARGETS.get(ranks, (None, None))
            target = "-" if ms is None else f"<= {ms:g} ms" + (f", <= {mib:g} MiB" if mib else "")
            ok = (
                ""
                if ms is None
                else (" (met)" if s_med <= ms and (mib is None or rss <= mib) else " (MISSED)")
            )
            print(
                f"| {ranks} | {name} | {'the file (capacities)' if speeds else 'one'} | "
                f"{p_min:.2f} / {p_med:.2f} | "
                f"{s_min:.2f} / {s_med:.2f} | {rss:.1f} | {target}{ok} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
