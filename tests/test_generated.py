"""generated/ holds the generator's output for the example topologies and never drifts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tuning"))

from regenerate import EXAMPLES, regenerate  # noqa: E402

from aapcgen.codegen.render import RUNTIME_SUBDIRS  # noqa: E402


def test_generated_directory_matches_the_generator(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    regenerate(tmp_path)
    for name in EXAMPLES:
        fresh = {p.name: p.read_text() for p in (tmp_path / name).iterdir()}
        committed_dir = ROOT / "generated" / name
        assert committed_dir.is_dir(), f"generated/{name} is missing: run `make generated`"
        committed = {p.name: p.read_text() for p in committed_dir.iterdir()}
        assert sorted(committed) == sorted(fresh), (
            f"generated/{name}: file list drifted; run `make generated`"
        )
        for file, text in fresh.items():
            assert committed[file] == text, f"generated/{name}/{file} drifted; run `make generated`"
    assert os.path.isdir(ROOT / "generated")


@pytest.mark.mpi
def test_generated_directory_builds_against_runtime_c(tmp_path):
    """generated/ holds no runtime: it compiles with runtime_c/'s folders (generated/README.md)."""
    gen = ROOT / "generated" / "paper-fig1"
    assert not list(gen.glob("aapc_exec.c")), "generated/ must reference the runtime, not copy it"
    bin_dir = Path(sys.executable).parent
    folders = [ROOT / "runtime_c" / d for d in RUNTIME_SUBDIRS]
    cmd = [str(bin_dir / "mpicc"), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]
    cmd += ["-DAAPC_INTERCEPT", f"-I{gen}", *(f"-I{d}" for d in folders)]
    cmd += [str(ROOT / "tests/c/plain_alltoall.c"), *map(str, sorted(gen.glob("*.c")))]
    cmd += [str(f) for d in folders for f in sorted(d.glob("*.c"))]
    exe = tmp_path / "plain"
    subprocess.run([*cmd, "-o", str(exe)], check=True, timeout=300)
    proc = subprocess.run(
        [str(bin_dir / "mpiexec"), "-n", "5", str(exe)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout, proc.stderr
