/*
 * aapc_coll_lanes.c: MPI_Allreduce across machines in lanes: every rank of a machine carries a
 * slice of the vector between machines, not the leader alone (the multi-lane decomposition of
 * Traff and Hunold, "Decomposing MPI collectives for exploiting multi-lane communication",
 * CLUSTER 2020, on seed 004 section 9.2's leader-based Allreduce).
 *
 * Algorithm, N machines of R ranks each (every machine the same R > 1), n bytes, commutative
 * operations: the vector is cut into R slices, slice i belonging to local rank i.
 *   1. R reductions through the machine's shared segment (runtime_c/shm/), slice i to local
 *      rank i: together one reduce-scatter of the machine's R vectors, every rank computing;
 *   2. local rank i of every machine (the lane communicator, in machine order) runs the ring
 *      reduce-scatter and allgather over the switch tree on slice i (aapc_coll_ring.c), the R
 *      lanes at once;
 *   3. R broadcasts through the segment, slice i from local rank i: every rank has the vector.
 * Cost: T_shmreduce,R(n) + 2 (N - 1) (alpha + n/(N R) beta) + (N - 1) n/(N R) gamma per lane,
 * the R lanes in parallel, + T_shmbcast,R(n): a machine's link carries 2 (N - 1) / N n bytes
 * each way, as with one leader (the bound of aapc_coll_ring.c), but the messages, their
 * protocol work and the combining of the machine's share are spread over its R ranks instead
 * of one, and a lane's messages are 1 / R of a leader's.
 * Every slice is combined by one ring in one order, so every rank gets the same bits.
 */
#include <stddef.h>

#include "aapc_coll.h"
#include "aapc_shm.h"

/* Slice i of a vector of `count` elements cut into r: its first element and length. */
static void slice(int count, int r, int i, int *first, int *len)
{
    int base = count / r, extra = count % r;
    *first = i * base + (i < extra ? i : extra);
    *len = base + (i < extra);
}

int aapc_coll_lanes_allreduce(const aapc_coll_layout_t *l, const void *sendbuf, void *recvbuf,
                              int count, MPI_Datatype type, MPI_Op op)
{
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    int r = l->count[l->mine], in_place = sendbuf == MPI_IN_PLACE, first, len;
    const char *from = in_place ? recvbuf : sendbuf;
    for (int i = 0; i < r && rc == MPI_SUCCESS; i++) { /* 1: slice i reduced at local rank i */
        slice(count, r, i, &first, &len);
        const char *mine = from + (MPI_Aint)first * extent;
        char *into = (char *)recvbuf + (MPI_Aint)first * extent;
        if (len > 0)
            rc = l->local == i ? aapc_shm_reduce(in_place ? MPI_IN_PLACE : mine, into, len, type,
                                                 op, i, l->node)
                               : aapc_shm_reduce(mine, NULL, len, type, op, i, l->node);
    }
    slice(count, r, l->local, &first, &len);
    if (rc == MPI_SUCCESS && len > 0) /* 2: my lane's ring on my slice */
        rc = aapc_coll_ring_allreduce_on(l, l->lanes, (char *)recvbuf + (MPI_Aint)first * extent,
                                         len, type, op);
    for (int i = 0; i < r && rc == MPI_SUCCESS; i++) { /* 3: slice i from local rank i */
        slice(count, r, i, &first, &len);
        if (len > 0)
            rc = aapc_shm_bcast((char *)recvbuf + (MPI_Aint)first * extent, len, type, i, l->node);
    }
    return rc;
}
