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

/* The place `j` steps along the ring (modulo N). */
static int place(const aapc_coll_layout_t *l, int j)
{
    return ((j % l->n) + l->n) % l->n;
}

/* The root's place in the ring and this leader's hops from it along the ring. */
static int hops_from(const aapc_coll_layout_t *l, int root_machine)
{
    int root_pos = 0;
    while (l->ring_at[root_pos] != root_machine)
        root_pos++;
    return place(l, l->ring_pos - root_pos);
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
    int prev = l->ring_at[place(l, l->ring_pos - 1)], next = l->ring_at[place(l, l->ring_pos + 1)];
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
    int from = l->ring_at[place(l, l->ring_pos + 1)], to = l->ring_at[place(l, l->ring_pos - 1)];
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

/*
 * Allreduce on the same chain, both ways at once: the chain's Reduce runs towards the leader at
 * place 0 of the ring while that leader's finished chunks run back along the chain (a Bcast),
 * so every link carries n bytes each way at the same time (full duplex), against the ring's
 * reduce-scatter and allgather, which send 2 n (N - 1)/N bytes one way round. Every leader
 * acts on what has arrived (MPI_Waitsome), in chunk order: a partial chunk from the right is
 * combined with its own and sent left (place 0: it is the result, sent right); once that send is
 * out, the chunk's buffer receives the result from the left, which goes on to the right (each
 * stream one tag, its messages sent and received in chunk order).
 * Cost: (n/c + 2 (N - 1)) (alpha + c beta) + n gamma, against the ring's
 * 2 (N - 1) (alpha + n/N beta) + n (N - 1)/N gamma. Every leader gets the same bits (the result
 * is combined once, at place 0). Commutative operations only (combined in the chain's order).
 */
enum { PARTIAL_IN, PARTIAL_OUT, RESULT_IN, RESULT_OUT, STREAMS };

int aapc_coll_chain_allreduce(const aapc_coll_layout_t *l, void *buf, int count,
                              MPI_Datatype type, MPI_Op op, long long chunk)
{
    MPI_Aint lb, extent;
    int rc, size;
    if ((rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(type, &size)) != MPI_SUCCESS)
        return rc;
    int pos = l->ring_pos, top = pos == 0, end = pos == l->n - 1;
    int left = top ? -1 : l->ring_at[pos - 1], right = end ? -1 : l->ring_at[pos + 1];
    int per = count > 0 ? chunk_elements(count, size, chunk) : 1;
    int nk = count > 0 ? (count + per - 1) / per : 0;
    char *in = NULL, *tmp = end ? NULL : aapc_coll_vector(count, type, &in);
    MPI_Request *req = malloc((size_t)STREAMS * (size_t)(nk > 0 ? nk : 1) * sizeof *req);
    int *done = malloc((size_t)STREAMS * (size_t)(nk > 0 ? nk : 1) * sizeof *done);
    if (req == NULL || done == NULL || (!end && tmp == NULL)) {
        free(req);
        free(done);
        free(tmp);
        return MPI_ERR_NO_MEM;
    }
    for (int k = 0; k < STREAMS * nk; k++)
        req[k] = MPI_REQUEST_NULL;
#define REQ(s, k) req[(s) * nk + (k)]
#define LEN(k) ((k) < nk - 1 ? per : count - (k) * per)
#define AT(p, k) ((p) + (MPI_Aint)(k) * per * extent)
    char *mine = buf;
    for (int k = 0; k < nk && !end && rc == MPI_SUCCESS; k++) /* the partials from the right */
        rc = PMPI_Irecv(AT(in, k), LEN(k), type, right, 9, l->leaders, &REQ(PARTIAL_IN, k));
    for (int k = 0; k < nk && end && rc == MPI_SUCCESS; k++) /* the chain's start: its own */
        rc = PMPI_Isend(AT(mine, k), LEN(k), type, left, 9, l->leaders, &REQ(PARTIAL_OUT, k));
    /* in chunk order, whatever order the requests complete in: np partials combined, nr result
       receives posted, nf results passed on */
    int np = 0, nr = 0, nf = 0;
    for (;;) {
        for (; !end && rc == MPI_SUCCESS && np < nk && REQ(PARTIAL_IN, np) == MPI_REQUEST_NULL;
             np++) {
            rc = PMPI_Reduce_local(AT(in, np), AT(mine, np), LEN(np), type, op);
            if (rc == MPI_SUCCESS) /* place 0: the result, on to the right; else to the left */
                rc = PMPI_Isend(AT(mine, np), LEN(np), type, top ? right : left, top ? 10 : 9,
                                l->leaders, &REQ(top ? RESULT_OUT : PARTIAL_OUT, np));
        }
        for (; !top && rc == MPI_SUCCESS && nr < nk && (end || nr < np) &&
               REQ(PARTIAL_OUT, nr) == MPI_REQUEST_NULL;
             nr++) /* the chunk is out: its buffer takes the result */
            rc = PMPI_Irecv(AT(mine, nr), LEN(nr), type, left, 10, l->leaders,
                            &REQ(RESULT_IN, nr));
        for (; !top && !end && rc == MPI_SUCCESS && nf < nr &&
               REQ(RESULT_IN, nf) == MPI_REQUEST_NULL;
             nf++)
            rc = PMPI_Isend(AT(mine, nf), LEN(nf), type, right, 10, l->leaders,
                            &REQ(RESULT_OUT, nf));
        int n = 0;
        if (rc == MPI_SUCCESS)
            rc = PMPI_Waitsome(STREAMS * nk, req, &n, done, aapc_statuses_ignore());
        if (rc != MPI_SUCCESS || n == MPI_UNDEFINED)
            break;
    }
#undef REQ
#undef LEN
#undef AT
    free(req);
    free(done);
    free(tmp);
    return rc;
}
