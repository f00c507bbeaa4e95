/*
 * aapc_fortran_abi.c: the start-up notice of a library built for the MPI ABI (MPICH's
 * mpicc_abi, libmpi_abi) in a program with Fortran MPI bindings (aapc_fortran.h).
 *
 * Such a build's Fortran bindings call PMPI_Alltoall and PMPI_Alltoallv directly, and their
 * MPI_IN_PLACE and MPI_BOTTOM are the binding library's own, so Fortran calls cannot be served
 * from here: they go to the MPI library, and the report (AAPC_REPORT) never sees them. C calls
 * are served as usual. The library says so once, at start-up, on the job's first rank.
 *
 * Algorithm: a constructor looks for the Fortran bindings' MPI_ALLTOALL under its usual names
 * (weak references, bound by the dynamic linker to whatever library of the process defines
 * them, NULL where none does); where one is found and AAPC_QUIET is not set, the rank the
 * launcher names 0 (PMI_RANK, PMIX_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID; a process without
 * any is a rank 0 of its own) prints one line on stderr. Cost: a few getenv at start-up.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) && defined(MPI_ABI_VERSION)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void mpi_alltoall(void) __attribute__((weak));
extern void mpi_alltoall_(void) __attribute__((weak));
extern void mpi_alltoall__(void) __attribute__((weak));
extern void MPI_ALLTOALL(void) __attribute__((weak));
extern void mpi_alltoall_f08_(void) __attribute__((weak));
extern void mpi_alltoall_f08ts_(void) __attribute__((weak));

static int first_rank(void)
{
    const char *names[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && v[0] != '\0')
            return strcmp(v, "0") == 0;
    }
    return 1;
}

__attribute__((constructor)) static void aapc_fortran_abi_notice(void)
{
    int fortran = mpi_alltoall != NULL || mpi_alltoall_ != NULL || mpi_alltoall__ != NULL ||
                  MPI_ALLTOALL != NULL || mpi_alltoall_f08_ != NULL || mpi_alltoall_f08ts_ != NULL;
    const char *quiet = getenv("AAPC_QUIET");
    if (!fortran || (quiet != NULL && quiet[0] != '\0' && strcmp(quiet, "0") != 0) ||
        !first_rank())
        return;
    fprintf(stderr, "aapcgen: this library is built for the MPI ABI (libmpi_abi), whose Fortran "
                    "bindings call PMPI_Alltoall directly: Fortran MPI_ALLTOALL and "
                    "MPI_ALLTOALLV calls go to the MPI library (C calls are served); build it "
                    "with the MPI's own mpicc to serve them (set AAPC_QUIET=1 to silence)\n");
    fflush(stderr);
}
#endif
