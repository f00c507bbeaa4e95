/*
 * aapc_alltoallv_treedigits.c: MPI_Alltoallv as the log-round exchange in the switch tree's
 * digits (the non-uniform form of alltoall/aapc_alltoall_treedigits.c): Bruck's exchange in
 * mixed radix, one digit per level of the tree (cluster/aapc_cluster_digits.c), blocks of any
 * size, for small and skewed exchanges where P - 1 phases of latency cost more than the bytes.
 *
 * Algorithm, n members in the tree's depth-first order, this member at place i, x (+) y the
 * digit-by-digit sum of two places (cluster/aapc_cluster.h aapc_digits_add):
 *   0. pack the send blocks (any datatype, any count, their own displacements): slot s holds
 *      the block for place i (+) s, its length kept beside it;
 *   1. level l = 0 .. L-1: for d = 1 .. radix[l] - 1, one message to place i (+) d e_l with
 *      the slots whose digit l is d: a header of their lengths (n / radix[l] ints) and their
 *      bytes; from place i (-) d e_l the same slots, into a receive posted for n / radix[l]
 *      slots of the largest block any rank sends (agreed with the busiest block), the
 *      message's length then read from its header: no count is exchanged beforehand and no
 *      message is probed for (a probe-polling receive costs SimGrid's SMPI 0.1 ms and more per
 *      poll). A window of a level's messages is in flight at once (aapc_inflight_window on
 *      the agreed busiest block, as the uniform form), their receives posted before their
 *      sends;
 *   2. slot s holds the block of place i (-) s: unpack it at that rank's displacement, after
 *      checking that its length is what this rank's receive count and type say.
 * Every block moves at most once per level, inside that level's switches (the uniform form's
 * proof carries over: the places a message goes to do not depend on the sizes). A length that
 * does not match the receive side ends in MPI_ERR_TRUNCATE on the rank that finds it; every
 * message still flows, so no rank waits for it.
 * Cost: sum over levels of ceil((radix - 1) / W) (alpha + the window's bytes beta), plus the
 * headers (n ints per level per member) and 2 copies of what a member holds per level; memory
 * 3 x the most a member holds at once plus its headers, and the receives of a window (at most
 * n x the largest block). The caller keeps every member's holding and posted receives under
 * INT_MAX / 2 (the agreed busiest block x (P - 1) x P; n x the largest block).
 */
#include "aapc_alltoallv_treedigits.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* AAPC_TAG_ROUND */
#include "aapc_mpi.h"  /* aapc_type_size */
#include "aapc_wait.h" /* aapc_waitall, aapc_backoff */

/* The slots: their bytes one after another in `buf`, slot s at off[s], len[s] bytes. */
struct slots {
    char *buf;
    MPI_Aint *off;
    int *len;
    MPI_Aint size;
};

/* One level: its radix - 1 messages (`window` at once) replace the slots whose digit l is not
   0 with the ones received; the kept ones move to a fresh buffer with them. */
static int level_exchange(struct slots *sl, int n, int i, int32_t l, int unit,
                          const aapc_digits_t *dg, int window, MPI_Aint largest,
                          const int *rank_at, MPI_Comm comm)
{
    int f = dg->radix[l], per = n / f, rc = MPI_SUCCESS, k = 0;
    /* what a message can hold: its header and per slots of the largest block */
    MPI_Aint cap = (MPI_Aint)per * ((MPI_Aint)sizeof(int) + largest);
    MPI_Aint *outlen = calloc((size_t)f, sizeof *outlen), total = 0;
    char **in = calloc((size_t)f, sizeof *in), *out = NULL, *next = NULL;
    MPI_Request *req = malloc(sizeof *req * 2 * (size_t)f);
    int *errs = malloc(sizeof *errs * 2 * (size_t)f), *got = malloc(sizeof *got * 2 * (size_t)f);
    int *idx = malloc(sizeof *idx * 2 * (size_t)f);
    MPI_Status *st = malloc(sizeof *st * 2 * (size_t)f);
    if (outlen == NULL || in == NULL || req == NULL || errs == NULL || got == NULL ||
        idx == NULL || st == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    /* the outgoing messages one after another: [lengths][bytes] per d */
    for (int s = 0; s < n; s++) {
        int d = s / unit % f;
        if (d > 0)
            outlen[d] += sl->len[s];
    }
    for (int d = 1; d < f; d++)
        total += (MPI_Aint)per * (MPI_Aint)sizeof(int) + outlen[d];
    if ((out = malloc((size_t)total + 1)) == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    MPI_Aint at = 0;
    MPI_Aint *start = calloc((size_t)f, sizeof *start);
    if (start == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    for (int d = 1; d < f; d++) {
        start[d] = at;
        char *hdr = out + at; /* the lengths, unaligned: copied, never dereferenced */
        MPI_Aint bytes = at + (MPI_Aint)per * (MPI_Aint)sizeof(int);
        for (int s = d * unit, q = 0; q < per; q++) { /* the slots of digit d, in order */
            int idx = s + (q / unit) * unit * f + q % unit;
            int len = sl->len[idx];
            memcpy(hdr + (size_t)q * sizeof len, &len, sizeof len);
            memcpy(out + bytes, sl->buf + sl->off[idx], (size_t)len);
            bytes += len;
        }
        at = bytes;
    }
    /* the messages, a window at a time: the receives posted for what a message can hold,
       then the sends; each received message's length is what its header says */
    for (int d0 = 1; d0 < f && rc == MPI_SUCCESS; d0 += window) {
        int hi = d0 + window < f ? d0 + window : f, nomem = 0;
        k = 0;
        for (int d = d0; d < hi && rc == MPI_SUCCESS; d++) {
            int from = rank_at[aapc_digits_add(dg, i, d * unit, -1)];
            in[d] = malloc((size_t)cap + 1);
            nomem |= in[d] == NULL; /* taken truncated, so that its sender completes */
            rc = PMPI_Irecv(in[d] != NULL ? in[d] : out, in[d] != NULL ? (int)cap : 0, MPI_BYTE,
                            from, AAPC_TAG_ROUND, comm, &req[k++]);
        }
        for (int d = d0; d < hi && rc == MPI_SUCCESS; d++) {
            MPI_Aint len = (d + 1 < f ? start[d + 1] : total) - start[d];
            rc = PMPI_Isend(out + start[d], (int)len, MPI_BYTE,
                            rank_at[aapc_digits_add(dg, i, d * unit, 1)], AAPC_TAG_ROUND, comm,
                            &req[k++]);
        }
        int rc2 = aapc_waitall_counts(k, req, errs, got, idx, st);
        if (rc == MPI_SUCCESS)
            rc = rc2 != MPI_SUCCESS ? rc2 : nomem ? MPI_ERR_NO_MEM : MPI_SUCCESS;
        for (int q = 0; q < k && rc == MPI_SUCCESS; q++)
            rc = errs[q]; /* MPI_ERR_TRUNCATE: a message longer than any correct one */
        for (int d = d0; d < hi && rc == MPI_SUCCESS; d++) { /* all posted: got[d - d0] */
            int count = got[d - d0];
            MPI_Aint said = (MPI_Aint)per * (MPI_Aint)sizeof(int);
            for (int q = 0; q < per && count >= said; q++) {
                int len;
                memcpy(&len, in[d] + (size_t)q * sizeof len, sizeof len);
                said += len >= 0 ? len : cap + 1;
            }
            if (count == MPI_UNDEFINED || (MPI_Aint)count != said)
                rc = MPI_ERR_INTERN; /* a message of another call on this tag: cannot happen */
        }
    }
    free(start);
    if (rc != MPI_SUCCESS)
        goto done;
    /* the new slots: the kept ones (digit l 0), then each received message's, in slot order */
    MPI_Aint size = 0;
    for (int s = 0; s < n; s++) {
        int d = s / unit % f;
        if (d > 0) {
            int q = (s / (unit * f)) * unit + s % unit;
            memcpy(&sl->len[s], in[d] + (size_t)q * sizeof(int), sizeof(int));
        }
        size += sl->len[s];
    }
    if ((next = malloc((size_t)size + 1)) == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    MPI_Aint *pos = calloc((size_t)f, sizeof *pos);
    if (pos == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    for (int d = 1; d < f; d++)
        pos[d] = (MPI_Aint)per * (MPI_Aint)sizeof(int);
    at = 0;
    for (int s = 0; s < n; s++) {
        int d = s / unit % f;
        const char *from = d > 0 ? in[d] + pos[d] : sl->buf + sl->off[s];
        memcpy(next + at, from, (size_t)sl->len[s]);
        if (d > 0)
            pos[d] += sl->len[s];
        sl->off[s] = at;
        at += sl->len[s];
    }
    free(pos);
    free(sl->buf);
    sl->buf = next;
    sl->size = size;
    next = NULL;
done:
    for (int d = 0; in != NULL && d < f; d++)
        free(in[d]);
    free(in);
    free(out);
    free(next);
    free(outlen);
    free(req);
    free(errs);
    free(got);
    free(idx);
    free(st);
    return rc;
}

int aapc_alltoallv_treedigits(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              const int *rank_at, const aapc_digits_t *dg, double block,
                              double largest, double budget)
{
    int rc, n, me, i = -1, prod = 1;
    MPI_Aint lb, sext, rext;
    if ((rc = PMPI_Comm_size(comm, &n)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &me)) != MPI_SUCCESS)
        return rc;
    for (int32_t l = 0; l < dg->levels; l++)
        prod *= dg->radix[l];
    if (dg->levels < 1 || prod != n)
        return MPI_ERR_INTERN;
    if (sendbuf == MPI_IN_PLACE) {
        sendbuf = recvbuf;
        sendcounts = recvcounts;
        sdispls = rdispls;
        sendtype = recvtype;
    }
    int64_t ssize = 0, rsize = 0;
    if ((rc = aapc_type_size(sendtype, &ssize)) != MPI_SUCCESS ||
        (rc = aapc_type_size(recvtype, &rsize)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(sendtype, &lb, &sext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(recvtype, &lb, &rext)) != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < n; k++)
        if (rank_at[k] == me)
            i = k;
    if (i < 0)
        return MPI_ERR_ARG;
    struct slots sl = {NULL, malloc(sizeof(MPI_Aint) * (size_t)n), malloc(sizeof(int) * (size_t)n),
                       0};
    if (sl.off == NULL || sl.len == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    /* 0. slot s: the block for place i (+) s */
    for (int s = 0; s < n; s++) {
        int r = rank_at[aapc_digits_add(dg, i, s, 1)];
        sl.len[s] = (int)((int64_t)sendcounts[r] * ssize);
        sl.size += sl.len[s];
    }
    if ((sl.buf = malloc((size_t)sl.size + 1)) == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    for (int s = 0, pos = 0; s < n; s++) {
        int r = rank_at[aapc_digits_add(dg, i, s, 1)], start = pos;
        sl.off[s] = pos;
        if (sl.len[s] > 0 &&
            (rc = PMPI_Pack((const char *)sendbuf + (MPI_Aint)sdispls[r] * sext, sendcounts[r],
                            sendtype, sl.buf, (int)sl.size, &pos, comm)) != MPI_SUCCESS)
            goto done;
        if (pos - start != sl.len[s]) {
            rc = MPI_ERR_INTERN; /* MPI_Pack wrote other than count x size bytes */
            goto done;
        }
    }
    /* 1. the levels, the machines' switches first */
    for (int32_t l = 0, unit = 1; l < dg->levels; unit *= dg->radix[l], l++) {
        int f = dg->radix[l];
        int window = aapc_inflight_window(block * (double)(n / f), f - 1, budget);
        if ((rc = level_exchange(&sl, n, i, l, unit, dg, window, (MPI_Aint)largest, rank_at,
                                 comm)) != MPI_SUCCESS)
            goto done;
    }
    /* 2. slot s holds the block of place i (-) s */
    for (int s = 0; s < n && rc == MPI_SUCCESS; s++) {
        int r = rank_at[aapc_digits_add(dg, i, s, -1)], pos = 0;
        if ((int64_t)recvcounts[r] * rsize != sl.len[s]) {
            rc = MPI_ERR_TRUNCATE; /* the sender's signature is not this receive's */
            break;
        }
        if (sl.len[s] > 0)
            rc = PMPI_Unpack(sl.buf + sl.off[s], sl.len[s], &pos,
                             (char *)recvbuf + (MPI_Aint)rdispls[r] * rext, recvcounts[r],
                             recvtype, comm);
    }
done:
    free(sl.buf);
    free(sl.off);
    free(sl.len);
    return rc;
}
