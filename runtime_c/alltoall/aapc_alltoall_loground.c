/*
 * aapc_alltoall_loground.c: the log-round all-to-all for small blocks: Bruck's algorithm
 * (Bruck, Ho, Kipnis, Upfal, Weathersby, IEEE TPDS 1997; radix 2) among the members of a
 * communicator numbered in the switch tree's depth-first order (cluster/aapc_cluster_order.c;
 * the ranks of one machine next to each other), so that the first rounds' short distances stay
 * inside a machine, then inside a switch, and only the last rounds cross the switch links.
 *
 * Algorithm, n members, this member at position i, blocks of B bytes:
 *   0. pack the n send blocks (any datatype) so that slot s holds the block for position
 *      (i + s) mod n;
 *   1. round k = 0 .. lg n - 1, d = 2^k: send the slots whose bit k is set to position
 *      (i + d) mod n and receive the same slots from position (i - d) mod n, each way one
 *      message of the slots packed together (an MPI_Isend and MPI_Irecv pair, completed
 *      under the library's waiting policy, AAPC_WAIT);
 *   2. slot s now holds the block that position (i - s) mod n sent to i: unpack it into the
 *      receive layout at that member's rank.
 * Every block moves once per set bit of its distance: at most lg n hops instead of one, in lg n
 * messages per member instead of n - 1 (aapcgen/verify/loground.py replays the slots of every
 * round and proves that every block arrives; AAPC_DUMP_SCHEDULE writes the rounds).
 * Cost: lg n (alpha + (n/2) B beta) on the critical path, plus 2 n B bytes of copying per round
 * and 2 n B for the packing; memory 3 n B bytes per member.
 */
#include "aapc_alltoall_loground.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* AAPC_TAG_ROUND */
#include "aapc_wait.h" /* aapc_waitall */

int aapc_rounds_start(aapc_rounds_call_t *c, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, const int *rank_at)
{
    int rc, me, rsize;
    if ((rc = PMPI_Comm_size(comm, &c->n)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &me)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    if (c->sendbuf == MPI_IN_PLACE) {
        c->sendbuf = recvbuf;
        c->sendcount = recvcount;
        c->sendtype = recvtype;
    }
    c->b = (MPI_Aint)recvcount * rsize;
    c->i = -1;
    if (c->b == 0)
        return MPI_SUCCESS;
    if (c->b * c->n > INT_MAX || (MPI_Aint)recvcount * c->n > INT_MAX ||
        (MPI_Aint)c->sendcount * c->n > INT_MAX)
        return MPI_ERR_COUNT; /* the caller takes these ways only for small blocks */
    for (int k = 0; k < c->n; k++)
        if (rank_at[k] == me)
            c->i = k;
    return c->i < 0 ? MPI_ERR_ARG : MPI_SUCCESS;
}

int aapc_rounds_pack(const aapc_rounds_call_t *c, char *packed, MPI_Comm comm)
{
    int pos = 0, all = (int)(c->b * c->n);
    int rc = PMPI_Pack(c->sendbuf, c->sendcount * c->n, c->sendtype, packed, all, &pos, comm);
    if (rc == MPI_SUCCESS && pos != all)
        rc = MPI_ERR_TRUNCATE; /* the send signature does not match recvcount x recvtype */
    return rc;
}

int aapc_alltoall_loground(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           const int *rank_at)
{
    aapc_rounds_call_t c = {sendbuf, sendcount, sendtype, 0, 0, 0};
    int rc = aapc_rounds_start(&c, recvbuf, recvcount, recvtype, comm, rank_at);
    if (rc != MPI_SUCCESS || c.b == 0)
        return rc;
    int n = c.n, i = c.i, pos = 0;
    MPI_Aint b = c.b, all = b * n;
    char *packed = malloc((size_t)all), *slots = malloc((size_t)all);
    char *out = malloc((size_t)(all / 2 + b)), *in = malloc((size_t)(all / 2 + b));
    if (packed == NULL || slots == NULL || out == NULL || in == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    /* 0. my blocks in rank order, then slot s = the block for position (i + s) mod n */
    if ((rc = aapc_rounds_pack(&c, packed, comm)) != MPI_SUCCESS)
        goto done;
    for (int s = 0; s < n; s++)
        memcpy(slots + (MPI_Aint)s * b, packed + (MPI_Aint)rank_at[(i + s) % n] * b, (size_t)b);
    /* 1. the rounds */
    for (int d = 1; d < n; d *= 2) {
        int to = rank_at[(i + d) % n], from = rank_at[(i - d % n + n) % n];
        MPI_Aint len = 0;
        for (int s = 0; s < n; s++)
            if (s & d) {
                memcpy(out + len, slots + (MPI_Aint)s * b, (size_t)b);
                len += b;
            }
        MPI_Request req[2];
        if ((rc = PMPI_Irecv(in, (int)len, MPI_BYTE, from, AAPC_TAG_ROUND, comm, &req[0])) !=
            MPI_SUCCESS)
            goto done;
        if ((rc = PMPI_Isend(out, (int)len, MPI_BYTE, to, AAPC_TAG_ROUND, comm, &req[1])) !=
            MPI_SUCCESS) {
            PMPI_Cancel(&req[0]);
            PMPI_Request_free(&req[0]);
            goto done;
        }
        if ((rc = aapc_waitall(2, req)) != MPI_SUCCESS) /* the waiting policy (AAPC_WAIT) */
            goto done;
        len = 0;
        for (int s = 0; s < n; s++)
            if (s & d) {
                memcpy(slots + (MPI_Aint)s * b, in + len, (size_t)b);
                len += b;
            }
    }
    /* 2. slot s holds the block from position (i - s) mod n */
    for (int s = 0; s < n; s++)
        memcpy(packed + (MPI_Aint)rank_at[(i - s + n) % n] * b, slots + (MPI_Aint)s * b,
               (size_t)b);
    pos = 0;
    rc = PMPI_Unpack(packed, (int)all, &pos, recvbuf, recvcount * n, recvtype, comm);
done:
    free(packed);
    free(slots);
    free(out);
    free(in);
    return rc;
}
