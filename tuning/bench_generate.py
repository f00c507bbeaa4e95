"""Benchmark: `aapcgen generate` (with redundancy removal) and compiling its output.

Prints a Markdown table: generation wall time and peak RSS (child process, one core), sync
counts before/after removal, the size of the generated C and its compile time with mpicc -O2.

    .venv/bin/python tuning/bench_generate.py [TOPO.yaml] [VARIANT]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main(topo: str, variant: str) -> None:
    out = Path(tempfile.mkdtemp(prefix="aapc-bench-"))
    try:
        cmd = [
            "/usr/bin/time",
            "-f",
            "%e %M",
            str(BIN / "aapcgen"),
            "generate",
            topo,
            "--variant",
            variant,
            "-v",
            "-o",
            str(out),
        ]
        if hasattr(os, "sched_setaffinity"):
            cmd = ["taskset", "-c", "0", *cmd]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        wall, rss_kb = proc.stderr.strip().splitlines()[-1].split()
        counts = re.search(
            r"(\d+) sync messages after redundancy removal \(from (\d+)", proc.stderr
        )
        sources = sorted(str(p) for p in out.glob("*.c"))
        size_mb = sum(Path(s).stat().st_size for s in sources) / 1e6
        start = time.perf_counter()
        subprocess.run(
            [
                str(BIN / "mpicc"),
                "-std=c11",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{out}",
                "-c",
                *sources,
            ],
            cwd=out,
            check=True,
        )
        compile_s = time.perf_counter() - start
        after, before = (counts.group(1), counts.group(2)) if counts else ("-", "-")
        print(
            "| topology | variant | generate s | peak RSS GiB | syncs before -> after removal | C source MB | compile s |"
        )
        print("|---|---|---|---|---|---|---|")
        print(
            f"| {Path(topo).stem} | {variant} | {float(wall):.1f} | {int(rss_kb) / 2**20:.2f} | {before} -> {after} | "
            f"{size_mb:.1f} | {compile_s:.1f} |"
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "topologies/two-level-1024.yaml",
        sys.argv[2] if len(sys.argv) > 2 else "sender-all",
    )
