/*
 * aapc_coll_ring.c: the leaders' step of large Bcast, Allgather and Allreduce as rings over the
 * switch tree (seed 004 section 9.2.1: "scatter plus a contention-free ring allgather among the
 * leaders").
 *
 * The ring visits the machines in the cluster's order (aapc_coll_layout.c), where a switch's
 * machines are next to each other: in every step each leader sends to the next, so every
 * machine link carries one message each way and every switch-to-switch link one message each
 * way per subtree boundary it separates: no link carries two messages of a step in one
 * direction (contention-free), whatever the tree.
 *   Allgather(v): N - 1 steps; in step s the leader at place j passes on the part it received
 *     in step s - 1 (its own first). Cost: (N - 1) alpha + (n - n/N) beta for n bytes in all.
 *   Allreduce: a ring reduce-scatter (N - 1 steps of n/N bytes, each received chunk combined
 *     into the own with MPI_Reduce_local) then a ring allgather of the reduced chunks.
 *     Cost: 2 (N - 1) (alpha + n/N beta) + (N - 1) n/N gamma; every chunk is combined once, in
 *     one order, so every rank gets the same bits. Commutative operations only.
 *   Bcast: the root's leader sends chunk j straight to the leader at place j (a scatter: n - n/N
 *     bytes out of the root's machine), then the ring allgather of the chunks.
 *     Cost: (N - 1) alpha + (n - n/N) beta for the scatter plus the allgather's, against a
 *     binomial tree's log2 N (alpha + n beta).
 * Against the library's algorithms among the leaders: MPICH picks recursive doubling or
 * halving for mid sizes, whose later steps cross the tree's top links all at once.
 */
#include <stdlib.h>

#include "aapc_coll.h"


/* Chunk c of a vector of `count` elements cut into N: its first element and length. */
static void chunk(int count, int n, int c, int *first, int *len)
{
    int base = count / n, extra = count % n;
    *first = c * base + (c < extra ? c : extra);
    *len = base + (c < extra);
}

int aapc_coll_ring_allgatherv(const aapc_coll_layout_t *l, void *buf, const int *counts,
                              const int *displs, MPI_Datatype type)
{
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    int right = aapc_coll_ring_machine(l, 1), left = aapc_coll_ring_machine(l, -1);
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++) {
        int out = aapc_coll_ring_machine(l, -s), in = aapc_coll_ring_machine(l, -s - 1);
        rc = PMPI_Sendrecv((char *)buf + (MPI_Aint)displs[out] * extent, counts[out], type, right,
                           3, (char *)buf + (MPI_Aint)displs[in] * extent, counts[in], type, left,
                           3, l->leaders, MPI_STATUS_IGNORE);
    }
    return rc;
}

/* The chunks' counts and displacements, indexed by machine: chunk c belongs to the machine at
   place c of the ring. */
static int *chunk_table(const aapc_coll_layout_t *l, int count)
{
    int *t = malloc(sizeof *t * 2 * (size_t)l->n);
    for (int c = 0; t != NULL && c < l->n; c++)
        chunk(count, l->n, c, &t[l->n + l->ring_at[c]], &t[l->ring_at[c]]);
    return t; /* counts t[0..n), displacements t[n..2n) */
}

int aapc_coll_ring_allreduce(const aapc_coll_layout_t *l, void *buf, int count,
                             MPI_Datatype type, MPI_Op op)
{
    return aapc_coll_ring_allreduce_on(l, l->leaders, buf, count, type, op);
}

int aapc_coll_ring_allreduce_on(const aapc_coll_layout_t *l, MPI_Comm ring, void *buf, int count,
                                MPI_Datatype type, MPI_Op op)
{
    MPI_Aint lb, extent;
    int rc, first, len;
    if ((rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS)
        return rc;
    char *in_buf, *tmp = aapc_coll_vector(count / l->n + 1, type, &in_buf); /* a chunk */
    if (tmp == NULL)
        return MPI_ERR_NO_MEM;
    int right = aapc_coll_ring_machine(l, 1), left = aapc_coll_ring_machine(l, -1);
    /* reduce-scatter: after step s the chunk of place pos - s - 1 holds s + 2 operands */
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++) {
        int out = aapc_coll_place(l, l->ring_pos - s), ofirst, olen;
        int in = aapc_coll_place(l, l->ring_pos - s - 1);
        chunk(count, l->n, out, &ofirst, &olen);
        chunk(count, l->n, in, &first, &len);
        char *mine = (char *)buf + (MPI_Aint)first * extent;
        rc = PMPI_Sendrecv((char *)buf + (MPI_Aint)ofirst * extent, olen, type, right, 4, in_buf,
                           len, type, left, 4, ring, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && len > 0)
            rc = PMPI_Reduce_local(in_buf, mine, len, type, op);
    }
    /* the reduced chunk of place pos + 1 is here: pass them all round */
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++) {
        int out = aapc_coll_place(l, l->ring_pos + 1 - s), ofirst, olen;
        int in = aapc_coll_place(l, l->ring_pos - s);
        chunk(count, l->n, out, &ofirst, &olen);
        chunk(count, l->n, in, &first, &len);
        rc = PMPI_Sendrecv((char *)buf + (MPI_Aint)ofirst * extent, olen, type, right, 5,
                           (char *)buf + (MPI_Aint)first * extent, len, type, left, 5, ring,
                           MPI_STATUS_IGNORE);
    }
    free(tmp);
    return rc;
}

int aapc_coll_ring_bcast(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                         int root_machine)
{
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    int *t = chunk_table(l, count);
    if (t == NULL)
        return MPI_ERR_NO_MEM;
    int *counts = t, *displs = t + l->n;
    if (l->mine == root_machine) { /* the scatter: chunk k to machine k */
        for (int k = 0; k < l->n && rc == MPI_SUCCESS; k++)
            if (k != root_machine && counts[k] > 0)
                rc = PMPI_Send((char *)buf + (MPI_Aint)displs[k] * extent, counts[k], type, k, 6,
                               l->leaders);
    } else if (rc == MPI_SUCCESS && counts[l->mine] > 0) {
        rc = PMPI_Recv((char *)buf + (MPI_Aint)displs[l->mine] * extent, counts[l->mine], type,
                       root_machine, 6, l->leaders, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS)
        rc = aapc_coll_ring_allgatherv(l, buf, counts, displs, type);
    free(t);
    return rc;
}
