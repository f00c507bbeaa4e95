"""Applications run unchanged with the generated library preloaded and verify their own
results: the IS-style bucket sort of tuning/apps/ (keys in order on every rank and across ranks,
none lost or duplicated), the FT-style 3-D FFT (round trip, and four frequencies against their
direct sums), mpi4py-fft's pencil FFT (PyPI; a plane wave's spectrum, the round trip), and
Debian's HPC Challenge (its own residual checks, MPIFFT's error) under
Debian's Open MPI. Ranks placed on the 4+4 tree's machines with AAPC_MACHINE, one and two per
machine; AAPC_REPORT shows the calls reached the library and which way they took.
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


def report_rows(report: str) -> list[tuple[str, int, str]]:
    """(collective, calls, routine) of every row of the report."""
    pattern = r"^  (MPI_\w+) +(\d+) +[\d,]+ +[\d.]+  (.*)$"
    return [(m[1], int(m[2]), m[3]) for m in re.finditer(pattern, report, re.M)]


def rows(report: str) -> dict[str, tuple[int, str]]:
    """collective -> (calls, routine) of a report with one row per collective."""
    return {c: (n, routine) for c, n, routine in report_rows(report)}


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


def test_mpi4py_fft_pencils_one_and_two_per_machine(built):
    """mpi4py-fft (PyPI) transposes its pencils with MPI_Alltoallw_c on the grid's rows and
    columns, a subarray datatype per peer: the library packs them and runs the job tree's
    phases (one and two ranks per machine), and the transform is right (a plane wave's single
    frequency, the round trip)."""
    script = str(APPS / "pencil_fft.py")
    python = str(BIN / "python")
    for machines, grid in ((ONE_PER_MACHINE, ("2", "4")), (TWO_PER_MACHINE, ("4", "2"))):
        report = built / "report-pencil.txt"
        report.unlink(missing_ok=True)
        env = {**os.environ, "LD_PRELOAD": str(built / "libaapc.so"), "AAPC_REPORT": str(report)}
        cmd = [str(BIN / "mpiexec")]
        for r, m in enumerate(machines):
            cmd += [*([":"] if r else []), "-n", "1", "-env", "AAPC_MACHINE", f"n{m}"]
            cmd += [python, script, "--grid", *grid, "--shape", "32", "32", "16"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert f"ranks 8 grid {grid[0]}x{grid[1]} shape 32x32x16 iters 2" in proc.stdout
        assert proc.stdout.rstrip().endswith(" verified"), proc.stdout
        # the exchange time per grid communicator (one per axis of the 3-D array: the third
        # has one rank and no exchange), none above the whole exchange
        m = re.search(r"exchange_s ([\d.]+) by_subcomm_s ([\d.,]+) ", proc.stdout)
        per_axis = [float(t) for t in m[2].split(",")] if m else []
        assert len(per_axis) == 3 and max(per_axis) <= float(m[1]) + 1e-3, proc.stdout
        assert per_axis[0] > 0 and per_axis[1] > 0 and per_axis[2] == 0, proc.stdout
        # per group of communicators: how many machines each spans, and its rows
        text = report.read_text()
        groups = re.findall(r"^\d+ communicators? of \d+ ranks.*: (\d+) machines?,.*\n.*\n"
                            r"((?:  MPI_\w+ .*\n?)+)", text, re.M)  # fmt: skip
        calls = 0
        for machines, body in groups:
            for c, n, routine in report_rows(body):
                assert c == "MPI_Alltoallw_c", text
                # across machines the job tree's phases; inside one the library, by choice
                want = "run-time" if int(machines) > 1 else "MPI library, chosen by size"
                assert want in routine, text
                calls += n
        # calls are counted per communicator: 2 iterations x (forward + backward) on each of
        # the grid's R + C row and column communicators
        assert calls == 2 * 2 * (int(grid[0]) + int(grid[1])), text


HPCC_INPUT = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
400          Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
4            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
"""


def test_hpc_challenge_under_open_mpi(tmp_path):
    """HPCC's MPIFFT exchanges with MPI_Alltoall: served by the run-time routine, its checks
    pass (hpccoutf.txt: Success=1, no failed residual check, MPIFFT's error near round-off)."""
    lib = tmp_path / "libaapc.so"
    build = [str(BIN / "aapcgen"), "build", str(TOPO), "-o", str(lib), "--mpicc", "mpicc.openmpi"]
    subprocess.run(build, check=True, capture_output=True, timeout=600)
    (tmp_path / "hpccinf.txt").write_text(HPCC_INPUT)
    cmd = ["mpirun.openmpi", "--oversubscribe"]
    for r in range(8):
        cmd += [*([":"] if r else []), "-np", "1", "-x", f"AAPC_MACHINE=n{r}", "hpcc"]
    report = tmp_path / "report.txt"
    env = {**os.environ, "LD_PRELOAD": str(lib), "AAPC_REPORT": str(report)}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = (tmp_path / "hpccoutf.txt").read_text()
    assert "Success=1" in out and "MPIFFT_Procs=8" in out, out[-3000:]
    assert "failed residual checks" in out and not re.search(
        r"[1-9]\d* tests? completed and failed", out
    )
    error = float(re.search(r"^MPIFFT_maxErr=(\S+)$", out, re.M)[1])
    assert error < 1e-10, error
    served = [n for c, n, routine in report_rows(report.read_text()) if "run-time" in routine]
    assert served and sum(served) >= 8, report.read_text()
