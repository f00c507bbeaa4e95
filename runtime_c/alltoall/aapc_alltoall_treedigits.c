/*
 * aapc_alltoall_treedigits.c: the log-round all-to-all whose digits follow the switch tree:
 * Bruck's exchange (Bruck, Ho, Kipnis, Upfal, Weathersby, IEEE TPDS 1997) in mixed radix, one
 * digit per level of the tree (cluster/aapc_cluster_digits.c), its radix the level's fan-out.
 * The exchange inside every lowest switch runs first, then between the subtrees of each switch
 * above, one level at a time, and each level's messages stay below that level's switches.
 *
 * Algorithm, n members in the tree's depth-first order (radix[0] x ... x radix[L-1] = n), this
 * member at place i, blocks of B bytes; x (+) y adds two places digit by digit, each digit
 * modulo its radix, e_l is 1 in digit l:
 *   0. pack the n send blocks (any datatype): slot s holds the block for place i (+) s;
 *   1. level l = 0 .. L-1 (the machines' switches first): for d = 1 .. radix[l] - 1, send the
 *      slots whose digit l is d to place i (+) d e_l and receive the same slots from
 *      i (-) d e_l: radix[l] - 1 messages of n / radix[l] blocks each, the slots' runs of
 *      unit[l] = radix[0] x ... x radix[l-1] blocks packed together. The messages of a level
 *      are independent (each moves its own slots), so a window of them is in flight at once:
 *      aapc_inflight_window(n / radix[l] x B, radix[l] - 1, budget) messages (all of them for
 *      small blocks, one at a time where a message alone fills the budget);
 *   2. slot s now holds the block that place i (-) s sent to i: unpack it into the receive
 *      layout at that member's rank.
 * A phase d of level l is a permutation inside every switch of that level: it puts one message
 * on every member's own link and unit[j] on every link of a level j <= l (each way); the
 * digits' groups[l] sub-phases keep it within every link's capacity (cluster/aapc_cluster.h;
 * aapcgen/verify/loground.py proves delivery, that every level's messages stay below its
 * switches and that its sub-phases are contention-free; AAPC_DUMP_SCHEDULE writes the digits).
 * A window's phases are not separated by syncs: as in Bruck's rounds, only the pairs' own
 * messages order them (the way is for small blocks, where a phase is a latency, not a
 * bandwidth).
 * Cost: sum over levels of ceil((radix - 1) / W) (alpha + W (n / radix) B beta) on the critical
 * path, (radix - 1) / radix of the n blocks forwarded per level (L hops at most against lg n
 * in radix 2), 2 n B bytes of copying per level and 2 n B for the packing; memory 4 n B bytes.
 */
#include "aapc_alltoall_treedigits.h"

#include "aapc_alltoall_loground.h" /* aapc_rounds_start, aapc_rounds_pack */

#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* AAPC_TAG_ROUND */
#include "aapc_wait.h" /* aapc_waitall */

/* Copy the slots whose digit l is d into buf (out = 1) or back from it (out = 0). */
static void move_slots(char *slots, char *buf, int n, int unit, int f, int d, MPI_Aint b,
                       int out)
{
    MPI_Aint run = (MPI_Aint)unit * b, len = 0;
    for (int hi = 0; hi < n; hi += unit * f) {
        char *at = slots + ((MPI_Aint)hi + (MPI_Aint)d * unit) * b;
        if (out)
            memcpy(buf + len, at, (size_t)run);
        else
            memcpy(at, buf + len, (size_t)run);
        len += run;
    }
}

/* One level: its radix - 1 messages, `window` of them in flight. */
static int level_exchange(char *slots, char *out, char *in, MPI_Request *req, int n, int i,
                          int32_t l, int unit, const aapc_digits_t *dg, MPI_Aint b,
                          double budget, const int *rank_at, MPI_Comm comm)
{
    int f = dg->radix[l], rc = MPI_SUCCESS;
    MPI_Aint len = (MPI_Aint)(n / f) * b;
    int window = aapc_inflight_window((double)len, f - 1, budget);
    for (int d = 1; d < f; d++)
        move_slots(slots, out + (d - 1) * len, n, unit, f, d, b, 1);
    for (int d0 = 1; d0 < f && rc == MPI_SUCCESS; d0 += window) {
        int k = 0;
        for (int d = d0; d < f && d < d0 + window && rc == MPI_SUCCESS; d++) {
            int from = rank_at[aapc_digits_add(dg, i, d * unit, -1)];
            rc = PMPI_Irecv(in + (d - 1) * len, (int)len, MPI_BYTE, from, AAPC_TAG_ROUND, comm,
                            &req[k++]);
        }
        for (int d = d0; d < f && d < d0 + window && rc == MPI_SUCCESS; d++) {
            int to = rank_at[aapc_digits_add(dg, i, d * unit, 1)];
            rc = PMPI_Isend(out + (d - 1) * len, (int)len, MPI_BYTE, to, AAPC_TAG_ROUND, comm,
                            &req[k++]);
        }
        if (rc != MPI_SUCCESS) { /* end what was posted: the peers' own calls fail too */
            for (int q = 0; q < k; q++)
                if (req[q] != MPI_REQUEST_NULL) {
                    PMPI_Cancel(&req[q]);
                    PMPI_Request_free(&req[q]);
                }
            return rc;
        }
        rc = aapc_waitall(k, req); /* the library's waiting policy (AAPC_WAIT) */
    }
    if (rc == MPI_SUCCESS)
        for (int d = 1; d < f; d++)
            move_slots(slots, in + (d - 1) * len, n, unit, f, d, b, 0);
    return rc;
}

int aapc_alltoall_treedigits(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             const int *rank_at, const aapc_digits_t *dg, double budget)
{
    aapc_rounds_call_t c = {sendbuf, sendcount, sendtype, 0, 0, 0};
    int rc = aapc_rounds_start(&c, recvbuf, recvcount, recvtype, comm, rank_at);
    int prod = 1, most = 1, pos = 0;
    for (int32_t l = 0; l < dg->levels; l++) {
        prod *= dg->radix[l];
        most = dg->radix[l] > most ? dg->radix[l] : most;
    }
    if (rc == MPI_SUCCESS && (dg->levels < 1 || prod != c.n))
        rc = MPI_ERR_INTERN; /* the caller's digits are the tree's, for n members */
    if (rc != MPI_SUCCESS || c.b == 0)
        return rc;
    int n = c.n, i = c.i;
    MPI_Aint b = c.b, all = b * n;
    char *packed = malloc((size_t)all), *slots = malloc((size_t)all);
    char *out = malloc((size_t)all), *in = malloc((size_t)all);
    MPI_Request *req = malloc(sizeof *req * 2 * (size_t)most);
    if (packed == NULL || slots == NULL || out == NULL || in == NULL || req == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    /* 0. my blocks in rank order, then slot s = the block for place i (+) s */
    if ((rc = aapc_rounds_pack(&c, packed, comm)) != MPI_SUCCESS)
        goto done;
    for (int s = 0; s < n; s++)
        memcpy(slots + (MPI_Aint)s * b,
               packed + (MPI_Aint)rank_at[aapc_digits_add(dg, i, s, 1)] * b, (size_t)b);
    /* 1. the levels, the machines' switches first */
    for (int32_t l = 0, unit = 1; l < dg->levels; unit *= dg->radix[l], l++)
        if ((rc = level_exchange(slots, out, in, req, n, i, l, unit, dg, b, budget, rank_at,
                                 comm)) != MPI_SUCCESS)
            goto done;
    /* 2. slot s holds the block from place i (-) s */
    for (int s = 0; s < n; s++)
        memcpy(packed + (MPI_Aint)rank_at[aapc_digits_add(dg, i, s, -1)] * b,
               slots + (MPI_Aint)s * b, (size_t)b);
    pos = 0;
    rc = PMPI_Unpack(packed, (int)all, &pos, recvbuf, recvcount * n, recvtype, comm);
done:
    free(packed);
    free(slots);
    free(out);
    free(in);
    free(req);
    return rc;
}
