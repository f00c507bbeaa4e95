/*
 * aapc_alltoallv_treedigits.h: MPI_Alltoallv as the log-round exchange in the switch tree's
 * digits (aapc_alltoallv_treedigits.c).
 */
#ifndef AAPC_ALLTOALLV_TREEDIGITS_H
#define AAPC_ALLTOALLV_TREEDIGITS_H

#include <mpi.h>

#include "aapc_cluster.h" /* aapc_digits_t */

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoallv semantics on comm (MPI_IN_PLACE allowed), the members in the order
   rank_at[0..n-1] (the tree's depth-first order) exchanging in the digits dg of that tree (the
   product of the radices is n; MPI_ERR_INTERN otherwise). block: the busiest rank's bytes over
   P - 1, the same on every rank (the windows' size); largest: the largest block any rank
   sends to another, the same on every rank (what the receives of a level are posted for);
   budget: AAPC_INFLIGHT (<= 0: the default). The caller keeps block x (P - 1) x P and
   (largest + sizeof(int)) x P under INT_MAX / 2 (what a member may hold and post at once).
   Returns an MPI error code of comm (MPI_ERR_TRUNCATE: a receive count that does not match its
   sender's). */
int aapc_alltoallv_treedigits(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              const int *rank_at, const aapc_digits_t *dg, double block,
                              double largest, double budget);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALLV_TREEDIGITS_H */
