/*
 * aapc_coll_ring.c: the leaders' step of large Bcast, Allgather and Allreduce as rings over the
 * switch tree (seed 004 section 9.2.1: "scatter plus a contention-free ring allgather among the
 * leaders").
 *
 * The ring visits the machines in the cluster's order (aapc_coll_layout.c), where a switch's
 * machines are next to each other: in every step each leader sends to the next, so every
 * machine link carries one message each way and every switch-to-switch link one message each
 * way per subtree boundary it separates: no link carries two messages of a step in one
 * direction (contention-free), whatever the tree. The ring runs both ways at once: the first
 * half of every part (or chunk) goes round to the right while the second half goes round to the
 * left, so each direction of a link carries half the bytes of a one-way ring (full duplex).
 *   Allgather(v): N - 1 steps; in step s the leader at place j passes on the halves it received
 *     in step s - 1 (its own first). Cost: (N - 1) alpha + (n - n/N) beta / 2 for n bytes in
 *     all (a one-way ring: (n - n/N) beta).
 *   Allreduce: a ring reduce-scatter (N - 1 steps of n/N bytes, half each way, each received
 *     half combined into the own with MPI_Reduce_local) then a ring allgather of the reduced
 *     halves. Cost: 2 (N - 1) (alpha + n/(2N) beta) + (N - 1) n/N gamma; every element is
 *     combined once, in one order, so every rank gets the same bits. Commutative operations
 *     only.
 *   Bcast: the root's leader sends chunk j straight to the leader at place j (a scatter: n - n/N
 *     bytes out of the root's machine), then the ring allgather of the chunks.
 *     Cost: (N - 1) alpha + (n - n/N) beta for the scatter plus the allgather's, against a
 *     binomial tree's log2 N (alpha + n beta).
 * Against the library's algorithms among the leaders: MPICH picks recursive doubling or
 * halving for mid sizes, whose later steps cross the tree's top links all at once.
 */
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_mpi.h" /* aapc_statuses_ignore */

/* The place `j` steps along the ring (modulo N). */
static int place(const aapc_coll_layout_t *l, int j)
{
    return ((j % l->n) + l->n) % l->n;
}

/* Chunk c of a vector of `count` elements cut into N: its first element and length. */
static void chunk(int count, int n, int c, int *first, int *len)
{
    int base = count / n, extra = count % n;
    *first = c * base + (c < extra ? c : extra);
    *len = base + (c < extra);
}

/* One step of both rings: the first half of part (or chunk) `fout` to the right while the first
   half of `fin` comes from the left, the second half of `bout` to the left while the second
   half of `bin` comes from the right; a received half lands at `fin_at`/`bin_at` (NULL: in
   place, at the part's own offset). Offsets and lengths in elements from offs/lens. */
struct halves {
    const int *lens, *offs; /* per part: elements and first element */
    char *buf;
    MPI_Aint extent;
    MPI_Datatype type;
    int tag;
};

/* Element `i` of part k of h's buffer. */
static char *buf_at(const struct halves *h, int k, int i)
{
    return h->buf + ((MPI_Aint)h->offs[k] + i) * h->extent;
}

static int both_ways(const aapc_coll_layout_t *l, const struct halves *h, int fout, int fin,
                     char *fin_at, int bout, int bin, char *bin_at)
{
    int right = l->ring_at[place(l, l->ring_pos + 1)], left = l->ring_at[place(l, l->ring_pos - 1)];
    MPI_Request r[4];
#define FIRST(k) (h->lens[k] / 2)
#define START(k) (h->buf + (MPI_Aint)h->offs[k] * h->extent)
    char *second_in = bin_at != NULL ? bin_at : START(bin) + (MPI_Aint)FIRST(bin) * h->extent;
    int rc = PMPI_Irecv(fin_at != NULL ? fin_at : START(fin), FIRST(fin), h->type, left, h->tag,
                        l->leaders, &r[0]);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Irecv(second_in, h->lens[bin] - FIRST(bin), h->type, right, h->tag + 1,
                        l->leaders, &r[1]);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(START(fout), FIRST(fout), h->type, right, h->tag, l->leaders, &r[2]);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(START(bout) + (MPI_Aint)FIRST(bout) * h->extent,
                        h->lens[bout] - FIRST(bout), h->type, left, h->tag + 1, l->leaders, &r[3]);
#undef FIRST
#undef START
    return rc == MPI_SUCCESS ? PMPI_Waitall(4, r, aapc_statuses_ignore()) : rc;
}

int aapc_coll_ring_allgatherv(const aapc_coll_layout_t *l, void *buf, const int *counts,
                              const int *displs, MPI_Datatype type)
{
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    struct halves h = {counts, displs, buf, extent, type, 3};
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++) /* first halves right, second left */
        rc = both_ways(l, &h, l->ring_at[place(l, l->ring_pos - s)],
                       l->ring_at[place(l, l->ring_pos - s - 1)], NULL,
                       l->ring_at[place(l, l->ring_pos + s)],
                       l->ring_at[place(l, l->ring_pos + s + 1)], NULL);
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
    MPI_Aint lb, extent;
    int rc;
    if ((rc = PMPI_Type_get_extent(type, &lb, &extent)) != MPI_SUCCESS)
        return rc;
    int half = count / l->n / 2 + 2, *t = malloc(sizeof *t * 2 * (size_t)l->n);
    char *in_buf, *tmp = aapc_coll_vector(2 * (MPI_Aint)half, type, &in_buf); /* two halves */
    if (tmp == NULL || t == NULL) {
        free(tmp);
        free(t);
        return MPI_ERR_NO_MEM;
    }
    for (int c = 0; c < l->n; c++) /* chunk c (place c's) by place: lengths, first elements */
        chunk(count, l->n, c, &t[l->n + c], &t[c]);
    struct halves h = {t, t + l->n, buf, extent, type, 4};
    char *fin_at = in_buf, *bin_at = in_buf + (MPI_Aint)half * extent;
    int pos = l->ring_pos;
    /* reduce-scatter both ways: after step s the first half of chunk pos - s - 1 and the second
       half of chunk pos + s + 1 hold s + 2 operands */
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++) {
        int fin = place(l, pos - s - 1), bin = place(l, pos + s + 1), first = t[fin] / 2;
        rc = both_ways(l, &h, place(l, pos - s), fin, fin_at, place(l, pos + s), bin, bin_at);
        if (rc == MPI_SUCCESS && first > 0)
            rc = PMPI_Reduce_local(fin_at, buf_at(&h, fin, 0), first, type, op);
        if (rc == MPI_SUCCESS && t[bin] - t[bin] / 2 > 0)
            rc = PMPI_Reduce_local(bin_at, buf_at(&h, bin, t[bin] / 2), t[bin] - t[bin] / 2, type,
                                   op);
    }
    /* the first half of chunk pos + 1 and the second of chunk pos - 1 are reduced here: pass
       them all round, each its way */
    h.tag = 5;
    for (int s = 0; s < l->n - 1 && rc == MPI_SUCCESS; s++)
        rc = both_ways(l, &h, place(l, pos + 1 - s), place(l, pos - s), NULL,
                       place(l, pos - 1 + s), place(l, pos + s), NULL);
    free(tmp);
    free(t);
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
