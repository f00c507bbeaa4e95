/*
 * aapc_alltoallv_cluster.h: MPI_Alltoallv levels 1 and 2 on any intra-communicator, scheduled
 * at run time on the communicator's job tree (aapc_alltoallv_cluster.c).
 */
#ifndef AAPC_ALLTOALLV_CLUSTER_H
#define AAPC_ALLTOALLV_CLUSTER_H

#include <mpi.h>

#include "aapc_vlevels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Level 1 (bytes == NULL: the counts are gathered) or level 2 (bytes: the N x N byte matrix of
   the call, row = source rank, N = size of comm) of program `prog` on the job tree of comm,
   when prog->cluster is set and every rank of comm is on a known machine of it. *handled = 0:
   nothing was done (no cluster, an inter-communicator, a rank on an unknown host): the caller
   runs the whole cluster's fixed tree instead. *handled = 1: the call is complete and the
   result is returned (the library's MPI_Alltoallv, with one warning, when the scheduler refuses
   the communicator; an error raised through comm's error handler). Arguments are checked by the
   caller (common/aapc_args.c). */
int aapc_alltoallv_cluster(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                           const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[],
                           MPI_Datatype recvtype, MPI_Comm comm, int *handled);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALLV_CLUSTER_H */
