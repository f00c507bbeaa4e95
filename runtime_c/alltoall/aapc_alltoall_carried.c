/*
 * aapc_alltoall_carried.c: MPI_Alltoall's small blocks with every message in flight at once,
 * the argument agreement carried by the blocks' own messages.
 *
 * Algorithm. Where a call's per-rank phases fit one window (cluster/aapc_cluster.h
 * aapc_inflight_window: every phase in flight, so no syncs and no order among them), the
 * agreement of the checks (common/aapc_args.c: one reduction of a 48-byte vote, lg P latencies
 * before the first block leaves) rides on the exchange instead. Every rank
 *   - writes, for each other rank, a 1-byte mark followed by its block (memcpy for plain
 *     bytes, else MPI_Pack; MPI_IN_PLACE reads the receive buffer, which nothing writes before
 *     the end): the message's length tells its block size. A rank that found an error, or whose
 *     own send and receive blocks differ, writes the other mark followed by an 8-byte head
 *     instead: its finding's key, or a flag followed by both sizes;
 *   - posts a receive of 1 byte plus its own block (at least a head's length) from every other
 *     rank, then its sends, the peers in the switch tree's order starting after its own place;
 *   - completes them all. Every rank then holds every rank's block size or head: the greatest
 *     key, and the largest and smallest block sent and expected, are the reduction's result,
 *     alike on every rank (where the ranks' sizes differ, every rank sees a message unlike its
 *     own block, or one longer than its slot: MPI_ERR_TRUNCATE on that receive).
 *     common/aapc_args.c decides from them as after the reduction;
 *   - unpacks the blocks and copies its own.
 * Every message is received whatever the call's outcome, so nothing is left behind on the
 * private communicator.
 * Cost, P ranks, n-byte blocks: one latency and (P - 1)(n + 1) bytes each way, all in flight
 * (alpha + (P - 1)(n + 1) beta at the busiest link's share) instead of lg P alpha for the
 * reduction before the phases; two local copies of every block (in, out), at most the
 * window's budget (AAPC_INFLIGHT, 64 KiB by default) each way. What a valid call adds to its
 * blocks is the one mark byte per message: where many small blocks share a link (4 ranks on
 * each of 8 machines, 8-byte blocks, SimGrid) a 48-byte vote in every message cost more than
 * the reduction it replaced, and an 8-byte head still made 64-byte blocks' messages 12% longer.
 */
#include "aapc_alltoall_carried.h"

#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* AAPC_TAG_DATA, AAPC_TAG_SELF */
#include "aapc_exec.h" /* aapc_local_copy, aapc_at */
#include "aapc_mpi.h"
#include "aapc_wait.h"

/* A message's first byte: its block follows (the rest of the message, whatever its length), or
   a head. A head is one int64, the sender's finding's key negated (aapc_args_key: 2^32 or more),
   or -1 when the sender's own send and receive blocks differ, followed by the two (a head of a
   block size, >= 0, is read as that size). */
enum { MARK = 1, BLOCK = 0, HEADED = 1 };
enum { HEAD = (int)sizeof(int64_t), UNEVEN = 3 * (int)sizeof(int64_t) };

/* This rank's head from its vote v (common/aapc_args.c: {key, sb, -sb, rb, -rb, 0}). */
static size_t head_of(const int64_t v[AAPC_ARGS_VOTE], int64_t h[3])
{
    h[0] = v[0] != 0 ? -v[0] : v[1] != v[3] ? -1 : v[1];
    h[1] = v[1];
    h[2] = v[3];
    return h[0] == -1 ? UNEVEN : HEAD;
}

/* Merge one message, len bytes at msg (complete: not truncated), into the vote v. 0 when the
   message is no message of this routine's (too short for its mark or its head). */
static int merge(const char *msg, int len, int64_t v[AAPC_ARGS_VOTE])
{
    int64_t h[3] = {len - MARK, 0, 0};
    if (len < MARK || (msg[0] != BLOCK && (msg[0] != HEADED || len < MARK + HEAD)))
        return 0;
    if (msg[0] == HEADED)
        memcpy(h, msg + MARK, HEAD);
    if (h[0] == -1 && len < MARK + UNEVEN)
        return 0;
    if (h[0] == -1)
        memcpy(h, msg + MARK, UNEVEN);
    else if (h[0] >= 0)
        h[1] = h[2] = h[0];
    if (h[0] < -1) {
        v[0] = -h[0] > v[0] ? -h[0] : v[0];
        return 1;
    }
    int64_t w[4] = {h[1], -h[1], h[2], -h[2]};
    for (int k = 0; k < 4; k++)
        v[1 + k] = w[k] > v[1 + k] ? w[k] : v[1 + k];
    return 1;
}

/* One side of the call: count elements of type per block at buf, blocks ext bytes apart,
   esize bytes each (the raw bytes a message carries), dense: plain bytes (memcpy). 0 when there
   is nothing to move (count 0) or the library refuses the type: the head goes alone. */
static int side_of(struct aapc_carried_side *d, const void *buf, int count, MPI_Datatype type)
{
    MPI_Aint lb = 0;
    *d = (struct aapc_carried_side){buf, count, type, 0, 0, 0};
    if (count <= 0 || type == MPI_DATATYPE_NULL || aapc_type_size(type, &d->esize) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &d->ext) != MPI_SUCCESS)
        return 0;
    d->dense = aapc_dense(type);
    return 1;
}

/* Block `rank` of side d to or from the raw bytes at `bytes` (pack: from the buffer). */
static int move(int pack, const struct aapc_carried_side *d, int rank, char *bytes, MPI_Comm comm)
{
    char *at = aapc_at(d->buf, (MPI_Aint)rank * d->count * d->ext);
    size_t n = (size_t)d->count * (size_t)d->esize;
    if (d->dense && at != NULL) {
        memcpy(pack ? bytes : at, pack ? at : bytes, n);
        return MPI_SUCCESS;
    }
    return aapc_pack_bytes(pack, at, d->count, d->type, d->ext, d->esize, bytes, comm);
}

static int carry(void *ctx, int vote_only, int64_t v[AAPC_ARGS_VOTE], int *mismatch)
{
    aapc_carried_t *c = ctx;
    int p = c->size, n = p - 1, rc = MPI_SUCCESS;
    int inplace = c->sendbuf == MPI_IN_PLACE;
    *mismatch = 0;
    vote_only = vote_only || v[1] != v[3]; /* this rank's blocks differ: the call fails */
    if (!vote_only && (!side_of(&c->recv, c->recvbuf, c->recvcount, c->recvtype) ||
                       !side_of(&c->send, inplace ? c->recvbuf : c->sendbuf,
                                inplace ? c->recvcount : c->sendcount,
                                inplace ? c->recvtype : c->sendtype)))
        vote_only = 1; /* nothing to move (0-byte blocks): the marks alone */
    if (vote_only && v[0] == 0 && v[1] == v[3] && v[1] != 0)
        return MPI_ERR_TYPE; /* blocks to move of a type whose size or extent the library
                                refused after the checks: this rank alone (the caller aborts) */
    if (vote_only)
        c->send.count = c->recv.count = 0;
    if (n == 0) /* one rank: its own block only */
        return MPI_SUCCESS;
    int64_t head[3];
    size_t hlen = head_of(v, head);
    /* a head: an error or blocks that differ (vote_only otherwise leaves 0-byte blocks: a block
       message of the mark alone) */
    int headed = vote_only && head[0] != 0;
    size_t sslot = MARK + (headed ? hlen : (size_t)v[1]);
    int64_t rb = v[3] * !vote_only; /* the caller checked rb * (P - 1) */
    c->rslot = MARK + (int)(rb > UNEVEN ? rb : UNEVEN);
    /* 2n requests, their statuses, errors, counts and indices; n peers; n send and n receive
       slots */
    c->mem = malloc((size_t)2 * n * (sizeof(MPI_Request) + sizeof(MPI_Status) + 3 * sizeof(int)) +
                    (size_t)n * sizeof(int) + (size_t)n * (sslot + (size_t)c->rslot));
    if (c->mem == NULL)
        return MPI_ERR_NO_MEM;
    MPI_Request *req = (MPI_Request *)c->mem;
    MPI_Status *st = (MPI_Status *)(req + 2 * n);
    int *errs = (int *)(st + 2 * n), *counts = errs + 2 * n, *idx = counts + 2 * n;
    int *peer = idx + 2 * n;
    char *rbase = (char *)(peer + n), *sbase = rbase + (size_t)n * (size_t)c->rslot;
    c->peers = peer;
    c->rbase = rbase;
    int me = 0;
    while (me < p && c->rank_at[me] != c->rank)
        me++;
    for (int i = 0; i < n; i++)
        peer[i] = c->rank_at[(me + 1 + i) % p];
    for (int i = 0; i < 2 * n; i++)
        req[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        char *msg = sbase + (size_t)i * sslot;
        msg[0] = (char)(headed ? HEADED : BLOCK);
        if (headed)
            memcpy(msg + MARK, head, hlen);
        else if (c->send.count > 0)
            rc = move(1, &c->send, peer[i], msg + MARK, c->dup);
    }
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = PMPI_Irecv(rbase + (size_t)i * (size_t)c->rslot, c->rslot, MPI_BYTE, peer[i],
                        AAPC_TAG_DATA, c->dup, &req[i]);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = PMPI_Isend(sbase + (size_t)i * sslot, (int)sslot, MPI_BYTE, peer[i], AAPC_TAG_DATA,
                        c->dup, &req[n + i]);
    if (rc != MPI_SUCCESS) /* this rank alone: the caller aborts the job */
        return rc;
    if ((rc = aapc_waitall_counts(2 * n, req, errs, counts, idx, st)) != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < 2 * n; i++) {
        int cls = MPI_SUCCESS;
        if (errs[i] != MPI_SUCCESS && PMPI_Error_class(errs[i], &cls) != MPI_SUCCESS)
            cls = errs[i];
        if (i < n && cls == MPI_ERR_TRUNCATE) {
            *mismatch = 1; /* longer than this rank's slot: its head is not read */
            continue;
        }
        if (cls != MPI_SUCCESS)
            return errs[i];
        if (i < n && !merge(rbase + (size_t)i * (size_t)c->rslot, counts[i], v))
            *mismatch = 1; /* not a message of this routine's */
    }
    return MPI_SUCCESS;
}

/* Every block in place: the received ones from their messages, this rank's own copied (not
   under MPI_IN_PLACE: it is there already). Only after every rank's message said the blocks
   agree, so each message holds a whole block. */
static int deliver(aapc_carried_t *c)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < c->size - 1 && rc == MPI_SUCCESS && c->recv.count > 0; i++)
        rc = move(0, &c->recv, c->peers[i], c->rbase + (size_t)i * (size_t)c->rslot + MARK,
                  c->dup);
    if (rc == MPI_SUCCESS && c->sendbuf != MPI_IN_PLACE && c->recv.count > 0) {
        char *from = aapc_at(c->sendbuf, (MPI_Aint)c->rank * c->send.count * c->send.ext);
        char *to = aapc_at(c->recvbuf, (MPI_Aint)c->rank * c->recv.count * c->recv.ext);
        rc = aapc_local_copy(from, c->send.count, c->sendtype, to, c->recv.count, c->recvtype,
                             c->dup, c->rank, AAPC_TAG_SELF);
    }
    return rc;
}

int aapc_alltoall_carried(aapc_carried_t *c, const char *name, int *delivered)
{
    int done = 0;
    c->mem = NULL;
    int rc = aapc_args_alltoall_carried(name, c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                        c->recvcount, c->recvtype, c->comm, carry, c, &done);
    *delivered = rc == MPI_SUCCESS && !done;
    if (*delivered)
        rc = aapc_args_raise_alone(c->comm, deliver(c));
    free(c->mem);
    c->mem = NULL;
    return rc;
}
