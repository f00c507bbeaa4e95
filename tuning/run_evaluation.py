"""The evaluation of docs/measurements/evaluation.md: emulated switch trees (root) against MPICH native.

    sudo .venv/bin/python tuning/run_evaluation.py [NAME ...]     # all cases, or some by name

Each case is one `aapcgen bench --backend emulate` invocation (native and generated candidates
interleaved, repeats for median and spread); results go to docs/bench/<case>/ (CSV, JSON, PNG)
and the tables are printed. Run it on an otherwise idle machine: the ranks of all emulated
machines share its cores.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
VARIANTS = "receiver-all,barrier-all,sender-all,no-sync"

# name: (topology, extra bench arguments). Sizes follow what one call costs at that link rate:
# chain-4x8 at 20 Mbit needs 107 s per 1 MB all-to-all at the peak (see its case).
CASES = {
    "two-switch-4-4-100mbit": (
        "topologies/two-switch-4-4.yaml",
        ["--sizes", "64K,256K,1M", "--repeats", "3"],
    ),
    "chain-4x4-100mbit": (
        "topologies/chain-4x4.yaml",
        ["--sizes", "64K,256K,1M", "--repeats", "3"],
    ),
    # 2 ranks per machine (issue 8): the hierarchical routine against MPICH on 16 ranks
    "two-switch-4-4-2ppn-100mbit": (
        "topologies/two-switch-4-4-2ppn.yaml",
        ["--sizes", "64K,256K", "--repeats", "3", "--variants", "receiver-all,barrier-all"],
    ),
    "chain-4x8-20mbit": (
        "topologies/chain-4x8.yaml",
        # 32 ranks at 20 Mbit: a 64 KB all-to-all needs 6.7 s at the peak and MPICH's native one
        # several times that, so this case is cut to 64 KB, two variants and two natives
        [
            "--sizes",
            "64K",
            "--repeats",
            "2",
            "--max-iters",
            "3",
            "--variants",
            "receiver-all,barrier-all",
            "--natives",
            "pairwise",
        ],
    ),
}


def run_case(name: str) -> None:
    topo, extra = CASES[name]
    out = ROOT / "docs" / "bench" / name
    cmd = [
        str(BIN / "aapcgen"),
        "bench",
        topo,
        "--backend",
        "emulate",
        "--variants",
        VARIANTS,
        "--target-seconds",
        "1",
        *extra,
        "-o",
        str(out),
    ]
    print(f"## {name}\n\n`{' '.join(cmd[1:]).replace(str(ROOT) + '/', '')}`\n", flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"FAILED: {proc.stderr.strip().splitlines()[-1:]}")
        return
    print(proc.stdout, flush=True)


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        run_case(case)
