"""The application programs of tuning/apps/ run unchanged with the generated library preloaded
and verify their own results: the IS-style bucket sort (keys in order on every rank and across
ranks, none lost or duplicated) and the FT-style 3-D FFT (round trip, and four frequencies
against their direct sums). Ranks placed on the 4+4 tree's machines with AAPC_MACHINE, one and
two per machine; AAPC_REPORT shows the calls reached the library and which way they took.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
APPS = ROOT / "tuning" / "apps"
TOPO = ROOT / "topologies" / "two-switch-4-4.yaml"

pytestmark = [pytest.mark.mpi, pytest.mark.apps]

ONE_PER_MACHINE = [0, 1, 2, 3, 4, 5, 6, 7]
TWO_PER_MACHINE = [0, 0, 1, 1, 4, 4, 5, 5]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libaapc.so for the 4+4 tree and the two programs, compiled as a user would."""
    root = tmp_path_factory.mktemp("apps")
    cmd = [str(BIN / "aapcgen"), "build", str(TOPO), "-o", str(root / "libaapc.so")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    cc = [str(BIN / "mpicc"), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"]
    subprocess.run([*cc, str(APPS / "is_sort.c"), "-o", str(root / "is_sort")], check=True)
    subprocess.run(
        [*cc, str(APPS / "ft_fft3d.c"), "-o", str(root / "ft_fft3d"), "-lfftw3", "-lm"],
        check=True,
    )
    return root


def run(root: Path, program: str, machines: list[int], env: dict[str, str], *args: str):  # noqa: ANN201
    report = root / f"report-{program}-{len(env)}.txt"
    report.unlink(missing_ok=True)
    full = {**os.environ, "LD_PRELOAD": str(root / "libaapc.so"), "AAPC_REPORT": str(report)}
    full.update(env)
    cmd = [str(BIN / "mpiexec")]
    for r, m in enumerate(machines):
        cmd += [*([":"] if r else []), "-n", "1", "-env", "AAPC_MACHINE", f"n{m}"]
        cmd += [str(root / program), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=full)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(f"{program}:"))
    assert line.endswith(" verified"), line
    return line, report.read_text()


def rows(report: str) -> dict[str, tuple[int, str]]:
    """collective -> (calls, routine) of the MPI_COMM_WORLD block."""
    out = {}
    for m in re.finditer(r"^  (MPI_\w+) +(\d+) +[\d,]+ +[\d.]+  (.*)$", report, re.M):
        out[m.group(1)] = (int(m.group(2)), m.group(3))
    return out


def test_bucket_sort_two_per_machine_by_itself(built):
    line, report = run(built, "is_sort", TWO_PER_MACHINE, {}, "--keys", "20000", "--iters", "3")
    assert "ranks 8 keys 20000 iters 3" in line
    got = rows(report)
    assert got["MPI_Alltoall"][0] == 3 and got["MPI_Alltoallv"][0] == 3, report
    assert "run-time" in got["MPI_Alltoallv"][1], report  # 160 KB rows: the phases


def test_fft_one_per_machine_on_the_phases(built):
    env = {"AAPC_WAY": "phases"}
    line, report = run(built, "ft_fft3d", ONE_PER_MACHINE, env, "--nx", "32", "--nz", "16")
    assert "grid 32x64x16 iters 3" in line
    calls, routine = rows(report)["MPI_Alltoall"]
    assert calls == 6 and "run-time" in routine and "MPI library" not in routine, report
