"""Benchmark: the shared-memory collectives of runtime_c/shm against MPICH's native ones.

One mpiexec job per rank count runs tests/c/shm_bench.c, which times PMPI_* and aapc_shm_*
interleaved repeat by repeat (median of the repeats, slowest rank). Sizes: Bcast message bytes,
Allgather bytes per rank, Alltoall bytes sent per rank, Reduce/Allreduce doubles (MPI_SUM) of that
many bytes per rank. Latency (us) for all sizes, bandwidth (MB/s = bytes / time) for large ones.
Target (issue 8): shm within 1.2x of native everywhere, faster for large Allreduce and Bcast.

    flock -x /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_shm.py [--ranks 2,4,8]
        [--sizes 8,64,...] [--repeats 7] [--csv build/bench_shm.csv]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SIZES = "8,64,512,4096,32768,262144,1048576,4194304"
TARGET = 1.2
LARGE = 65536


@dataclass(frozen=True)
class Row:
    coll: str
    nbytes: int
    ranks: int
    native_us: float
    shm_us: float

    @property
    def ratio(self) -> float:
        """shm time / native time: below 1 means shm is faster."""
        return self.shm_us / self.native_us

    def verdict(self) -> str:
        if self.ratio <= 1.0:
            return "faster"
        return "ok" if self.ratio <= TARGET else "SLOWER"


def build(out: Path) -> Path:
    exe = out / "shm_bench"
    shm = ROOT / "runtime_c" / "shm"
    sources = sorted(str(p) for p in shm.glob("*.c"))
    bench = str(ROOT / "tests" / "c" / "shm_bench.c")
    cmd = [str(BIN / "mpicc"), "-std=c11", "-O2", f"-I{shm}", bench, *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def parse(stdout: str) -> list[Row]:
    rows = []
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            _, coll, nbytes, ranks, native, shm = line.split()
            rows.append(Row(coll, int(nbytes), int(ranks), float(native), float(shm)))
    return rows


def measure(exe: Path, ranks: int, sizes: str, repeats: int, budget_us: int) -> list[Row]:
    cmd = [str(BIN / "mpiexec"), "-n", str(ranks), str(exe), "--sizes", sizes]
    cmd += ["--repeats", str(repeats), "--budget-us", str(budget_us)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_shm: {ranks} ranks failed: {proc.stderr.strip()[-500:]}")
    return parse(proc.stdout)


def fmt_size(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def table(rows: list[Row]) -> str:
    head = f"{'coll':<10} {'bytes':>6} {'p':>3} {'native us':>10} {'shm us':>10} "
    head += f"{'shm/nat':>8} {'nat MB/s':>9} {'shm MB/s':>9}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        bw = ""
        if r.nbytes >= LARGE:
            bw = f"{r.nbytes / r.native_us:9.0f} {r.nbytes / r.shm_us:9.0f}"
        else:
            bw = f"{'':>9} {'':>9}"
        lines.append(
            f"{r.coll:<10} {fmt_size(r.nbytes):>6} {r.ranks:>3} {r.native_us:10.2f} "
            f"{r.shm_us:10.2f} {r.ratio:8.2f} {bw}  {r.verdict()}"
        )
    return "\n".join(lines)


def write_csv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["collective", "bytes", "ranks", "native_us", "shm_us", "shm_over_native"])
        for r in rows:
            w.writerow([r.coll, r.nbytes, r.ranks, r.native_us, r.shm_us, f"{r.ratio:.3f}"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="2,4,8", help="rank counts, comma-separated")
    ap.add_argument("--sizes", default=SIZES, help="bytes, comma-separated")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--budget-us", type=int, default=20000, help="time per timing")
    ap.add_argument("--csv", type=Path, default=ROOT / "build" / "bench_shm.csv")
    args = ap.parse_args(argv)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="aapc-shm-bench-") as tmp:
        exe = build(Path(tmp))
        for ranks in (int(x) for x in args.ranks.split(",")):
            rows += measure(exe, ranks, args.sizes, args.repeats, args.budget_us)
    print(table(rows))
    write_csv(rows, args.csv)
    slower = [r for r in rows if r.verdict() == "SLOWER"]
    print(f"\n{len(rows)} rows, {len(slower)} above {TARGET}x of native; CSV: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
