/*
 * aapc_nbc_request.c: requests of our own, completed by the application's usual calls.
 *
 * Algorithm: a request of ours is named by a handle of the MPI library that no other call returns:
 * a persistent receive from MPI_PROC_NULL on MPI_COMM_SELF, made and never started (so a handle
 * passed by mistake to the library is harmless), and freed with ours. The completion calls are
 * interposed: MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany,
 * MPI_Testsome, MPI_Request_get_status (and MPI 4.1's _all, _any and _some), MPI_Start,
 * MPI_Startall, MPI_Request_free and MPI_Cancel. With no request of ours alive in the process each
 * goes straight to the library (one load of a counter). Otherwise every call first advances every
 * active request of ours (each one's progress function: tests only, never a wait), then handles the
 * entries of its array: ours by their state, the library's through the same PMPI_ call on a copy of
 * the array in which ours are MPI_REQUEST_NULL (handles and statuses written back). A waiting call
 * repeats this with the waiting policy of common/aapc_wait.c (tests, then short naps) while any
 * request of ours is active, and otherwise hands the rest of the wait to the library's call, so one
 * MPI_Waitall completes ours and the application's together, and a wait on the application's own
 * request keeps ours moving.
 * The standard's rules: a completed request of ours returns an empty status (source
 * MPI_ANY_SOURCE, tag MPI_ANY_TAG, no elements, not cancelled; MPI_ERROR set only by the
 * calls with arrays of statuses); a non-persistent one becomes MPI_REQUEST_NULL, a persistent
 * one inactive (a wait or test on an inactive one returns at once with an empty status);
 * MPI_Start of an active request, MPI_Request_free of a request still running (one that
 * MPI_Request_get_status found finished may be freed, as MPICH's test/mpi/coll/nonblocking3
 * does) and MPI_Cancel of any collective request are errors (MPI_ERR_REQUEST) raised on the
 * request's communicator. An error of a run is raised through the communicator's handler when
 * the request completes (common/aapc_args.c aapc_args_raise_alone: the job aborts when the
 * handler returns, as the other ranks may be waiting for this one).
 * Cost: per completion call with n entries and k active requests of ours, O(n + k) work and
 * one progress step of each active request; nothing when none is alive.
 * Threads: one lock over the table and the progress of ours (MPI_THREAD_MULTIPLE programs may
 * complete requests from several threads).
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_args.h"
#include "aapc_lock.h"
#include "aapc_nbc.h"
#include "aapc_wait.h"

typedef struct entry {
    MPI_Request handle;
    const aapc_nbc_ops_t *ops;
    void *ctx;
    MPI_Comm comm;
    int persistent, active, done, rc;
} entry_t;

static entry_t **table;
static int nlive, cap;
static aapc_mutex_t lock = AAPC_MUTEX_INIT;

int aapc_nbc_live(void)
{
    return __atomic_load_n(&nlive, __ATOMIC_ACQUIRE);
}

int aapc_nbc_type_hold(MPI_Datatype t, MPI_Datatype *kept)
{
    int combiner = MPI_COMBINER_NAMED;
    *kept = t;
    if (t == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
#if MPI_VERSION >= 4 /* the large-count envelope: MPI_Type_get_envelope refuses such types */
    MPI_Count ni = 0, na = 0, nl = 0, nd = 0;
    int rc = PMPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &combiner);
#else
    int ni = 0, na = 0, nd = 0;
    int rc = PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
#endif
    if (rc != MPI_SUCCESS || combiner == MPI_COMBINER_NAMED)
        return rc;
    return PMPI_Type_dup(t, kept);
}

void aapc_nbc_type_drop(MPI_Datatype *kept, MPI_Datatype original)
{
    if (*kept != original && *kept != MPI_DATATYPE_NULL)
        PMPI_Type_free(kept);
    *kept = original;
}

int aapc_nbc_request_make(const aapc_nbc_ops_t *ops, void *ctx, MPI_Comm comm, int persistent,
                          MPI_Request *handle)
{
    static char anchor[1];
    entry_t *e = calloc(1, sizeof *e);
    int rc = e == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Recv_init(anchor, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &e->handle);
    if (rc != MPI_SUCCESS) {
        free(e);
        ops->release(ctx);
        return rc;
    }
    e->ops = ops;
    e->ctx = ctx;
    e->comm = comm;
    e->persistent = persistent;
    e->active = !persistent;
    if (!persistent && (e->rc = ops->start(ctx)) != MPI_SUCCESS)
        e->done = 1; /* raised when the request completes */
    aapc_lock(&lock);
    if (nlive == cap) {
        int ncap = cap ? 2 * cap : 16;
        entry_t **t = realloc(table, (size_t)ncap * sizeof *t);
        if (t == NULL) {
            aapc_unlock(&lock);
            PMPI_Request_free(&e->handle);
            ops->release(ctx);
            free(e);
            return MPI_ERR_NO_MEM;
        }
        table = t;
        cap = ncap;
    }
    table[nlive] = e;
    __atomic_store_n(&nlive, nlive + 1, __ATOMIC_RELEASE);
    aapc_unlock(&lock);
    *handle = e->handle;
    return MPI_SUCCESS;
}

#ifdef AAPC_INTERCEPT /* the completion calls (a build without it only makes requests) */

static entry_t *find(MPI_Request h)
{
    if (h == MPI_REQUEST_NULL)
        return NULL;
    for (int i = 0; i < nlive; i++)
        if (table[i]->handle == h)
            return table[i];
    return NULL;
}

/* One progress step of e (under the lock). */
static void advance(entry_t *e)
{
    if (!e->active || e->done)
        return;
    int done = 0;
    e->rc = e->ops->progress(e->ctx, &done);
    e->done = done || e->rc != MPI_SUCCESS;
}

/* One progress step of every active request of ours; whether any stays active. */
static int advance_all(void)
{
    int pending = 0;
    for (int i = 0; i < nlive; i++) {
        advance(table[i]);
        pending |= table[i]->active && !table[i]->done;
    }
    return pending;
}

/* Remove e from the table and free it (under the lock). */
static void drop(entry_t *e)
{
    for (int i = 0; i < nlive; i++) {
        if (table[i] == e) {
            table[i] = table[nlive - 1];
            __atomic_store_n(&nlive, nlive - 1, __ATOMIC_RELEASE);
            break;
        }
    }
    PMPI_Request_free(&e->handle);
    e->ops->release(e->ctx);
    free(e);
}

static void empty_status(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE || st == MPI_STATUSES_IGNORE)
        return;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
}

/* The completion of e (done or inactive), seen by the application through *req (under the
   lock): its status, and the handle made null (non-persistent) or the request inactive.
   Returns the run's error code, not yet raised; *comm gets the communicator to raise it on. */
static int complete(entry_t *e, MPI_Request *req, MPI_Status *st, MPI_Comm *comm)
{
    int rc = e->active ? e->rc : MPI_SUCCESS;
    empty_status(st);
    *comm = e->comm;
    if (e->persistent) {
        e->active = 0;
        e->done = 0;
        e->rc = MPI_SUCCESS;
    } else {
        drop(e);
        *req = MPI_REQUEST_NULL;
    }
    return rc;
}

/* Whether e counts as complete for a completion call (done, or an inactive persistent one). */
static int finished(const entry_t *e)
{
    return !e->active || e->done;
}

static int raise_run(MPI_Comm comm, int rc)
{
    return rc == MPI_SUCCESS ? rc : aapc_args_raise_alone(comm, rc);
}

static int raise_request(MPI_Comm comm)
{
    return aapc_args_raise_code(comm, MPI_ERR_REQUEST);
}


/* A copy of reqs[0..n) in which ours are MPI_REQUEST_NULL; *ours counts them. NULL when out
   of memory. */
static MPI_Request *foreign_copy(int n, const MPI_Request reqs[], int *ours)
{
    MPI_Request *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    *ours = 0;
    if (c == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        int mine = find(reqs[i]) != NULL;
        *ours += mine;
        c[i] = mine ? MPI_REQUEST_NULL : reqs[i];
    }
    return c;
}

/* Whether every request of ours in reqs[0..n) is finished. */
static int ours_finished(int n, const MPI_Request reqs[])
{
    for (int i = 0; i < n; i++) {
        entry_t *e = find(reqs[i]);
        if (e != NULL && !finished(e))
            return 0;
    }
    return 1;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (aapc_nbc_live() == 0 || request == NULL)
        return PMPI_Wait(request, status);
    MPI_Comm comm = MPI_COMM_NULL;
    for (aapc_backoff_t b = AAPC_BACKOFF_INIT;; aapc_backoff(&b)) {
        aapc_lock(&lock);
        int pending = advance_all();
        entry_t *e = find(*request);
        if (e != NULL && finished(e)) {
            int rc = complete(e, request, status, &comm);
            aapc_unlock(&lock);
            return raise_run(comm, rc);
        }
        aapc_unlock(&lock);
        if (e == NULL) {
            if (!pending)
                return PMPI_Wait(request, status);
            int flag = 0, rc = PMPI_Test(request, &flag, status);
            if (rc != MPI_SUCCESS || flag)
                return rc;
        }
    }
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (aapc_nbc_live() == 0 || request == NULL)
        return PMPI_Test(request, flag, status);
    MPI_Comm comm = MPI_COMM_NULL;
    aapc_lock(&lock);
    advance_all();
    entry_t *e = find(*request);
    if (e == NULL) {
        aapc_unlock(&lock);
        return PMPI_Test(request, flag, status);
    }
    *flag = finished(e);
    int rc = *flag ? complete(e, request, status, &comm) : MPI_SUCCESS;
    aapc_unlock(&lock);
    return raise_run(comm, rc);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (aapc_nbc_live() == 0)
        return PMPI_Request_get_status(request, flag, status);
    aapc_lock(&lock);
    advance_all();
    entry_t *e = find(request);
    if (e == NULL) {
        aapc_unlock(&lock);
        return PMPI_Request_get_status(request, flag, status);
    }
    *flag = finished(e);
    if (*flag)
        empty_status(status);
    aapc_unlock(&lock);
    return MPI_SUCCESS;
}

/* Waitall and Testall: ours finished, then the library's through a copy. A failed run of ours
   makes the call return MPI_ERR_IN_STATUS with each entry's code (or the first code when the
   statuses are ignored). */
static int all_of(int count, MPI_Request reqs[], MPI_Status statuses[], int wait, int *flag)
{
    int ours = 0, rc = MPI_SUCCESS;
    MPI_Comm comm = MPI_COMM_NULL;
    aapc_lock(&lock);
    MPI_Request *c = foreign_copy(count, reqs, &ours);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    for (aapc_backoff_t b = AAPC_BACKOFF_INIT;; aapc_backoff(&b)) {
        aapc_lock(&lock);
        int pending = advance_all();
        int mine_done = ours_finished(count, reqs);
        aapc_unlock(&lock);
        int libflag = 0;
        if (mine_done && wait && !pending)
            rc = PMPI_Waitall(count, c, statuses), libflag = 1;
        else if (mine_done)
            rc = PMPI_Testall(count, c, &libflag, statuses);
        if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || (mine_done && libflag) || !wait) {
            *flag = mine_done && libflag;
            break;
        }
    }
    int lib_rc = rc, first = MPI_SUCCESS;
    if (*flag) {
        aapc_lock(&lock);
        for (int i = 0; i < count; i++) {
            entry_t *e = find(reqs[i]);
            MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
            if (e == NULL) {
                reqs[i] = c[i];
                if (st != MPI_STATUS_IGNORE && lib_rc != MPI_ERR_IN_STATUS)
                    st->MPI_ERROR = MPI_SUCCESS;
                continue;
            }
            int r = complete(e, &reqs[i], st, &comm);
            if (st != MPI_STATUS_IGNORE)
                st->MPI_ERROR = r;
            if (first == MPI_SUCCESS)
                first = r;
        }
        aapc_unlock(&lock);
    }
    free(c);
    if (first != MPI_SUCCESS) {
        aapc_args_raise_alone(comm, first);
        return statuses == MPI_STATUSES_IGNORE ? first : MPI_ERR_IN_STATUS;
    }
    return lib_rc;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    int flag = 0;
    if (aapc_nbc_live() == 0)
        return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    return all_of(count, array_of_requests, array_of_statuses, 1, &flag);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    return all_of(count, array_of_requests, array_of_statuses, 0, flag);
}

/* Waitany and Testany: the first finished request of ours, else the library's Testany on the
   copy. *index MPI_UNDEFINED when no entry is active. */
static int any_of(int count, MPI_Request reqs[], int *index, MPI_Status *status, int wait,
                  int *flag)
{
    int ours = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    aapc_lock(&lock);
    MPI_Request *c = foreign_copy(count, reqs, &ours);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    for (aapc_backoff_t b = AAPC_BACKOFF_INIT;; aapc_backoff(&b)) {
        aapc_lock(&lock);
        int pending = advance_all(), active_ours = 0;
        for (int i = 0; i < count; i++) {
            entry_t *e = find(reqs[i]);
            if (e == NULL || !e->active)
                continue;
            active_ours = 1;
            if (e->done) {
                int r = complete(e, &reqs[i], status, &comm);
                aapc_unlock(&lock);
                free(c);
                *index = i;
                *flag = 1;
                return raise_run(comm, r);
            }
        }
        aapc_unlock(&lock);
        int idx = MPI_UNDEFINED, lflag = 0, rc;
        if (wait && !pending && !active_ours)
            rc = PMPI_Waitany(count, c, &idx, status), lflag = 1;
        else
            rc = PMPI_Testany(count, c, &idx, &lflag, status);
        if (rc != MPI_SUCCESS || (lflag && (idx != MPI_UNDEFINED || !active_ours)) || !wait) {
            if (idx != MPI_UNDEFINED)
                reqs[idx] = c[idx];
            *index = idx;
            *flag = rc == MPI_SUCCESS && lflag && (idx != MPI_UNDEFINED || !active_ours);
            if (!*flag)
                *index = MPI_UNDEFINED;
            free(c);
            return rc;
        }
    }
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    int flag = 0;
    if (aapc_nbc_live() == 0)
        return PMPI_Waitany(count, array_of_requests, index, status);
    return any_of(count, array_of_requests, index, status, 1, &flag);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
    if (aapc_nbc_live() == 0)
        return PMPI_Testany(count, array_of_requests, index, flag, status);
    return any_of(count, array_of_requests, index, status, 0, flag);
}

/* Waitsome and Testsome: every finished request of ours, and what the library's Testsome on
   the copy completes. *outcount MPI_UNDEFINED when no entry is active. */
static int some_of(int incount, MPI_Request reqs[], int *outcount, int indices[],
                   MPI_Status statuses[], int wait)
{
    int ours = 0, first = MPI_SUCCESS;
    MPI_Comm comm = MPI_COMM_NULL;
    aapc_lock(&lock);
    MPI_Request *c = foreign_copy(incount, reqs, &ours);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    for (aapc_backoff_t b = AAPC_BACKOFF_INIT;; aapc_backoff(&b)) {
        int out = 0, lib = 0, rc;
        MPI_Status *lst = statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses;
        rc = PMPI_Testsome(incount, c, &lib, indices, lst);
        if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
            free(c);
            return rc;
        }
        int lib_active = lib != MPI_UNDEFINED;
        if (lib_active) {
            out = lib;
            for (int k = 0; k < lib; k++) {
                reqs[indices[k]] = c[indices[k]];
                if (statuses != MPI_STATUSES_IGNORE && rc != MPI_ERR_IN_STATUS)
                    statuses[k].MPI_ERROR = MPI_SUCCESS;
            }
        }
        aapc_lock(&lock);
        advance_all();
        int active_ours = 0;
        for (int i = 0; i < incount; i++) {
            entry_t *e = find(reqs[i]);
            if (e == NULL || !e->active)
                continue;
            active_ours = 1;
            if (!e->done)
                continue;
            MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[out];
            int r = complete(e, &reqs[i], st, &comm);
            if (st != MPI_STATUS_IGNORE)
                st->MPI_ERROR = r;
            if (first == MPI_SUCCESS)
                first = r;
            indices[out++] = i;
        }
        aapc_unlock(&lock);
        if (out > 0 || !wait || (!lib_active && !active_ours)) {
            *outcount = out > 0 || lib_active || active_ours ? out : MPI_UNDEFINED;
            free(c);
            if (first != MPI_SUCCESS) {
                aapc_args_raise_alone(comm, first);
                return MPI_ERR_IN_STATUS;
            }
            return rc;
        }
    }
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    return some_of(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 1);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    return some_of(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 0);
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
/* MPI 4.1's MPI_Request_get_status_all, _any and _some: as MPI_Testall, MPI_Testany and
   MPI_Testsome (ours by their state, the library's through the same call on a copy in which
   ours are MPI_REQUEST_NULL), but nothing is freed or made inactive (a finished request of ours
   stays for a completion call or MPI_Request_free). */
int MPI_Request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag,
                               MPI_Status array_of_statuses[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Request_get_status_all(count, array_of_requests, flag, array_of_statuses);
    int ours = 0, libflag = 0;
    aapc_lock(&lock);
    advance_all();
    MPI_Request *c = foreign_copy(count, array_of_requests, &ours);
    int mine_done = ours_finished(count, array_of_requests);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Request_get_status_all(count, c, &libflag, array_of_statuses);
    *flag = mine_done && libflag;
    if (*flag && array_of_statuses != MPI_STATUSES_IGNORE) {
        aapc_lock(&lock);
        for (int i = 0; i < count; i++)
            if (find(array_of_requests[i]) != NULL) {
                empty_status(&array_of_statuses[i]);
                array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
        aapc_unlock(&lock);
    }
    free(c);
    return rc;
}

int MPI_Request_get_status_any(int count, const MPI_Request array_of_requests[], int *index,
                               int *flag, MPI_Status *status)
{
    if (aapc_nbc_live() == 0)
        return PMPI_Request_get_status_any(count, array_of_requests, index, flag, status);
    int ours = 0, active_ours = 0;
    aapc_lock(&lock);
    advance_all();
    for (int i = 0; i < count; i++) {
        entry_t *e = find(array_of_requests[i]);
        if (e == NULL || !e->active)
            continue;
        active_ours = 1;
        if (e->done) {
            aapc_unlock(&lock);
            empty_status(status);
            *index = i;
            *flag = 1;
            return MPI_SUCCESS;
        }
    }
    MPI_Request *c = foreign_copy(count, array_of_requests, &ours);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    int idx = MPI_UNDEFINED, lflag = 0;
    int rc = PMPI_Request_get_status_any(count, c, &idx, &lflag, status);
    free(c);
    *flag = rc == MPI_SUCCESS && lflag && (idx != MPI_UNDEFINED || !active_ours);
    *index = *flag ? idx : MPI_UNDEFINED;
    return rc;
}

int MPI_Request_get_status_some(int incount, const MPI_Request array_of_requests[],
                                int *outcount, int array_of_indices[],
                                MPI_Status array_of_statuses[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Request_get_status_some(incount, array_of_requests, outcount,
                                            array_of_indices, array_of_statuses);
    int ours = 0, lib = 0, active_ours = 0;
    aapc_lock(&lock);
    MPI_Request *c = foreign_copy(incount, array_of_requests, &ours);
    aapc_unlock(&lock);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Request_get_status_some(incount, c, &lib, array_of_indices, array_of_statuses);
    free(c);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
        return rc;
    int out = lib != MPI_UNDEFINED ? lib : 0;
    aapc_lock(&lock);
    advance_all();
    for (int i = 0; i < incount; i++) {
        entry_t *e = find(array_of_requests[i]);
        if (e == NULL || !e->active)
            continue;
        active_ours = 1;
        if (!e->done)
            continue;
        if (array_of_statuses != MPI_STATUSES_IGNORE) {
            empty_status(&array_of_statuses[out]);
            array_of_statuses[out].MPI_ERROR = MPI_SUCCESS;
        }
        array_of_indices[out++] = i;
    }
    aapc_unlock(&lock);
    *outcount = out > 0 || lib != MPI_UNDEFINED || active_ours ? out : MPI_UNDEFINED;
    return rc;
}
#endif

/* MPI_Start of a request of ours: a new run (an error when it is active). */
static int start_ours(entry_t *e)
{
    if (e->active) {
        MPI_Comm comm = e->comm;
        aapc_unlock(&lock);
        return raise_request(comm);
    }
    e->active = 1;
    e->done = 0;
    e->rc = e->ops->start(e->ctx);
    e->done = e->rc != MPI_SUCCESS; /* raised when the request completes */
    aapc_unlock(&lock);
    return MPI_SUCCESS;
}

int MPI_Start(MPI_Request *request)
{
    if (aapc_nbc_live() == 0 || request == NULL)
        return PMPI_Start(request);
    aapc_lock(&lock);
    entry_t *e = find(*request);
    if (e == NULL) {
        aapc_unlock(&lock);
        return PMPI_Start(request);
    }
    return start_ours(e);
}

int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    if (aapc_nbc_live() == 0)
        return PMPI_Startall(count, array_of_requests);
    for (int i = 0; i < count; i++) { /* in order, as MPI_Startall starts them */
        int rc = MPI_Start(&array_of_requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request)
{
    if (aapc_nbc_live() == 0 || request == NULL)
        return PMPI_Request_free(request);
    aapc_lock(&lock);
    entry_t *e = find(*request);
    if (e == NULL) {
        aapc_unlock(&lock);
        return PMPI_Request_free(request);
    }
    MPI_Comm comm = e->comm;
    if (!finished(e)) { /* freeing a collective request still running is erroneous */
        aapc_unlock(&lock);
        return raise_request(comm);
    }
    /* finished (MPI_Request_get_status said so, or inactive): freed, its run's error raised */
    int rc = e->active ? e->rc : MPI_SUCCESS;
    drop(e);
    *request = MPI_REQUEST_NULL;
    aapc_unlock(&lock);
    return raise_run(comm, rc);
}

int MPI_Cancel(MPI_Request *request)
{
    if (aapc_nbc_live() == 0 || request == NULL)
        return PMPI_Cancel(request);
    aapc_lock(&lock);
    entry_t *e = find(*request);
    MPI_Comm comm = e != NULL ? e->comm : MPI_COMM_NULL;
    aapc_unlock(&lock);
    if (e == NULL)
        return PMPI_Cancel(request);
    return raise_request(comm); /* cancelling a collective request is erroneous */
}

#endif /* AAPC_INTERCEPT */
