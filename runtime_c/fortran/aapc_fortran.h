/*
 * aapc_fortran.h: the Fortran entry points of the interposing library (-DAAPC_INTERCEPT) and
 * the conversions they share (aapc_fortran_args.c).
 *
 * Why: a C MPI_Alltoall interposer sees a Fortran program's calls only where the MPI library's
 * Fortran bindings call the C name. What the bindings call (checked with nm -D and objdump -d
 * on Debian 12's libraries, and by tests/test_fortran.py):
 *
 *                            MPICH 4.0.2 (libmpichfort)        Open MPI 4.1.4 (libmpi_mpifh,
 *                            mpif.h, use mpi | use mpi_f08     libmpi_usempif08)
 *   MPI_ALLTOALL(V)          C MPI_           | C MPI_ (cdesc) PMPI_ (ompi_x_f; f08 calls it)
 *   MPI_IALLTOALL(V)         C MPI_           | C MPI_ (cdesc) PMPI_ (ompi_x_f; f08 calls it)
 *   MPI_ALLTOALL(V)_INIT     C MPI_           | C MPI_ (cdesc) none (MPIX_ only; Open MPI 5:
 *                                                              PMPI_ through ompi_x_f, read)
 *   MPI_WAIT, WAITALL, WAITANY, WAITSOME, START, STARTALL, REQUEST_FREE, CANCEL
 *                            C MPI_           | PMPI_          PMPI_ (ompi_x_f; f08 calls it)
 *   MPI_TEST, TESTALL, TESTANY, TESTSOME, REQUEST_GET_STATUS
 *                            C MPI_           | PMPI_          PMPI_ (ompi_x_f; f08 calls
 *                                                              pmpi_x_, the same function)
 *   MPI_COMM_SPLIT, MPI_FINALIZE
 *                            C MPI_           | PMPI_          PMPI_ (ompi_x_f; f08 calls it)
 *
 * So the library exports:
 *
 *   Open MPI  MPI_ALLTOALL, MPI_ALLTOALLV, MPI_IALLTOALL, MPI_IALLTOALLV (Open MPI 5:
 *             MPI_ALLTOALL_INIT, MPI_ALLTOALLV_INIT), the completion calls, MPI_COMM_SPLIT,
 *             MPI_FINALIZE under every name the bindings define or call: mpi_x, mpi_x_,
 *             mpi_x__, MPI_X, MPI_X_f, MPI_X_f08, ompi_x_f and (Open MPI 4 and 5) mpi_x_f08_
 *             (aapc_fortran_alltoall.c, aapc_fortran_nbc.c, aapc_fortran_wait.c,
 *             aapc_fortran_comm.c)
 *   MPICH     the `use mpi_f08` completion calls mpi_x_f08_ (aapc_fortran_wait.c),
 *             mpi_finalize_f08_ and mpi_comm_split_f08_ (aapc_fortran_comm.c)
 *
 * Each converts the handles (MPI_Comm_f2c, MPI_Type_f2c, MPI_Request_f2c/c2f), the Fortran
 * MPI_IN_PLACE and MPI_BOTTOM (addresses of the library's common blocks, found by the dynamic
 * linker), MPI_STATUS(ES)_IGNORE, statuses (MPI_Status_c2f), logicals (the bindings' own
 * .TRUE.), indices (1-based) and integer arrays, calls the library's own C entry point
 * (MPI_Alltoall, MPI_Wait, ...: the generated interposer or aapc_nbc_request.c, so the call is
 * served and reported like a C call) and stores its result in ierr. Errors stay MPI's: the C
 * entry point raises them through the communicator's error handler. A non-blocking or
 * persistent call made through a Fortran binding is served only where every completion entry
 * of the bindings is this library's (aapc_fortran_bound.c; aapc_nbc_caller.c), else handed to
 * the MPI library. A build for the MPI ABI (mpicc_abi, libmpi_abi) cannot be served from
 * Fortran: the library says so once at start-up (aapc_fortran_abi.c).
 */
#ifndef AAPC_FORTRAN_H
#define AAPC_FORTRAN_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef OPEN_MPI /* the conversions of aapc_fortran_args.c (the MPI ABI has no MPI_Fint) */
/* A Fortran buffer argument as the C binding takes it: the Fortran MPI_BOTTOM becomes
   MPI_BOTTOM and, where `in_place_ok`, the Fortran MPI_IN_PLACE becomes MPI_IN_PLACE. */
void *aapc_fortran_buffer(void *buf, int in_place_ok);

/* A Fortran integer array of `n` entries as a C int array: `a` itself where MPI_Fint is an
   int, else a copy in `*copy` (free it; NULL when none was needed). Returns NULL when the copy
   could not be allocated. */
const int *aapc_fortran_ints(const MPI_Fint *a, int n, int **copy);

/* The number of entries of a communicator's count arrays (the remote group's size for an
   inter-communicator), 0 for MPI_COMM_NULL or an invalid handle. */
int aapc_fortran_peers(MPI_Comm comm);
#endif

#if defined(OPEN_MPI) || (defined(MPICH) && !defined(MPI_ABI_VERSION))
/* The Fortran .TRUE. as the MPI library's own bindings store it (Fortran's .FALSE. is 0). */
MPI_Fint aapc_fortran_true(void);
#endif

/* Whether every Fortran completion entry this library defines (aapc_fortran_wait.c) is the one
   the dynamic linker binds in this process, so that a request of ours made from Fortran is
   progressed and completed by the program's MPI_WAIT, MPI_TEST, ... calls: the library is
   preloaded or linked before the MPI's Fortran libraries. 0 in a build that defines none
   (without -DAAPC_INTERCEPT, the MPI ABI) and where dladdr is missing (aapc_fortran_bound.c). */
int aapc_fortran_completions_ours(void);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_FORTRAN_H */
