/*
 * aapc_alltoall_loground.h: the log-round all-to-all among a communicator's members in the
 * switch tree's order (aapc_alltoall_loground.c).
 */
#ifndef AAPC_ALLTOALL_LOGROUND_H
#define AAPC_ALLTOALL_LOGROUND_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoall semantics on comm (blocks in comm's rank order; MPI_IN_PLACE allowed), the
   members taken in the order rank_at[0..n-1] (rank_at[k]: the rank at position k). Every
   rank's P x blocks must fit an int count and INT_MAX bytes (MPI_ERR_COUNT otherwise: a way
   for small blocks). Returns an MPI error code of comm (whose handler should return). */
int aapc_alltoall_loground(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           const int *rank_at);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_LOGROUND_H */
