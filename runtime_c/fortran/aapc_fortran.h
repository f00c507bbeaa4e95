/*
 * aapc_fortran.h: the Fortran entry points of the interposing library (-DAAPC_INTERCEPT) and
 * the conversions they share (aapc_fortran_args.c).
 *
 * Why: a C MPI_Alltoall interposer sees a Fortran program's calls only where the MPI library's
 * Fortran bindings call the C name. MPICH's default build does so for its buffer routines
 * (mpif.h, `use mpi`, `use mpi_f08`), but its `use mpi_f08` MPI_Finalize and MPI_Comm_split call
 * PMPI_ directly; Open MPI's bindings call PMPI_ for all of them (ompi/mpi/fortran/mpif-h/, and
 * `use mpi_f08` through the same ompi_*_f functions). So the library exports:
 *
 *   Open MPI  MPI_ALLTOALL, MPI_ALLTOALLV, MPI_COMM_SPLIT, MPI_FINALIZE under every name the
 *             bindings define or call: mpi_x, mpi_x_, mpi_x__, MPI_X, MPI_X_f, MPI_X_f08,
 *             ompi_x_f and (Open MPI 4 and 5) mpi_x_f08_ (aapc_fortran_alltoall.c,
 *             aapc_fortran_comm.c)
 *   MPICH     mpi_finalize_f08_ and mpi_comm_split_f08_ (aapc_fortran_comm.c)
 *
 * Each converts the handles (MPI_Comm_f2c, MPI_Type_f2c), the Fortran MPI_IN_PLACE and
 * MPI_BOTTOM (addresses of the library's common blocks, found by the dynamic linker) and the
 * integer arrays, calls the library's own C entry point (MPI_Alltoall, ...: the generated
 * interposer, so the call is served and reported like a C call) and stores its result in ierr.
 * Errors stay MPI's: the C entry point raises them through the communicator's error handler.
 * A build for the MPI ABI (mpicc_abi, libmpi_abi) cannot be served from Fortran: the library
 * says so once at start-up (aapc_fortran_abi.c).
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

#ifdef __cplusplus
}
#endif
#endif /* AAPC_FORTRAN_H */
