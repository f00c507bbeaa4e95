/*
 * aapc_fortran_wait.c: the completion calls of Fortran programs (MPI_WAIT, MPI_WAITALL,
 * MPI_WAITANY, MPI_WAITSOME, MPI_TEST, MPI_TESTALL, MPI_TESTANY, MPI_TESTSOME,
 * MPI_REQUEST_GET_STATUS, MPI_START, MPI_STARTALL, MPI_REQUEST_FREE, MPI_CANCEL) reach the
 * library's C entry points (runtime_c/nbc/aapc_nbc_request.c), which progress and complete the
 * requests of its non-blocking and persistent all-to-all together with the program's own.
 *
 * Where the bindings miss them (aapc_fortran.h): Open MPI's call PMPI_Wait etc. directly
 * (mpif.h and `use mpi` through mpi_wait_ and its other manglings, aliases of ompi_wait_f;
 * `use mpi_f08` through ompi_wait_f, or pmpi_test_ for the MPI_TEST family in Open MPI 4.1);
 * MPICH's mpif.h and `use mpi` call the C names, but its `use mpi_f08` mpi_wait_f08_ etc. call
 * PMPI_ directly. Without these entries a request of ours waited for from Fortran would never
 * move its data. This file defines those names (Open MPI: every mangling, ompi_x_f, MPI_X_f,
 * MPI_X_f08 and, in Open MPI 4 and 5, mpi_x_f08_; MPICH: the mpi_x_f08_ ones).
 *
 * Algorithm: convert the request handles (MPI_Request_f2c, into a C array: on the stack for up
 * to 16, else allocated), call the C entry point, write the handles back (MPI_Request_c2f: a
 * completed request becomes MPI_REQUEST_NULL, a persistent one stays), the statuses
 * (MPI_Status_c2f: Open MPI's Fortran status, MPICH's MPI_F08_status, which has the same
 * MPI_Fint layout) unless the program passed the Fortran MPI_STATUS_IGNORE /
 * MPI_STATUSES_IGNORE (MPI_F_STATUS(ES)_IGNORE for Open MPI, MPI_F08_STATUS(ES)_IGNORE for
 * MPICH's mpi_f08: the addresses of the bindings' objects), flags as the bindings' .TRUE. or 0,
 * indices 1-based (MPI_UNDEFINED stays), and the result in ierr (absent, NULL, where
 * `use mpi_f08` lets the caller leave it out). A C array that cannot be allocated is
 * MPI_ERR_NO_MEM, raised on MPI_COMM_WORLD as Open MPI's own wrappers do.
 * Cost over the C call: one handle conversion each way per request, one status conversion per
 * status written.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) &&                                                                 \
    (defined(OPEN_MPI) || (defined(MPICH) && !defined(MPI_ABI_VERSION)))
#include <stdlib.h>
#include <string.h>

#include "aapc_args.h"

#ifdef OPEN_MPI
#define F_STATUS_IGNORE MPI_F_STATUS_IGNORE
#define F_STATUSES_IGNORE MPI_F_STATUSES_IGNORE
#ifdef MPI_F_STATUS_SIZE /* MPI 4 (Open MPI 5) */
#define F_STATUS_SIZE MPI_F_STATUS_SIZE
#else /* Open MPI 4: MPI_STATUS_SIZE is the C status in Fortran integers */
#define F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif
#else /* MPICH's mpi_f08: its MPI_Status is MPI_F08_status, the Fortran status's layout */
/* An MPICH configured without Fortran (--disable-fortran; 4.0) declares these but does not
   define them: weak references, so the library links and loads there too (with no Fortran
   binding in that MPI no Fortran program calls the wrappers that use them). */
#pragma weak MPI_F08_STATUS_IGNORE
#pragma weak MPI_F08_STATUSES_IGNORE
#pragma weak MPI_Status_c2f
#define F_STATUS_IGNORE ((MPI_Fint *)(void *)MPI_F08_STATUS_IGNORE)
#define F_STATUSES_IGNORE ((MPI_Fint *)(void *)MPI_F08_STATUSES_IGNORE)
#define F_STATUS_SIZE MPI_F_STATUS_SIZE
_Static_assert(sizeof(MPI_F08_status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
               "MPI_F08_status is the Fortran status");
#endif

enum { ON_STACK = 16 };

/* C arrays for n requests (and, where statuses, n statuses and n indices), on the stack when
   small. */
typedef struct carrays {
    MPI_Request *req;
    MPI_Status *st;
    int *idx;
    void *heap;
    MPI_Request req_s[ON_STACK];
    MPI_Status st_s[ON_STACK];
    int idx_s[ON_STACK];
} carrays_t;

/* Fill a with the C handles of reqs[0..n); 0 when out of memory (an error raised). */
static int carrays_get(carrays_t *a, int n, const MPI_Fint *reqs)
{
    size_t m = (size_t)(n > 0 ? n : 1);
    a->heap = NULL;
    if (m <= ON_STACK) {
        a->req = a->req_s, a->st = a->st_s, a->idx = a->idx_s;
    } else {
        a->heap = malloc(m * (sizeof *a->req + sizeof *a->st + sizeof *a->idx));
        if (a->heap == NULL) {
            aapc_args_raise_code(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
            return 0;
        }
        a->st = a->heap; /* the most aligned first */
        a->req = (MPI_Request *)(void *)(a->st + m);
        a->idx = (int *)(void *)(a->req + m);
    }
    memset(a->st, 0, m * sizeof *a->st); /* what a failed call leaves is written back */
    for (int i = 0; i < n; i++)
        a->req[i] = MPI_Request_f2c(reqs[i]);
    return 1;
}

static void put_handles(const carrays_t *a, int n, MPI_Fint *reqs)
{
    for (int i = 0; i < n; i++)
        reqs[i] = MPI_Request_c2f(a->req[i]);
}

static void put_status(const MPI_Status *c, MPI_Fint *f)
{
    if (f != F_STATUS_IGNORE && f != F_STATUSES_IGNORE)
        MPI_Status_c2f(c, f);
}

static void put_ierr(MPI_Fint *ierr, int rc)
{
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

static MPI_Fint logical(int flag)
{
    return flag ? aapc_fortran_true() : 0;
}

static int one_based(int i)
{
    return i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
}

/* ---- one request ------------------------------------------------------------------------ */

static void fortran_wait(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request r = MPI_Request_f2c(*request);
    MPI_Status st;
    memset(&st, 0, sizeof st);
    int ignore = status == F_STATUS_IGNORE;
    int rc = MPI_Wait(&r, ignore ? MPI_STATUS_IGNORE : &st);
    *request = MPI_Request_c2f(r);
    put_status(&st, status);
    put_ierr(ierr, rc);
}

static void fortran_test(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request r = MPI_Request_f2c(*request);
    MPI_Status st;
    memset(&st, 0, sizeof st);
    int f = 0, ignore = status == F_STATUS_IGNORE;
    int rc = MPI_Test(&r, &f, ignore ? MPI_STATUS_IGNORE : &st);
    *request = MPI_Request_c2f(r);
    *flag = logical(f);
    if (f)
        put_status(&st, status);
    put_ierr(ierr, rc);
}

static void fortran_request_get_status(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                                       MPI_Fint *ierr)
{
    MPI_Status st;
    memset(&st, 0, sizeof st);
    int f = 0, ignore = status == F_STATUS_IGNORE;
    int rc = MPI_Request_get_status(MPI_Request_f2c(*request), &f,
                                    ignore ? MPI_STATUS_IGNORE : &st);
    *flag = logical(f);
    if (f)
        put_status(&st, status);
    put_ierr(ierr, rc);
}

/* MPI_START, MPI_REQUEST_FREE, MPI_CANCEL: one handle in, the handle back. */
static void fortran_one(int (*call)(MPI_Request *), MPI_Fint *request, MPI_Fint *ierr)
{
    MPI_Request r = MPI_Request_f2c(*request);
    int rc = call(&r);
    *request = MPI_Request_c2f(r);
    put_ierr(ierr, rc);
}

/* ---- arrays of requests ------------------------------------------------------------------ */

/* The statuses of C entries [0..n) into the Fortran array (n of F_STATUS_SIZE each). */
static void put_statuses(const carrays_t *a, int n, MPI_Fint *statuses)
{
    if (statuses == F_STATUSES_IGNORE || statuses == F_STATUS_IGNORE)
        return;
    for (int i = 0; i < n; i++)
        MPI_Status_c2f(&a->st[i], statuses + (size_t)i * F_STATUS_SIZE);
}

static MPI_Status *c_statuses(const carrays_t *a, const MPI_Fint *statuses)
{
    return statuses == F_STATUSES_IGNORE || statuses == F_STATUS_IGNORE ? MPI_STATUSES_IGNORE
                                                                          : a->st;
}

static void fortran_all(const MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag,
                        MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*count, f = 0, rc;
    carrays_t a;
    if (!carrays_get(&a, n, reqs)) {
        put_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    if (flag == NULL)
        rc = MPI_Waitall(n, a.req, c_statuses(&a, statuses)), f = 1;
    else
        rc = MPI_Testall(n, a.req, &f, c_statuses(&a, statuses));
    put_handles(&a, n, reqs);
    if (flag != NULL)
        *flag = logical(f);
    if (f || rc == MPI_ERR_IN_STATUS)
        put_statuses(&a, n, statuses);
    put_ierr(ierr, rc);
    free(a.heap);
}

static void fortran_any(const MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag,
                        MPI_Fint *status, MPI_Fint *ierr)
{
    int n = (int)*count, f = 0, i = MPI_UNDEFINED, rc;
    carrays_t a;
    if (!carrays_get(&a, n, reqs)) {
        put_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    MPI_Status *st = status == F_STATUS_IGNORE ? MPI_STATUS_IGNORE : &a.st[0];
    if (flag == NULL)
        rc = MPI_Waitany(n, a.req, &i, st), f = 1;
    else
        rc = MPI_Testany(n, a.req, &i, &f, st);
    put_handles(&a, n, reqs);
    *index = (MPI_Fint)one_based(i);
    if (flag != NULL)
        *flag = logical(f);
    if (f)
        put_status(&a.st[0], status);
    put_ierr(ierr, rc);
    free(a.heap);
}

static void fortran_some(int wait, const MPI_Fint *incount, MPI_Fint *reqs, MPI_Fint *outcount,
                         MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*incount, out = MPI_UNDEFINED, rc;
    carrays_t a;
    if (!carrays_get(&a, n, reqs)) {
        put_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    rc = (wait ? MPI_Waitsome : MPI_Testsome)(n, a.req, &out, a.idx, c_statuses(&a, statuses));
    put_handles(&a, n, reqs);
    *outcount = (MPI_Fint)out;
    if (out != MPI_UNDEFINED) {
        for (int k = 0; k < out; k++)
            indices[k] = (MPI_Fint)one_based(a.idx[k]);
        put_statuses(&a, out, statuses);
    }
    put_ierr(ierr, rc);
    free(a.heap);
}

static void fortran_startall(const MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr)
{
    int n = (int)*count;
    carrays_t a;
    if (!carrays_get(&a, n, reqs)) {
        put_ierr(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int rc = MPI_Startall(n, a.req);
    put_handles(&a, n, reqs);
    put_ierr(ierr, rc);
    free(a.heap);
}

/* ---- the entry points -------------------------------------------------------------------- */

#define F(name, params, body)                                                                   \
    void name params;                                                                          \
    void name params                                                                           \
    {                                                                                          \
        body;                                                                                  \
    }

#define AAPC_F_WAIT(n) F(n, (MPI_Fint * r, MPI_Fint * s, MPI_Fint * e), fortran_wait(r, s, e))
#define AAPC_F_TEST(n)                                                                         \
    F(n, (MPI_Fint * r, MPI_Fint * f, MPI_Fint * s, MPI_Fint * e), fortran_test(r, f, s, e))
#define AAPC_F_REQUEST_GET_STATUS(n)                                                           \
    F(n, (MPI_Fint * r, MPI_Fint * f, MPI_Fint * s, MPI_Fint * e),                             \
      fortran_request_get_status(r, f, s, e))
#define AAPC_F_START(n) F(n, (MPI_Fint * r, MPI_Fint * e), fortran_one(MPI_Start, r, e))
#define AAPC_F_REQUEST_FREE(n)                                                                 \
    F(n, (MPI_Fint * r, MPI_Fint * e), fortran_one(MPI_Request_free, r, e))
#define AAPC_F_CANCEL(n) F(n, (MPI_Fint * r, MPI_Fint * e), fortran_one(MPI_Cancel, r, e))
#define AAPC_F_WAITALL(n)                                                                      \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * s, MPI_Fint * e), fortran_all(c, r, NULL, s, e))
#define AAPC_F_TESTALL(n)                                                                      \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * f, MPI_Fint * s, MPI_Fint * e),               \
      fortran_all(c, r, f, s, e))
#define AAPC_F_WAITANY(n)                                                                      \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * i, MPI_Fint * s, MPI_Fint * e),               \
      fortran_any(c, r, i, NULL, s, e))
#define AAPC_F_TESTANY(n)                                                                      \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * i, MPI_Fint * f, MPI_Fint * s, MPI_Fint * e), \
      fortran_any(c, r, i, f, s, e))
#define AAPC_F_WAITSOME(n)                                                                     \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * o, MPI_Fint * i, MPI_Fint * s, MPI_Fint * e), \
      fortran_some(1, c, r, o, i, s, e))
#define AAPC_F_TESTSOME(n)                                                                     \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * o, MPI_Fint * i, MPI_Fint * s, MPI_Fint * e), \
      fortran_some(0, c, r, o, i, s, e))
#define AAPC_F_STARTALL(n)                                                                     \
    F(n, (MPI_Fint * c, MPI_Fint * r, MPI_Fint * e), fortran_startall(c, r, e))

#ifdef OPEN_MPI
/* every name of Open MPI's mpif.h library (libmpi_mpifh) */
#define AAPC_F_ALL_NAMES(M, lower, upper, mixed)                                               \
    M(ompi_##lower##_f)                                                                        \
    M(mpi_##lower) M(mpi_##lower##_) M(mpi_##lower##__) M(MPI_##upper) M(MPI_##mixed##_f)      \
        M(MPI_##mixed##_f08)
#else
#define AAPC_F_ALL_NAMES(M, lower, upper, mixed)
#endif
/* `use mpi_f08`'s own entries: MPICH's call PMPI_; Open MPI 4 and 5's call ompi_x_f or the
   profiling pmpi_x_ (the same signature, ierror optional: NULL when left out) */
#if !defined(OPEN_MPI) || OMPI_MAJOR_VERSION < 6
#define AAPC_F_F08_NAME(M, lower) M(mpi_##lower##_f08_)
#else
#define AAPC_F_F08_NAME(M, lower)
#endif
#define AAPC_F_NAMES(M, lower, upper, mixed)                                                   \
    AAPC_F_ALL_NAMES(M, lower, upper, mixed) AAPC_F_F08_NAME(M, lower)

AAPC_F_NAMES(AAPC_F_WAIT, wait, WAIT, Wait)
AAPC_F_NAMES(AAPC_F_WAITALL, waitall, WAITALL, Waitall)
AAPC_F_NAMES(AAPC_F_WAITANY, waitany, WAITANY, Waitany)
AAPC_F_NAMES(AAPC_F_WAITSOME, waitsome, WAITSOME, Waitsome)
AAPC_F_NAMES(AAPC_F_TEST, test, TEST, Test)
AAPC_F_NAMES(AAPC_F_TESTALL, testall, TESTALL, Testall)
AAPC_F_NAMES(AAPC_F_TESTANY, testany, TESTANY, Testany)
AAPC_F_NAMES(AAPC_F_TESTSOME, testsome, TESTSOME, Testsome)
AAPC_F_NAMES(AAPC_F_REQUEST_GET_STATUS, request_get_status, REQUEST_GET_STATUS,
             Request_get_status)
AAPC_F_NAMES(AAPC_F_START, start, START, Start)
AAPC_F_NAMES(AAPC_F_STARTALL, startall, STARTALL, Startall)
AAPC_F_NAMES(AAPC_F_REQUEST_FREE, request_free, REQUEST_FREE, Request_free)
AAPC_F_NAMES(AAPC_F_CANCEL, cancel, CANCEL, Cancel)
#endif
