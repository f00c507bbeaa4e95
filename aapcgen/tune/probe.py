"""MPI probing for `aapcgen tune`: the MPI library a program loads, and the tuning files that
change its native MPI_Alltoall choice (forcing one algorithm: measure/mpi.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

MPICH_JSON = "mpich-alltoall.json"
OMPI_RULES = "ompi-alltoall-rules.conf"


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
