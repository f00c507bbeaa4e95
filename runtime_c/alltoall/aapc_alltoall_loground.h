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

/* The log-round ways' common start (this file and aapc_alltoall_treedigits.c): the send side
   (MPI_IN_PLACE resolved to the receive side), n members, this member's place i, b bytes per
   block (0: nothing to move). aapc_rounds_start fills it from the caller's send side in c and
   checks the counts (MPI_ERR_COUNT past an int); aapc_rounds_pack packs my n blocks in rank
   order into packed (n b bytes; MPI_ERR_TRUNCATE when the send signature is not the
   receive's). Return MPI error codes. */
typedef struct aapc_rounds_call {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    int n, i;
    MPI_Aint b;
} aapc_rounds_call_t;
int aapc_rounds_start(aapc_rounds_call_t *c, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, const int *rank_at);
int aapc_rounds_pack(const aapc_rounds_call_t *c, char *packed, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_LOGROUND_H */
