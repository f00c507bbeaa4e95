"""An installed (non-editable) wheel carries templates/, runtime_c/ and topologies/ and runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_contains_data_and_runs_outside_repo(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("aapcgen-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "aapcgen/topologies/paper-fig1.yaml" in names
    assert "aapcgen/templates/README.md" in names
    assert "aapcgen/runtime_c/README.md" in names
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import aapcgen.core.resources as r; print(r.resource_dir('templates'))"
    where = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(target))
    proc = subprocess.run(
        [sys.executable, "-m", "aapcgen", "verify"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("verified paper-fig1"), proc.stderr
