"""Regenerate generated/ (the outputs for the example topologies): `make generated`.

tests/test_generated.py runs the same generation into a temporary directory and fails on any
difference, so generated/ never drifts from the generator.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [
    "paper-fig1",
    "two-switch-4-4",
    "chain-4x4",
    "chain-4x8",
    "single-8",
    "tree-24",
    "deep-unbalanced",
]
ARGS = ["--variant", "all", "--block-size", "4", "--no-runtime"]


def regenerate(out_root: Path) -> None:
    from aapcgen.cli import main

    for name in EXAMPLES:
        out = out_root / name
        shutil.rmtree(out, ignore_errors=True)
        try:
            main(["generate", f"topologies/{name}.yaml", *ARGS, "-o", str(out)])
        except SystemExit as exc:
            if exc.code:
                raise


if __name__ == "__main__":
    import os

    os.chdir(ROOT)
    regenerate(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("generated"))
