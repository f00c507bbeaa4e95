/*
 * aapc_alltoallv_large.c: MPI-4's large-count MPI_Alltoallv_c, served by this library's
 * MPI_Alltoallv (the generated entry point: the same choice between the MPI library's routine
 * and the contention-free schedules) whenever each rank can restate its counts and
 * displacements in int, else handed to PMPI_Alltoallv_c with the reason.
 *
 * Algorithm, on every rank of the communicator:
 *   1. local: the counts (MPI_IN_PLACE: the receive side only) are >= 0 (else MPI_ERR_COUNT),
 *      the arrays not NULL (MPI_ERR_ARG), and a side beyond int has a datatype that is not
 *      MPI_DATATYPE_NULL and is committed (MPI_ERR_TYPE); each side restated in int
 *      (alltoallv/aapc_vlarge.c: as it is when it fits; else from the least displacement with
 *      data, counts / g elements of MPI_Type_contiguous_c(g, type) at displacements / g, g a
 *      common divisor; each rank and side its own g: the type signatures still match, and the
 *      routines compare bytes in 64 bits, never counts or datatypes);
 *   2. one MPI_Allreduce (MPI_MAX) of four 64-bit values on the communicator: any rank's error
 *      (raised on every rank, the first such rank's class, through the communicator's error
 *      handler), per side the highest cause it could not be restated with the lowest rank
 *      meeting it, and the lowest rank that could not allocate its copies. Restating is each
 *      rank's own finding: without the agreement, ranks that can would run the schedules
 *      while one that cannot waits in the library's routine;
 *   3. every rank restated: MPI_Alltoallv with the int copies (its checks, selection, executor
 *      and report), then the contiguous types are freed; else every rank calls
 *      PMPI_Alltoallv_c with its own arguments, and the cause (rank and side) is said once per
 *      job (common/aapc_comm.c aapc_warn_fallback) and shown in the report.
 * MPI_COMM_NULL, inter-communicators (with the fallback warning) and calls outside
 * MPI_Init..MPI_Finalize go to PMPI_Alltoallv_c untouched.
 * Cost: O(P) local work and 16 P bytes of copies (beyond int: a divisor search and one
 * contiguous type per side), plus the agreement, about lg(P) alpha (the one cost beyond
 * MPI_Alltoallv's, paid on every call; on the library's path too).
 * Compiled where mpi.h is MPI 4 or later (MPI_VERSION >= 4: MPICH 4 and 5); Open MPI 5's mpi.h
 * (MPI 3.1) declares no MPI_Alltoallv_c.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "aapc_args.h"
#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_mpi.h"
#include "aapc_report.h"
#include "aapc_vlarge.h"

#if defined(AAPC_INTERCEPT) && MPI_VERSION >= 4

/* One side's local checks (the first finding in *cls and `what`). */
static void check_side(const char *name, const MPI_Count counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int size, MPI_Comm comm, int *cls, char *what,
                       size_t len)
{
    int beyond = 0;
    if (*cls != 0)
        return;
    if (counts == NULL || displs == NULL) {
        *cls = MPI_ERR_ARG;
        snprintf(what, len, "%scounts or %s is NULL", name, name[0] == 's' ? "sdispls" : "rdispls");
        return;
    }
    for (int i = 0; i < size; i++) {
        if (counts[i] < 0) {
            *cls = MPI_ERR_COUNT;
            snprintf(what, len, "%scounts[%d] = %lld is negative", name, i, (long long)counts[i]);
            return;
        }
        beyond |= counts[i] > 0 && (counts[i] > INT_MAX || displs[i] > INT_MAX || displs[i] < INT_MIN);
    }
    if (beyond && (type == MPI_DATATYPE_NULL || !aapc_args_committed(comm, type))) {
        *cls = MPI_ERR_TYPE; /* the int routine's checks would see another datatype */
        snprintf(what, len, "%stype is %s", name,
                 type == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : "not a committed datatype");
    }
}

static int64_t cause_key(int cause, int rank, int size)
{
    return cause ? ((int64_t)cause << 32) | (uint32_t)(size - rank) : 0;
}

/* The bytes this rank sends (the report's). */
static long long sent_bytes(const MPI_Count counts[], MPI_Datatype t, int size)
{
    double b = 0;
    for (int i = 0; counts != NULL && i < size; i++) {
        int64_t one = aapc_block_bytes(counts[i], t);
        b += one > 0 ? (double)one : 0;
    }
    return aapc_bytes_total(b);
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char entry[] = "MPI_Alltoallv_c";
    double t0 = aapc_report_begin();
    int rc, size = 0, rank = 0, inplace = sendbuf == MPI_IN_PLACE;
    if (aapc_args_to_library(comm, entry, entry)) {
        rc = PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    }
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    size_t n = (size_t)size;
    int *ints = malloc(sizeof *ints * 4 * (n ? n : 1));
    int cls = 0, scause = 0, rcause = 0;
    char what[200] = "";
    aapc_vlarge_t S = {ints, ints ? ints + n : NULL, sendbuf, sendtype, MPI_DATATYPE_NULL, 1},
                  R = {ints ? ints + 2 * n : NULL, ints ? ints + 3 * n : NULL, recvbuf, recvtype,
                       MPI_DATATYPE_NULL, 1};
    if (!inplace)
        check_side("send", sendcounts, sdispls, sendtype, size, comm, &cls, what, sizeof what);
    check_side("recv", recvcounts, rdispls, recvtype, size, comm, &cls, what, sizeof what);
    /* sendbuf == recvbuf (an error unless MPI_BOTTOM) stays visible to the checks */
    int shift = inplace || sendbuf != recvbuf || sendbuf == MPI_BOTTOM;
    if (cls == 0 && ints != NULL) {
        if (!inplace)
            scause = aapc_vlarge_side(sendbuf, sendcounts, sdispls, sendtype, size, shift, &S);
        rcause = aapc_vlarge_side(recvbuf, recvcounts, rdispls, recvtype, size, shift, &R);
    }
    int64_t v[4] = {aapc_args_key(cls, rank, size), cause_key(scause, rank, size),
                    cause_key(rcause, rank, size), ints == NULL ? size - rank : 0};
    long long bytes = sent_bytes(inplace ? recvcounts : sendcounts,
                                 inplace ? recvtype : sendtype, size);
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_INT64_T, MPI_MAX, comm)) == MPI_SUCCESS &&
        v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0) {
        rc = MPI_Alltoallv(inplace ? MPI_IN_PLACE : S.buf, inplace ? R.c : S.c,
                           inplace ? R.d : S.d, inplace ? R.type : S.type, (void *)R.buf, R.c,
                           R.d, R.type, comm); /* in place the send arguments are not read */
    } else if (rc == MPI_SUCCESS && v[0] != 0) {
        rc = aapc_args_raise_found(comm, entry, cls, what, v[0], size);
    } else if (rc == MPI_SUCCESS) {
        char why[200];
        int64_t w = v[1] != 0 ? v[1] : v[2];
        if (w != 0)
            snprintf(why, sizeof why, "rank %d's %s %s", size - (int)(w & 0xffffffff),
                     v[1] != 0 ? "sendcounts and sdispls" : "recvcounts and rdispls",
                     aapc_vlarge_words((int)(w >> 32)));
        else
            snprintf(why, sizeof why, "rank %d cannot allocate the int copies of its counts",
                     size - (int)v[3]);
        aapc_warn_fallback(comm, entry, why, entry);
        rc = PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    } /* else the agreement failed: raised by the library */
    if (S.made != MPI_DATATYPE_NULL)
        PMPI_Type_free(&S.made);
    if (R.made != MPI_DATATYPE_NULL)
        PMPI_Type_free(&R.made);
    free(ints);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

#endif /* AAPC_INTERCEPT && MPI_VERSION >= 4 */
