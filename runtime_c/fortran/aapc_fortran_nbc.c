/*
 * aapc_fortran_nbc.c: MPI_IALLTOALL, MPI_IALLTOALLV and MPI_IALLTOALLW (and, in Open MPI 5,
 * MPI_ALLTOALL_INIT and MPI_ALLTOALLV_INIT) called from Fortran under Open MPI (mpif.h,
 * `use mpi`, `use mpi_f08`), served by the library's C entry points (aapc_fortran.h).
 *
 * Open MPI's bindings call PMPI_Ialltoall etc. directly: mpif.h and `use mpi` programs call
 * mpi_ialltoall_ (or another mangling, all aliases of ompi_ialltoall_f in libmpi_mpifh), and
 * `use mpi_f08` calls mpi_ialltoall_f08_, which calls ompi_ialltoall_f. This file defines every
 * one of those names (mpi_x_f08_ for Open MPI 4 and 5). Their requests are completed by the
 * program's MPI_WAIT, MPI_TEST, ..., which the library defines as well (aapc_fortran_wait.c);
 * both are in this one library, so both are bound, or neither. Open MPI 4.1 has no
 * MPI_ALLTOALL_INIT (its MPIX_ALLTOALL_INIT of mpi-ext is not served); Open MPI 5's
 * ompi_alltoall_init_f takes (..., comm, info, request, ierr), read in its sources only (no
 * Open MPI 5 with Fortran was run).
 *
 * Algorithm: as aapc_fortran_alltoall.c (handles, MPI_IN_PLACE, MPI_BOTTOM), plus the request
 * handed back with MPI_Request_c2f and the info with MPI_Info_f2c; then the C entry point (the
 * generated interposer: checks, error handler, schedule or library routine, report).
 * Where the process does not use the library's Fortran completion entries (it was linked
 * after the MPI's `use mpi_f08` library but before its mpif.h library, so the program's
 * MPI_TEST would be Open MPI's, calling PMPI_Test), a request of ours could never complete:
 * the call goes to the MPI library's routine and the report says why
 * (aapc_fortran_completions_ours, asked once per process).
 * MPI_IALLTOALLV's count and displacement arrays are read until the request completes, so
 * where MPI_Fint is not an int (no default build; a copy would have to outlive the call) the
 * call goes to the library's own Fortran routine (pmpi_ialltoallv_ and kin). MPI_IALLTOALLW's
 * datatype arrays are converted into one allocated array that the request owns (nbc/
 * aapc_nbc_large.c aapc_ialltoallw_owned; freed with the request); where the call goes to the
 * MPI library, its own Fortran routine runs with the original arguments (Open MPI keeps its
 * converted arrays until its request completes). Cost over the C call: four or five handle
 * conversions; MPI_IALLTOALLW 2 P more and an allocation of 16 P bytes.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) && defined(OPEN_MPI)
#include <stddef.h>
#include <stdlib.h>

#include "aapc_nbc.h" /* AAPC_HAVE_PERSISTENT_COLL, AAPC_NBC_FORTRAN_WHY */
#include "aapc_report.h"

/* the Fortran MPI_IALLTOALLV and MPI_ALLTOALLV_INIT */
typedef void fortran_v_t(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                         MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void fortran_v_init_t(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                              MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                              MPI_Fint *);

static void done(int rc, MPI_Request r, MPI_Fint *request, MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS)
        *request = MPI_Request_c2f(r);
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

/* The bytes this rank sends: n elements of t to each peer of c, or counts[i] to peer i. */
static long long bytes_sent(int n, const int *counts, MPI_Datatype t, MPI_Comm c)
{
    int size = 0, peers = aapc_fortran_peers(c);
    long long sum = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS)
        return 0;
    for (int i = 0; i < peers; i++)
        sum += counts != NULL ? counts[i] : n;
    return sum > 0 ? sum * size : 0;
}

/* A call the library cannot serve (its completion entries are not the process's): counted in
   the report as the MPI library's, with the reason. */
static double library_begin(void)
{
    double t0 = aapc_report_begin();
    aapc_report_fallback(AAPC_NBC_FORTRAN_WHY);
    return t0;
}

static void fortran_ialltoall(void *sendbuf, const MPI_Fint *sendcount, const MPI_Fint *sendtype,
                              void *recvbuf, const MPI_Fint *recvcount, const MPI_Fint *recvtype,
                              const MPI_Fint *comm, const MPI_Fint *info, MPI_Fint *request,
                              MPI_Fint *ierr)
{
    MPI_Request r = MPI_REQUEST_NULL;
    void *sb = aapc_fortran_buffer(sendbuf, 1), *rb = aapc_fortran_buffer(recvbuf, 0);
    MPI_Datatype st = MPI_Type_f2c(*sendtype), rt = MPI_Type_f2c(*recvtype);
    MPI_Comm c = MPI_Comm_f2c(*comm);
    int rc, sc = (int)*sendcount, rcn = (int)*recvcount;
    if (!aapc_fortran_completions_ours()) {
        double t0 = library_begin();
        const char *coll = info != NULL ? "MPI_Alltoall_init" : "MPI_Ialltoall";
#ifdef AAPC_HAVE_PERSISTENT_COLL
        if (info != NULL)
            rc = PMPI_Alltoall_init(sb, sc, st, rb, rcn, rt, c, MPI_Info_f2c(*info), &r);
        else
#endif
            rc = PMPI_Ialltoall(sb, sc, st, rb, rcn, rt, c, &r);
        long long bytes = rc == MPI_SUCCESS ? bytes_sent(rcn, NULL, rt, c) : 0;
        rc = aapc_report_entry(t0, coll, "Fortran binding", bytes, c, rc);
    }
#ifdef AAPC_HAVE_PERSISTENT_COLL
    else if (info != NULL)
        rc = MPI_Alltoall_init(sb, sc, st, rb, rcn, rt, c, MPI_Info_f2c(*info), &r);
#endif
    else
        rc = MPI_Ialltoall(sb, sc, st, rb, rcn, rt, c, &r);
    done(rc, r, request, ierr);
}

static void fortran_ialltoallv(void *sendbuf, const MPI_Fint *sendcounts, const MPI_Fint *sdispls,
                               const MPI_Fint *sendtype, void *recvbuf,
                               const MPI_Fint *recvcounts, const MPI_Fint *rdispls,
                               const MPI_Fint *recvtype, const MPI_Fint *comm,
                               const MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr)
{
    MPI_Request r = MPI_REQUEST_NULL;
    void *sb = aapc_fortran_buffer(sendbuf, 1), *rb = aapc_fortran_buffer(recvbuf, 0);
    MPI_Datatype st = MPI_Type_f2c(*sendtype), rt = MPI_Type_f2c(*recvtype);
    MPI_Comm c = MPI_Comm_f2c(*comm);
    /* MPI_Fint is an int here (checked by the callers): the arrays are the C arrays */
    const int *sc = (const int *)(const void *)sendcounts, *sd = (const int *)(const void *)sdispls;
    const int *rc_ = (const int *)(const void *)recvcounts, *rd = (const int *)(const void *)rdispls;
    int rc;
    if (!aapc_fortran_completions_ours()) {
        double t0 = library_begin();
        const char *coll = info != NULL ? "MPI_Alltoallv_init" : "MPI_Ialltoallv";
#ifdef AAPC_HAVE_PERSISTENT_COLL
        if (info != NULL)
            rc = PMPI_Alltoallv_init(sb, sc, sd, st, rb, rc_, rd, rt, c, MPI_Info_f2c(*info),
                                     &r);
        else
#endif
            rc = PMPI_Ialltoallv(sb, sc, sd, st, rb, rc_, rd, rt, c, &r);
        long long bytes = rc == MPI_SUCCESS ? bytes_sent(0, sc, st, c) : 0;
        rc = aapc_report_entry(t0, coll, "Fortran binding", bytes, c, rc);
    }
#ifdef AAPC_HAVE_PERSISTENT_COLL
    else if (info != NULL)
        rc = MPI_Alltoallv_init(sb, sc, sd, st, rb, rc_, rd, rt, c, MPI_Info_f2c(*info), &r);
#endif
    else
        rc = MPI_Ialltoallv(sb, sc, sd, st, rb, rc_, rd, rt, c, &r);
    done(rc, r, request, ierr);
}

/* The library's own Fortran routines, for MPI_Fint wider than an int (weak: NULL where none) */
extern fortran_v_t pmpi_ialltoallv_ __attribute__((weak));
extern fortran_v_t pmpi_ialltoallv __attribute__((weak));
extern fortran_v_t pmpi_ialltoallv__ __attribute__((weak));
extern fortran_v_t PMPI_IALLTOALLV __attribute__((weak));

static void wide_ialltoallv(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls,
                            MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcounts,
                            MPI_Fint *rdispls, MPI_Fint *recvtype, MPI_Fint *comm,
                            MPI_Fint *request, MPI_Fint *ierr)
{
    fortran_v_t *lib = pmpi_ialltoallv_    ? pmpi_ialltoallv_
                       : pmpi_ialltoallv   ? pmpi_ialltoallv
                       : pmpi_ialltoallv__ ? pmpi_ialltoallv__
                                           : PMPI_IALLTOALLV;
    if (lib != NULL) {
        lib(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
            request, ierr);
        return;
    }
    int rc = MPI_Comm_call_errhandler(MPI_Comm_f2c(*comm), MPI_ERR_INTERN);
    if (ierr != NULL)
        *ierr = (MPI_Fint)(rc == MPI_SUCCESS ? MPI_ERR_INTERN : rc);
}

/* ---- MPI_IALLTOALLW: its datatype arrays converted into an array the request owns ---------- */

typedef void fortran_w_t(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *,
                         MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern fortran_w_t pmpi_ialltoallw_ __attribute__((weak));
extern fortran_w_t pmpi_ialltoallw __attribute__((weak));
extern fortran_w_t pmpi_ialltoallw__ __attribute__((weak));
extern fortran_w_t PMPI_IALLTOALLW __attribute__((weak));

/* The call's Fortran arguments as it received them. */
struct w_args {
    void *sendbuf, *recvbuf;
    MPI_Fint *sendcounts, *sdispls, *sendtypes, *recvcounts, *rdispls, *recvtypes, *comm;
};

/* The MPI library's own Fortran MPI_IALLTOALLW with the original arguments (it keeps its
   converted arrays as long as its request): the library's way (aapc_nbc.h). */
static int library_w(void *ctx, MPI_Request *request)
{
    struct w_args *a = ctx;
    fortran_w_t *lib = pmpi_ialltoallw_    ? pmpi_ialltoallw_
                       : pmpi_ialltoallw   ? pmpi_ialltoallw
                       : pmpi_ialltoallw__ ? pmpi_ialltoallw__
                                           : PMPI_IALLTOALLW;
    MPI_Fint req = 0, ierr = MPI_ERR_INTERN;
    if (lib == NULL) {
        int rc = MPI_Comm_call_errhandler(MPI_Comm_f2c(*a->comm), MPI_ERR_INTERN);
        return rc == MPI_SUCCESS ? MPI_ERR_INTERN : rc;
    }
    lib(a->sendbuf, a->sendcounts, a->sdispls, a->sendtypes, a->recvbuf, a->recvcounts,
        a->rdispls, a->recvtypes, a->comm, &req, &ierr);
    if (ierr == MPI_SUCCESS)
        *request = MPI_Request_f2c(req);
    return (int)ierr;
}

static void fortran_ialltoallw(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls,
                               MPI_Fint *sendtypes, void *recvbuf, MPI_Fint *recvcounts,
                               MPI_Fint *rdispls, MPI_Fint *recvtypes, MPI_Fint *comm,
                               MPI_Fint *request, MPI_Fint *ierr)
{
    struct w_args a = {sendbuf, recvbuf, sendcounts, sdispls, sendtypes, recvcounts, rdispls,
                       recvtypes, comm};
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm c = MPI_Comm_f2c(*comm);
    void *sb = aapc_fortran_buffer(sendbuf, 1), *rb = aapc_fortran_buffer(recvbuf, 0);
    int rc, n = aapc_fortran_peers(c);
    MPI_Datatype *types = NULL;
    if (sizeof(MPI_Fint) == sizeof(int) && aapc_fortran_completions_ours())
        types = malloc(sizeof *types * 2 * (size_t)(n > 0 ? n : 1));
    if (types == NULL) { /* completions not ours, MPI_Fint not an int, or no memory */
        double t0 = library_begin();
        rc = library_w(&a, &r);
        rc = aapc_report_entry(t0, "MPI_Ialltoallw", "Fortran binding", 0, c, rc);
        done(rc, r, request, ierr);
        return;
    }
    for (int i = 0; i < n; i++) {
        types[i] = sb == MPI_IN_PLACE ? MPI_DATATYPE_NULL : MPI_Type_f2c(sendtypes[i]);
        types[n + i] = MPI_Type_f2c(recvtypes[i]);
    }
    /* MPI_Fint is an int here: the count and displacement arrays are the C arrays */
    rc = aapc_ialltoallw_owned(sb, (const int *)(const void *)sendcounts,
                               (const int *)(const void *)sdispls, rb,
                               (const int *)(const void *)recvcounts,
                               (const int *)(const void *)rdispls, types, c, library_w, &a, &r);
    done(rc, r, request, ierr);
}

#define AAPC_FORTRAN_IALLTOALLW(name)                                                          \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtypes,    \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtypes,    \
              MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr);                              \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtypes,    \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtypes,    \
              MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)                               \
    {                                                                                          \
        fortran_ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,       \
                           rdispls, recvtypes, comm, request, ierr);                           \
    }

#define AAPC_FORTRAN_IALLTOALL(name)                                                           \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *request,     \
              MPI_Fint *ierr);                                                                 \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *request,     \
              MPI_Fint *ierr)                                                                  \
    {                                                                                          \
        fortran_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,    \
                          NULL, request, ierr);                                                \
    }

#define AAPC_FORTRAN_IALLTOALLV(name)                                                          \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr);                              \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr)                               \
    {                                                                                          \
        if (sizeof(MPI_Fint) != sizeof(int))                                                   \
            wide_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,       \
                            rdispls, recvtype, comm, request, ierr);                           \
        else                                                                                   \
            fortran_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,    \
                               rdispls, recvtype, comm, NULL, request, ierr);                  \
    }

AAPC_FORTRAN_IALLTOALL(ompi_ialltoall_f)
AAPC_FORTRAN_IALLTOALL(mpi_ialltoall)
AAPC_FORTRAN_IALLTOALL(mpi_ialltoall_)
AAPC_FORTRAN_IALLTOALL(mpi_ialltoall__)
AAPC_FORTRAN_IALLTOALL(MPI_IALLTOALL)
AAPC_FORTRAN_IALLTOALL(MPI_Ialltoall_f)
AAPC_FORTRAN_IALLTOALL(MPI_Ialltoall_f08)

AAPC_FORTRAN_IALLTOALLV(ompi_ialltoallv_f)
AAPC_FORTRAN_IALLTOALLV(mpi_ialltoallv)
AAPC_FORTRAN_IALLTOALLV(mpi_ialltoallv_)
AAPC_FORTRAN_IALLTOALLV(mpi_ialltoallv__)
AAPC_FORTRAN_IALLTOALLV(MPI_IALLTOALLV)
AAPC_FORTRAN_IALLTOALLV(MPI_Ialltoallv_f)
AAPC_FORTRAN_IALLTOALLV(MPI_Ialltoallv_f08)

AAPC_FORTRAN_IALLTOALLW(ompi_ialltoallw_f)
AAPC_FORTRAN_IALLTOALLW(mpi_ialltoallw)
AAPC_FORTRAN_IALLTOALLW(mpi_ialltoallw_)
AAPC_FORTRAN_IALLTOALLW(mpi_ialltoallw__)
AAPC_FORTRAN_IALLTOALLW(MPI_IALLTOALLW)
AAPC_FORTRAN_IALLTOALLW(MPI_Ialltoallw_f)
AAPC_FORTRAN_IALLTOALLW(MPI_Ialltoallw_f08)

#if OMPI_MAJOR_VERSION < 6 /* as in aapc_fortran_alltoall.c */
AAPC_FORTRAN_IALLTOALL(mpi_ialltoall_f08_)
AAPC_FORTRAN_IALLTOALLV(mpi_ialltoallv_f08_)
AAPC_FORTRAN_IALLTOALLW(mpi_ialltoallw_f08_)
#endif

#ifdef AAPC_HAVE_PERSISTENT_COLL /* Open MPI 5 */
#define AAPC_FORTRAN_ALLTOALL_INIT(name)                                                       \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *info,        \
              MPI_Fint *request, MPI_Fint *ierr);                                              \
    void name(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,          \
              MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *info,        \
              MPI_Fint *request, MPI_Fint *ierr)                                               \
    {                                                                                          \
        fortran_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,    \
                          info, request, ierr);                                                \
    }

/* MPI_Fint wider than an int: the library's own routine, as for MPI_IALLTOALLV */
extern fortran_v_init_t pmpi_alltoallv_init_ __attribute__((weak));
static void wide_alltoallv_init(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls,
                                MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcounts,
                                MPI_Fint *rdispls, MPI_Fint *recvtype, MPI_Fint *comm,
                                MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr)
{
    if (pmpi_alltoallv_init_ != NULL) {
        pmpi_alltoallv_init_(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                             rdispls, recvtype, comm, info, request, ierr);
        return;
    }
    int rc = MPI_Comm_call_errhandler(MPI_Comm_f2c(*comm), MPI_ERR_INTERN);
    if (ierr != NULL)
        *ierr = (MPI_Fint)(rc == MPI_SUCCESS ? MPI_ERR_INTERN : rc);
}

#define AAPC_FORTRAN_ALLTOALLV_INIT(name)                                                      \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr);              \
    void name(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,     \
              void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,     \
              MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr)               \
    {                                                                                          \
        if (sizeof(MPI_Fint) != sizeof(int))                                                   \
            wide_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,   \
                                rdispls, recvtype, comm, info, request, ierr);                 \
        else                                                                                   \
            fortran_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,    \
                               rdispls, recvtype, comm, info, request, ierr);                  \
    }

AAPC_FORTRAN_ALLTOALL_INIT(ompi_alltoall_init_f)
AAPC_FORTRAN_ALLTOALL_INIT(mpi_alltoall_init)
AAPC_FORTRAN_ALLTOALL_INIT(mpi_alltoall_init_)
AAPC_FORTRAN_ALLTOALL_INIT(mpi_alltoall_init__)
AAPC_FORTRAN_ALLTOALL_INIT(MPI_ALLTOALL_INIT)
AAPC_FORTRAN_ALLTOALL_INIT(MPI_Alltoall_init_f)
AAPC_FORTRAN_ALLTOALL_INIT(MPI_Alltoall_init_f08)

AAPC_FORTRAN_ALLTOALLV_INIT(ompi_alltoallv_init_f)
AAPC_FORTRAN_ALLTOALLV_INIT(mpi_alltoallv_init)
AAPC_FORTRAN_ALLTOALLV_INIT(mpi_alltoallv_init_)
AAPC_FORTRAN_ALLTOALLV_INIT(mpi_alltoallv_init__)
AAPC_FORTRAN_ALLTOALLV_INIT(MPI_ALLTOALLV_INIT)
AAPC_FORTRAN_ALLTOALLV_INIT(MPI_Alltoallv_init_f)
AAPC_FORTRAN_ALLTOALLV_INIT(MPI_Alltoallv_init_f08)
#if OMPI_MAJOR_VERSION < 6
AAPC_FORTRAN_ALLTOALL_INIT(mpi_alltoall_init_f08_)
AAPC_FORTRAN_ALLTOALLV_INIT(mpi_alltoallv_init_f08_)
#endif
#endif
#endif
