"""The test-tier rule of tests/conftest.py: a missing requirement skips locally, fails in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import pytest
import conftest

conftest.REQUIREMENTS["openmpi"] = (lambda: False, "a test-only missing requirement")

@pytest.mark.openmpi
def test_needs_it():
    pass

def test_needs_nothing():
    pass
"""


def run_probe(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    mpi: x\n    root: x\n    simgrid: x\n    openmpi: x\n    slow: x\n"
    )
    env = {**os.environ, "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


def test_missing_requirement_skips_locally(tmp_path):
    proc = run_probe(tmp_path, "")
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout


def test_missing_requirement_fails_under_ci(tmp_path):
    proc = run_probe(tmp_path, "true")
    assert proc.returncode == 1, proc.stdout
    assert "CI=true but a test-only missing requirement is missing" in proc.stdout
    assert "1 passed, 1 error" in proc.stdout  # failed in setup: never a skip
