/*
 * aapc_alltoallw.c: MPI_Alltoallw served by this library's MPI_Alltoallv (the generated entry
 * point: its choice between the MPI library's routine and the contention-free schedules, its
 * checks and executor) where the call's datatypes reduce to one datatype per side; else handed
 * to PMPI_Alltoallw with the reason, said once per job and shown in the report.
 *
 * Reduction of one side (sendcounts, sdispls in bytes, sendtypes; likewise the receive side;
 * under MPI_IN_PLACE only the receive side, as MPI says). Only blocks with a count > 0 are
 * looked at (the datatype of an empty block carries nothing):
 *   U. one datatype: every such block has the same datatype handle T, of extent e > 0, and
 *      every displacement is a multiple of e. Then counts[i] elements of T at byte sdispls[i]
 *      are MPI_Alltoallv's counts[i] elements of T at displacement sdispls[i] / e (in extents
 *      of T): the same type map at the same address. Any T (derived, with holes or a lower
 *      bound) reduces so;
 *   B. dense bytes: every such datatype is dense (lower bound and true lower bound 0, extent and
 *      true extent equal to its size: common/aapc_exec.c aapc_dense), so counts[i] elements of
 *      types[i] are counts[i] x size(types[i]) contiguous bytes at byte sdispls[i]: MPI_Alltoallv
 *      of MPI_BYTE with those byte counts (each at most INT_MAX) and the byte displacements. This
 *      moves the bytes as they are, as the schedules' executor always does (one data
 *      representation across the job, as in every homogeneous cluster);
 *   a side with no data reduces to MPI_BYTE and zero counts. U is tried first (it keeps the
 *   user's datatype, whatever it is), then B.
 * Not reduced: a side whose blocks have different datatypes that are not all dense (the
 * subarray types of a distributed FFT's transposes: one per peer), one non-dense datatype whose
 * extent does not divide the displacements (or is not positive), a dense block beyond INT_MAX
 * bytes. Such a call is packed where every rank can (rule P, aapc_alltoallw_packed.c: each
 * block packed into a staging buffer, MPI_Alltoallv of MPI_PACKED, each received block
 * unpacked; a block's packed form must be its data, and a side's bytes at most INT_MAX), else
 * the library's MPI_Alltoallw runs it.
 * Algorithm, on every rank:
 *   1. local: arrays not NULL (MPI_ERR_ARG), counts >= 0 (MPI_ERR_COUNT), datatypes of blocks
 *      with data not MPI_DATATYPE_NULL and committed (MPI_ERR_TYPE), buffers the MPI library
 *      refuses as aliased (MPI_ERR_BUFFER, common/aapc_alias.h); the reduction of each side
 *      into int copies and the packed layout of each side (8 P ints);
 *   2. one MPI_Allreduce (MPI_MAX) of five 64-bit values on the communicator: any rank's error
 *      (raised on every rank through the communicator's error handler), per side the highest
 *      cause that side does not reduce with the lowest rank meeting it, the lowest rank out of
 *      memory for the copies, and the lowest rank that cannot pack. Reducing and packing are
 *      each rank's own findings: without the agreement some ranks would run MPI_Alltoallv and
 *      the others MPI_Alltoallw;
 *   3. every rank reduced: MPI_Alltoallv of the reduced arguments; else, every rank able to
 *      pack: the staging buffers allocated and agreed (a second MPI_Allreduce, of one int),
 *      then rule P; else PMPI_Alltoallw with the original arguments on every rank (the cause
 *      names the first rank and side that did not reduce, and the first that cannot pack).
 * MPI_COMM_NULL, inter-communicators (with the fallback warning) and calls outside
 * MPI_Init..MPI_Finalize go to PMPI_Alltoallw untouched.
 * Cost: O(P) local (a handle comparison per block; per distinct consecutive datatype the
 * committed probe, a zero-element MPI_Pack, and for B its extent, true extent and size; one
 * MPI_Pack_size per block), 32 P bytes of copies, and the agreement, about lg(P) alpha, on
 * every call (the library's path too); rule P adds the second agreement and two local copies
 * of the data.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "aapc_alias.h"
#include "aapc_args.h"
#include "aapc_cluster_comm.h" /* aapc_cluster_family_comm */
#include "aapc_comm.h"         /* aapc_warn_fallback */
#include "aapc_alltoallw.h"
#include "aapc_alltoallw_packed.h"
#include "aapc_exec.h" /* aapc_dense */
#include "aapc_mpi.h"
#include "aapc_report.h"

#ifdef AAPC_INTERCEPT

/* Why a side does not reduce; a larger value wins the agreement (MPI_MAX). */
enum { REDUCED = 0, BLOCK_TOO_BIG = 1, DISPLS_NOT_MULTIPLE = 2, TYPES_DIFFER = 3 };

static const char *cause_words(int cause)
{
    switch (cause) {
    case BLOCK_TOO_BIG:
        return "are dense, with a block beyond INT_MAX bytes";
    case DISPLS_NOT_MULTIPLE:
        return "are one datatype, not dense, whose extent does not divide the displacements";
    default:
        return "are different datatypes, not all dense (contiguous bytes)";
    }
}

void aapc_alltoallw_check(const char *name, const int counts[], const int displs[],
                       const MPI_Datatype types[], int size, MPI_Comm comm, int *cls,
                       char *what, size_t len)
{
    MPI_Datatype last = MPI_DATATYPE_NULL;
    if (counts == NULL || displs == NULL || types == NULL) {
        if (*cls == 0) {
            *cls = MPI_ERR_ARG;
            snprintf(what, len, "%scounts, %sdispls or %stypes is NULL", name, name[0] == 's' ? "s" : "r",
                     name);
        }
        return;
    }
    for (int i = 0; i < size && *cls == 0; i++) {
        if (counts[i] < 0) {
            *cls = MPI_ERR_COUNT;
            snprintf(what, len, "%scounts[%d] = %d is negative", name, i, counts[i]);
        } else if (counts[i] > 0 && types[i] == MPI_DATATYPE_NULL) {
            *cls = MPI_ERR_TYPE;
            snprintf(what, len, "%stypes[%d] is MPI_DATATYPE_NULL", name, i);
        } else if (counts[i] > 0 && types[i] != last) {
            if (!aapc_args_committed(comm, types[i])) {
                *cls = MPI_ERR_TYPE;
                snprintf(what, len, "%stypes[%d] is not a committed datatype", name, i);
            }
            last = types[i];
        }
    }
}

/* Rule U: one datatype T (*one) whose extent divides every displacement. */
static int reduce_one(const int counts[], const int displs[], const MPI_Datatype types[],
                      int size, int *c, int *d, MPI_Datatype *one)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Aint lb = 0, extent = 0;
    for (int i = 0; i < size; i++)
        if (counts[i] > 0) {
            if (t == MPI_DATATYPE_NULL)
                t = types[i];
            else if (types[i] != t)
                return TYPES_DIFFER;
        }
    if (t == MPI_DATATYPE_NULL) { /* no data on this side */
        *one = MPI_BYTE;
        for (int i = 0; i < size; i++)
            c[i] = d[i] = 0;
        return REDUCED;
    }
    if (PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS || extent <= 0)
        return DISPLS_NOT_MULTIPLE;
    for (int i = 0; i < size; i++) {
        if (counts[i] > 0 && displs[i] % extent != 0)
            return DISPLS_NOT_MULTIPLE;
        c[i] = counts[i];
        d[i] = counts[i] > 0 ? (int)(displs[i] / extent) : 0;
    }
    *one = t;
    return REDUCED;
}

/* Rule B: every datatype with data dense; MPI_BYTE counts and the byte displacements. */
static int reduce_bytes(const int counts[], const int displs[], const MPI_Datatype types[],
                        int size, int *c, int *d)
{
    MPI_Datatype last = MPI_DATATYPE_NULL;
    int64_t esize = 0;
    for (int i = 0; i < size; i++) {
        c[i] = d[i] = 0;
        if (counts[i] == 0)
            continue;
        if (types[i] != last) { /* consecutive blocks of one datatype: looked at once */
            if (!aapc_dense(types[i]) || aapc_type_size(types[i], &esize) != MPI_SUCCESS)
                return TYPES_DIFFER;
            last = types[i];
        }
        if ((int64_t)counts[i] * esize > INT_MAX)
            return BLOCK_TOO_BIG;
        c[i] = (int)((int64_t)counts[i] * esize);
        d[i] = displs[i];
    }
    return REDUCED;
}

int aapc_alltoallw_reduce(const int counts[], const int displs[], const MPI_Datatype types[],
                       int size, int *c, int *d, MPI_Datatype *one)
{
    int cause = reduce_one(counts, displs, types, size, c, d, one);
    if (cause == REDUCED)
        return REDUCED;
    int bytes = reduce_bytes(counts, displs, types, size, c, d);
    if (bytes == REDUCED)
        *one = MPI_BYTE;
    /* the more telling cause: a dense side too big says so; otherwise rule U's */
    return bytes == REDUCED ? REDUCED : bytes == BLOCK_TOO_BIG ? BLOCK_TOO_BIG : cause;
}

/* The bytes this rank sends (the report's). */
static long long sent_bytes(const int counts[], const MPI_Datatype types[], int size)
{
    double b = 0;
    for (int i = 0; counts != NULL && types != NULL && i < size; i++) {
        int64_t one = aapc_block_bytes(counts[i], types[i]);
        b += one > 0 ? (double)one : 0;
    }
    return aapc_bytes_total(b);
}

/* On a communicator recorded as a sibling (AAPC_SIBLINGS=union): whether every rank of every
   sibling can run the siblings' union (`mine`: this rank can), agreed by one MPI_Allreduce over
   the family, which every call on a sibling reaches whatever its path, its arguments' errors
   included, so that no sibling waits for another that took a different path. 0 elsewhere. */
static int family_agrees(MPI_Comm comm, int mine)
{
    MPI_Comm family = aapc_cluster_family_comm(comm);
    if (family == MPI_COMM_NULL ||
        PMPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, family) != MPI_SUCCESS)
        return 0;
    return mine;
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    static const char entry[] = "MPI_Alltoallw";
    double t0 = aapc_report_begin();
    int rc, size = 0, rank = 0, inplace = sendbuf == MPI_IN_PLACE;
    if (aapc_args_to_library(comm, entry, entry)) {
        rc = PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                            rdispls, recvtypes, comm);
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    }
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return aapc_report_entry(t0, entry, "native", 0, comm, rc);
    size_t n = (size_t)size;
    int *ints = malloc(sizeof *ints * 8 * (n ? n : 1)); /* reduced, then packed: 4 n each */
    int cls = 0, scause = REDUCED, rcause = REDUCED, nopack = 1;
    char what[200] = "";
    MPI_Datatype stype = MPI_BYTE, rtype = MPI_BYTE;
    aapc_wpack_t pk = {size, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, -1};
    if (!inplace)
        aapc_alltoallw_check("send", sendcounts, sdispls, sendtypes, size, comm, &cls, what,
                             sizeof what);
    aapc_alltoallw_check("recv", recvcounts, rdispls, recvtypes, size, comm, &cls, what,
                         sizeof what);
    if (cls == 0 &&
        aapc_alias_alltoallv(sendbuf, sendcounts, sendtypes == recvtypes, recvbuf, recvcounts)) {
        cls = MPI_ERR_BUFFER; /* as the MPI library's check: common/aapc_alias.h */
        snprintf(what, sizeof what, "sendbuf and recvbuf are the same buffer, with the same "
                                    "counts and datatypes (aliased; pass MPI_IN_PLACE)");
    }
    if (cls == 0 && ints != NULL) {
        if (!inplace)
            scause = aapc_alltoallw_reduce(sendcounts, sdispls, sendtypes, size, ints, ints + n,
                                           &stype);
        rcause = aapc_alltoallw_reduce(recvcounts, rdispls, recvtypes, size, ints + 2 * n,
                                       ints + 3 * n, &rtype);
        pk.rbytes = ints + 6 * n;
        pk.roffs = ints + 7 * n;
        nopack = aapc_alltoallw_pack_layout(recvcounts, recvtypes, size, comm, pk.rbytes,
                                            pk.roffs, &pk.rtotal);
        /* in place the blocks sent are the receive blocks: one layout for both sides */
        pk.sbytes = inplace ? pk.rbytes : ints + 4 * n;
        pk.soffs = inplace ? pk.roffs : ints + 5 * n;
        pk.stotal = pk.rtotal;
        if (!inplace && !nopack)
            nopack = aapc_alltoallw_pack_layout(sendcounts, sendtypes, size, comm, pk.sbytes,
                                                pk.soffs, &pk.stotal);
    }
    int64_t v[5] = {aapc_args_key(cls, rank, size),
                    scause ? ((int64_t)scause << 32) | (uint32_t)(size - rank) : 0,
                    rcause ? ((int64_t)rcause << 32) | (uint32_t)(size - rank) : 0,
                    ints == NULL ? size - rank : 0, nopack ? size - rank : 0};
    long long bytes = inplace ? sent_bytes(recvcounts, recvtypes, size)
                              : sent_bytes(sendcounts, sendtypes, size);
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_INT64_T, MPI_MAX, comm)) != MPI_SUCCESS) {
        free(ints);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc); /* raised by it */
    }
    if (v[0] != 0) {
        free(ints);
        family_agrees(comm, 0);
        rc = aapc_args_raise_found(comm, entry, cls, what, v[0], size);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    if (v[1] == 0 && v[2] == 0 && v[3] == 0) {
        family_agrees(comm, 0);
        int *sc = inplace ? ints + 2 * n : ints, *sd = inplace ? ints + 3 * n : ints + n;
        rc = MPI_Alltoallv(sendbuf, sc, sd, inplace ? rtype : stype, recvbuf, ints + 2 * n,
                           ints + 3 * n, rtype, comm); /* in place the send arguments are not read */
        free(ints);
        return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
    }
    char why[300];
    int64_t w = v[1] != 0 ? v[1] : v[2];
    if (v[3] == 0 && v[4] == 0) { /* rule P on every rank, once the staging buffers are there */
        pk.sstage = malloc((size_t)pk.stotal + 1);
        pk.rstage = malloc((size_t)pk.rtotal + 1);
        int nomem = pk.sstage == NULL || pk.rstage == NULL ? size - rank : 0;
        if ((rc = PMPI_Allreduce(MPI_IN_PLACE, &nomem, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS) {
            free(pk.sstage);
            free(pk.rstage);
            free(ints);
            return aapc_report_entry(t0, entry, "native", bytes, comm, rc); /* raised by it */
        }
        int c = nomem == 0 ? aapc_alltoallw_uniform_block(&pk) : -1;
        pk.union_block = family_agrees(comm, c >= 0) ? c : -1;
        if (nomem == 0)
            rc = aapc_alltoallw_packed(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                       recvcounts, rdispls, recvtypes, &pk, comm);
        free(pk.sstage);
        free(pk.rstage);
        if (rc != MPI_SUCCESS || nomem == 0) {
            free(ints);
            return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
        }
        snprintf(why, sizeof why, "rank %d cannot allocate the buffers to pack its blocks",
                 size - nomem);
    } else if (v[3] != 0) {
        snprintf(why, sizeof why, "rank %d cannot allocate the copies of its counts",
                 size - (int)v[3]);
    } else {
        snprintf(why, sizeof why, "rank %d's %s %s, and rank %d's blocks cannot be packed as "
                 "their bytes", size - (int)(w & 0xffffffff), v[1] != 0 ? "sendtypes" : "recvtypes",
                 cause_words((int)(w >> 32)), size - (int)v[4]);
    }
    free(ints);
    if (v[3] != 0 || v[4] != 0)
        family_agrees(comm, 0); /* (rule P's path agreed above, its buffers short) */
    aapc_warn_fallback(comm, entry, why, entry);
    rc = PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                        recvtypes, comm);
    return aapc_report_entry(t0, entry, "native", bytes, comm, rc);
}

#endif /* AAPC_INTERCEPT */
