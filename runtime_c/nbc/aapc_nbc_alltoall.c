/*
 * aapc_nbc_alltoall.c: MPI_Ialltoall and MPI_Alltoall_init: the choice of way and the request.
 *
 * Algorithm. Both calls must be local (they may not wait for other ranks), so the steps that
 * the blocking routine takes collectively are taken here without waiting:
 *   1. the communicator's machines (common/aapc_cluster_comm.c): on its first use by a
 *      non-blocking call, MPI_Comm_idup and MPI_Iallgather are posted on it (in this call's
 *      place in the collective order, the same on every rank) and completed later;
 *   2. the way, the same on every rank: the cost model's choice between the MPI library's
 *      routine and the contention-free phases (cluster/aapc_cluster_select.c; AAPC_WAY=library
 *      or phases forces it), from the block size and the job's shape. The aggregated ways of the
 *      blocking routine (leaders, log-round) are not non-blocking here: where the model picks
 *      one, the library's routine runs;
 *   3. the library's way returns the library's own request (nothing of ours stays in the call);
 *      the phases' way makes a request of ours (aapc_nbc_request.c) that runs this rank's
 *      run-time rows with the test-driven executor (aapc_nbc_exec.c) on the private duplicate,
 *      with tags of its own (3 per call: a counter per communicator, the same on every rank),
 *      so several calls in flight on one communicator, and the blocking routine's traffic,
 *      never match each other's messages.
 * When step 1 is still under way (the first non-blocking call on a communicator):
 *   - MPI_Ialltoall hands this call to the library (PMPI_Ialltoall posted after the gather)
 *     inside a request of ours that also completes the gather; the report names the cause.
 *     A later call finds the gather complete, or waits for it (every rank posted it, so the
 *     wait needs only the other ranks' progress);
 *   - MPI_Alltoall_init posts the library's persistent request as well, and its first MPI_Start
 *     completes the gather and decides the way for good: every later MPI_Start costs no
 *     scheduling (the phases' run: post the receives, copy the own block).
 * Arguments are checked locally (counts, types); a rank whose block differs from its peer's is
 * caught where the message arrives (MPI_ERR_TRUNCATE or a short block: an error, never a
 * silently short result). MPI_IN_PLACE copies the receive span aside at each start.
 * Cost: the library's way: one attribute lookup and the model's choice; the phases' way: the
 * executor's P (alpha + n beta) plus the progress the application's completion calls give it.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alias.h"
#include "aapc_alltoall_cluster.h"
#include "aapc_args.h"
#include "aapc_cluster_comm.h"
#include "aapc_mpi.h"
#include "aapc_nbc.h"
#include "aapc_report.h"
#include "aapc_settings.h"

/* Tags of the calls of ours on a private duplicate: 3 per call, in slots that cycle. */


static _Atomic long long begun[2];

void aapc_nbc_ways_begun(long long counts[2])
{
    counts[0] = atomic_load(&begun[0]);
    counts[1] = atomic_load(&begun[1]);
}

struct call {
    const aapc_cluster_t *cl;
    int sync;
    const char *name;
    MPI_Comm comm;
    aapc_cluster_comm_t *cc;
    const void *sendbuf;
    void *recvbuf;
    int sendcount, recvcount;
    MPI_Datatype sendtype, recvtype; /* held (aapc_nbc_type_hold) */
    MPI_Datatype user_sendtype, user_recvtype;
    int persistent, tag, way; /* way: -1 undecided, else AAPC_WAY_LIBRARY or _PHASES */
    MPI_Request lib;          /* the library's request (a run, or the persistent one) */
    int exec_ready;
    aapc_nbexec_t ex;
    char *inplace;            /* MPI_IN_PLACE: the receive span, copied aside per run */
};

/* Step 2 on a communicator whose machines are known; *why: the cause when the library runs. */
static int choose(struct call *c, const char **why, int *by_size)
{
    aapc_cluster_comm_t *cc = c->cc;
    int nomem = 0;
    *why = NULL;
    *by_size = 0;
    if (!cc->all_known) {
        *why = aapc_cluster_comm_why(cc);
        return AAPC_WAY_LIBRARY;
    }
    if (cc->family != NULL) {
        *why = "a recorded sibling (the siblings' union runs in blocking calls only)";
        return AAPC_WAY_LIBRARY;
    }
    if (c->sync == AAPC_VSYNC_BARRIER) {
        *why = "the default routine synchronises with barriers (blocking calls only)";
        return AAPC_WAY_LIBRARY;
    }
    if (aapc_args_always(c->comm)) {
        *why = "AAPC_AGREE=always (a non-blocking call may not wait to agree on its way)";
        return AAPC_WAY_LIBRARY;
    }
    const aapc_job_shape_t *shape = aapc_cluster_comm_shape(cc, &nomem);
    long long b = aapc_block_bytes(c->recvcount, c->recvtype);
    if (shape == NULL || b < 0) {
        *why = "the job's shape or the block is not known";
        return AAPC_WAY_LIBRARY;
    }
    int forced = cc->settings_agreed ? aapc_way_env(NULL) : -1;
    unsigned ways = (1u << AAPC_WAY_LIBRARY) | (1u << AAPC_WAY_PHASES) | AAPC_WAYS_NO_WINDOWS;
    int way = forced == AAPC_WAY_LIBRARY || forced == AAPC_WAY_PHASES
                  ? forced
                  : aapc_way_choose(c->cl->model, shape, (double)b, ways);
    *by_size = way == AAPC_WAY_LIBRARY && forced != AAPC_WAY_LIBRARY;
    return way == AAPC_WAY_PHASES ? AAPC_WAY_PHASES : AAPC_WAY_LIBRARY;
}

/* The phases' rows on c's communicator; AAPC_WAY_LIBRARY when the run-time routine does not run
   there. */
static int prepare_phases(struct call *c, int *way)
{
    const aapc_schedule_t *s = NULL;
    aapc_comm_info_t info;
    int rc = aapc_alltoall_cluster_rows(c->cl, c->sync, c->name, c->comm, &s, &info);
    if (rc != MPI_SUCCESS)
        return rc;
    if (s == NULL) {
        *way = AAPC_WAY_LIBRARY;
        aapc_report_fallback(aapc_cluster_comm_why(c->cc));
        return MPI_SUCCESS;
    }
    if ((rc = aapc_nbexec_init(&c->ex, s, &info, c->tag)) != MPI_SUCCESS)
        return rc;
    aapc_args_private_returns(info.dup);
    c->exec_ready = 1;
    *way = AAPC_WAY_PHASES;
    return MPI_SUCCESS;
}

/* One run of the phases: buffers resolved (MPI_IN_PLACE: the span copied aside). */
static int start_phases(struct call *c)
{
    MPI_Aint lb, rext, sext, tlb, text;
    int rc, size = 0;
    long long bytes = aapc_block_bytes(c->recvcount, c->recvtype);
    if ((rc = PMPI_Comm_size(c->comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(c->recvtype, &lb, &rext)) != MPI_SUCCESS)
        return rc;
    const void *sbuf = c->sendbuf;
    int scount = c->sendcount;
    MPI_Datatype stype = c->sendtype;
    if (c->sendbuf == MPI_IN_PLACE) {
        MPI_Aint last = (MPI_Aint)size * c->recvcount - 1;
        if ((rc = PMPI_Type_get_true_extent(c->recvtype, &tlb, &text)) != MPI_SUCCESS)
            return rc;
        MPI_Aint lo = tlb + (rext < 0 ? last * rext : 0);
        MPI_Aint hi = tlb + text + (rext > 0 ? last * rext : 0);
        free(c->inplace);
        if ((c->inplace = malloc((size_t)(hi - lo) + 1)) == NULL)
            return MPI_ERR_NO_MEM;
        memcpy(c->inplace, aapc_at(c->recvbuf, lo), (size_t)(hi - lo));
        sbuf = aapc_at(c->inplace, -lo);
        scount = c->recvcount;
        stype = c->recvtype;
        sext = rext;
    } else if ((rc = PMPI_Type_get_extent(c->sendtype, &lb, &sext)) != MPI_SUCCESS) {
        return rc;
    }
    return aapc_nbexec_start(&c->ex, sbuf, scount, stype, (MPI_Aint)scount * sext, c->recvbuf,
                             c->recvcount, c->recvtype, (MPI_Aint)c->recvcount * rext, bytes);
}

static int op_start(void *ctx)
{
    struct call *c = ctx;
    int rc, done = 0;
    if (c->way < 0) { /* a persistent request's first start: the gather, then the way for good */
        const char *why = NULL;
        int by_size = 0;
        if ((rc = aapc_cluster_comm_adopt(c->cc, 1, &done)) != MPI_SUCCESS)
            return rc;
        c->way = choose(c, &why, &by_size);
        if (c->way == AAPC_WAY_PHASES && (rc = prepare_phases(c, &c->way)) != MPI_SUCCESS)
            return rc;
        atomic_fetch_add(&begun[c->way == AAPC_WAY_PHASES], 1);
    }
    if (c->way == AAPC_WAY_PHASES)
        return start_phases(c);
    if (c->persistent)
        return PMPI_Start(&c->lib);
    return MPI_SUCCESS; /* MPI_Ialltoall's library request was posted with the call */
}

static int op_progress(void *ctx, int *done)
{
    struct call *c = ctx;
    int rc, gathered = 1;
    *done = 0;
    if (c->cc->pending != NULL &&
        (rc = aapc_cluster_comm_adopt(c->cc, 0, &gathered)) != MPI_SUCCESS)
        return rc;
    if (c->way == AAPC_WAY_PHASES) {
        rc = aapc_nbexec_progress(&c->ex, done);
        if (rc != MPI_SUCCESS)
            aapc_nbexec_abandon(&c->ex);
        return rc;
    }
    int flag = 0;
    if ((rc = PMPI_Test(&c->lib, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
        return rc;
    *done = flag && gathered;
    return MPI_SUCCESS;
}

static void op_release(void *ctx)
{
    struct call *c = ctx;
    if (c->exec_ready)
        aapc_nbexec_free(&c->ex);
    if (c->lib != MPI_REQUEST_NULL)
        PMPI_Request_free(&c->lib);
    aapc_nbc_type_drop(&c->sendtype, c->user_sendtype);
    aapc_nbc_type_drop(&c->recvtype, c->user_recvtype);
    free(c->inplace);
    if (c->cc != NULL)
        aapc_cluster_comm_release(c->cc);
    free(c);
}

static const aapc_nbc_ops_t ops = {op_start, op_progress, op_release};

/* The library's call: the request it returns is the application's. */
static int library(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int persistent,
                   MPI_Info info, MPI_Request *request)
{
#ifdef AAPC_HAVE_PERSISTENT_COLL
    if (persistent)
        return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  info, request);
#else
    (void)info;
    if (persistent)
        return MPI_ERR_INTERN; /* no entry is made without the library's persistent calls */
#endif
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                          request);
}

/* Local checks of what this rank describes (the peers' descriptions meet at the messages). */
static int check_local(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                       MPI_Datatype recvtype)
{
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))
        return MPI_ERR_COUNT;
    if (aapc_block_bytes(recvcount, recvtype) < 0 ||
        (sendbuf != MPI_IN_PLACE && aapc_block_bytes(sendcount, sendtype) < 0))
        return MPI_ERR_TYPE;
    if (sendbuf != MPI_IN_PLACE &&
        aapc_block_bytes(sendcount, sendtype) != aapc_block_bytes(recvcount, recvtype))
        return MPI_ERR_TRUNCATE; /* a rank sends and receives blocks of one size */
    return MPI_SUCCESS;
}

/* A call begun with the library's routine: what the report says, and the count. */
static void handed(int by_size, const char *why)
{
    if (by_size)
        aapc_report_served("MPI library, chosen by size");
    else if (why != NULL)
        aapc_report_fallback(why);
    atomic_fetch_add(&begun[0], 1);
}

/* The call once the communicator's state is there (see aapc_nbc_alltoall). */
static int begin(const aapc_cluster_t *cluster, int sync, const char *name, const void *sendbuf,
                 int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, int persistent, MPI_Info info,
                 aapc_cluster_comm_t *cc, int posted, MPI_Request *request)
{
    int rc, by_size = 0, way = -1;
    const char *why = NULL;
    if ((rc = check_local(sendbuf, sendcount, sendtype, recvcount, recvtype)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc); /* the others would wait for this rank */
    if (!posted) { /* the machines are known: the way now, before any allocation */
        struct call probe = {.cl = cluster, .sync = sync, .comm = comm, .cc = cc,
                             .recvcount = recvcount, .recvtype = recvtype};
        if ((way = choose(&probe, &why, &by_size)) == AAPC_WAY_LIBRARY) {
            handed(by_size, why);
            return library(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           persistent, info, request);
        }
    }
    int tag = aapc_nbc_tag(cc);
    struct call *c = calloc(1, sizeof *c);
    if (c == NULL)
        return aapc_args_raise_alone(comm, MPI_ERR_NO_MEM);
    *c = (struct call){cluster, sync, name, comm, cc, sendbuf, recvbuf, sendcount, recvcount,
                       sendtype, recvtype, sendtype, recvtype, persistent, tag, -1,
                       MPI_REQUEST_NULL, 0, {0}, NULL};
    aapc_cluster_comm_hold(cc);
    if ((rc = aapc_nbc_type_hold(sendtype, &c->sendtype)) != MPI_SUCCESS ||
        (rc = aapc_nbc_type_hold(recvtype, &c->recvtype)) != MPI_SUCCESS) {
        op_release(c);
        return aapc_args_raise_alone(comm, rc);
    }
    if (!posted) { /* the phases (chosen above), or the library where they cannot run */
        c->way = way;
        if (c->way == AAPC_WAY_PHASES && (rc = prepare_phases(c, &c->way)) != MPI_SUCCESS) {
            op_release(c);
            return aapc_args_raise_alone(comm, rc);
        }
        if (c->way == AAPC_WAY_LIBRARY) {
            op_release(c);
            handed(by_size, why);
            return library(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           persistent, info, request);
        }
        atomic_fetch_add(&begun[1], 1);
        aapc_report_served("run-time, non-blocking");
    } else {
        /* the gather is under way: the library's request, posted now in the collective order */
        aapc_report_fallback("the communicator's machines are being gathered (its first "
                             "non-blocking call)");
        rc = library(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, persistent,
                     info, &c->lib);
        if (rc != MPI_SUCCESS) {
            op_release(c);
            return rc;
        }
        if (!persistent) {
            c->way = AAPC_WAY_LIBRARY;
            atomic_fetch_add(&begun[0], 1);
        } /* else decided at its first MPI_Start */
    }
    rc = aapc_nbc_request_make(&ops, c, comm, persistent, request);
    return rc == MPI_SUCCESS ? rc : aapc_args_raise_alone(comm, rc);
}

int aapc_nbc_alltoall(const aapc_cluster_t *cluster, int sync, const char *name,
                      const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int persistent,
                      MPI_Info info, const void *caller, MPI_Request *request)
{
    double t0 = aapc_report_begin();
    const char *coll = persistent ? "MPI_Alltoall_init" : "MPI_Ialltoall";
    aapc_cluster_comm_t *cc = NULL;
    int rc, posted = 0, size = 0;
    const char *why = NULL;
    long long sent = 0, b = aapc_block_bytes(recvcount, recvtype);
    int peers = 0; /* the remote group's size on an inter-communicator */
    if (comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        aapc_peers(comm, &peers) == MPI_SUCCESS && b > 0)
        sent = b * peers;
    int fortran = aapc_nbc_from_fortran(caller);
    int aliased = aapc_alias_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    if (sync < 0 || fortran || aliased ||
        (rc = aapc_cluster_comm_begin(cluster, comm, &cc, &posted, &why)) != MPI_SUCCESS ||
        cc == NULL) {
        aapc_report_fallback(sync < 0   ? "the default routine has no run-time schedule"
                             : fortran ? AAPC_NBC_FORTRAN_WHY
                             : aliased ? AAPC_ALIAS_WHY
                             : why     ? why
                                       : "not an intra-communicator the library can gather");
        atomic_fetch_add(&begun[0], 1);
        rc = library(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, persistent,
                     info, request);
    } else {
        rc = begin(cluster, sync, name, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                   recvtype, comm, persistent, info, cc, posted, request);
    }
    return aapc_report_entry(t0, coll, name, sent, comm, rc);
}
