/*
 * aapc_nbc_exec.c: a contention-free schedule run without waiting: the phase executor's
 * orderings kept by tests, for MPI_Ialltoall and MPI_Alltoall_init.
 *
 * Algorithm (seed 002's phases, the orderings of common/aapc_exec.c): at the start of a run,
 * machine m posts every data receive and every zero-byte sync receive and takes a first
 * progress step; its own block is copied once all its sends have started. Each progress call,
 * without waiting:
 *   - tests its receives in entry order; each one complete is checked to bring the block's
 *     bytes (a rank that described a different block size is an error, never a short block)
 *     and, under receiver-based synchronisation, fires its syncs;
 *   - tests its sends in entry order; each one complete fires its syncs under sender-based;
 *   - starts its next send e of phase q once (a) with a window w = 1 every earlier send is
 *     complete, with w > 1 every send of phases <= q - w is; (b) under receiver-based, every
 *     receive of phases <= q - w is complete and fired; (c) the sync receives e waits for have
 *     arrived; and goes on with the next send while these hold.
 * These are the orderings the offline synchronisation model relies on (a rank's sends start in
 * phase order, at most w in flight; receiver-based: each phase's receive completes before the
 * send w phases later starts), so the run is contention-free like the blocking one; syncs
 * fire when the progress call finds their event complete, never before it.
 * Supported: schedules without barriers and dummies (the run-time rows of no-sync, sender-all
 * and receiver-all, any window); the caller hands the others to the library.
 * Cost: the blocking executor's P (alpha + n beta) plus, per phase, the time until the
 * application's next completion call (a call that only waits, MPI_Wait, runs at the blocking
 * speed; computation between MPI_Test calls delays the next phase by up to that gap). Local work
 * per progress call: O(1) tests per completed entry plus one test of the front entries.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_exec.h" /* aapc_dense */
#include "aapc_mpi.h"
#include "aapc_nbc.h"

static char zero[1]; /* address of zero-byte syncs */

static int post_all(aapc_nbexec_t *x);

static int rank_of(const aapc_nbexec_t *x, int32_t peer)
{
    return aapc_comm_rank_of(&x->info, peer);
}

int aapc_nbexec_init(aapc_nbexec_t *x, const aapc_schedule_t *s, const aapc_comm_info_t *info,
                     int tag)
{
    memset(x, 0, sizeof *x);
    if (s == NULL || info == NULL || s->barrier_every > 0)
        return MPI_ERR_INTERN;
    x->s = s;
    x->info = *info;
    x->m = info->my_machine;
    x->tag = tag;
    x->s0 = s->send_off[x->m];
    x->s1 = s->send_off[x->m + 1];
    x->r0 = s->recv_off[x->m];
    x->r1 = s->recv_off[x->m + 1];
    x->y0 = s->syncin_off ? s->syncin_off[x->m] : 0;
    x->y1 = s->syncin_off ? s->syncin_off[x->m + 1] : 0;
    if (s->fire_off != NULL && s->sync_kind == AAPC_SYNC_SENDER)
        x->nfire = s->fire_off[x->s1] - s->fire_off[x->s0];
    else if (s->fire_off != NULL && s->sync_kind == AAPC_SYNC_RECEIVER)
        x->nfire = s->fire_off[x->r1] - s->fire_off[x->r0];
    x->window = s->window > 1 ? s->window : 1;
    for (int e = x->s0; e < x->s1; e++)
        if (s->send_peer[e] < 0 || s->send_peer[e] >= s->nmachines)
            return MPI_ERR_INTERN; /* dummies are not run here */
    for (int r = x->r0; r < x->r1; r++) {
        if (s->recv_peer[r] < 0 || s->recv_peer[r] >= s->nmachines)
            return MPI_ERR_INTERN;
        x->self_in_schedule |= s->recv_peer[r] == x->m;
    }
    size_t n = (size_t)(x->r1 - x->r0) + (size_t)(x->y1 - x->y0) + (size_t)x->nfire +
               (size_t)(x->s1 - x->s0);
    x->rreq = malloc((n ? n : 1) * sizeof *x->rreq);
    if (x->rreq == NULL)
        return MPI_ERR_NO_MEM;
    for (size_t i = 0; i < n; i++)
        x->rreq[i] = MPI_REQUEST_NULL;
    x->yreq = x->rreq + (x->r1 - x->r0);
    x->freq = x->yreq + (x->y1 - x->y0);
    x->sreq = x->freq + x->nfire;
    return MPI_SUCCESS;
}

void aapc_nbexec_free(aapc_nbexec_t *x)
{
    free(x->rreq);
    x->rreq = NULL;
}

/* The rank's own block (aapc_local_copy). */
static int copy_own(aapc_nbexec_t *x)
{
    int me = rank_of(x, x->m);
    if (x->vmode) { /* dense types (aapc_nbexec_start_v) */
        int64_t n = (int64_t)x->scounts[me] * x->ssize;
        if (n > (int64_t)x->rcounts[me] * x->rsize)
            return MPI_ERR_TRUNCATE;
        if (n > 0)
            memcpy(aapc_at(x->rbuf, (MPI_Aint)x->rdispls[me] * x->rext),
                   aapc_at(x->sbuf, (MPI_Aint)x->sdispls[me] * x->sext), (size_t)n);
        return MPI_SUCCESS;
    }
    return aapc_local_copy(aapc_at(x->sbuf, (MPI_Aint)me * x->sblock), x->scount, x->stype,
                           aapc_at(x->rbuf, (MPI_Aint)me * x->rblock), x->rcount, x->rtype,
                           x->info.dup, me, x->tag + 2);
}

int aapc_nbexec_start(aapc_nbexec_t *x, const void *sbuf, int scount, MPI_Datatype stype,
                      MPI_Aint sblock, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Aint rblock,
                      int64_t block_bytes)
{
    x->sbuf = sbuf;
    x->scount = scount;
    x->stype = stype;
    x->sblock = sblock;
    x->rbuf = rbuf;
    x->rcount = rcount;
    x->rtype = rtype;
    x->rblock = rblock;
    x->rbytes = block_bytes;
    x->vmode = 0;
    return post_all(x);
}

/* Where entry e's piece of the message of `count` elements at base lives (vmode): the whole
   message with the user's type, else its bytes [pos, pos + len) (*made: a type made for more
   than INT_MAX bytes, freed by the caller after posting). */
static int piece(const char *base, int count, MPI_Datatype type, int64_t size, int64_t pos,
                 int64_t len, const char **buf, int *n, MPI_Datatype *t, int *made)
{
    int64_t total = (int64_t)count * size;
    *made = 0;
    if (pos < 0 || len < 0 || pos + len > total)
        return MPI_ERR_COUNT; /* the schedule (the senders' counts) does not fit these counts */
    if (pos == 0 && len == total) {
        *buf = base;
        *n = count;
        *t = type;
        return MPI_SUCCESS;
    }
    *buf = aapc_at(base, (MPI_Aint)pos);
    int rc = aapc_bytes_type(len, t, n);
    *made = rc == MPI_SUCCESS && *t != MPI_BYTE;
    return rc;
}

/* Post data receive r. */
static int post_recv(aapc_nbexec_t *x, int r)
{
    const aapc_schedule_t *s = x->s;
    int src = rank_of(x, s->recv_peer[r]), n, made, rc;
    if (!x->vmode)
        return PMPI_Irecv(aapc_at(x->rbuf, (MPI_Aint)src * x->rblock), x->rcount, x->rtype, src,
                          x->tag, x->info.dup, &x->rreq[r - x->r0]);
    const char *buf;
    MPI_Datatype t;
    if ((rc = piece(aapc_at(x->rbuf, (MPI_Aint)x->rdispls[src] * x->rext), x->rcounts[src],
                    x->rtype, x->rsize, s->recv_pos[r], s->recv_len[r], &buf, &n, &t, &made)) !=
        MPI_SUCCESS)
        return rc;
    rc = PMPI_Irecv((char *)buf, n, t, src, x->tag, x->info.dup, &x->rreq[r - x->r0]);
    if (made)
        PMPI_Type_free(&t);
    return rc;
}

/* Start send entry e. */
static int post_send(aapc_nbexec_t *x, int e)
{
    const aapc_schedule_t *s = x->s;
    int dest = rank_of(x, s->send_peer[e]), n, made, rc;
    if (!x->vmode)
        return PMPI_Isend(aapc_at(x->sbuf, (MPI_Aint)dest * x->sblock), x->scount, x->stype, dest,
                          x->tag, x->info.dup, &x->sreq[e - x->s0]);
    const char *buf;
    MPI_Datatype t;
    if ((rc = piece(aapc_at(x->sbuf, (MPI_Aint)x->sdispls[dest] * x->sext), x->scounts[dest],
                    x->stype, x->ssize, s->send_pos[e], s->send_len[e], &buf, &n, &t, &made)) !=
        MPI_SUCCESS)
        return rc;
    rc = PMPI_Isend(buf, n, t, dest, x->tag, x->info.dup, &x->sreq[e - x->s0]);
    if (made)
        PMPI_Type_free(&t);
    return rc;
}

int aapc_nbexec_start_v(aapc_nbexec_t *x, const void *sbuf, const int scounts[],
                        const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[],
                        const int rdispls[], MPI_Datatype rtype)
{
    MPI_Aint lb;
    int rc;
    if (x->s->send_pos == NULL || x->s->recv_pos == NULL)
        return MPI_ERR_INTERN;
    if ((rc = PMPI_Type_get_extent(stype, &lb, &x->sext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(rtype, &lb, &x->rext)) != MPI_SUCCESS ||
        (rc = aapc_type_size(stype, &x->ssize)) != MPI_SUCCESS ||
        (rc = aapc_type_size(rtype, &x->rsize)) != MPI_SUCCESS)
        return rc;
    if (!aapc_dense(stype) || !aapc_dense(rtype))
        return MPI_ERR_INTERN; /* the caller runs these another way */
    x->sbuf = sbuf;
    x->rbuf = rbuf;
    x->stype = stype;
    x->rtype = rtype;
    x->scounts = scounts;
    x->sdispls = sdispls;
    x->rcounts = rcounts;
    x->rdispls = rdispls;
    x->vmode = 1;
    return post_all(x);
}

/* Post the receives and the sync receives of a run, then its first progress step. */
static int post_all(aapc_nbexec_t *x)
{
    const aapc_schedule_t *s = x->s;
    int rc;
    x->next = x->s0;
    x->rdone = x->r0;
    x->sdone = x->s0;
    x->nfired = 0;
    for (int r = x->r0; r < x->r1; r++)
        if ((rc = post_recv(x, r)) != MPI_SUCCESS)
            return rc;
    for (int i = 0; i < x->y1 - x->y0; i++) {
        int32_t peer = s->syncin_peer[x->y0 + i];
        if (peer < 0 || peer >= s->nmachines)
            return MPI_ERR_INTERN;
        if ((rc = PMPI_Irecv(zero, 0, MPI_BYTE, rank_of(x, peer), x->tag + 1, x->info.dup,
                             &x->yreq[i])) != MPI_SUCCESS)
            return rc;
    }
    x->copied = x->self_in_schedule; /* copied once every send has started (as aapc_exec.c) */
    int done = 0; /* seen again by the next progress call */
    return aapc_nbexec_progress(x, &done);
}

/* The zero-byte syncs of event entry ev (a send or a recv entry, by sync_kind). */
static int fire(aapc_nbexec_t *x, int ev)
{
    const aapc_schedule_t *s = x->s;
    for (int32_t k = s->fire_off[ev]; k < s->fire_off[ev + 1]; k++) {
        int32_t peer = s->fire_peer[k];
        if (x->nfired >= x->nfire || peer < 0 || peer >= s->nmachines)
            return MPI_ERR_INTERN;
        int rc = PMPI_Isend(zero, 0, MPI_BYTE, rank_of(x, peer), x->tag + 1, x->info.dup,
                            &x->freq[x->nfired]);
        if (rc != MPI_SUCCESS)
            return rc;
        x->nfired++;
    }
    return MPI_SUCCESS;
}

/* Receives complete at the front, in entry order: checked, and fired under receiver-based. */
static int retire_recvs(aapc_nbexec_t *x, int *moved)
{
    const aapc_schedule_t *s = x->s;
    while (x->rdone < x->r1) {
        int flag = 0, got = 0, rc;
        MPI_Status st;
        if ((rc = PMPI_Test(&x->rreq[x->rdone - x->r0], &flag, &st)) != MPI_SUCCESS)
            return rc;
        if (!flag)
            return MPI_SUCCESS;
        if ((rc = PMPI_Get_count(&st, MPI_BYTE, &got)) != MPI_SUCCESS)
            return rc;
        int64_t want = x->vmode ? s->recv_len[x->rdone] : x->rbytes;
        if (got != MPI_UNDEFINED && (int64_t)got != want)
            return MPI_ERR_TRUNCATE; /* the sender described another block size */
        if (s->sync_kind == AAPC_SYNC_RECEIVER && s->fire_off != NULL &&
            (rc = fire(x, x->rdone)) != MPI_SUCCESS)
            return rc;
        x->rdone++;
        *moved = 1;
    }
    return MPI_SUCCESS;
}

/* Sends complete at the front, in entry order: fired under sender-based. */
static int retire_sends(aapc_nbexec_t *x, int *moved)
{
    const aapc_schedule_t *s = x->s;
    while (x->sdone < x->next) {
        int flag = 0, rc;
        if ((rc = PMPI_Test(&x->sreq[x->sdone - x->s0], &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return rc;
        if (!flag)
            return MPI_SUCCESS;
        if (s->sync_kind == AAPC_SYNC_SENDER && s->fire_off != NULL &&
            (rc = fire(x, x->sdone)) != MPI_SUCCESS)
            return rc;
        x->sdone++;
        *moved = 1;
    }
    return MPI_SUCCESS;
}

/* Whether send entry e may start now (conditions (a)-(c) at the top); tests its syncs. */
static int may_start(aapc_nbexec_t *x, int e, int *ok)
{
    const aapc_schedule_t *s = x->s;
    int64_t q = s->send_phase[e], upto = q - x->window;
    *ok = 0;
    if (x->window == 1 ? x->sdone < e : (x->sdone < e && s->send_phase[x->sdone] <= upto))
        return MPI_SUCCESS;
    if (s->sync_kind == AAPC_SYNC_RECEIVER && x->rdone < x->r1 && s->recv_phase[x->rdone] <= upto)
        return MPI_SUCCESS;
    if (s->wait_off != NULL) {
        for (int32_t k = s->wait_off[e]; k < s->wait_off[e + 1]; k++) {
            int32_t idx = s->wait_idx[k];
            int flag = 0;
            if (idx < 0 || idx >= x->y1 - x->y0)
                return MPI_ERR_INTERN;
            int rc = PMPI_Test(&x->yreq[idx], &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS || !flag)
                return rc;
        }
    }
    *ok = 1;
    return MPI_SUCCESS;
}

int aapc_nbexec_progress(aapc_nbexec_t *x, int *done)
{
    int rc, moved;
    *done = 0;
    do {
        moved = 0;
        if ((rc = retire_recvs(x, &moved)) != MPI_SUCCESS ||
            (rc = retire_sends(x, &moved)) != MPI_SUCCESS)
            return rc;
        while (x->next < x->s1) {
            int ok = 0, e = x->next;
            if ((rc = may_start(x, e, &ok)) != MPI_SUCCESS)
                return rc;
            if (!ok)
                break;
            if ((rc = post_send(x, e)) != MPI_SUCCESS)
                return rc;
            x->next++;
            moved = 1;
        }
    } while (moved);
    if (x->next == x->s1 && !x->copied) {
        if ((rc = copy_own(x)) != MPI_SUCCESS)
            return rc;
        x->copied = 1;
    }
    if (x->next < x->s1 || x->rdone < x->r1 || x->sdone < x->s1)
        return MPI_SUCCESS;
    int ydone = 0, fdone = 0;
    if ((rc = PMPI_Testall(x->y1 - x->y0, x->yreq, &ydone, aapc_statuses_ignore())) != MPI_SUCCESS ||
        (rc = PMPI_Testall(x->nfired, x->freq, &fdone, aapc_statuses_ignore())) != MPI_SUCCESS)
        return rc;
    *done = ydone && fdone;
    return MPI_SUCCESS;
}

void aapc_nbexec_abandon(aapc_nbexec_t *x)
{
    MPI_Request *recvs[2] = {x->rreq, x->yreq};
    int counts[2] = {x->r1 - x->r0, x->y1 - x->y0};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < counts[k]; i++) {
            if (recvs[k][i] != MPI_REQUEST_NULL) {
                PMPI_Cancel(&recvs[k][i]);
                PMPI_Wait(&recvs[k][i], MPI_STATUS_IGNORE);
            }
        }
    }
    PMPI_Waitall(x->next - x->s0, x->sreq, aapc_statuses_ignore());
    PMPI_Waitall(x->nfired, x->freq, aapc_statuses_ignore());
}
