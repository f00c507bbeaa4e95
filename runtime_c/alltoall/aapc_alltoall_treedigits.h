/*
 * aapc_alltoall_treedigits.h: the log-round all-to-all among a communicator's members in the
 * switch tree's order, one digit per level of the tree (aapc_alltoall_treedigits.c).
 */
#ifndef AAPC_ALLTOALL_TREEDIGITS_H
#define AAPC_ALLTOALL_TREEDIGITS_H

#include <mpi.h>

#include "aapc_cluster.h" /* aapc_digits_t */

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoall semantics on comm (blocks in comm's rank order; MPI_IN_PLACE allowed), the
   members taken in the order rank_at[0..n-1] (rank_at[k]: the rank at place k, the tree's
   depth-first order), the exchange in the digits dg of that tree (the product of the radices
   is n; MPI_ERR_INTERN otherwise), budget: the bytes of a level's messages in flight at once
   (<= 0: AAPC_INFLIGHT_BYTES). Every rank's P x blocks must fit an int count and INT_MAX bytes
   (MPI_ERR_COUNT otherwise: a way for small blocks). Returns an MPI error code of comm. */
int aapc_alltoall_treedigits(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             const int *rank_at, const aapc_digits_t *dg, double budget);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_TREEDIGITS_H */
