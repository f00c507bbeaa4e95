/*
 * aapc_alltoallw.h: the reduction of one side of an MPI_Alltoallw to an MPI_Alltoallv side
 * (alltoallv/aapc_alltoallw.c), shared with MPI_Ialltoallw and MPI_Alltoallw_init
 * (nbc/aapc_nbc_large.c). Compiled with AAPC_INTERCEPT.
 */
#ifndef AAPC_ALLTOALLW_H
#define AAPC_ALLTOALLW_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One side's local checks (name "send" or "recv"): arrays not NULL (MPI_ERR_ARG), counts >= 0
   (MPI_ERR_COUNT), datatypes of blocks with data not MPI_DATATYPE_NULL and committed
   (MPI_ERR_TYPE); the first finding in *cls (if it is 0) and `what`. */
void aapc_alltoallw_check(const char *name, const int counts[], const int displs[],
                          const MPI_Datatype types[], int size, MPI_Comm comm, int *cls,
                          char *what, size_t len);

/* 0 when the (checked) side reduces to counts c[size] and displacements d[size] of one
   datatype *one (rule U: the one datatype; rule B: MPI_BYTE), else the cause (> 0). */
int aapc_alltoallw_reduce(const int counts[], const int displs[], const MPI_Datatype types[],
                          int size, int *c, int *d, MPI_Datatype *one);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALLW_H */
