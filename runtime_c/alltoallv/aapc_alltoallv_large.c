/*
 * aapc_alltoallv_large.c: MPI-4's large-count MPI_Alltoallv_c, served by this library's
 * MPI_Alltoallv (the generated entry point: the same choice between the MPI library's routine
 * and the contention-free schedules) when its counts and displacements fit in an int, else
 * handed to PMPI_Alltoallv_c with the reason.
 *
 * Algorithm, on every rank of the communicator:
 *   1. local: the counts (MPI_IN_PLACE: the receive side only) are >= 0 (else MPI_ERR_COUNT)
 *      and the arrays not NULL (MPI_ERR_ARG); whether every count is at most INT_MAX and every
 *      displacement within INT_MIN..INT_MAX; the int copies of the four arrays (4 P ints);
 *   2. one MPI_Allreduce (MPI_MAX) of four 64-bit values on the communicator: any rank's error
 *      (raised on every rank, the first such rank's class, through the communicator's error
 *      handler), the lowest rank whose counts or displacements do not fit, and the lowest
 *      rank that could not allocate its copies. Whether its counts fit is known to each rank
 *      alone: without the agreement, ranks that fit would run the schedules while one that
 *      does not waits in the library's routine;
 *   3. all fit: MPI_Alltoallv with the int copies (its checks, selection, executor and report);
 *      else every rank calls PMPI_Alltoallv_c, and the cause (the rank) is said once per job
 *      (common/aapc_comm.c aapc_warn_fallback) and shown in the report. The run-time
 *      Alltoallv executor counts and addresses in int, as MPI_Alltoallv does; counts beyond
 *      that are blocks of 2 GiB and more, where the library's pairwise exchange loses little.
 * MPI_COMM_NULL, inter-communicators (with the fallback warning) and calls outside
 * MPI_Init..MPI_Finalize go to PMPI_Alltoallv_c untouched.
 * Cost: O(P) local work and 16 P bytes of copies, plus the agreement, about lg(P) alpha (the
 * one cost beyond MPI_Alltoallv's, paid on every call; on the library's path too).
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

#if defined(AAPC_INTERCEPT) && MPI_VERSION >= 4

/* One side: its local checks (the first finding in *cls / what), whether it fits in int
   (*fits), and its int copies into c and d (NULL when out of memory). */
static void side(const char *name, const MPI_Count counts[], const MPI_Aint displs[], int size,
                 int *c, int *d, int *cls, char *what, size_t len, int *fits)
{
    if (counts == NULL || displs == NULL) {
        if (*cls == 0) {
            *cls = MPI_ERR_ARG;
            snprintf(what, len, "%scounts or %s is NULL", name,
                     name[0] == 's' ? "sdispls" : "rdispls");
        }
        return;
    }
    for (int i = 0; i < size; i++) {
        if (counts[i] < 0 && *cls == 0) {
            *cls = MPI_ERR_COUNT;
            snprintf(what, len, "%scounts[%d] = %lld is negative", name, i,
                     (long long)counts[i]);
        }
        if (counts[i] > INT_MAX || displs[i] > INT_MAX || displs[i] < INT_MIN)
            *fits = 0;
        else if (c != NULL && d != NULL) {
            c[i] = (int)counts[i];
            d[i] = (int)displs[i];
        }
    }
}

/* The bytes this rank sends (the report's). */
static long long sent_bytes(const MPI_Count counts[], MPI_Datatype t, int size)
{
    int64_t esize = 0;
    double b = 0;
    if (counts == NULL || t == MPI_DATATYPE_NULL || aapc_type_size(t, &esize) != MPI_SUCCESS)
        return 0;
    for (int i = 0; i < size; i++)
        b += counts[i] > 0 ? (double)counts[i] * (double)esize : 0;
    return b >= 9.2e18 ? (long long)INT64_MAX : (long long)b;
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
    int *sc = ints, *sd = ints ? ints + n : NULL, *rc_ = ints ? ints + 2 * n : NULL,
        *rd = ints ? ints + 3 * n : NULL;
    int cls = 0, fits = 1;
    char what[200] = "";
    if (!inplace)
        side("send", sendcounts, sdispls, size, sc, sd, &cls, what, sizeof what, &fits);
    side("recv", recvcounts, rdispls, size, rc_, rd, &cls, what, sizeof what, &fits);
    int64_t v[3] = {aapc_args_key(cls, rank, size), fits ? 0 : size - rank,
                    ints == NULL ? size - rank : 0};
    long long bytes = sent_bytes(inplace ? recvcounts : sendcounts,
                                 inplace ? recvtype : sendtype, size);
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, comm)) != MPI_SUCCESS) {
        free(ints);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc); /* raised by it */
    }
    if (v[0] != 0) {
        free(ints);
        rc = aapc_args_raise_found(comm, entry, cls, what, v[0], size);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    if (v[1] != 0 || v[2] != 0) {
        char why[160];
        if (v[1] != 0)
            snprintf(why, sizeof why,
                     "rank %d passes counts or displacements beyond an int (the schedules' "
                     "executor counts in int)",
                     size - (int)v[1]);
        else
            snprintf(why, sizeof why, "rank %d cannot allocate the int copies of its counts",
                     size - (int)v[2]);
        free(ints);
        aapc_warn_fallback(comm, entry, why, entry);
        rc = PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    rc = MPI_Alltoallv(sendbuf, inplace ? rc_ : sc, inplace ? rd : sd, sendtype, recvbuf, rc_, rd,
                       recvtype, comm); /* in place the send arrays are not read */
    free(ints);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

#endif /* AAPC_INTERCEPT && MPI_VERSION >= 4 */
