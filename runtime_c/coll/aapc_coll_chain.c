/*
 * aapc_coll_chain.c: the leaders' step of a large MPI_Bcast or MPI_Reduce as a pipelined chain
 * over the switch tree.
 *
 * Algorithm: the leaders in the ring's order (aapc_coll_layout.c: the cluster's order, a
 * switch's machines together) starting at the root's machine form a chain; the message is cut
 * into chunks of about AAPC_COLL_CHAIN_CHUNK bytes (default 4096; at most 256 chunks, whole
 * elements), the root's leader sends them to the next leader one after another, and every
 * leader passes each chunk on as soon as it has arrived (all its receives posted at once, a send
 * started per chunk as it completes). The chain's hops are ring steps, so no link carries two
 * of them in one direction at once (contention-free on any tree: aapc_coll_ring.c), and every
 * link carries the message once: n bytes, against the scatter plus ring allgather's
 * n - n/N + (N - 1) n/N, about 2n, on the links out of the root and along the ring.
 * Cost (N leaders, n bytes, chunks of c bytes): (n/c + N - 2) (alpha + c beta), about
 * n beta + (N - 2) c beta for n >> c, against the scatter-ring's 2 (N - 1) alpha +
 * 2 n (N - 1)/N beta and a binomial tree's log2 N (alpha + n beta).
 * Reduce: the same chain run the other way, ending at the root's leader: the leader farthest
 * from it sends its vector's chunks, every other leader combines each chunk that arrives with
 * its own (MPI_Reduce_local) and passes the sum on. Cost (n/c + N - 2)(alpha + c beta +
 * c gamma), each link carrying n bytes, against reduce-scatter plus gather's about 2n
 * (MPICH's choice for long vectors) or a binomial tree's log2 N (alpha + n beta + n gamma).
 * The operands are combined in the chain's order (commutative operations only).
 */
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_mpi.h" /* aapc_statuses_ignore */


/* The root's place in the ring and this leader's hops from it along the ring. */
static int hops_from(const aapc_coll_layout_t *l, int root_machine)
{
    int root_pos = 0;
    while (l->ring_at[root_pos] != root_machine)
        root_pos++;
    return aapc_coll_place(l, l->ring_pos - root_pos);
}

/* Elements per chunk for count elements of `size` bytes each, chunk bytes wanted. */
static int chunk_elements(int count, int size, long long chunk)
{
    long long per = size > 0 ? chunk / size : count;
    per = per < 1 ? 1 : per;
    if ((count + per - 1) / per > 256) /* at most 256 chunks */
        per = (count + 255) / 256;
    return (int)(per < count ? per : count);
}

int aapc_coll_chain_bcast(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                          int root_machine, long long chunk)
{
    MPI_Aint lb, extent;
    int rc, size;
    if ((rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(type, &size)) != MPI_SUCCESS)
        return rc;
    int hop = hops_from(l, root_machine); /* 0: the root's leader */
    int prev = aapc_coll_ring_machine(l, -1), next = aapc_coll_ring_machine(l, 1);
    int last = hop == l->n - 1, per = count > 0 ? chunk_elements(count, size, chunk) : 1;
    int nchunks = count > 0 ? (count + per - 1) / per : 0;
    MPI_Request *req = malloc(2 * (size_t)(nchunks > 0 ? nchunks : 1) * sizeof *req);
    if (req == NULL)
        return MPI_ERR_NO_MEM;
    MPI_Request *recv = req, *send = req + nchunks;
    for (int k = 0; k < 2 * nchunks; k++)
        req[k] = MPI_REQUEST_NULL;
    for (int k = 0; k < nchunks && hop > 0 && rc == MPI_SUCCESS; k++) {
        int len = k < nchunks - 1 ? per : count - k * per;
        rc = PMPI_Irecv((char *)buf + (MPI_Aint)k * per * extent, len, type, prev, 7, l->leaders,
                        &recv[k]);
    }
    for (int k = 0; k < nchunks && rc == MPI_SUCCESS; k++) {
        int len = k < nchunks - 1 ? per : count - k * per;
        if (hop > 0)
            rc = PMPI_Wait(&recv[k], MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && !last)
            rc = PMPI_Isend((char *)buf + (MPI_Aint)k * per * extent, len, type, next, 7,
                            l->leaders, &send[k]);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Waitall(nchunks, send, aapc_statuses_ignore());
    free(req);
    return rc;
}

int aapc_coll_chain_reduce(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                           MPI_Op op, int root_machine, long long chunk)
{
    MPI_Aint lb, extent;
    int rc, size;
    if ((rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(type, &size)) != MPI_SUCCESS)
        return rc;
    int hop = hops_from(l, root_machine); /* 0: the root's leader; N - 1 starts */
    int from = aapc_coll_ring_machine(l, 1), to = aapc_coll_ring_machine(l, -1);
    int first = hop == l->n - 1, per = count > 0 ? chunk_elements(count, size, chunk) : 1;
    int nchunks = count > 0 ? (count + per - 1) / per : 0;
    char *in = NULL, *tmp = first ? NULL : aapc_coll_vector(count, type, &in);
    MPI_Request *req = malloc(2 * (size_t)(nchunks > 0 ? nchunks : 1) * sizeof *req);
    if (req == NULL || (!first && tmp == NULL)) {
        free(req);
        free(tmp);
        return MPI_ERR_NO_MEM;
    }
    MPI_Request *recv = req, *send = req + nchunks;
    for (int k = 0; k < 2 * nchunks; k++)
        req[k] = MPI_REQUEST_NULL;
    for (int k = 0; k < nchunks && !first && rc == MPI_SUCCESS; k++) {
        int len = k < nchunks - 1 ? per : count - k * per;
        rc = PMPI_Irecv(in + (MPI_Aint)k * per * extent, len, type, from, 8, l->leaders,
                        &recv[k]);
    }
    for (int k = 0; k < nchunks && rc == MPI_SUCCESS; k++) {
        int len = k < nchunks - 1 ? per : count - k * per;
        char *mine = (char *)buf + (MPI_Aint)k * per * extent;
        if (!first && (rc = PMPI_Wait(&recv[k], MPI_STATUS_IGNORE)) == MPI_SUCCESS)
            rc = PMPI_Reduce_local(in + (MPI_Aint)k * per * extent, mine, len, type, op);
        if (rc == MPI_SUCCESS && hop > 0)
            rc = PMPI_Isend(mine, len, type, to, 8, l->leaders, &send[k]);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Waitall(nchunks, send, aapc_statuses_ignore());
    free(req);
    free(tmp);
    return rc;
}
