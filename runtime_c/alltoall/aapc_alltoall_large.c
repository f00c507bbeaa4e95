/*
 * aapc_alltoall_large.c: MPI-4's large-count MPI_Alltoall_c, served by this library's
 * MPI_Alltoall (the generated entry point: the same choice between the MPI library's routine
 * and the contention-free schedules, the same checks, the same report).
 *
 * Reduction, on each rank apart (no communication of its own):
 *   - a count that fits in an int is passed as it is (under MPI_IN_PLACE the send side is not
 *     looked at, as MPI says);
 *   - a larger count n of type t becomes one element of T = MPI_Type_contiguous_c(n, t): T's
 *     type map is n copies of t's at successive extents, so block i (at i x extent(T) =
 *     i x n x extent(t)) holds exactly the bytes of MPI_Alltoall_c's block i. T's size and
 *     extent exceed INT_MAX bytes, which the executor counts in 64 bits
 *     (common/aapc_exec.c aapc_alltoall_block; MPI_Type_size_x);
 *   - ranks may then describe one block differently (n bytes on one, one T on another): a
 *     valid call, since MPI_Alltoall's checks compare bytes, as MPI compares type signatures.
 *     Every rank calls MPI_Alltoall exactly once, so the ranks never part ways;
 *   - what a converted count cannot say (a count below INT_MIN; n elements of more than 2^63
 *     bytes, or P blocks spanning more; a null or uncommitted type with a count beyond int):
 *     this rank passes -1 with a note (common/aapc_args.h aapc_args_note), which MPI_Alltoall's
 *     agreement raises on every rank (MPI_ERR_COUNT, MPI_ERR_TYPE), as for a negative int count;
 *   - MPI_COMM_NULL, inter-communicators (with the fallback warning) and calls outside
 *     MPI_Init..MPI_Finalize go to PMPI_Alltoall_c untouched: the library answers them.
 * Cost: with int counts, two comparisons beyond MPI_Alltoall; a count beyond int adds one
 * MPI_Type_contiguous_c, commit and free per side and call (microseconds, beside blocks of at
 * least 2 GiB: at 10 Gbit/s 1.7 s each).
 * The report (AAPC_REPORT) counts the call as MPI_Alltoall_c, with the routine MPI_Alltoall ran.
 * Compiled where mpi.h is MPI 4 or later (MPI_VERSION >= 4: MPICH 4 and 5); Open MPI 5's mpi.h
 * (MPI 3.1) declares no MPI_Alltoall_c, so no program built with it calls one.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "aapc_args.h"
#include "aapc_mpi.h"
#include "aapc_report.h"

#if defined(AAPC_INTERCEPT) && MPI_VERSION >= 4

/* One side's count for MPI_Alltoall: *count and *type (*made: a type to free, else
   MPI_DATATYPE_NULL). Returns the class of an error the int count cannot carry (0: none), with
   its words in `what`; *count is then -1. */
static int convert(const char *side, MPI_Count n, MPI_Datatype t, int size, MPI_Comm comm,
                   int *count, MPI_Datatype *type, MPI_Datatype *made, char *what, size_t len)
{
    int64_t esize = 0;
    MPI_Aint lb = 0, extent = 0;
    *type = t;
    *made = MPI_DATATYPE_NULL;
    *count = -1;
    if (n >= INT_MIN && n <= INT_MAX) {
        *count = (int)n;
        return 0;
    }
    if (n < 0) {
        snprintf(what, len, "MPI_Alltoall_c's %scount %lld is negative", side, (long long)n);
        return MPI_ERR_COUNT;
    }
    if (t == MPI_DATATYPE_NULL) {
        snprintf(what, len, "%stype is MPI_DATATYPE_NULL", side);
        return MPI_ERR_TYPE;
    }
    if (!aapc_args_committed(comm, t)) {
        snprintf(what, len, "%stype is not a committed datatype", side);
        return MPI_ERR_TYPE;
    }
    int rc = aapc_type_size(t, &esize);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_extent(t, &lb, &extent);
    if (rc != MPI_SUCCESS) {
        snprintf(what, len, "%stype is not a valid datatype", side);
        return MPI_ERR_TYPE;
    }
    int64_t reach = extent < 0 ? -(int64_t)extent : (int64_t)extent;
    if ((esize > 0 && n > INT64_MAX / esize) ||
        (reach > 0 && n > INT64_MAX / reach / (size > 0 ? size : 1))) {
        snprintf(what, len,
                 "MPI_Alltoall_c's %scount %lld of a type of %lld bytes (extent %lld) on %d ranks "
                 "is beyond 2^63 bytes",
                 side, (long long)n, (long long)esize, (long long)extent, size);
        return MPI_ERR_COUNT;
    }
    if ((rc = PMPI_Type_contiguous_c(n, t, made)) != MPI_SUCCESS ||
        (rc = PMPI_Type_commit(made)) != MPI_SUCCESS) {
        int cls = MPI_ERR_INTERN;
        PMPI_Error_class(rc, &cls);
        if (*made != MPI_DATATYPE_NULL)
            PMPI_Type_free(made);
        *made = MPI_DATATYPE_NULL;
        snprintf(what, len, "a type of MPI_Alltoall_c's %scount %lld elements could not be made",
                 side, (long long)n);
        return cls;
    }
    *type = *made;
    *count = 1;
    return 0;
}

/* The bytes this rank sends (the report's), saturated. */
static long long sent_bytes(MPI_Count n, MPI_Datatype t, int size)
{
    int64_t esize = 0;
    if (n <= 0 || t == MPI_DATATYPE_NULL || aapc_type_size(t, &esize) != MPI_SUCCESS)
        return 0;
    double b = (double)n * (double)esize * size;
    return b >= 9.2e18 ? (long long)INT64_MAX : (long long)b;
}

int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char entry[] = "MPI_Alltoall_c";
    double t0 = aapc_report_begin();
    int rc, size = 0, inplace = sendbuf == MPI_IN_PLACE;
    if (aapc_args_to_library(comm, entry, entry)) {
        rc = PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    }
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    char what[200] = "";
    int scount = 0, rcount = 0, cls = 0;
    MPI_Datatype stype = sendtype, rtype = recvtype, smade = MPI_DATATYPE_NULL,
                 rmade = MPI_DATATYPE_NULL;
    if (!inplace)
        cls = convert("send", sendcount, sendtype, size, comm, &scount, &stype, &smade, what,
                      sizeof what);
    int rcls = convert("recv", recvcount, recvtype, size, comm, &rcount, &rtype, &rmade,
                       cls ? NULL : what, cls ? 0 : sizeof what);
    cls = cls ? cls : rcls;
    if (cls != 0)
        aapc_args_note(cls, what); /* and the side's count is -1: every rank raises */
    rc = MPI_Alltoall(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    aapc_args_note(0, NULL);
    if (smade != MPI_DATATYPE_NULL)
        PMPI_Type_free(&smade);
    if (rmade != MPI_DATATYPE_NULL)
        PMPI_Type_free(&rmade);
    long long bytes = inplace ? sent_bytes(recvcount, recvtype, size)
                              : sent_bytes(sendcount, sendtype, size);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

#endif /* AAPC_INTERCEPT && MPI_VERSION >= 4 */
