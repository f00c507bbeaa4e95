/*
 * aapc_nbc_large.c: the large-count non-blocking and persistent all-to-all (MPI-4's
 * MPI_Ialltoall_c, MPI_Alltoall_init_c, MPI_Ialltoallv_c, MPI_Alltoallv_init_c) and
 * MPI_Ialltoallw / MPI_Alltoallw_init, served by this library's MPI_Ialltoall /
 * MPI_Alltoall_init / MPI_Ialltoallv / MPI_Alltoallv_init; MPI_Ialltoallw_c and
 * MPI_Alltoallw_init_c handed to the library.
 *
 * These calls must be local: no rank may wait for another to agree on a way, so every rank
 * must reach the same way from what it knows alone, or from what the call's own gather brings.
 *   - MPI_Ialltoall_c, MPI_Alltoall_init_c: the bytes of one block are the same on every rank
 *     of a valid call. Blocks of at most INT_MAX bytes: every count fits in int (or counts
 *     elements of size 0: passed as 0, the same empty signature), and the int entry serves the
 *     call. Larger blocks go to the library's PMPI_Ialltoall_c / PMPI_Alltoall_init_c on every
 *     rank, with the reason: a rank may state them with a count beyond int, whose contiguous
 *     type (as in the blocking MPI_Alltoall_c) would have to live as long as the request, and
 *     the int entry's request does not own one.
 *   - MPI_Ialltoallv_c, MPI_Alltoallv_init_c: each side restated in int as in the blocking
 *     MPI_Alltoallv_c (alltoallv/aapc_vlarge.c: from its least displacement, counts / g of
 *     MPI_Type_contiguous_c(g, type)); the int copies and the types are handed to the int
 *     entry's request, which frees them with itself (aapc_nbc.h aapc_nbc_owned_t). Where the
 *     int entry goes to the library, the library runs this call's own arguments
 *     (PMPI_Ialltoallv_c: the user's arrays outlive the request, as MPI requires). A rank that
 *     cannot restate its arguments (no common divisor) still makes the int entry's call, with
 *     zero counts and its true row of bytes, marked: when the rows are gathered every rank
 *     sees the mark and takes the linear exchange, this rank with its own arguments
 *     (MPI_Isend_c / MPI_Irecv_c; MPI_IN_PLACE: its receive span copied aside at each start).
 *     A rank whose datatype has holes marks its row too: the int call's way depends on the
 *     datatypes' density, which each rank knows of its own only.
 *   - MPI_Ialltoallw, MPI_Alltoallw_init: each side reduced as by the blocking MPI_Alltoallw
 *     (alltoallv/aapc_alltoallw.c: one datatype, or dense bytes) into int arrays the request
 *     owns, for MPI_Ialltoallv / MPI_Alltoallv_init (the library's way: PMPI_Ialltoallw with
 *     the call's own arguments). The int call's way depends on whether the datatypes are dense,
 *     a fact of each rank: a rank whose sides do not reduce, or reduce to a datatype with holes,
 *     marks its row as above, and every rank takes the linear exchange, this one with its own
 *     datatype per peer (MPI_Isend / MPI_Irecv; MPI_IN_PLACE: its receive span copied aside).
 *   - MPI_Ialltoallw_c, MPI_Alltoallw_init_c: the library's, the reason said once per job and
 *     shown in the report.
 * Calls from an MPI library's Fortran bindings (aapc_nbc_caller.c), on MPI_COMM_NULL,
 * inter-communicators or outside MPI_Init..MPI_Finalize go to the library untouched.
 * Cost: the int entry's, plus O(P) local work and 16 P bytes of copies per call (the v and w
 * forms; w: the committed probe per distinct datatype), a divisor search and a contiguous type
 * per side restated.
 * Compiled where mpi.h is MPI 4 or later (the _c functions); MPI_Ialltoallw with any MPI,
 * MPI_Alltoallw_init where the library has persistent collectives.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_alias.h"
#include "aapc_alltoallw.h"
#include "aapc_args.h"
#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_exec.h" /* aapc_dense */
#include "aapc_mpi.h"
#include "aapc_nbc.h"
#include "aapc_report.h"
#include "aapc_vlarge.h"

/* The hand-over of aapc_nbc_own_next, per thread (under SimGrid SMPI, whose simulated ranks
   share OS threads, per rank: its global data is privatized). */
#ifdef SMPI_SHARED_MALLOC
static aapc_nbc_owned_t *next_owned;
#else
static _Thread_local aapc_nbc_owned_t *next_owned;
#endif

void aapc_nbc_own_next(aapc_nbc_owned_t *o)
{
    next_owned = o;
}

aapc_nbc_owned_t *aapc_nbc_own_take(void)
{
    aapc_nbc_owned_t *o = next_owned;
    next_owned = NULL;
    return o;
}

#ifdef AAPC_INTERCEPT

/* ---- MPI_Ialltoallw_c, MPI_Alltoallw_init_c (below): the library's ----------------------- */

/* The bytes this rank sends in an Alltoallw. */
#define W_BYTES(counts, types, size, out)                                                        \
    do {                                                                                          \
        double b_ = 0;                                                                            \
        for (int i_ = 0; (counts) != NULL && (types) != NULL && i_ < (size); i_++) {              \
            int64_t one_ = aapc_block_bytes((counts)[i_], (types)[i_]);                           \
            b_ += one_ > 0 ? (double)one_ : 0;                                                    \
        }                                                                                         \
        (out) = aapc_bytes_total(b_);                                                             \
    } while (0)

/* ---- MPI_Ialltoallw, MPI_Alltoallw_init: MPI_Ialltoallv where this rank's types reduce ---- */

/* What the request owns: the call's own arguments, the reduced int arrays, and for a rank
   whose types do not reduce to one dense datatype its row of bytes and its MPI_IN_PLACE copy. */
struct wown {
    aapc_nbc_owned_t base;
    const void *sendbuf;
    void *recvbuf;
    const int *sc, *sd, *rc, *rd;
    const MPI_Datatype *st, *rt;
    MPI_Comm comm;
    int n, me;
    int *ints; /* 4 n */
    long long *row;
    char *inplace;
    MPI_Datatype *types;           /* aapc_ialltoallw_owned: the converted arrays, ours */
    aapc_nbc_w_library_fn *flib;   /* ... and the MPI's own Fortran routine, for `library` */
    void *fctx;
};

static int wown_library(aapc_nbc_owned_t *o_, int persistent, MPI_Info info, MPI_Request *request)
{
    struct wown *o = (struct wown *)o_;
    if (o->flib != NULL) /* the Fortran call's own arguments, whose arrays the MPI keeps */
        return o->flib(o->fctx, request);
#ifdef AAPC_HAVE_PERSISTENT_COLL
    if (persistent)
        return PMPI_Alltoallw_init(o->sendbuf, o->sc, o->sd, o->st, o->recvbuf, o->rc, o->rd,
                                   o->rt, o->comm, info, request);
#else
    (void)persistent;
    (void)info;
#endif
    return PMPI_Ialltoallw(o->sendbuf, o->sc, o->sd, o->st, o->recvbuf, o->rc, o->rd, o->rt,
                           o->comm, request);
}

static void wown_release(aapc_nbc_owned_t *o_)
{
    struct wown *o = (struct wown *)o_;
    free(o->ints);
    free(o->row);
    free(o->inplace);
    free(o->types);
    free(o);
}

/* MPI_IN_PLACE: the span of the receive blocks (each of its own datatype) copied aside. */
static int wown_copy(struct wown *o, const char **base)
{
    MPI_Aint lo = 0, hi = 0;
    int rc, any = 0;
    for (int j = 0; j < o->n; j++) {
        MPI_Aint lb, ext, tlb, text;
        if (o->rc[j] <= 0)
            continue;
        if ((rc = PMPI_Type_get_extent(o->rt[j], &lb, &ext)) != MPI_SUCCESS ||
            (rc = PMPI_Type_get_true_extent(o->rt[j], &tlb, &text)) != MPI_SUCCESS)
            return rc;
        MPI_Aint last = (MPI_Aint)(o->rc[j] - 1);
        MPI_Aint l = o->rd[j] + tlb + (ext < 0 ? last * ext : 0);
        MPI_Aint h = o->rd[j] + tlb + text + (ext > 0 ? last * ext : 0);
        lo = any && lo < l ? lo : l;
        hi = any && hi > h ? hi : h;
        any = 1;
    }
    free(o->inplace);
    if ((o->inplace = malloc((size_t)(hi - lo) + 1)) == NULL)
        return MPI_ERR_NO_MEM;
    if (any)
        memcpy(o->inplace, aapc_at(o->recvbuf, lo), (size_t)(hi - lo));
    *base = aapc_at(o->inplace, -lo);
    return MPI_SUCCESS;
}

/* The linear exchange with the call's own datatypes (aapc_nbc.h); an empty block as 0 bytes,
   matching the peers' empty messages. */
static int wown_linear(aapc_nbc_owned_t *o_, MPI_Comm dup, int tag, MPI_Request *reqs)
{
    struct wown *o = (struct wown *)o_;
    int rc, n = o->n, inplace = o->sendbuf == MPI_IN_PLACE;
    const char *sbuf = o->sendbuf;
    const int *sc = inplace ? o->rc : o->sc, *sd = inplace ? o->rd : o->sd;
    const MPI_Datatype *st = inplace ? o->rt : o->st;
    for (int j = 0; j < 2 * n; j++)
        reqs[j] = MPI_REQUEST_NULL;
    if (inplace && (rc = wown_copy(o, &sbuf)) != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < n; j++) {
        int e = o->rc[j] > 0;
        if ((rc = PMPI_Irecv(aapc_at(o->recvbuf, e ? o->rd[j] : 0), e ? o->rc[j] : 0,
                             e ? o->rt[j] : MPI_BYTE, j, j == o->me ? tag + 2 : tag, dup,
                             &reqs[j])) != MPI_SUCCESS)
            return rc;
    }
    for (int k = 0; k < n; k++) { /* the own block first, then me + 1, me + 2, ... */
        int j = (o->me + k) % n, e = sc[j] > 0;
        if ((rc = PMPI_Isend(aapc_at(sbuf, e ? sd[j] : 0), e ? sc[j] : 0, e ? st[j] : MPI_BYTE,
                             j, k == 0 ? tag + 2 : tag, dup, &reqs[n + j])) != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* types, flib, fctx: aapc_ialltoallw_owned's (sendtypes and recvtypes are in types), else
   NULL. */
static int alltoallw_nb(const char *entry, int persistent, const void *sendbuf,
                        const int sendcounts[], const int sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                        const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        MPI_Info info, const void *caller, MPI_Request *request,
                        MPI_Datatype *types, aapc_nbc_w_library_fn *flib, void *fctx)
{
    double t0 = aapc_report_begin();
    int rc, n = 0, me = 0, inplace = sendbuf == MPI_IN_PLACE, cls = 0;
    int library = aapc_args_to_library(comm, entry, entry);
    if (!library && aapc_nbc_from_fortran(caller)) {
        aapc_report_fallback(AAPC_NBC_FORTRAN_WHY);
        library = 1;
    }
    if (!library && aapc_alias_alltoallv(sendbuf, sendcounts, sendtypes == recvtypes, recvbuf,
                                         recvcounts)) {
        aapc_report_fallback(AAPC_ALIAS_WHY);
        library = 1;
    }
    if (!library && ((rc = PMPI_Comm_size(comm, &n)) != MPI_SUCCESS ||
                     (rc = PMPI_Comm_rank(comm, &me)) != MPI_SUCCESS))
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    long long bytes; /* under MPI_IN_PLACE the send arguments are not looked at */
    if (inplace)
        W_BYTES(recvcounts, recvtypes, n, bytes);
    else
        W_BYTES(sendcounts, sendtypes, n, bytes);
    if (library) {
        struct wown w = {{NULL, NULL, NULL, NULL}, sendbuf, recvbuf, sendcounts, sdispls,
                         recvcounts, rdispls, sendtypes, recvtypes, comm, 0, 0, NULL, NULL, NULL,
                         NULL, flib, fctx};
        rc = wown_library(&w.base, persistent, info, request);
        free(types);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    char what[200] = "";
    if (!inplace)
        aapc_alltoallw_check("send", sendcounts, sdispls, sendtypes, n, comm, &cls, what,
                             sizeof what);
    aapc_alltoallw_check("recv", recvcounts, rdispls, recvtypes, n, comm, &cls, what,
                         sizeof what);
    struct wown *o = calloc(1, sizeof *o);
    int *ints = o != NULL ? malloc(4 * (size_t)(n ? n : 1) * sizeof *ints) : NULL;
    if (ints == NULL || cls != 0) { /* this rank alone: the others would wait for it */
        free(o);
        free(ints);
        free(types);
        rc = aapc_args_raise_alone(comm, cls != 0 ? cls : MPI_ERR_NO_MEM);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    *o = (struct wown){{wown_library, NULL, NULL, wown_release}, sendbuf, recvbuf, sendcounts,
                       sdispls, recvcounts, rdispls, sendtypes, recvtypes, comm, n, me, ints,
                       NULL, NULL, types, flib, fctx};
    MPI_Datatype sone = MPI_BYTE, rone = MPI_BYTE;
    int *sc = inplace ? ints + 2 * n : ints, *sd = inplace ? ints + 3 * n : ints + n;
    int cause = inplace ? 0 : aapc_alltoallw_reduce(sendcounts, sdispls, sendtypes, n, ints,
                                                    ints + n, &sone);
    if (cause == 0)
        cause = aapc_alltoallw_reduce(recvcounts, rdispls, recvtypes, n, ints + 2 * n,
                                      ints + 3 * n, &rone);
    /* the int call's way depends on the datatypes' density, a local fact: a rank whose reduced
       datatype has holes marks its row, so that every rank takes the linear exchange */
    if (cause != 0 || !aapc_dense(rone) || (!inplace && !aapc_dense(sone))) {
        const int *bc = inplace ? recvcounts : sendcounts;
        const MPI_Datatype *bt = inplace ? recvtypes : sendtypes;
        if ((o->row = malloc((size_t)n * sizeof *o->row)) == NULL) {
            wown_release(&o->base);
            rc = aapc_args_raise_alone(comm, MPI_ERR_NO_MEM);
            return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
        }
        for (int j = 0; j < n; j++) {
            int64_t e = 0;
            o->row[j] = bc[j] > 0 && aapc_type_size(bt[j], &e) == MPI_SUCCESS
                            ? (long long)bc[j] * e
                            : 0;
        }
        memset(ints, 0, 4 * (size_t)n * sizeof *ints);
        o->base.row = o->row;
        o->base.linear = wown_linear;
        sone = rone = MPI_BYTE;
    }
    aapc_nbc_own_next(&o->base); /* taken (and released) by the int entry */
    const void *sbuf = inplace ? MPI_IN_PLACE : sendbuf;
#ifdef AAPC_HAVE_PERSISTENT_COLL
    if (persistent)
        rc = MPI_Alltoallv_init(sbuf, sc, sd, sone, recvbuf, ints + 2 * n, ints + 3 * n, rone,
                                comm, info, request);
    else
#endif
        rc = MPI_Ialltoallv(sbuf, sc, sd, sone, recvbuf, ints + 2 * n, ints + 3 * n, rone, comm,
                            request);
    if (aapc_nbc_own_take() != NULL) /* not taken: an entry that is not ours ran */
        wown_release(&o->base);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request)
{
    return alltoallw_nb("MPI_Ialltoallw", 0, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                        recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL, AAPC_CALLER,
                        request, NULL, NULL, NULL);
}

int aapc_ialltoallw_owned(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          void *recvbuf, const int recvcounts[], const int rdispls[],
                          MPI_Datatype *types, MPI_Comm comm, aapc_nbc_w_library_fn *library,
                          void *ctx, MPI_Request *request)
{
    int n = 0;
    if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
        n = 0; /* the entry's own checks say why */
    return alltoallw_nb("MPI_Ialltoallw", 0, sendbuf, sendcounts, sdispls, types, recvbuf,
                        recvcounts, rdispls, types + n, comm, MPI_INFO_NULL, NULL, request,
                        types, library, ctx);
}

#ifdef AAPC_HAVE_PERSISTENT_COLL
int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                       MPI_Info info, MPI_Request *request)
{
    return alltoallw_nb("MPI_Alltoallw_init", 1, sendbuf, sendcounts, sdispls, sendtypes,
                        recvbuf, recvcounts, rdispls, recvtypes, comm, info, AAPC_CALLER,
                        request, NULL, NULL, NULL);
}
#endif

#if MPI_VERSION >= 4

#define W_WHY                                                                                     \
    "the large-count non-blocking and persistent MPI_Alltoallw are the MPI library's"

/* Before the library's call: the reason said once (not for the calls the library answers
   untouched: null and inter-communicators, outside MPI_Init..MPI_Finalize) and the size of
   the communicator for the report's bytes (0: none counted). */
static int w_begin(const char *entry, MPI_Comm comm)
{
    int size = 0;
    if (aapc_args_to_library(comm, entry, entry) || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return 0;
    aapc_warn_fallback(comm, entry, W_WHY, entry);
    return size;
}

int MPI_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                     MPI_Request *request)
{
    static const char entry[] = "MPI_Ialltoallw_c";
    double t0 = aapc_report_begin();
    long long bytes; /* under MPI_IN_PLACE the send arguments are not looked at */
    int size = w_begin(entry, comm);
    if (sendbuf == MPI_IN_PLACE)
        W_BYTES(recvcounts, recvtypes, size, bytes);
    else
        W_BYTES(sendcounts, sendtypes, size, bytes);
    int rc = PMPI_Ialltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

int MPI_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    static const char entry[] = "MPI_Alltoallw_init_c";
    double t0 = aapc_report_begin();
    long long bytes; /* under MPI_IN_PLACE the send arguments are not looked at */
    int size = w_begin(entry, comm);
    if (sendbuf == MPI_IN_PLACE)
        W_BYTES(recvcounts, recvtypes, size, bytes);
    else
        W_BYTES(sendcounts, sendtypes, size, bytes);
    int rc = PMPI_Alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm, info, request);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

/* ---- MPI_Ialltoall_c, MPI_Alltoall_init_c ------------------------------------------------ */

/* A count for the int entry: as it is, 0 for elements of size 0, -1 when negative (the int
   entry's checks raise it); *beyond when it does not fit. */
static int int_count(MPI_Count n, MPI_Datatype t, int *beyond)
{
    if (n >= INT_MIN && n <= INT_MAX)
        return (int)n;
    if (n < 0)
        return -1;
    if (aapc_block_bytes(n, t) == 0)
        return 0;
    *beyond = 1;
    return -1;
}

static int alltoall_c(const char *entry, int persistent, const void *sendbuf,
                      MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                      MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      const void *caller, MPI_Request *request)
{
    double t0 = aapc_report_begin();
    int rc, size = 0, beyond = 0, inplace = sendbuf == MPI_IN_PLACE;
    int64_t sb = inplace ? -1 : aapc_block_bytes(sendcount, sendtype);
    int64_t rb = aapc_block_bytes(recvcount, recvtype), b = sb > rb ? sb : rb;
    int scount = inplace ? 0 : int_count(sendcount, sendtype, &beyond);
    int rcount = int_count(recvcount, recvtype, &beyond);
    int untouched = aapc_args_to_library(comm, entry, entry), library = untouched;
    if (!library && aapc_nbc_from_fortran(caller)) {
        aapc_report_fallback(AAPC_NBC_FORTRAN_WHY);
        library = 1;
    } else if (!library && (b > INT_MAX || beyond)) {
        aapc_warn_fallback(comm, entry,
                           "blocks of more than INT_MAX bytes (a rank may count them beyond an "
                           "int, in a type that would have to outlive the call)",
                           entry);
        library = 1;
    }
    if (!untouched && PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        size = 0;
    if (library) {
#ifdef AAPC_HAVE_PERSISTENT_COLL
        if (persistent)
            rc = PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm, info, request);
        else
#endif
            rc = PMPI_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm, request);
    } else if (persistent) {
        rc = MPI_Alltoall_init(sendbuf, scount, sendtype, recvbuf, rcount, recvtype, comm, info,
                               request);
    } else {
        rc = MPI_Ialltoall(sendbuf, scount, sendtype, recvbuf, rcount, recvtype, comm, request);
    }
    long long bytes = b > 0 && b < INT64_MAX / (size > 0 ? size : 1) ? b * size : 0;
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request)
{
    return alltoall_c("MPI_Ialltoall_c", 0, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                      recvtype, comm, MPI_INFO_NULL, AAPC_CALLER, request);
}

int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    return alltoall_c("MPI_Alltoall_init_c", 1, sendbuf, sendcount, sendtype, recvbuf,
                      recvcount, recvtype, comm, info, AAPC_CALLER, request);
}

/* ---- MPI_Ialltoallv_c, MPI_Alltoallv_init_c ---------------------------------------------- */

/* What the int entry's request owns: the call's own arguments, their int restatement, and for
   a rank that cannot restate them its row of bytes and the copy of MPI_IN_PLACE. */
struct vown {
    aapc_nbc_owned_t base;
    const void *sendbuf;
    void *recvbuf;
    const MPI_Count *sc, *rc;
    const MPI_Aint *sd, *rd;
    MPI_Datatype st, rt;
    MPI_Comm comm;
    int n, me;
    int *ints; /* 4 n */
    aapc_vlarge_t S, R;
    long long *row;
    char *inplace;
};

static int vown_library(aapc_nbc_owned_t *o_, int persistent, MPI_Info info, MPI_Request *request)
{
    struct vown *o = (struct vown *)o_;
#ifdef AAPC_HAVE_PERSISTENT_COLL
    if (persistent)
        return PMPI_Alltoallv_init_c(o->sendbuf, o->sc, o->sd, o->st, o->recvbuf, o->rc, o->rd,
                                     o->rt, o->comm, info, request);
#else
    (void)info;
#endif
    return PMPI_Ialltoallv_c(o->sendbuf, o->sc, o->sd, o->st, o->recvbuf, o->rc, o->rd, o->rt,
                             o->comm, request);
}

static void vown_release(aapc_nbc_owned_t *o_)
{
    struct vown *o = (struct vown *)o_;
    if (o->S.made != MPI_DATATYPE_NULL)
        PMPI_Type_free(&o->S.made);
    if (o->R.made != MPI_DATATYPE_NULL)
        PMPI_Type_free(&o->R.made);
    free(o->ints);
    free(o->row);
    free(o->inplace);
    free(o);
}

/* MPI_IN_PLACE: the span of the receive blocks copied aside (*base: where the receive
   buffer's address 0 falls in the copy). */
static int vown_copy(struct vown *o, const char **base)
{
    MPI_Aint lb, ext, tlb, text, lo = 0, hi = 0;
    int rc, any = 0;
    if ((rc = PMPI_Type_get_extent(o->rt, &lb, &ext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_true_extent(o->rt, &tlb, &text)) != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < o->n; j++) {
        if (o->rc[j] <= 0)
            continue;
        MPI_Aint at = o->rd[j] * ext, last = (MPI_Aint)(o->rc[j] - 1);
        MPI_Aint l = at + tlb + (ext < 0 ? last * ext : 0);
        MPI_Aint h = at + tlb + text + (ext > 0 ? last * ext : 0);
        lo = any && lo < l ? lo : l;
        hi = any && hi > h ? hi : h;
        any = 1;
    }
    free(o->inplace);
    if ((o->inplace = malloc((size_t)(hi - lo) + 1)) == NULL)
        return MPI_ERR_NO_MEM;
    if (any)
        memcpy(o->inplace, aapc_at(o->recvbuf, lo), (size_t)(hi - lo));
    *base = aapc_at(o->inplace, -lo);
    return MPI_SUCCESS;
}

/* The linear exchange with the call's own arguments (aapc_nbc.h). */
static int vown_linear(aapc_nbc_owned_t *o_, MPI_Comm dup, int tag, MPI_Request *reqs)
{
    struct vown *o = (struct vown *)o_;
    int rc, n = o->n, inplace = o->sendbuf == MPI_IN_PLACE;
    const char *sbuf = o->sendbuf;
    const MPI_Count *sc = inplace ? o->rc : o->sc;
    const MPI_Aint *sd = inplace ? o->rd : o->sd;
    MPI_Datatype st = inplace ? o->rt : o->st;
    MPI_Aint lb, sext, rext;
    for (int j = 0; j < 2 * n; j++)
        reqs[j] = MPI_REQUEST_NULL;
    if ((inplace && (rc = vown_copy(o, &sbuf)) != MPI_SUCCESS) ||
        (rc = PMPI_Type_get_extent(st, &lb, &sext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(o->rt, &lb, &rext)) != MPI_SUCCESS)
        return rc;
    for (int j = 0; j < n; j++)
        if ((rc = PMPI_Irecv_c(aapc_at(o->recvbuf, o->rd[j] * rext), o->rc[j], o->rt, j,
                               j == o->me ? tag + 2 : tag, dup, &reqs[j])) != MPI_SUCCESS)
            return rc;
    for (int k = 0; k < n; k++) { /* the own block first, then me + 1, me + 2, ... */
        int j = (o->me + k) % n;
        if ((rc = PMPI_Isend_c(aapc_at(sbuf, sd[j] * sext), sc[j], st, j, k == 0 ? tag + 2 : tag,
                               dup, &reqs[n + j])) != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* One side's local finding: NULL arrays or a negative count (the int entry raises them). */
static int side_ok(const MPI_Count counts[], const MPI_Aint displs[], int n)
{
    if (counts == NULL || displs == NULL)
        return 0;
    for (int j = 0; j < n; j++)
        if (counts[j] < 0)
            return 0;
    return 1;
}

/* An erroneous side as int arrays: the counts clipped (negative ones -1), NULL kept. */
static void clip(const MPI_Count counts[], const MPI_Aint displs[], int n, int *c, int *d,
                 const int **cp, const int **dp)
{
    *cp = counts != NULL ? c : NULL;
    *dp = displs != NULL ? d : NULL;
    for (int j = 0; j < n; j++) {
        if (counts != NULL)
            c[j] = counts[j] < 0 ? -1 : counts[j] > INT_MAX ? INT_MAX : (int)counts[j];
        if (displs != NULL)
            d[j] = displs[j] > INT_MAX || displs[j] < INT_MIN ? 0 : (int)displs[j];
    }
}

static int alltoallv_c(const char *entry, int persistent, const void *sendbuf,
                       const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                       const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Info info, const void *caller, MPI_Request *request)
{
    double t0 = aapc_report_begin();
    int rc, n = 0, me = 0, inplace = sendbuf == MPI_IN_PLACE;
    int library = aapc_args_to_library(comm, entry, entry);
    if (!library && aapc_nbc_from_fortran(caller)) {
        aapc_report_fallback(AAPC_NBC_FORTRAN_WHY);
        library = 1;
    }
    if (!library && ((rc = PMPI_Comm_size(comm, &n)) != MPI_SUCCESS ||
                     (rc = PMPI_Comm_rank(comm, &me)) != MPI_SUCCESS))
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    long long bytes = 0;
    int64_t tsize = 0;
    const MPI_Count *bc = inplace ? recvcounts : sendcounts;
    if (!library && bc != NULL && aapc_type_size(inplace ? recvtype : sendtype, &tsize) == MPI_SUCCESS)
        for (int j = 0; j < n; j++)
            bytes += bc[j] > 0 ? (long long)bc[j] * tsize : 0;
    struct vown *o = library ? NULL : calloc(1, sizeof *o);
    int *ints = o != NULL ? malloc(4 * (size_t)(n ? n : 1) * sizeof *ints) : NULL;
    if (library) {
#ifdef AAPC_HAVE_PERSISTENT_COLL
        if (persistent)
            rc = PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm, info, request);
        else
#endif
            rc = PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, request);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    if (ints == NULL) {
        free(o);
        rc = aapc_args_raise_alone(comm, MPI_ERR_NO_MEM); /* the others would wait for it */
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    *o = (struct vown){{vown_library, NULL, NULL, vown_release}, sendbuf, recvbuf, sendcounts,
                       recvcounts, sdispls, rdispls, sendtype, recvtype, comm, n, me, ints,
                       {ints, ints + n, sendbuf, sendtype, MPI_DATATYPE_NULL, 1},
                       {ints + 2 * n, ints + 3 * n, recvbuf, recvtype, MPI_DATATYPE_NULL, 1},
                       NULL, NULL};
    const int *sc, *sd, *rc_, *rd;
    if (!(inplace || side_ok(sendcounts, sdispls, n)) || !side_ok(recvcounts, rdispls, n)) {
        /* the int entry's checks raise it, as for its own arguments */
        clip(sendcounts, sdispls, n, ints, ints + n, &sc, &sd);
        clip(recvcounts, rdispls, n, ints + 2 * n, ints + 3 * n, &rc_, &rd);
        rc = persistent ? MPI_Alltoallv_init(sendbuf, sc, sd, sendtype, recvbuf, rc_, rd, recvtype,
                                             comm, info, request)
                        : MPI_Ialltoallv(sendbuf, sc, sd, sendtype, recvbuf, rc_, rd, recvtype,
                                         comm, request);
        vown_release(&o->base);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    int shift = inplace || sendbuf != recvbuf || sendbuf == MPI_BOTTOM;
    int cause = inplace ? AAPC_VLARGE_OK
                        : aapc_vlarge_side(sendbuf, sendcounts, sdispls, sendtype, n, shift, &o->S);
    if (cause == AAPC_VLARGE_OK)
        cause = aapc_vlarge_side(recvbuf, recvcounts, rdispls, recvtype, n, shift, &o->R);
    const void *sbuf = inplace ? MPI_IN_PLACE : o->S.buf, *rbuf = o->R.buf;
    MPI_Datatype st = inplace ? o->R.type : o->S.type, rt = o->R.type;
    sc = inplace ? o->R.c : o->S.c;
    sd = inplace ? o->R.d : o->S.d;
    /* the int call's way depends on the datatypes' density, a fact of each rank: a rank that
       cannot restate, or whose datatype has holes, marks its row (every rank: the linear
       exchange) and sends and receives with its own arguments */
    if (cause != AAPC_VLARGE_OK || !aapc_dense(rt) || (!inplace && !aapc_dense(st))) {
        if ((o->row = malloc((size_t)n * sizeof *o->row)) == NULL) {
            vown_release(&o->base);
            rc = aapc_args_raise_alone(comm, MPI_ERR_NO_MEM);
            return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
        }
        for (int j = 0; j < n; j++)
            o->row[j] = bc[j] > 0 ? (long long)bc[j] * tsize : 0;
        memset(ints, 0, 4 * (size_t)n * sizeof *ints);
        o->base.row = o->row;
        o->base.linear = vown_linear;
        sbuf = inplace ? MPI_IN_PLACE : sendbuf;
        rbuf = recvbuf;
        st = rt = MPI_BYTE;
    }
    aapc_nbc_own_next(&o->base); /* taken (and released) by the int entry */
    rc = persistent ? MPI_Alltoallv_init(sbuf, sc, sd, st, (void *)rbuf, o->R.c, o->R.d, rt, comm,
                                         info, request)
                    : MPI_Ialltoallv(sbuf, sc, sd, st, (void *)rbuf, o->R.c, o->R.d, rt, comm,
                                     request);
    if (aapc_nbc_own_take() != NULL) /* not taken: an entry that is not ours ran */
        vown_release(&o->base);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request)
{
    return alltoallv_c("MPI_Ialltoallv_c", 0, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                       recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL, AAPC_CALLER, request);
}

int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    return alltoallv_c("MPI_Alltoallv_init_c", 1, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                       recvcounts, rdispls, recvtype, comm, info, AAPC_CALLER, request);
}

#endif /* MPI_VERSION >= 4 */
#endif /* AAPC_INTERCEPT */
