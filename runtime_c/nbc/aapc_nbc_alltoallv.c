/*
 * aapc_nbc_alltoallv.c: MPI_Ialltoallv and MPI_Alltoallv_init: the job tree's phases for the
 * call's byte matrix, or a linear exchange, decided when the counts are gathered.
 *
 * Algorithm. The way of an Alltoallv depends on every rank's counts (the busiest rank's
 * block, and the schedule itself), which no rank knows when the call begins, and the call must
 * not wait. So:
 *   1. the call posts MPI_Iallreduce (MAX) of four numbers on the user's communicator, in its
 *      place in the collective order (MPI_Alltoallv_init: once, at init; the counts of a
 *      persistent request do not change): the bytes it sends and receives beyond its own block,
 *      and whether its datatypes have gaps or its counts are not ints (the lowest such rank);
 *      and, on the communicator's first use, the gather of its machines (aapc_nbc_alltoall.c);
 *   2. when they have arrived (inside a completion call), every rank decides the same: the
 *      cost model's choice with the busiest rank's block (as the blocking level 1,
 *      alltoallv/aapc_alltoallv_cluster.c; AAPC_WAY forces it);
 *   3. only where that is the phases, the ranks send each other their rows of the byte matrix
 *      (point to point on the private duplicate, this call's fourth tag: a collective cannot be
 *      posted inside a completion call without breaking the collective order), the phases
 *      schedule the matrix on the job tree (aapc_alltoallv_cluster_plan: the level-1 program
 *      of the default routine, owned by the request) and run with the test-driven executor
 *      (aapc_nbc_exec.c: pieces of messages as bytes, dense types only);
 *   4. otherwise (the model picks the library, derived types with gaps, a rank on an unknown
 *      machine, the scheduler's refusal) a linear exchange: every receive and send posted at
 *      once on the private duplicate, which is the MPI libraries' own non-blocking algorithm
 *      (Open MPI's libnbc; MPICH's for up to its block of 32 pairs); a library call cannot be
 *      posted here, after the call has returned, without breaking the collective order.
 *   A persistent request decides once (its first MPI_Start) and keeps its schedule: later
 *   starts post the receives and take a first progress step, nothing else.
 * AAPC_WAY=library (a setting every rank shares) hands the call to the library's own
 * MPI_Ialltoallv / MPI_Alltoallv_init and nothing else happens here; so does a communicator,
 * gathered already, on whose shape the model gives the library every block size
 * (aapc_alltoallv_library_only: links faster than the machines', which MPI_Alltoallv's phases
 * do not use).
 * Cost: the agreement (lg N alpha, 32 bytes) per MPI_Ialltoallv, once per persistent request;
 * where the phases run, the rows (N - 1 messages of 8 N bytes each way, alpha + 8 N beta each
 * in flight at once) and scheduling as aapc_vsched_run per MPI_Ialltoallv (once per persistent
 * request), then the phases' sum over phases of (alpha + max piece bytes beta) plus syncs; or
 * the linear exchange's N - 1 messages at once.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alias.h"
#include "aapc_alltoall_rows.h" /* AAPC_VSYNC_BARRIER */
#include "aapc_alltoallv_cluster.h"
#include "aapc_args.h"
#include "aapc_cluster_comm.h"
#include "aapc_exec.h" /* aapc_dense */
#include "aapc_mpi.h"
#include "aapc_nbc.h"
#include "aapc_report.h"
#include "aapc_settings.h"

enum { UNDECIDED = -1, LINEAR = 0, PHASES = 1 };

/* What the ranks agree on (MAX over them): the bytes a rank sends and receives beyond its own
   block, and N - r for the lowest rank r whose datatypes have gaps or whose arguments are not
   int counts of one dense datatype (aapc_nbc.h's large-count entries); 0: none. */
enum { SENT, RECEIVED, GAPS_AT, NOT_INT_AT, AGREED };


static _Atomic long long decided[2];

void aapc_nbc_vways(long long counts[2])
{
    counts[0] = atomic_load(&decided[LINEAR]);
    counts[1] = atomic_load(&decided[PHASES]);
}

struct vcall {
    const aapc_vprog_t *prog;
    MPI_Comm comm;
    aapc_cluster_comm_t *cc;
    const void *sendbuf;
    void *recvbuf;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Datatype stype, rtype;
    int n, me, persistent, tag, way;
    long long *row, *m; /* this rank's row and the matrix (its rows, where the phases run) */
    double agree[AGREED];
    MPI_Request gather; /* the agreement */
    MPI_Request *rreq;  /* the rows: 2 n, from j at j, to j at n + j */
    aapc_vplan_t *plan;
    aapc_nbexec_t ex;
    int exec_ready;
    MPI_Request *lreq; /* the linear exchange: 2 n */
    char *inplace;
    aapc_nbc_owned_t *own; /* a large-count entry's arguments (aapc_nbc.h), or NULL */
    MPI_Datatype user_stype, user_rtype; /* stype and rtype are held (aapc_nbc_type_hold) */
};

/* MPI_IN_PLACE: the span of the receive blocks copied aside; the send side reads it. */
static int inplace_copy(struct vcall *c, const void **sbuf)
{
    MPI_Aint lb, ext, tlb, text, lo = 0, hi = 0;
    int rc, any = 0;
    if ((rc = PMPI_Type_get_extent(c->rtype, &lb, &ext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_true_extent(c->rtype, &tlb, &text)) != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < c->n; j++) {
        if (c->rcounts[j] <= 0)
            continue;
        MPI_Aint base = (MPI_Aint)c->rdispls[j] * ext, last = (MPI_Aint)(c->rcounts[j] - 1);
        MPI_Aint l = base + tlb + (ext < 0 ? last * ext : 0);
        MPI_Aint h = base + tlb + text + (ext > 0 ? last * ext : 0);
        lo = any && lo < l ? lo : l;
        hi = any && hi > h ? hi : h;
        any = 1;
    }
    free(c->inplace);
    if ((c->inplace = malloc((size_t)(hi - lo) + 1)) == NULL)
        return MPI_ERR_NO_MEM;
    if (any)
        memcpy(c->inplace, aapc_at(c->recvbuf, lo), (size_t)(hi - lo));
    *sbuf = aapc_at(c->inplace, -lo);
    return MPI_SUCCESS;
}

/* The linear exchange: every receive and send at once, the own block through the library. */
static int start_linear(struct vcall *c, const void *sbuf, const int *sc, const int *sd,
                        MPI_Datatype st)
{
    MPI_Aint lb, sext, rext;
    int rc;
    MPI_Comm dup = c->cc->dup;
    if ((rc = PMPI_Type_get_extent(st, &lb, &sext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(c->rtype, &lb, &rext)) != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < 2 * c->n; j++)
        c->lreq[j] = MPI_REQUEST_NULL;
    for (int j = 0; j < c->n; j++) {
        if (j == c->me)
            continue;
        if ((rc = PMPI_Irecv(aapc_at(c->recvbuf, (MPI_Aint)c->rdispls[j] * rext), c->rcounts[j],
                             c->rtype, j, c->tag, dup, &c->lreq[j])) != MPI_SUCCESS)
            return rc;
    }
    for (int k = 1; k < c->n; k++) { /* to me + 1, me + 2, ...: not every rank to rank 0 first */
        int j = (c->me + k) % c->n;
        if ((rc = PMPI_Isend(aapc_at(sbuf, (MPI_Aint)sd[j] * sext), sc[j], st, j, c->tag, dup,
                             &c->lreq[c->n + j])) != MPI_SUCCESS)
            return rc;
    }
    return aapc_local_copy(aapc_at(sbuf, (MPI_Aint)sd[c->me] * sext), sc[c->me], st,
                           aapc_at(c->recvbuf, (MPI_Aint)c->rdispls[c->me] * rext),
                           c->rcounts[c->me], c->rtype, dup, c->me, c->tag + 2);
}

/* One run, once the way is decided. */
static int run(struct vcall *c)
{
    const void *sbuf = c->sendbuf;
    const int *sc = c->scounts, *sd = c->sdispls;
    MPI_Datatype st = c->stype;
    int rc;
    if (c->sendbuf == MPI_IN_PLACE) {
        if ((rc = inplace_copy(c, &sbuf)) != MPI_SUCCESS)
            return rc;
        sc = c->rcounts;
        sd = c->rdispls;
        st = c->rtype;
    }
    if (c->way == PHASES)
        return aapc_nbexec_start_v(&c->ex, sbuf, sc, sd, st, c->recvbuf, c->rcounts, c->rdispls,
                                   c->rtype);
    if (c->own != NULL && c->own->linear != NULL) /* its arguments are not in int */
        return c->own->linear(c->own, c->cc->dup, c->tag, c->lreq);
    return start_linear(c, sbuf, sc, sd, st);
}

/* Why every rank takes the linear exchange whatever the sizes, from what they agreed (NULL:
   nothing stops the phases; *shape is then the job's shape); *nomem on a shortage. */
static const char *beyond_phases(struct vcall *c, char *text, size_t len,
                                 const aapc_job_shape_t **shape, int *nomem)
{
    aapc_cluster_comm_t *cc = c->cc;
    int gaps = c->n - (int)c->agree[GAPS_AT], not_int = c->n - (int)c->agree[NOT_INT_AT];
    if (c->agree[GAPS_AT] > 0) {
        snprintf(text, len,
                 "rank %d's datatypes have gaps (pieces of their messages travel packed only in "
                 "blocking calls)",
                 gaps);
        return text;
    }
    if (c->agree[NOT_INT_AT] > 0) {
        snprintf(text, len,
                 "rank %d's arguments are not int counts of one dense datatype (MPI_Ialltoallv_c, "
                 "MPI_Ialltoallw)",
                 not_int);
        return text;
    }
    *shape = cc->all_known ? aapc_cluster_comm_shape(cc, nomem) : NULL;
    if (!cc->all_known || *shape == NULL)
        return *nomem ? NULL : aapc_cluster_comm_why(cc);
    if (cc->family != NULL)
        return "a recorded sibling (the siblings' union runs in blocking calls only)";
    return NULL;
}

/* The rows of the byte matrix, point to point on the private duplicate (this call's fourth
   tag): every receive and send at once. */
static int post_rows(struct vcall *c)
{
    int rc = MPI_SUCCESS;
    size_t n = (size_t)c->n;
    if ((c->m = malloc(n * n * sizeof *c->m)) == NULL ||
        (c->rreq = malloc(2 * n * sizeof *c->rreq)) == NULL)
        return MPI_ERR_NO_MEM;
    for (size_t j = 0; j < 2 * n; j++)
        c->rreq[j] = MPI_REQUEST_NULL;
    memcpy(c->m + (size_t)c->me * n, c->row, n * sizeof *c->m);
    for (int j = 0; j < c->n && rc == MPI_SUCCESS; j++)
        if (j != c->me)
            rc = PMPI_Irecv(c->m + (size_t)j * n, c->n, MPI_LONG_LONG, j, c->tag + 3, c->cc->dup,
                            &c->rreq[j]);
    for (int k = 1; k < c->n && rc == MPI_SUCCESS; k++) {
        int j = (c->me + k) % c->n;
        rc = PMPI_Isend(c->row, c->n, MPI_LONG_LONG, j, c->tag + 3, c->cc->dup,
                        &c->rreq[n + (size_t)j]);
    }
    return rc;
}

/* Steps 2 and 3: the way, the same on every rank (from the same agreed numbers, rows and
   settings). Called when the agreement has arrived, and again when the rows have; *wait = 1
   while the rows are on their way. */
static int decide(struct vcall *c, int *wait)
{
    aapc_cluster_comm_t *cc = c->cc;
    char text[256] = "", beyond[160] = "";
    int rc, nomem = 0, way = LINEAR; /* c->way is set last: undecided until it all holds */
    const aapc_job_shape_t *shape = NULL;
    const char *why = beyond_phases(c, beyond, sizeof beyond, &shape, &nomem);
    *wait = 0;
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (why == NULL) {
        int forced = aapc_way_forced(aapc_setting(c->comm, "AAPC_WAY"));
        double most = c->agree[SENT] > c->agree[RECEIVED] ? c->agree[SENT] : c->agree[RECEIVED];
        double b = most / (c->n - 1);
        int choice = forced == AAPC_WAY_LIBRARY || forced == AAPC_WAY_PHASES
                         ? forced
                         : aapc_way_choose(c->prog->cluster->model, shape, b,
                                           (1u << AAPC_WAY_LIBRARY) | (1u << AAPC_WAY_PHASES) |
                                               AAPC_WAYS_NO_WINDOWS | AAPC_WAYS_ALLTOALLV);
        if (choice == AAPC_WAY_PHASES && c->plan == NULL && c->rreq == NULL) {
            *wait = 1; /* step 3: the rows first */
            return post_rows(c);
        }
        if (choice == AAPC_WAY_PHASES && c->plan == NULL) {
            for (int a = 0; a < c->n; a++) /* the diagonal is the local copy's */
                c->m[(size_t)a * (size_t)c->n + (size_t)a] = 0;
            if ((rc = aapc_alltoallv_cluster_plan(c->prog, cc, c->m, &c->plan, text,
                                                  sizeof text)) != MPI_SUCCESS)
                return rc;
            if (c->plan == NULL)
                why = text;
        }
        if (choice == AAPC_WAY_PHASES && c->plan != NULL) {
            aapc_comm_info_t info = {1, cc->dup, cc->rank, NULL, NULL, NULL, 0};
            if (!c->exec_ready &&
                (rc = aapc_nbexec_init(&c->ex, &c->plan->tab.sched, &info, c->tag)) != MPI_SUCCESS)
                return rc;
            c->exec_ready = 1;
            way = PHASES;
        }
    }
    if (why != NULL && why[0] != '\0')
        aapc_warn_fallback(cc->dup, c->prog->name, why,
                           "linear exchange (the MPI libraries' MPI_Ialltoallv algorithm)");
    if (way == LINEAR && c->lreq == NULL &&
        (c->lreq = malloc(2 * (size_t)c->n * sizeof *c->lreq)) == NULL)
        return MPI_ERR_NO_MEM;
    aapc_args_private_returns(cc->dup);
    c->way = way;
    atomic_fetch_add(&decided[way], 1);
    return MPI_SUCCESS;
}

static int op_start(void *ctx)
{
    struct vcall *c = ctx;
    return c->way != UNDECIDED ? run(c) : MPI_SUCCESS; /* else once the counts are gathered */
}

static int op_progress(void *ctx, int *done)
{
    struct vcall *c = ctx;
    int rc, flag = 1, settled = 1;
    *done = 0;
    if (c->way == UNDECIDED) { /* steps 1-2 */
        if (c->cc->pending != NULL &&
            (rc = aapc_cluster_comm_adopt(c->cc, 0, &settled)) != MPI_SUCCESS)
            return rc;
        if (c->rreq == NULL) { /* step 1's agreement */
            if ((rc = PMPI_Test(&c->gather, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                return rc;
        } else if ((rc = PMPI_Testall(2 * c->n, c->rreq, &flag, aapc_statuses_ignore())) !=
                   MPI_SUCCESS) { /* step 3's rows */
            return rc;
        }
        int wait = 0;
        if (!flag || !settled || (rc = decide(c, &wait)) != MPI_SUCCESS || wait)
            return rc;
        if ((rc = run(c)) != MPI_SUCCESS)
            return rc;
    }
    if (c->way == PHASES) {
        rc = aapc_nbexec_progress(&c->ex, done);
        if (rc != MPI_SUCCESS)
            aapc_nbexec_abandon(&c->ex);
        return rc;
    }
    return PMPI_Testall(2 * c->n, c->lreq, done, aapc_statuses_ignore());
}

static void op_release(void *ctx)
{
    struct vcall *c = ctx;
    if (c->gather != MPI_REQUEST_NULL) /* every rank posted it: it completes */
        PMPI_Wait(&c->gather, MPI_STATUS_IGNORE);
    if (c->rreq != NULL) /* every rank decided the same: they complete */
        PMPI_Waitall(2 * c->n, c->rreq, aapc_statuses_ignore());
    free(c->rreq);
    if (c->exec_ready)
        aapc_nbexec_free(&c->ex);
    aapc_alltoallv_plan_free(c->plan);
    free(c->lreq);
    free(c->row);
    free(c->m);
    free(c->inplace);
    aapc_nbc_type_drop(&c->stype, c->user_stype);
    aapc_nbc_type_drop(&c->rtype, c->user_rtype);
    if (c->cc != NULL)
        aapc_cluster_comm_release(c->cc);
    if (c->own != NULL)
        c->own->release(c->own);
    free(c);
}

static const aapc_nbc_ops_t ops = {op_start, op_progress, op_release};

static int library(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int persistent,
                   MPI_Info info, MPI_Request *request)
{
#ifdef AAPC_HAVE_PERSISTENT_COLL
    if (persistent)
        return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, info, request);
#else
    (void)info;
    if (persistent)
        return MPI_ERR_INTERN;
#endif
    return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                           recvtype, comm, request);
}

/* Local checks; the row of the byte matrix this rank sends, and the bytes it receives beyond
   its own block (me). */
static int check_row(const void *sendbuf, const int sendcounts[], MPI_Datatype sendtype,
                     const int recvcounts[], MPI_Datatype recvtype, int n, int me, long long *row,
                     double *received)
{
    int inplace = sendbuf == MPI_IN_PLACE;
    const int *sc = inplace ? recvcounts : sendcounts;
    MPI_Datatype st = inplace ? recvtype : sendtype;
    if (sc == NULL || recvcounts == NULL)
        return MPI_ERR_ARG;
    for (int j = 0; j < n; j++) {
        long long s = aapc_block_bytes(sc[j], st), r = aapc_block_bytes(recvcounts[j], recvtype);
        if (sc[j] < 0 || recvcounts[j] < 0)
            return MPI_ERR_COUNT;
        if (s < 0 || r < 0)
            return MPI_ERR_TYPE;
        row[j] = s;
        *received += j != me ? (double)r : 0;
    }
    return MPI_SUCCESS;
}

static int begin(const aapc_vprog_t *prog, const void *sendbuf, const int sendcounts[],
                 const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int persistent,
                 aapc_cluster_comm_t *cc, aapc_nbc_owned_t *own, MPI_Request *request)
{
    int rc, n = cc->size;
    struct vcall *c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (own != NULL)
            own->release(own);
        return aapc_args_raise_alone(comm, MPI_ERR_NO_MEM);
    }
    *c = (struct vcall){.prog = prog, .comm = comm, .cc = cc, .sendbuf = sendbuf,
                        .recvbuf = recvbuf, .scounts = sendcounts, .sdispls = sdispls,
                        .rcounts = recvcounts, .rdispls = rdispls, .stype = sendtype,
                        .rtype = recvtype, .n = n, .me = cc->rank, .persistent = persistent,
                        .tag = aapc_nbc_tag(cc), .way = UNDECIDED, .gather = MPI_REQUEST_NULL,
                        .own = own, .user_stype = sendtype, .user_rtype = recvtype};
    aapc_cluster_comm_hold(cc);
    c->row = malloc((size_t)n * sizeof *c->row);
    if (c->row == NULL)
        rc = MPI_ERR_NO_MEM;
    else
        rc = check_row(sendbuf, sendcounts, sendtype, recvcounts, recvtype, n, c->me, c->row,
                       &c->agree[RECEIVED]);
    if (rc == MPI_SUCCESS && (rc = aapc_nbc_type_hold(sendtype, &c->stype)) == MPI_SUCCESS)
        rc = aapc_nbc_type_hold(recvtype, &c->rtype);
    if (rc == MPI_SUCCESS && own != NULL && own->row != NULL) /* not said by the int arguments */
        memcpy(c->row, own->row, (size_t)n * sizeof *c->row);
    for (int j = 0; rc == MPI_SUCCESS && j < n; j++)
        c->agree[SENT] += j != c->me ? (double)c->row[j] : 0;
    /* datatypes with gaps are this rank's own finding; the way must be every rank's: it says so
       in the agreement, and every rank takes the linear exchange */
    int dense = aapc_dense(recvtype) && (sendbuf == MPI_IN_PLACE || aapc_dense(sendtype));
    c->agree[GAPS_AT] = dense ? 0 : n - c->me;
    c->agree[NOT_INT_AT] = own != NULL && own->linear != NULL ? n - c->me : 0;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Iallreduce(MPI_IN_PLACE, c->agree, AGREED, MPI_DOUBLE, MPI_MAX, comm,
                             &c->gather);
    if (rc != MPI_SUCCESS) {
        op_release(c);
        return aapc_args_raise_alone(comm, rc); /* the others would wait for this rank */
    }
    aapc_report_served("run-time, non-blocking, way from the agreed sizes");
    rc = aapc_nbc_request_make(&ops, c, comm, persistent, request);
    return rc == MPI_SUCCESS ? rc : aapc_args_raise_alone(comm, rc);
}

int aapc_nbc_alltoallv(const aapc_vprog_t *prog, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm, int persistent, MPI_Info info, const void *caller,
                       MPI_Request *request)
{
    double t0 = aapc_report_begin();
    aapc_nbc_owned_t *own = aapc_nbc_own_take();
    const char *coll = persistent ? "MPI_Alltoallv_init" : "MPI_Ialltoallv";
    const char *name = prog != NULL ? prog->name : "MPI library";
    aapc_cluster_comm_t *cc = NULL;
    int rc = MPI_SUCCESS, posted = 0, size = 0;
    const char *why = NULL;
    long long sent = 0;
    int peers = 0; /* the counts' length: the remote group's size on an inter-communicator */
    if (comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        aapc_peers(comm, &peers) == MPI_SUCCESS) {
        const int *sc = sendbuf == MPI_IN_PLACE ? recvcounts : sendcounts;
        MPI_Datatype st = sendbuf == MPI_IN_PLACE ? recvtype : sendtype;
        for (int j = 0; sc != NULL && j < peers; j++) {
            int64_t one = aapc_block_bytes(sc[j], st);
            sent += one > 0 ? one : 0;
        }
    }
    int fortran = aapc_nbc_from_fortran(caller);
    /* the large-count and Alltoallw entries judged their own arguments' aliasing */
    int aliased = own == NULL && aapc_alias_alltoallv(sendbuf, sendcounts, sendtype == recvtype,
                                                      recvbuf, recvcounts);
    int usable = prog != NULL && prog->cluster != NULL && prog->sync != AAPC_VSYNC_BARRIER &&
                 size >= 2 && !fortran && !aliased;
    if (usable)
        rc = aapc_cluster_comm_begin(prog->cluster, comm, &cc, &posted, &why);
    /* AAPC_WAY=library: only where every rank is known to share it (a gathered communicator) */
    int gathered = usable && rc == MPI_SUCCESS && cc != NULL && !posted && cc->pending == NULL &&
                   aapc_cluster_comm_agreed(comm) == 1;
    int forced = gathered ? aapc_way_forced(aapc_setting(comm, "AAPC_WAY")) : -1;
    int forced_library = gathered && forced == AAPC_WAY_LIBRARY;
    /* the library at every block size on this communicator: no agreement to wait for */
    int by_size = gathered && forced < 0 && aapc_alltoallv_library_only(cc, prog->cluster);
    if (!usable || rc != MPI_SUCCESS || cc == NULL || forced_library || by_size) {
        if (forced_library || by_size)
            aapc_report_served(by_size ? "MPI library, chosen by size" : "MPI library, forced");
        else
            aapc_report_fallback(fortran    ? AAPC_NBC_FORTRAN_WHY
                                 : aliased ? AAPC_ALIAS_WHY
                                 : !usable ? "no run-time Alltoallv routine for this call"
                                 : why     ? why
                                           : "not an intra-communicator the library can gather");
        if (own != NULL) { /* the large-count entry's own call: its arrays outlive it */
            rc = own->library(own, persistent, info, request);
            own->release(own);
        } else {
            rc = library(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                         recvtype, comm, persistent, info, request);
        }
    } else {
        rc = begin(prog, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                   recvtype, comm, persistent, cc, own, request);
    }
    return aapc_report_entry(t0, coll, name, sent, comm, rc);
}
