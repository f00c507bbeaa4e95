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


def test_sources_compile_one_per_process_and_a_failure_is_named(tmp_path):
    """compile_objects: one object per source (same-named sources from two folders do not
    overwrite each other), in the sources' order; the first broken source is the one
    reported, with the compiler's message."""
    from aapcgen.codegen.compile import compile_objects

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    good = [tmp_path / "a" / "x.c", tmp_path / "b" / "x.c", tmp_path / "a" / "y.c"]
    for i, src in enumerate(good):
        src.write_text(f"int f{i}(void) {{ return {i}; }}\n")
    objects, failed = compile_objects("cc", ["-std=c11", "-Werror"], good, tmp_path / "o", 2)
    assert failed is None
    assert len(set(objects)) == 3 and all(o.stat().st_size > 0 for o in objects)
    nm = subprocess.run(["nm", str(objects[1])], capture_output=True, text=True, check=True)
    assert " f1" in nm.stdout  # the second object is b/x.c's, not a/x.c's again
    bad = tmp_path / "a" / "bad.c"
    bad.write_text("int g(void) { return undeclared_thing; }\n")
    _, failed = compile_objects("cc", ["-std=c11"], [*good, bad], tmp_path / "o2", 2)
    assert failed is not None and str(bad) in failed.cmd
    assert "undeclared_thing" in failed.proc.stderr
