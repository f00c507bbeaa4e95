"""MPI probing for `aapcgen tune`: which MPI a compiler wrapper belongs to, its library, and how to
force or tune its native MPI_Alltoall algorithms."""

from __future__ import annotations

import subprocess
from pathlib import Path

from aapcgen.core.errors import InputError
from aapcgen.measure import bench
from aapcgen.tune.native import (
    OMPI_ALGORITHMS,
)

MPICH_JSON = "mpich-alltoall.json"
OMPI_RULES = "ompi-alltoall-rules.conf"
NATIVES = {
    "mpich": ("brucks", "scattered", "pairwise"),
    "openmpi": ("linear", "pairwise", "modified_bruck", "linear_sync"),
    "simgrid": bench.SIMGRID_NATIVES,
}


def mpi_flavour(mpicc: str) -> tuple[str, str]:
    """('mpich'|'openmpi'|'unknown', version line) of an MPI compiler wrapper."""
    for args, key, flavour in (
        (["--showme:version"], "Open MPI", "openmpi"),
        (["-v"], "MPICH", "mpich"),
    ):
        try:
            proc = subprocess.run([mpicc, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in (proc.stdout + proc.stderr).splitlines():
            if key in line:
                return flavour, line.strip()
    return "unknown", "unknown"


def mpi_library(exe: Path) -> Path | None:
    """The libmpi a dynamically linked program loads (``ldd``), or None."""
    try:
        out = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libmpi.so") and "=>" in parts and len(parts) > 2:
            return Path(parts[parts.index("=>") + 1])
    return None


def mpich_library(mpicc: str) -> Path | None:
    """MPICH's shared libmpi from its wrapper's link line (``mpicc -show``), or None."""
    try:
        out = subprocess.run([mpicc, "-show"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for word in out.split():
        if word.startswith("-L"):  # libmpi.so may be a linker script: take the ELF file
            for lib in sorted(Path(word[2:]).glob("libmpi.so*")):
                with open(lib, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        return lib.resolve()
    return None


def native_env(flavour: str, alg: str) -> tuple[tuple[str, str], ...]:
    """Environment forcing one native algorithm (MPICH CVAR; Open MPI MCA parameters)."""
    if flavour == "openmpi":
        if alg not in OMPI_ALGORITHMS:
            raise InputError(
                f"--natives: '{alg}' is not an Open MPI alltoall algorithm "
                f"(choose from: {', '.join(OMPI_ALGORITHMS)})"
            )
        return (
            ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
            ("OMPI_MCA_coll_tuned_alltoall_algorithm", str(OMPI_ALGORITHMS[alg])),
        )
    return (("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", alg),)


def native_tuning_file(flavour: str, out_dir: Path) -> Path | None:
    """The native tuning file the sweep wrote for this MPI, if any."""
    name = {"mpich": MPICH_JSON, "openmpi": OMPI_RULES}.get(flavour)
    path = out_dir / name if name else None
    return path if path is not None and path.exists() else None


def tuning_file_env(flavour: str, path: Path | None) -> tuple[tuple[str, str], ...]:
    """Environment making the library use the native tuning file ``path``."""
    if path is None:
        return ()
    if flavour == "mpich":
        return (("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", str(path)),)
    return (
        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
        ("OMPI_MCA_coll_tuned_dynamic_rules_filename", str(path)),
    )
