"""Which MPI a compiler wrapper belongs to, and how to force its native MPI_Alltoall algorithms.

One place for these facts: ``aapcgen bench`` labels a row ``native-X`` only when X was really
forced (MPICH: the MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM variable; Open MPI: coll_tuned's MCA
parameters), and ``aapcgen tune`` sweeps the same algorithms.
"""

from __future__ import annotations

import subprocess

from aapcgen.core.errors import InputError

# coll_tuned_alltoall_algorithm values (ompi/mca/coll/tuned/coll_tuned_alltoall_decision.c)
OMPI_ALGORITHMS = {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4, "two_proc": 5}
# the values MPICH 4's MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM takes (any other aborts MPI_Init)
MPICH_CVAR_ALGORITHMS = (
    "auto",
    "brucks",
    "k_brucks",
    "pairwise",
    "pairwise_sendrecv_replace",
    "scattered",
)

# the native algorithms timed by default, per MPI flavour
DEFAULT_NATIVES = {
    "mpich": ("brucks", "scattered", "pairwise"),
    "openmpi": ("linear", "pairwise", "modified_bruck", "linear_sync"),
    "simgrid": ("basic_linear", "pair", "ring", "bruck", "mpich", "ompi", "mvapich2"),
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


def native_env(flavour: str, alg: str) -> tuple[tuple[str, str], ...]:
    """Environment forcing one native algorithm (MPICH CVAR; Open MPI MCA parameters)."""
    if alg == "default":
        raise InputError(
            "--natives: the MPI library's default algorithm is always timed (native-default); "
            "--natives names algorithms to force besides it ('' for none)"
        )
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
    if flavour == "mpich":
        if alg not in MPICH_CVAR_ALGORITHMS:
            raise InputError(
                f"--natives: '{alg}' is not an MPICH alltoall algorithm "
                f"(choose from: {', '.join(MPICH_CVAR_ALGORITHMS)})"
            )
        return (("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", alg),)
    raise InputError(
        f"--natives: cannot force the native algorithm '{alg}': the MPI is neither MPICH nor "
        "Open MPI (pass --natives '' to time its default only)"
    )
