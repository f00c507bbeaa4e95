/*
 * aapc_alltoallw_large.c: MPI-4's large-count MPI_Alltoallw_c, served by this library's
 * MPI_Alltoallw (alltoallv/aapc_alltoallw.c: reduced to MPI_Alltoallv where its datatypes
 * allow, else the library's MPI_Alltoallw) when its counts and byte displacements can be said
 * in int, else handed to PMPI_Alltoallw_c with the reason.
 *
 * Algorithm, on every rank of the communicator:
 *   1. local: arrays not NULL (MPI_ERR_ARG), counts >= 0 (MPI_ERR_COUNT; MPI_IN_PLACE: the
 *      receive side only); per side the int copies: blocks with no data as count 0 at 0; when
 *      a count or displacement of a block with data is beyond int, the displacements from the
 *      least one (B, in bytes) and the buffer at buf + B: the same addresses;
 *   2. one MPI_Allreduce (MPI_MAX) of three 64-bit values: any rank's error (raised on every
 *      rank through the communicator's error handler), the lowest rank whose side does not fit
 *      in int even so (a count beyond INT_MAX, or blocks spread over more than 2 GiB), and the
 *      lowest rank out of memory for the copies;
 *   3. every rank fits: MPI_Alltoallw with the int copies (its reduction, agreement and
 *      report); else every rank calls PMPI_Alltoallw_c, the cause said once per job and shown
 *      in the report.
 * MPI_COMM_NULL, inter-communicators (with the fallback warning) and calls outside
 * MPI_Init..MPI_Finalize go to PMPI_Alltoallw_c untouched.
 * Cost: O(P) local and 16 P bytes of copies, plus the agreement (lg(P) alpha) on every call,
 * before MPI_Alltoallw's own.
 * Compiled where mpi.h is MPI 4 or later (MPI_VERSION >= 4).
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

/* One side's checks (the first finding in *cls and `what`) and its int copies c, d with its
   buffer *buf; returns 0 when it does not fit in int. */
static int side(const char *name, const void **buf, const MPI_Count counts[],
                const MPI_Aint displs[], const MPI_Datatype types[], int size, int shift,
                int *c, int *d, int *cls, char *what, size_t len)
{
    MPI_Aint base = 0;
    int any = 0, fits = 1;
    if (counts == NULL || displs == NULL || types == NULL) {
        if (*cls == 0) {
            *cls = MPI_ERR_ARG;
            snprintf(what, len, "%scounts, %sdispls or %stypes is NULL", name, name[0] == 's' ? "s" : "r",
                     name);
        }
        return 1;
    }
    for (int i = 0; i < size; i++) {
        if (counts[i] < 0 && *cls == 0) {
            *cls = MPI_ERR_COUNT;
            snprintf(what, len, "%scounts[%d] = %lld is negative", name, i, (long long)counts[i]);
        }
        if (counts[i] <= 0)
            continue;
        fits &= counts[i] <= INT_MAX && displs[i] <= INT_MAX && displs[i] >= INT_MIN;
        base = any && base < displs[i] ? base : displs[i];
        any = 1;
    }
    if (fits || !shift)
        base = 0;
    fits = 1;
    for (int i = 0; i < size; i++) {
        c[i] = d[i] = 0;
        if (counts[i] <= 0)
            continue;
        if (counts[i] > INT_MAX || (base < 0 && displs[i] > INT64_MAX + (int64_t)base) ||
            displs[i] - base > INT_MAX || displs[i] - base < INT_MIN) {
            fits = 0;
            continue;
        }
        c[i] = (int)counts[i];
        d[i] = (int)(displs[i] - base);
    }
    *buf = aapc_at(*buf, base);
    return fits;
}

/* The bytes this rank sends (the report's). */
static long long sent_bytes(const MPI_Count counts[], const MPI_Datatype types[], int size)
{
    double b = 0;
    for (int i = 0; counts != NULL && types != NULL && i < size; i++) {
        int64_t one = aapc_block_bytes(counts[i], types[i]);
        b += one > 0 ? (double)one : 0;
    }
    return aapc_bytes_total(b);
}

int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    static const char entry[] = "MPI_Alltoallw_c";
    double t0 = aapc_report_begin();
    int rc, size = 0, rank = 0, inplace = sendbuf == MPI_IN_PLACE;
    if (aapc_args_to_library(comm, entry, entry)) {
        rc = PMPI_Alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                              rdispls, recvtypes, comm);
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    }
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    size_t n = (size_t)size;
    int *ints = malloc(sizeof *ints * 4 * (n ? n : 1));
    int cls = 0, fits = 1; /* sendbuf == recvbuf (an error unless MPI_BOTTOM) stays visible */
    int shift = inplace || sendbuf != recvbuf || sendbuf == MPI_BOTTOM;
    char what[200] = "";
    const void *sbuf = sendbuf, *rbuf = recvbuf;
    if (ints != NULL) {
        if (!inplace)
            fits &= side("send", &sbuf, sendcounts, sdispls, sendtypes, size, shift, ints,
                         ints + n, &cls, what, sizeof what);
        fits &= side("recv", &rbuf, recvcounts, rdispls, recvtypes, size, shift, ints + 2 * n,
                     ints + 3 * n, &cls, what, sizeof what);
    }
    int64_t v[3] = {aapc_args_key(cls, rank, size), fits ? 0 : size - rank,
                    ints == NULL ? size - rank : 0};
    long long bytes = inplace ? sent_bytes(recvcounts, recvtypes, size)
                              : sent_bytes(sendcounts, sendtypes, size);
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, comm)) != MPI_SUCCESS) {
        /* raised by the library */
    } else if (v[0] != 0) {
        rc = aapc_args_raise_found(comm, entry, cls, what, v[0], size);
    } else if (v[1] != 0 || v[2] != 0) {
        char why[200];
        if (v[1] != 0)
            snprintf(why, sizeof why,
                     "rank %d passes counts beyond an int or blocks spread over more than "
                     "2 GiB",
                     size - (int)v[1]);
        else
            snprintf(why, sizeof why, "rank %d cannot allocate the int copies of its counts",
                     size - (int)v[2]);
        aapc_warn_fallback(comm, entry, why, entry);
        rc = PMPI_Alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                              rdispls, recvtypes, comm);
    } else {
        int *sc = inplace ? ints + 2 * n : ints, *sd = inplace ? ints + 3 * n : ints + n;
        rc = MPI_Alltoallw(inplace ? MPI_IN_PLACE : sbuf, sc, sd, inplace ? recvtypes : sendtypes,
                           (void *)rbuf, ints + 2 * n, ints + 3 * n, recvtypes, comm);
    }
    free(ints);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

#endif /* AAPC_INTERCEPT && MPI_VERSION >= 4 */
