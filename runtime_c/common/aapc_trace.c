/*
 * aapc_trace.c: the executor's time-line, written when $AAPC_TRACE names a file.
 *
 * Algorithm: during a call, every event of the rank (a send waiting for its syncs, posted,
 * completed; a data or sync receive completed; a sync fired; a barrier done) is appended to an
 * array with its MPI_Wtime. Receive completions are stamped by polling: while tracing, the
 * executor's waits test every pending data and sync receive (PMPI_Testsome) between tests of
 * what they wait for, so a completion is stamped within one poll of when MPI delivered it
 * (tracing therefore busy-polls: it shows where time goes, its own calls are slower). At the
 * end of the call rank 0 estimates every rank's clock offset with 4 ping-pongs each (the
 * round trip with the smallest delay, Cristian's method), and every rank appends its events to
 * $AAPC_TRACE.<comm>.<rank> (text: one header line per call, then "t,kind,phase,peer" lines;
 * the header gives the offset to add to this rank's times to read them on rank 0's clock, its
 * uncertainty offset_err (half the round trip the offset came from), and
 * the schedule's name with blanks written as '_'). <comm> names the communicator the executor
 * ran on, the same on all its ranks and different for every communicator of the job, so the
 * traces of several communicators never mix: "<leader>-<k>", the k-th communicator (from 0)
 * whose rank 0 is process <leader> (its MPI_COMM_WORLD rank; in an MPI sessions program
 * "h" and a hash of its host name and process id), sent to the others with one MPI_Bcast at
 * the first traced call on it; <rank> is the rank in that communicator, and calls are counted
 * per communicator.
 * Cost: O(events) memory per call, O(pending receives) per poll, 4(P-1) round trips at the
 * end of each traced call (after its data). Under SimGrid SMPI, where a failed MPI_Test costs
 * simulated time, the executor waits for its requests one by one as usual and stamps each when
 * its wait returns (aapc_trace_stamp): exact for what it waits on in order, late by up to the
 * preceding waits for the rest (the final wait for all receives).
 */
#include "aapc_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_exec.h"
#include "aapc_lock.h"
#include "aapc_mpi.h"

#include <unistd.h>

enum { AAPC_TAG_TRACE = 5, AAPC_TRACE_ROUNDS = 4, AAPC_TRACE_ID = 48 };

static const char *const kind_name[AAPC_TR_NKINDS] = {
    "sync_wait", "send_start", "send_done", "recv_done", "sync_in", "sync_fire", "barrier_done"};

struct aapc_trace_ev {
    double t;
    int kind, phase, peer;
};

struct aapc_trace {
    struct aapc_trace_ev *ev;
    size_t n, cap;
    int *ywait_phase; /* phase of the send waiting for each sync receive (-1: none) */
    double t0;
    MPI_Aint bytes;
};

static const char *trace_path(void)
{
    static int read = 0;
    static const char *path = NULL;
    if (!read) {
        const char *p = getenv("AAPC_TRACE");
        path = p != NULL && p[0] != '\0' ? p : NULL;
        read = 1;
    }
    return path;
}

int aapc_trace_enabled(void)
{
    return trace_path() != NULL;
}

void aapc_trace_begin(struct aapc_run *st, MPI_Aint bytes)
{
    st->trace = NULL;
    if (!aapc_trace_enabled())
        return;
    struct aapc_trace *tr = calloc(1, sizeof *tr);
    if (tr == NULL)
        return;
    int ny = st->y1 - st->y0;
    tr->ywait_phase = malloc((size_t)(ny > 0 ? ny : 1) * sizeof *tr->ywait_phase);
    tr->cap = 1024;
    tr->ev = malloc(tr->cap * sizeof *tr->ev);
    if (tr->ywait_phase == NULL || tr->ev == NULL) {
        free(tr->ywait_phase);
        free(tr->ev);
        free(tr);
        return;
    }
    const aapc_schedule_t *s = st->s;
    for (int i = 0; i < ny; i++)
        tr->ywait_phase[i] = -1;
    if (s->wait_off != NULL)
        for (int e = st->s0; e < st->s1; e++)
            for (int32_t k = s->wait_off[e]; k < s->wait_off[e + 1]; k++)
                if (s->wait_idx[k] >= 0 && s->wait_idx[k] < ny)
                    tr->ywait_phase[s->wait_idx[k]] = s->send_phase[e];
    tr->bytes = bytes;
    tr->t0 = PMPI_Wtime();
    st->trace = tr;
}

void aapc_trace_event(struct aapc_run *st, int kind, int phase, int peer)
{
    struct aapc_trace *tr = st->trace;
    if (tr == NULL)
        return;
    if (tr->n == tr->cap) {
        struct aapc_trace_ev *ev = realloc(tr->ev, 2 * tr->cap * sizeof *ev);
        if (ev == NULL)
            return; /* drop the event rather than fail the call */
        tr->ev = ev;
        tr->cap *= 2;
    }
    tr->ev[tr->n++] = (struct aapc_trace_ev){PMPI_Wtime(), kind, phase, peer};
}

/* Test reqs[0..n) and stamp those completing now (Testsome frees them). */
static void poll_some(struct aapc_run *st, MPI_Request *reqs, int n, int data)
{
    enum { CHUNK = 64 };
    int idx[CHUNK];
    for (int lo = 0; lo < n; lo += CHUNK) {
        int m = n - lo < CHUNK ? n - lo : CHUNK, out = 0;
        if (PMPI_Testsome(m, reqs + lo, &out, idx, aapc_statuses_ignore()) != MPI_SUCCESS ||
            out == MPI_UNDEFINED)
            continue;
        for (int k = 0; k < out; k++) {
            int i = lo + idx[k];
            if (data)
                aapc_trace_event(st, AAPC_TR_RECV_DONE, st->s->recv_phase[st->r0 + i],
                                 st->s->recv_peer[st->r0 + i]);
            else
                aapc_trace_event(st, AAPC_TR_SYNC_IN, st->trace->ywait_phase[i],
                                 st->s->syncin_peer[st->y0 + i]);
        }
    }
}

void aapc_trace_stamp(struct aapc_run *st, const MPI_Request *req)
{
    if (st->trace == NULL)
        return;
    if (req >= st->rreq && req < st->rreq + (st->r1 - st->r0)) {
        int r = st->r0 + (int)(req - st->rreq);
        aapc_trace_event(st, AAPC_TR_RECV_DONE, st->s->recv_phase[r], st->s->recv_peer[r]);
    } else if (req >= st->yreq && req < st->yreq + (st->y1 - st->y0)) {
        int i = (int)(req - st->yreq);
        aapc_trace_event(st, AAPC_TR_SYNC_IN, st->trace->ywait_phase[i],
                         st->s->syncin_peer[st->y0 + i]);
    }
}

int aapc_trace_test(struct aapc_run *st, int n, MPI_Request *reqs, int *done)
{
    enum { CHUNK = 64 };
    int idx[CHUNK];
    *done = 1;
    for (int lo = 0; lo < n; lo += CHUNK) {
        int m = n - lo < CHUNK ? n - lo : CHUNK, out = 0;
        int rc = PMPI_Testsome(m, reqs + lo, &out, idx, aapc_statuses_ignore());
        if (rc != MPI_SUCCESS)
            return rc;
        if (out == MPI_UNDEFINED)
            continue; /* all null */
        for (int k = 0; k < out; k++)
            aapc_trace_stamp(st, &reqs[lo + idx[k]]);
        for (int i = 0; i < m && *done; i++)
            *done = reqs[lo + i] == MPI_REQUEST_NULL;
    }
    return MPI_SUCCESS;
}

void aapc_trace_poll(struct aapc_run *st)
{
    if (st->trace == NULL)
        return;
    poll_some(st, st->rreq, st->rposted - st->r0, 1);
    poll_some(st, st->yreq, st->y1 - st->y0, 0);
}

/* Rank 0: the offset of rank r's clock (add it to r's times) and its uncertainty (half the
 * smallest round trip: the true offset lies within offset +- err). Rank r: answers, and is
 * sent both. */
static int clock_offsets(MPI_Comm comm, int myrank, double offset[2])
{
    int size, rc;
    double t;
    offset[0] = offset[1] = 0.0;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    if (myrank != 0) {
        for (int k = 0; k < AAPC_TRACE_ROUNDS; k++) {
            if ((rc = PMPI_Recv(&t, 1, MPI_DOUBLE, 0, AAPC_TAG_TRACE, comm,
                                MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                return rc;
            t = PMPI_Wtime();
            if ((rc = PMPI_Send(&t, 1, MPI_DOUBLE, 0, AAPC_TAG_TRACE, comm)) != MPI_SUCCESS)
                return rc;
        }
        return PMPI_Recv(offset, 2, MPI_DOUBLE, 0, AAPC_TAG_TRACE, comm, MPI_STATUS_IGNORE);
    }
    for (int r = 1; r < size; r++) {
        double best = -1.0, off[2] = {0.0, 0.0};
        for (int k = 0; k < AAPC_TRACE_ROUNDS; k++) {
            double t1 = PMPI_Wtime(), tr;
            if ((rc = PMPI_Send(&t1, 1, MPI_DOUBLE, r, AAPC_TAG_TRACE, comm)) != MPI_SUCCESS ||
                (rc = PMPI_Recv(&tr, 1, MPI_DOUBLE, r, AAPC_TAG_TRACE, comm,
                                MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                return rc;
            double t2 = PMPI_Wtime();
            if (best < 0 || t2 - t1 < best) {
                best = t2 - t1;
                off[0] = (t1 + t2) / 2 - tr;
                off[1] = best / 2;
            }
        }
        if ((rc = PMPI_Send(off, 2, MPI_DOUBLE, r, AAPC_TAG_TRACE, comm)) != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

void aapc_trace_drop(struct aapc_run *st)
{
    struct aapc_trace *tr = st->trace;
    if (tr == NULL)
        return;
    st->trace = NULL;
    free(tr->ev);
    free(tr->ywait_phase);
    free(tr);
}

/* A communicator's name in the trace files and its count of traced calls (an attribute of
   the executor's communicator, freed with it). */
struct trace_comm {
    char id[AAPC_TRACE_ID];
    long calls;
};

static aapc_mutex_t trace_lock = AAPC_MUTEX_INIT;
static int trace_keyval = MPI_KEYVAL_INVALID;

static int trace_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    free(attr);
    return MPI_SUCCESS;
}

/* This process as a leader: its MPI_COMM_WORLD rank, or in a sessions program a hash of its
   host name and process id. */
static void leader_name(char *out, size_t n)
{
    int wrank = 0;
    if (aapc_world_model() && PMPI_Comm_rank(MPI_COMM_WORLD, &wrank) == MPI_SUCCESS) {
        snprintf(out, n, "%d", wrank);
        return;
    }
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0;
    PMPI_Get_processor_name(host, &len);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ (uint64_t)getpid()) * 1099511628211ull;
    snprintf(out, n, "h%08x", (unsigned)(h ^ (h >> 32)));
}

/* The trace state of comm, named on its first traced call (collective: one MPI_Bcast). */
static int trace_comm_of(MPI_Comm comm, int myrank, struct trace_comm **out)
{
    static long led = 0; /* communicators this process named as their rank 0 */
    void *attr = NULL;
    int flag = 0, rc = MPI_SUCCESS;
    *out = NULL;
    rc = aapc_keyval_once(&trace_lock, &trace_keyval, trace_comm_delete);
    if (rc != MPI_SUCCESS || (rc = PMPI_Comm_get_attr(comm, trace_keyval, &attr, &flag)) !=
                                 MPI_SUCCESS)
        return rc;
    if (flag) {
        *out = attr;
        return MPI_SUCCESS;
    }
    struct trace_comm *tc = calloc(1, sizeof *tc);
    char id[AAPC_TRACE_ID] = "";
    if (myrank == 0) {
        char leader[32];
        leader_name(leader, sizeof leader);
        aapc_lock(&trace_lock);
        long k = led++;
        aapc_unlock(&trace_lock);
        snprintf(id, sizeof id, "%s-%ld", leader, k);
    }
    if ((rc = PMPI_Bcast(id, AAPC_TRACE_ID, MPI_CHAR, 0, comm)) != MPI_SUCCESS || tc == NULL) {
        free(tc);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    memcpy(tc->id, id, sizeof id);
    tc->id[AAPC_TRACE_ID - 1] = '\0';
    if ((rc = PMPI_Comm_set_attr(comm, trace_keyval, tc)) != MPI_SUCCESS) {
        free(tc);
        return rc;
    }
    *out = tc;
    return MPI_SUCCESS;
}

int aapc_trace_end(struct aapc_run *st, int myrank)
{
    struct aapc_trace *tr = st->trace;
    struct trace_comm *tc = NULL;
    if (tr == NULL)
        return MPI_SUCCESS;
    st->trace = NULL;
    double offset[2] = {0.0, 0.0}, t1 = PMPI_Wtime();
    int rc = trace_comm_of(st->dup, myrank, &tc);
    if (rc == MPI_SUCCESS)
        rc = clock_offsets(st->dup, myrank, offset);
    char name[4096], sched[256];
    snprintf(sched, sizeof sched, "%s", st->s->name != NULL ? st->s->name : "?");
    for (char *c = sched; *c; c++) /* the header is blank-separated key=value pairs */
        if (*c == ' ' || *c == '\t' || *c == '\n')
            *c = '_';
    FILE *f = NULL;
    if (tc != NULL) {
        snprintf(name, sizeof name, "%s.%s.%d", trace_path(), tc->id, myrank);
        f = fopen(name, "a");
    }
    if (f != NULL) {
        fprintf(f,
                "# aapc-trace 1 schedule=%s comm=%s call=%ld rank=%d machine=%d nphases=%d "
                "sync_kind=%d window=%d bytes=%lld t0=%.9f t1=%.9f offset=%.9f "
                "offset_err=%.9f\n",
                sched, tc->id, tc->calls, myrank, st->m, st->s->nphases, st->s->sync_kind,
                (int)st->s->window, (long long)tr->bytes, tr->t0, t1, offset[0], offset[1]);
        for (size_t i = 0; i < tr->n; i++)
            fprintf(f, "%.9f,%s,%d,%d\n", tr->ev[i].t, kind_name[tr->ev[i].kind], tr->ev[i].phase,
                    tr->ev[i].peer);
        fclose(f);
    }
    if (tc != NULL)
        tc->calls++;
    st->trace = tr;
    aapc_trace_drop(st);
    return rc;
}
