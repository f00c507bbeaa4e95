/*
 * aapc_alltoall_carried.h: MPI_Alltoall's small blocks all in flight at once, the argument
 * agreement carried by the blocks' messages (aapc_alltoall_carried.c).
 */
#ifndef AAPC_ALLTOALL_CARRIED_H
#define AAPC_ALLTOALL_CARRIED_H

#include <mpi.h>
#include <stdint.h>

#include "aapc_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One call: the user's arguments and communicator, the private duplicate the messages travel
   on (its errors returned), this rank and the size, and the ranks in the switch tree's order
   (rank_at[k]: the rank at position k). The rest is the call's own state. */
typedef struct aapc_carried {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm, dup;
    int rank, size;
    const int *rank_at;
    /* state: each side's description (buffer, count, type, bytes per element, extent, plain
       bytes), the memory of the call and where its receive slots start, the peer of each */
    struct aapc_carried_side {
        const void *buf;
        int count;
        MPI_Datatype type;
        int64_t esize;
        MPI_Aint ext;
        int dense;
    } send, recv;
    char *mem, *rbase;
    int *peers;
    int rslot;
} aapc_carried_t;

/* The call, with MPI's error semantics on c->comm (common/aapc_args.c: the checks, the votes
   decided alike on every rank; errors of this rank alone abort the job). Every rank of the
   communicator must take this routine for the call. *delivered: the checks passed on every
   rank and the blocks were moved (else the call ended in an error or had nothing to move).
   Returns an MPI error code. */
int aapc_alltoall_carried(aapc_carried_t *c, const char *name, int *delivered);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_CARRIED_H */
