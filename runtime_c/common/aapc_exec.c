/*
 * aapc_exec.c: the phase executor: a precomputed sequence of contention-free phases, run.
 *
 * Algorithm (seed 002, Faraj/Yuan/Patarasuk, section 5): the tables of an aapc_schedule_t give
 * every machine its sends and receives in phase order, plus optional pair-wise synchronisation
 * (sender- or receiver-based), dummy messages and barriers between blocks of phases. Machine m:
 *   - pre-posts every data receive and every zero-byte sync receive (in syncin order), so no
 *     schedule can deadlock whatever the eager/rendezvous protocol;
 *   - for each of its phases p in order: posts the dummy receive of p, if any (after completing
 *     the previous one: one scratch buffer); for its send e of p, waits for the sync receives
 *     listed for e, starts the send; under AAPC_SYNC_RECEIVER completes its receive of p and
 *     sends that receive's syncs; completes the send (at most one data send in flight); under
 *     AAPC_SYNC_SENDER sends e's syncs; at a block boundary (barrier_every = b, after phases
 *     b-1, 2b-1, ... but not the last) completes the receives of phases <= p and barriers;
 *   - copies its own block locally, then completes all receives and sync sends.
 * These orderings are the ones the offline synchronisation model relies on: a rank's sends start
 * in phase order, each completes before the next starts, and under AAPC_SYNC_RECEIVER each
 * phase's receive completes before the rank's next send starts.
 * With a window of w > 1 phases (variants *-w<w>, s->window) a rank starts its send of phase q
 * once its sends and (receiver-based) receives of phases <= q - w are complete, firing their
 * syncs in entry order (and earlier, when a test finds them complete); so up to w of its sends
 * are in flight, and the syncs (planned for that order) keep at most w messages per link lane.
 * The next phase's message is then already under way while the current one is on the wire:
 * per phase the sync's flight and the message's start-up latency overlap the data instead of
 * adding to it (docs/scheduling.md "Windows").
 *
 * Cost (p machines, n bytes per block, P phases, |M_0|(|M|-|M_0|) = P for the optimal
 * schedule, s_m syncs fired by machine m, d dummies, B = ceil(P/b)-1 barriers):
 *   P (alpha + n beta) along the critical path when every phase is contention-free, versus
 *   (p-1)(alpha + n beta) for a single switch; plus s_m alpha for zero-byte syncs, d (alpha +
 *   n beta) of dummy traffic that does not cross the bottleneck, and B lg(p) alpha for
 *   barriers. Local work per call: O(rows of m) = O(p + s_m); no O(p^2) step. With a
 *   window w >= 2 the alpha of each phase (the sync's flight, the next message's start-up)
 *   overlaps the data of the w - 1 phases before it: about P n beta + w alpha when
 *   alpha <= (w - 1) n beta, with up to w messages sharing a link (each at 1/w of its speed).
 * With $AAPC_TRACE set, every wait also stamps the receives completing meanwhile and the call's
 * events are written at its end (common/aapc_trace.c; tracing costs time, see there).
 * Entries: aapc_alltoall_run (alltoall/aapc_alltoall_exec.c) and aapc_alltoallv_exec
 * (alltoallv/aapc_alltoallv_exec.c) resolve buffers and the communicator, then call aapc_execute.
 */
#include "aapc_exec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h"
#include "aapc_mpi.h"
#include "aapc_trace.h"
#include "aapc_wait.h"

static char aapc_zero[1]; /* address of zero-byte sync messages */

/* Complete reqs[0..n): the waiting policy of aapc_wait.c, or, when the call is traced, a loop
   that stamps every receive completing meanwhile (aapc_trace.c) and yields the CPU briefly
   between tests. */
static int aapc_wait(struct aapc_run *st, int n, MPI_Request *reqs)
{
    if (st->trace == NULL)
        return aapc_waitall(n, reqs);
#ifdef SMPI_SHARED_MALLOC /* simulated time: wait in order, stamp each request as it returns */
    for (int i = 0; i < n; i++) {
        int was_null = reqs[i] == MPI_REQUEST_NULL;
        int rc = PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!was_null)
            aapc_trace_stamp(st, &reqs[i]);
    }
    return MPI_SUCCESS;
#endif
    for (int tries = 0;; tries++) {
        int done = 0;
        aapc_trace_poll(st);
        int rc = aapc_trace_test(st, n, reqs, &done);
        if (rc != MPI_SUCCESS || done)
            return rc;
        if (tries >= 16)
            aapc_nap_us(20);
    }
}

int aapc_peer_ok(const aapc_schedule_t *s, int32_t peer)
{
    int32_t mach = peer >= 0 ? peer : -(peer + 1);
    return mach >= 0 && mach < s->nmachines;
}

int aapc_rank(const struct aapc_run *st, int32_t peer)
{
    return aapc_comm_rank_of(&st->info, peer >= 0 ? peer : -(peer + 1));
}

/* Block of the user's buffers that a data peer's message uses (its rank, unless the caller
   numbers the blocks itself: aapc_comm_info_t machine_block). */
static MPI_Aint aapc_block(const struct aapc_run *st, int32_t peer, int rank)
{
    return st->info.machine_block != NULL ? st->info.machine_block[peer] : rank;
}

/* Complete the outstanding dummy receive, if any. */
static int aapc_dummy_wait(struct aapc_run *st)
{
    return aapc_wait(st, 1, &st->dreq);
}

static int aapc_post_recv_dummy(struct aapc_run *st, int r)
{
    int rc = aapc_dummy_wait(st);
    if (rc != MPI_SUCCESS)
        return rc;
    return PMPI_Irecv(st->drecv, st->dcount, st->dtype, aapc_rank(st, st->s->recv_peer[r]),
                      AAPC_TAG_DUMMY, st->dup, &st->dreq);
}

/* Alltoallv: where the piece [pos, pos + len) of a message of `count` elements at `base`
   lives. A whole message goes with the user's datatype; a part of a message as bytes, from
   the user's buffer when the type is dense, else from the packed copy (a part of more than
   INT_MAX bytes as one element of a byte type made for it, which the caller frees after
   posting: *made = 1). */
static int aapc_piece(const char *base, int count, MPI_Datatype type, int64_t size, int dense,
                      const char *packed, int64_t pos, int64_t len, const char **buf,
                      int *n, MPI_Datatype *t, int *made)
{
    int64_t total = (int64_t)count * size;
    *made = 0;
    if (pos < 0 || len < 0 || pos + len > total)
        return MPI_ERR_COUNT; /* the schedule does not fit this call's counts */
    if (pos == 0 && len == total) {
        *buf = base;
        *n = count;
        *t = type;
        return MPI_SUCCESS;
    }
    if (!dense && packed == NULL)
        return MPI_ERR_INTERN; /* a part of a non-dense message must come from a packed copy */
    *buf = aapc_at(dense ? base : packed, (MPI_Aint)pos);
    int rc = aapc_bytes_type(len, t, n);
    *made = rc == MPI_SUCCESS && *t != MPI_BYTE;
    return rc;
}

/* Where send entry e's request goes: its own slot in a windowed call, else the one send. */
static MPI_Request *aapc_send_req(struct aapc_run *st, int e)
{
    return st->wsreq != NULL ? &st->wsreq[e - st->s0] : &st->sreq;
}

static int aapc_isend_piece(struct aapc_run *st, int e, int dest)
{
    const char *buf;
    int n, rc, made;
    MPI_Datatype t;
    rc = aapc_piece(aapc_at(st->sbuf, (MPI_Aint)st->sdispls[dest] * st->sext), st->scounts[dest],
                    st->stype, st->ssize, st->sdense,
                    st->spoff[dest] >= 0 ? st->spack + st->spoff[dest] : NULL,
                    st->s->send_pos[e], st->s->send_len[e], &buf, &n, &t, &made);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Isend(buf, n, t, dest, AAPC_TAG_DATA, st->dup, aapc_send_req(st, e));
    if (made) /* the request keeps what it needs of the type */
        PMPI_Type_free(&t);
    return rc;
}

static int aapc_irecv_piece(struct aapc_run *st, int r, int src, MPI_Request *req)
{
    const char *buf;
    int n, rc, made;
    MPI_Datatype t;
    rc = aapc_piece(aapc_at(st->rbuf, (MPI_Aint)st->rdispls[src] * st->rext), st->rcounts[src],
                    st->rtype, st->rsize, st->rdense,
                    st->rpoff[src] >= 0 ? st->rpack + st->rpoff[src] : NULL,
                    st->s->recv_pos[r], st->s->recv_len[r], &buf, &n, &t, &made);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Irecv((char *)buf, n, t, src, AAPC_TAG_DATA, st->dup, req);
    if (made)
        PMPI_Type_free(&t);
    return rc;
}

static int aapc_wait_firing(struct aapc_run *st, MPI_Request *target, int sent);

/* Step 1: wait for e's sync receives (in a windowed call, firing meanwhile the syncs of what
   completes: aapc_wait_firing), then start send entry e. */
static int aapc_start_send(struct aapc_run *st, int e)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    aapc_trace_event(st, AAPC_TR_SYNC_WAIT, s->send_phase[e], s->send_peer[e]);
    if (s->wait_off != NULL) {
        for (int32_t k = s->wait_off[e]; k < s->wait_off[e + 1]; k++) {
            int32_t idx = s->wait_idx[k];
            if (idx < 0 || idx >= st->y1 - st->y0)
                return MPI_ERR_INTERN;
            rc = st->wsreq != NULL ? aapc_wait_firing(st, &st->yreq[idx], e)
                                   : aapc_wait(st, 1, &st->yreq[idx]);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    int32_t peer = s->send_peer[e];
    int dest = aapc_rank(st, peer);
    aapc_trace_event(st, AAPC_TR_SEND_START, s->send_phase[e], peer);
    if (peer >= 0 && st->vmode)
        return aapc_isend_piece(st, e, dest);
    if (peer >= 0)
        return PMPI_Isend(aapc_at(st->sbuf, aapc_block(st, peer, dest) * st->sblock), st->scount,
                          st->stype, dest,
                          AAPC_TAG_DATA, st->dup, aapc_send_req(st, e));
    return PMPI_Isend(st->dsend, st->dcount, st->dtype, dest, AAPC_TAG_DUMMY, st->dup,
                      aapc_send_req(st, e));
}

/* Send the zero-byte syncs of event entry ev (a send or a recv entry, by sync_kind). */
static int aapc_fire(struct aapc_run *st, int ev)
{
    const aapc_schedule_t *s = st->s;
    for (int32_t k = s->fire_off[ev]; k < s->fire_off[ev + 1]; k++) {
        int rc;
        if (st->nfired >= st->nfire || !aapc_peer_ok(s, s->fire_peer[k]) || s->fire_peer[k] < 0)
            return MPI_ERR_INTERN;
        rc = PMPI_Isend(aapc_zero, 0, MPI_BYTE, aapc_rank(st, s->fire_peer[k]), AAPC_TAG_SYNC,
                        st->dup, &st->freq[st->nfired]);
        if (rc != MPI_SUCCESS)
            return rc;
        aapc_trace_event(st, AAPC_TR_SYNC_FIRE,
                         s->sync_kind == AAPC_SYNC_SENDER ? s->send_phase[ev] : s->recv_phase[ev],
                         s->fire_peer[k]);
        st->nfired++;
    }
    return MPI_SUCCESS;
}

/* Barriers for every block boundary <= q (never after the last phase). */
static int aapc_barriers_through(struct aapc_run *st, int32_t q)
{
    const aapc_schedule_t *s = st->s;
    while (st->next_barrier <= q && st->next_barrier < s->nphases - 1) {
        int from = st->rdone, rc;
        while (st->rdone < st->r1 && s->recv_phase[st->rdone] <= st->next_barrier)
            st->rdone++;
        if (st->rdone > from &&
            (rc = aapc_wait(st, st->rdone - from, st->rreq + (from - st->r0))) != MPI_SUCCESS)
            return rc;
        if ((rc = aapc_dummy_wait(st)) != MPI_SUCCESS)
            return rc;
        if ((rc = PMPI_Barrier(st->dup)) != MPI_SUCCESS)
            return rc;
        aapc_trace_event(st, AAPC_TR_BARRIER_DONE, st->next_barrier, -1);
        st->next_barrier += s->barrier_every;
    }
    return MPI_SUCCESS;
}

/* One phase p: recv entries [ri, rj), send entries [si, sj) (normally at most one each). */
static int aapc_phase(struct aapc_run *st, int ri, int rj, int si, int sj)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    for (int r = ri; r < rj; r++) /* dummy receives are posted when their phase starts */
        if (s->recv_peer[r] < 0 && (rc = aapc_post_recv_dummy(st, r)) != MPI_SUCCESS)
            return rc;
    if (si < sj && (rc = aapc_start_send(st, si)) != MPI_SUCCESS) /* step 1 */
        return rc;
    if (s->sync_kind == AAPC_SYNC_RECEIVER) { /* step 2 */
        for (int r = ri; r < rj; r++) {
            MPI_Request *req = s->recv_peer[r] >= 0 ? &st->rreq[r - st->r0] : &st->dreq;
            if ((rc = aapc_wait(st, 1, req)) != MPI_SUCCESS)
                return rc;
            if (s->recv_peer[r] < 0)
                aapc_trace_event(st, AAPC_TR_RECV_DONE, s->recv_phase[r], s->recv_peer[r]);
            if (s->fire_off != NULL && (rc = aapc_fire(st, r)) != MPI_SUCCESS)
                return rc;
        }
    }
    for (int e = si; e < sj; e++) {
        if (e > si && (rc = aapc_start_send(st, e)) != MPI_SUCCESS)
            return rc;
        if ((rc = aapc_wait(st, 1, &st->sreq)) != MPI_SUCCESS) /* step 3 */
            return rc;
        aapc_trace_event(st, AAPC_TR_SEND_DONE, s->send_phase[e], s->send_peer[e]);
        if (s->sync_kind == AAPC_SYNC_SENDER && s->fire_off != NULL &&
            (rc = aapc_fire(st, e)) != MPI_SUCCESS) /* step 4 */
            return rc;
    }
    return MPI_SUCCESS;
}

static int aapc_dense_at(MPI_Datatype t, int depth);

/* Whether the blocks (blocklens[i] elements of types[i] at byte displacement displs[i]) follow
   each other in order, each of dense elements: the type map is then the bytes 0, 1, 2, ... */
static int aapc_blocks_in_order(int n, const int *blocklens, const MPI_Aint *displs,
                                const MPI_Datatype *types, int depth)
{
    MPI_Aint at = 0;
    for (int i = 0; i < n; i++) {
        int64_t size = 0;
        if (blocklens[i] == 0)
            continue;
        if (displs[i] != at || !aapc_dense_at(types[i], depth + 1) ||
            aapc_type_size(types[i], &size) != MPI_SUCCESS)
            return 0;
        at += (MPI_Aint)blocklens[i] * (MPI_Aint)size;
    }
    return 1;
}

/* Whether the type map of t runs through its bytes in order (from its constructor, through
   MPI_Type_get_contents; 0 for any constructor not read here). A type with no gaps can still
   permute its blocks (an indexed type of blocks {1, 0}): such a type is not memcpy-able. */
static int aapc_in_order(MPI_Datatype t, int depth)
{
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (depth > 16 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return 0;
    if (combiner == MPI_COMBINER_NAMED)
        return 1;
    int *ints = malloc(sizeof *ints * (size_t)(ni + 1));
    MPI_Aint *addrs = malloc(sizeof *addrs * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof *types * (size_t)(nd + 1));
    int n = 0, ok = 0;
    if (ints != NULL && addrs != NULL && types != NULL &&
        PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) == MPI_SUCCESS) {
        n = nd;
        MPI_Aint ext = 0, lb = 0;
        int64_t size = 0;
        int inner = nd >= 1 && PMPI_Type_get_extent(types[0], &lb, &ext) == MPI_SUCCESS &&
                    aapc_type_size(types[0], &size) == MPI_SUCCESS;
        int one = 1;
        MPI_Aint zero = 0;
        switch (combiner) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_CONTIGUOUS:
        case MPI_COMBINER_RESIZED: /* the outer lb and extent are checked by the caller */
            ok = inner && aapc_blocks_in_order(1, &one, &zero, types, depth);
            break;
        case MPI_COMBINER_VECTOR: /* count, blocklength, stride (in extents) */
            ok = inner && (ints[0] <= 1 || (MPI_Aint)ints[2] * ext == (MPI_Aint)ints[1] * size) &&
                 aapc_blocks_in_order(1, &one, &zero, types, depth);
            break;
        case MPI_COMBINER_HVECTOR: /* count, blocklength; stride in bytes */
            ok = inner && (ints[0] <= 1 || addrs[0] == (MPI_Aint)ints[1] * size) &&
                 aapc_blocks_in_order(1, &one, &zero, types, depth);
            break;
        default: { /* the block constructors: lengths and byte displacements */
            int count = ni >= 1 ? ints[0] : 0;
            int *lens = malloc(sizeof *lens * (size_t)(count + 1));
            MPI_Aint *displs = malloc(sizeof *displs * (size_t)(count + 1));
            MPI_Datatype *each = malloc(sizeof *each * (size_t)(count + 1));
            int h = combiner == MPI_COMBINER_HINDEXED || combiner == MPI_COMBINER_HINDEXED_BLOCK ||
                    combiner == MPI_COMBINER_STRUCT; /* displacements in bytes */
            int same = combiner == MPI_COMBINER_INDEXED_BLOCK ||
                       combiner == MPI_COMBINER_HINDEXED_BLOCK; /* one block length */
            int known = inner && (h || same || combiner == MPI_COMBINER_INDEXED) && lens != NULL &&
                        displs != NULL && each != NULL;
            for (int i = 0; known && i < count; i++) {
                lens[i] = same ? ints[1] : ints[1 + i];
                displs[i] = h ? addrs[i] : (MPI_Aint)ints[(same ? 2 : 1 + count) + i] * ext;
                each[i] = combiner == MPI_COMBINER_STRUCT ? types[i] : types[0];
            }
            ok = known && aapc_blocks_in_order(count, lens, displs, each, depth);
            free(lens);
            free(displs);
            free(each);
        }
        }
    }
    for (int i = 0; i < n; i++) { /* the derived types get_contents returned */
        int a, b, c, k;
        if (PMPI_Type_get_envelope(types[i], &a, &b, &c, &k) == MPI_SUCCESS &&
            k != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
    free(ints);
    free(addrs);
    free(types);
    return ok;
}

static int aapc_dense_at(MPI_Datatype t, int depth)
{
    int64_t size;
    MPI_Aint lb, extent, tlb, textent;
    if (aapc_type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    return lb == 0 && tlb == 0 && extent == size && textent == size && aapc_in_order(t, depth);
}

/* Whether a datatype is plain bytes: no gaps, no offset, its type map in memory order (then
   blocks copy with memcpy). */
int aapc_dense(MPI_Datatype t)
{
    return aapc_dense_at(t, 0);
}

/* MPI_Pack (pack) or MPI_Unpack of k elements of `type` at `at`; at may be MPI_BOTTOM (NULL),
   which a library may refuse as a null buffer: the same data is then packed from a non-null
   base through a copy of the type shifted by minus that base's address. */
static int aapc_pack_piece(int pack, void *at, int k, MPI_Datatype type, char *packed, int len,
                           int *pos, MPI_Comm comm)
{
    if (at != NULL)
        return pack ? PMPI_Pack(at, k, type, packed, len, pos, comm)
                    : PMPI_Unpack(packed, len, pos, at, k, type, comm);
    char anchor[1] = {0}; /* only its address is used */
    MPI_Aint a = 0, disp;
    MPI_Datatype shifted;
    int rc = PMPI_Get_address(anchor, &a);
    disp = -a;
    if (rc != MPI_SUCCESS ||
        (rc = PMPI_Type_create_struct(1, &k, &disp, &type, &shifted)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Type_commit(&shifted)) == MPI_SUCCESS)
        rc = pack ? PMPI_Pack(anchor, 1, shifted, packed, len, pos, comm)
                  : PMPI_Unpack(packed, len, pos, anchor, 1, shifted, comm);
    PMPI_Type_free(&shifted);
    return rc;
}

int aapc_pack_bytes(int pack, void *buf, MPI_Aint n, MPI_Datatype type, MPI_Aint ext,
                    int64_t esize, char *bytes, MPI_Comm comm)
{
    if (esize > INT_MAX)
        return MPI_ERR_COUNT; /* one element does not fit MPI_Pack's int byte counts */
    MPI_Aint per = INT_MAX / (esize > 0 ? esize : 1);
    for (MPI_Aint e = 0; e < n; e += per) {
        int k = (int)(n - e < per ? n - e : per), len = (int)(k * esize), pos = 0, rc;
        rc = aapc_pack_piece(pack, aapc_at(buf, e * ext), k, type, bytes + e * esize, len, &pos,
                             comm);
        if (rc != MPI_SUCCESS)
            return rc;
        if (pos != len) /* the packed form is not the raw bytes, or the signatures differ */
            return MPI_ERR_TRUNCATE;
    }
    return MPI_SUCCESS;
}

/* Data receives are posted AAPC_PREPOST_WINDOW phases ahead of the rank's current phase
   (unset or 0: all at the start of the call). A window keeps the number of pending requests
   per rank small on very large communicators; any window >= 1 is deadlock-free because every
   rank posts its receives of phase p before it blocks in phase p, and sends complete in phase
   order. It is not the default: a send that finds no posted receive is held back (rendezvous)
   or buffered (eager), so a window couples the ranks' progress (in SimGrid, 256 ranks x 64 KiB
   no-sync: 9.04 s simulated with a window of 4 against 2.70 s with every receive posted). */
static int aapc_prepost_window(void)
{
    static int window = -1;
    if (window < 0) {
        const char *w = getenv("AAPC_PREPOST_WINDOW");
        window = w != NULL && atoi(w) > 0 ? atoi(w) : 0;
    }
    return window;
}

/* Post the data receives of phases < upto (all when upto is INT32_MAX). */
static int aapc_post_recvs(struct aapc_run *st, int32_t upto)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    for (; st->rposted < st->r1 && s->recv_phase[st->rposted] < upto; st->rposted++) {
        int r = st->rposted;
        int32_t peer = s->recv_peer[r];
        if (peer < 0)
            continue;
        int src = aapc_rank(st, peer);
        if (st->vmode)
            rc = aapc_irecv_piece(st, r, src, &st->rreq[r - st->r0]);
        else
            rc = PMPI_Irecv(aapc_at(st->rbuf, aapc_block(st, peer, src) * st->rblock), st->rcount,
                            st->rtype, src,
                            AAPC_TAG_DATA, st->dup, &st->rreq[r - st->r0]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Pre-post the data receives (all, or the first window) and every sync receive. Sets
   *self_in_schedule. */
static int aapc_prepost(struct aapc_run *st, int *self_in_schedule)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    for (int r = st->r0; r < st->r1; r++)
        if (s->recv_peer[r] == st->m)
            *self_in_schedule = 1;
    st->rposted = st->r0;
    st->prepost = aapc_prepost_window();
    int32_t first = st->r0 < st->r1 ? s->recv_phase[st->r0] : 0;
    if (st->s0 < st->s1 && s->send_phase[st->s0] < first)
        first = s->send_phase[st->s0];
    if ((rc = aapc_post_recvs(st, st->prepost ? first + st->prepost : INT32_MAX)) != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < st->y1 - st->y0; i++) {
        rc = PMPI_Irecv(aapc_zero, 0, MPI_BYTE, aapc_rank(st, s->syncin_peer[st->y0 + i]),
                        AAPC_TAG_SYNC, st->dup, &st->yreq[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* The phase loop: phases of machine m in order, barriers at block boundaries. */
static int aapc_phase_loop(struct aapc_run *st)
{
    const aapc_schedule_t *s = st->s;
    int si = st->s0, ri = st->r0, rc;
    while (si < st->s1 || ri < st->r1) {
        int32_t p = INT32_MAX;
        if (si < st->s1)
            p = s->send_phase[si];
        if (ri < st->r1 && s->recv_phase[ri] < p)
            p = s->recv_phase[ri];
        if ((rc = aapc_barriers_through(st, p - 1)) != MPI_SUCCESS)
            return rc;
        if (st->prepost && (rc = aapc_post_recvs(st, p + st->prepost)) != MPI_SUCCESS)
            return rc;
        int rj = ri, sj = si;
        while (rj < st->r1 && s->recv_phase[rj] == p)
            rj++;
        while (sj < st->s1 && s->send_phase[sj] == p)
            sj++;
        if ((rc = aapc_phase(st, ri, rj, si, sj)) != MPI_SUCCESS)
            return rc;
        ri = rj;
        si = sj;
        if ((rc = aapc_barriers_through(st, p)) != MPI_SUCCESS)
            return rc;
    }
    return aapc_barriers_through(st, s->nphases - 1); /* same barrier count on every rank */
}

/* Windowed calls (s->window = w > 1): the receives (receiver-based) and sends whose syncs are
   still to fire, in entry order, are st->rdone.. and st->sdone..; fire those at the front that
   have completed. */
static int aapc_fire_completed(struct aapc_run *st, int sent)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    if (s->sync_kind == AAPC_SYNC_RECEIVER) {
        for (; st->rdone < st->rposted && st->rreq[st->rdone - st->r0] == MPI_REQUEST_NULL;
             st->rdone++)
            if (s->fire_off != NULL && (rc = aapc_fire(st, st->rdone)) != MPI_SUCCESS)
                return rc;
    }
    for (; st->sdone < sent && st->wsreq[st->sdone - st->s0] == MPI_REQUEST_NULL; st->sdone++) {
        aapc_trace_event(st, AAPC_TR_SEND_DONE, s->send_phase[st->sdone], s->send_peer[st->sdone]);
        if (s->sync_kind == AAPC_SYNC_SENDER && s->fire_off != NULL &&
            (rc = aapc_fire(st, st->sdone)) != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Windowed calls: wait until *target completes, and meanwhile fire the syncs of the receive
   and the send at the front of the queues (above) as soon as each completes, so a sync leaves
   when its event happens, not when the rank next needs it. One wait on at most three requests
   (their handles copied in and back): MPI_Waitany under SimGrid (where a failed test costs
   simulated time), else tests with short naps: 1 us (about 60 us with Linux's default timer
   slack), 20 us from the 256th test, or, when longer, 1/16 of the time waited so far, up to
   1 ms (aapc_nap_cap_us: with the short naps throughout, 16 ranks on 2 cores waiting 2-5 ms
   for 32 KB blocks kept each rank about half of its time waiting for a CPU;
   docs/measurements/cpu-fairness.md). */
static int aapc_wait_firing(struct aapc_run *st, MPI_Request *target, int sent)
{
    int rc;
    double since = 0.0;
    for (int tries = 0;; tries++) {
        if ((rc = aapc_fire_completed(st, sent)) != MPI_SUCCESS)
            return rc;
        if (*target == MPI_REQUEST_NULL)
            return MPI_SUCCESS;
        MPI_Request *slot[3] = {target, NULL, NULL}, set[3];
        int n = 1, idx = MPI_UNDEFINED, flag = 1;
        if (st->s->sync_kind == AAPC_SYNC_RECEIVER && st->rdone < st->rposted &&
            &st->rreq[st->rdone - st->r0] != target)
            slot[n++] = &st->rreq[st->rdone - st->r0];
        if (st->sdone < sent && &st->wsreq[st->sdone - st->s0] != target)
            slot[n++] = &st->wsreq[st->sdone - st->s0];
        /* the copies are the only live handles until written back: nothing else (no trace
           poll) may touch these requests in between */
        for (int i = 0; i < n; i++)
            set[i] = *slot[i];
#ifdef SMPI_SHARED_MALLOC
        rc = PMPI_Waitany(n, set, &idx, MPI_STATUS_IGNORE);
#else
        rc = PMPI_Testany(n, set, &idx, &flag, MPI_STATUS_IGNORE);
#endif
        for (int i = 0; i < n; i++)
            *slot[i] = set[i];
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag) {
            aapc_trace_poll(st); /* stamps receives completing meanwhile (traced calls) */
            if (tries == 64)
                since = aapc_clock_us();
            if (tries >= 64) /* 1 us, 20 us from the 256th test, or 1/16 of the wait so far */
                aapc_nap_us(aapc_nap_cap_us(aapc_clock_us() - since, tries < 256 ? 1 : 20));
            continue;
        }
        if (idx != MPI_UNDEFINED)
            aapc_trace_stamp(st, slot[idx]);
    }
}

/* Windowed calls: complete (and fire) the receives (receiver-based) and sends of phases
   <= upto, in entry order. */
static int aapc_retire(struct aapc_run *st, int64_t upto, int sent)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    if (s->sync_kind == AAPC_SYNC_RECEIVER) {
        while (st->rdone < st->r1 && s->recv_phase[st->rdone] <= upto) {
            if (st->rdone >= st->rposted)
                return MPI_ERR_INTERN; /* a receive not yet posted (the caller posts first) */
            if ((rc = aapc_wait_firing(st, &st->rreq[st->rdone - st->r0], sent)) != MPI_SUCCESS)
                return rc;
        }
    }
    while (st->sdone < sent && s->send_phase[st->sdone] <= upto)
        if ((rc = aapc_wait_firing(st, &st->wsreq[st->sdone - st->s0], sent)) != MPI_SUCCESS)
            return rc;
    return MPI_SUCCESS;
}

/* The phase loop of a windowed call: before its send of phase q a rank completes (and fires)
   everything of phases <= q - w, then waits for the send's syncs; up to w sends in flight. */
static int aapc_window_loop(struct aapc_run *st)
{
    const aapc_schedule_t *s = st->s;
    int rc;
    st->sdone = st->s0;
    st->rdone = st->r0;
    for (int e = st->s0; e < st->s1; e++) {
        int64_t q = s->send_phase[e];
        if (st->prepost && (rc = aapc_post_recvs(st, (int32_t)(q + st->prepost))) != MPI_SUCCESS)
            return rc;
        if ((rc = aapc_retire(st, q - s->window, e)) != MPI_SUCCESS ||
            (rc = aapc_start_send(st, e)) != MPI_SUCCESS)
            return rc;
    }
    if ((rc = aapc_post_recvs(st, INT32_MAX)) != MPI_SUCCESS)
        return rc;
    return aapc_retire(st, INT64_MAX, st->s1);
}

/* After an error: cancel what is still posted so no request outlives the call. */
static void aapc_abandon(struct aapc_run *st)
{
    int nr = st->r1 - st->r0, ny = st->y1 - st->y0;
    MPI_Request *recvs[2] = {st->rreq, st->yreq};
    int counts[2] = {nr, ny};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < counts[k]; i++) {
            if (recvs[k][i] != MPI_REQUEST_NULL) {
                PMPI_Cancel(&recvs[k][i]);
                PMPI_Wait(&recvs[k][i], MPI_STATUS_IGNORE);
            }
        }
    }
    if (st->dreq != MPI_REQUEST_NULL) {
        PMPI_Cancel(&st->dreq);
        PMPI_Wait(&st->dreq, MPI_STATUS_IGNORE);
    }
    PMPI_Wait(&st->sreq, MPI_STATUS_IGNORE);
    if (st->wsreq != NULL)
        PMPI_Waitall(st->s1 - st->s0, st->wsreq, aapc_statuses_ignore());
    PMPI_Waitall(st->nfired, st->freq, aapc_statuses_ignore());
}

static int aapc_check_rows(const struct aapc_run *st)
{
    const aapc_schedule_t *s = st->s;
    for (int e = st->s0; e < st->s1; e++)
        if (!aapc_peer_ok(s, s->send_peer[e]) || (st->vmode && s->send_peer[e] < 0))
            return 0;
    for (int r = st->r0; r < st->r1; r++)
        if (!aapc_peer_ok(s, s->recv_peer[r]) || (st->vmode && s->recv_peer[r] < 0))
            return 0;
    for (int i = st->y0; i < st->y1; i++)
        if (s->syncin_peer[i] < 0 || s->syncin_peer[i] >= s->nmachines)
            return 0;
    return 1;
}

/* The local copy without a message, sdense and rdense saying which side is plain bytes (not
   both): 1 done, 0 not (see aapc_local_copy). */
static int aapc_copy_packed(const void *src, int scount, MPI_Datatype stype, int64_t ssize,
                            int sdense, void *dst, int rcount, MPI_Datatype rtype, int64_t rsize,
                            int rdense, MPI_Comm comm)
{
    int64_t bytes = ssize * scount;
    MPI_Aint lb = 0, sext = 0, rext = 0;
    if (bytes != rsize * rcount || (!sdense && !rdense && bytes > AAPC_LOCAL_COPY_STAGE_MAX) ||
        PMPI_Type_get_extent(stype, &lb, &sext) != MPI_SUCCESS ||
        PMPI_Type_get_extent(rtype, &lb, &rext) != MPI_SUCCESS)
        return 0;
    char *stage = sdense ? (char *)src : rdense ? (char *)dst : malloc((size_t)bytes);
    if (stage == NULL)
        return 0;
    int rc = MPI_SUCCESS;
    if (!sdense)
        rc = aapc_pack_bytes(1, (void *)src, scount, stype, sext, ssize, stage, comm);
    if (rc == MPI_SUCCESS && !rdense)
        rc = aapc_pack_bytes(0, dst, rcount, rtype, rext, rsize, stage, comm);
    if (stage != src && stage != dst)
        free(stage);
    return rc == MPI_SUCCESS;
}

int aapc_local_copy(const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                    MPI_Datatype rtype, MPI_Comm comm, int me, int tag)
{
    int64_t ssize = 0, rsize = 0;
    int rc;
    if (scount == 0 && rcount == 0)
        return MPI_SUCCESS;
    if (scount < 0 || rcount < 0 || (rc = aapc_type_size(stype, &ssize)) != MPI_SUCCESS ||
        (rc = aapc_type_size(rtype, &rsize)) != MPI_SUCCESS)
        return PMPI_Sendrecv(src, scount, stype, me, tag, dst, rcount, rtype, me, tag, comm,
                             MPI_STATUS_IGNORE); /* the library reports the mistake */
    int sdense = aapc_dense(stype), rdense = aapc_dense(rtype);
    if (sdense && rdense) {
        if (ssize * scount > rsize * rcount)
            return MPI_ERR_TRUNCATE;
        if (scount > 0 && src != dst)
            memcpy(dst, src, (size_t)ssize * (size_t)scount);
        return MPI_SUCCESS;
    }
    if (aapc_copy_packed(src, scount, stype, ssize, sdense, dst, rcount, rtype, rsize, rdense,
                         comm))
        return MPI_SUCCESS;
    return PMPI_Sendrecv(src, scount, stype, me, tag, dst, rcount, rtype, me, tag, comm,
                         MPI_STATUS_IGNORE);
}

/* The rank's own block. */
static int aapc_copy_own(struct aapc_run *st, int me)
{
    MPI_Aint own = aapc_block(st, st->m, me);
    const char *sb = aapc_at(st->sbuf, own * st->sblock);
    char *rb = aapc_at(st->rbuf, own * st->rblock);
    int sc = st->scount, rcnt = st->rcount;
    if (st->vmode) {
        sb = aapc_at(st->sbuf, (MPI_Aint)st->sdispls[me] * st->sext);
        rb = aapc_at(st->rbuf, (MPI_Aint)st->rdispls[me] * st->rext);
        sc = st->scounts[me];
        rcnt = st->rcounts[me];
    }
    return aapc_local_copy(sb, sc, st->stype, rb, rcnt, st->rtype, st->dup, me, AAPC_TAG_SELF);
}

/* Run machine m's rows; buffers and counts already resolved in *st. */
int aapc_alltoall_block(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                        MPI_Datatype recvtype, MPI_Aint *bytes, int64_t *ssize)
{
    int rc;
    int64_t rsize = 0;
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))
        return MPI_ERR_COUNT;
    if ((rc = aapc_type_size(recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE)
        *ssize = rsize;
    else if ((rc = aapc_type_size(sendtype, ssize)) != MPI_SUCCESS)
        return rc;
    *bytes = (MPI_Aint)(sendbuf == MPI_IN_PLACE ? recvcount : sendcount) * *ssize;
    return MPI_SUCCESS;
}

int aapc_execute(struct aapc_run *st, int myrank, MPI_Aint bytes)
{
    const aapc_schedule_t *s = st->s;
    int rc = MPI_SUCCESS, self_in_schedule = 0, has_dummy = 0;
    MPI_Request *reqs = NULL;

    st->trace = NULL;
    st->s0 = s->send_off[st->m];
    st->s1 = s->send_off[st->m + 1];
    st->r0 = s->recv_off[st->m];
    st->r1 = s->recv_off[st->m + 1];
    st->y0 = s->syncin_off ? s->syncin_off[st->m] : 0;
    st->y1 = s->syncin_off ? s->syncin_off[st->m + 1] : 0;
    st->nfire = 0;
    if (s->fire_off != NULL && s->sync_kind == AAPC_SYNC_SENDER)
        st->nfire = s->fire_off[st->s1] - s->fire_off[st->s0];
    else if (s->fire_off != NULL && s->sync_kind == AAPC_SYNC_RECEIVER)
        st->nfire = s->fire_off[st->r1] - s->fire_off[st->r0];
    st->nfired = 0;
    st->rdone = st->r0;
    st->next_barrier = s->barrier_every > 0 ? s->barrier_every - 1 : INT_MAX;
    st->sreq = st->dreq = MPI_REQUEST_NULL;
    st->wsreq = NULL;
    st->dtype = MPI_BYTE;
    if (!aapc_check_rows(st))
        return MPI_ERR_INTERN;

    for (int e = st->s0; e < st->s1 && !has_dummy; e++)
        has_dummy = s->send_peer[e] < 0;
    for (int r = st->r0; r < st->r1 && !has_dummy; r++)
        has_dummy = s->recv_peer[r] < 0;
    if (has_dummy) { /* send half stays zero; receive half is overwritten */
        char *scratch = aapc_comm_scratch(&st->info, 2 * (size_t)bytes);
        if (scratch == NULL)
            return MPI_ERR_NO_MEM;
        st->dsend = scratch;
        st->drecv = scratch + bytes;
        /* a byte count beyond an int: one element of a type of `bytes` bytes */
        if ((rc = aapc_bytes_type(bytes, &st->dtype, &st->dcount)) != MPI_SUCCESS) {
            st->dtype = MPI_BYTE;
            return rc;
        }
    }

    int windowed = s->window > 1;
    if (windowed && (s->barrier_every > 0 || has_dummy))
        return MPI_ERR_INTERN; /* windows are generated only without barriers and dummies */
    size_t nreq = (size_t)(st->r1 - st->r0) + (size_t)(st->y1 - st->y0) + (size_t)st->nfire +
                  (windowed ? (size_t)(st->s1 - st->s0) : 0);
    reqs = malloc((nreq ? nreq : 1) * sizeof *reqs);
    if (reqs == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (size_t i = 0; i < nreq; i++)
        reqs[i] = MPI_REQUEST_NULL;
    st->rreq = reqs;
    st->yreq = st->rreq + (st->r1 - st->r0);
    st->freq = st->yreq + (st->y1 - st->y0);
    st->wsreq = windowed ? st->freq + st->nfire : NULL;
    st->rposted = st->r0;
    aapc_trace_begin(st, bytes);

    if ((rc = aapc_prepost(st, &self_in_schedule)) != MPI_SUCCESS ||
        (rc = windowed ? aapc_window_loop(st) : aapc_phase_loop(st)) != MPI_SUCCESS)
        goto fail;
    if (!self_in_schedule && (rc = aapc_copy_own(st, myrank)) != MPI_SUCCESS)
        goto fail;
    if ((rc = aapc_wait(st, (int)(st->r1 - st->r0), st->rreq)) != MPI_SUCCESS ||
        (rc = aapc_dummy_wait(st)) != MPI_SUCCESS ||
        (rc = aapc_wait(st, (int)(st->y1 - st->y0), st->yreq)) != MPI_SUCCESS ||
        (rc = aapc_wait(st, st->nfired, st->freq)) != MPI_SUCCESS)
        goto fail;
    rc = aapc_trace_end(st, myrank);
    goto out;
fail:
    aapc_trace_drop(st);
    aapc_abandon(st);
out:
    free(reqs);
    if (st->dtype != MPI_BYTE)
        PMPI_Type_free(&st->dtype);
    return rc;
}

