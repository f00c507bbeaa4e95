/*
 * aapc_mcast_pack.c: datatype handling of the multicast collectives.
 *
 * Algorithm: the multicast transport moves byte images. A buffer of a predefined datatype is its
 * own image (no copy, cost 0); any derived datatype is packed with PMPI_Pack into a temporary
 * image and unpacked with PMPI_Unpack at the receiver (cost n/copy-bandwidth on each side). The
 * image of `count` elements of `dt` is count * size(dt) bytes, which holds for MPICH and Open MPI
 * on a homogeneous job; a different packed size is reported as an error, never used silently.
 */
#include "aapc_mcast_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mc_is_contig(int count, MPI_Datatype dt, long long *bytes, MPI_Aint *lb)
{
    int tsize = 0, ni, na, nd, comb;
    MPI_Aint tlb, text, elb, ext;
    PMPI_Type_size(dt, &tsize);
    *bytes = (long long)count * tsize;
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    *lb = tlb;
    PMPI_Type_get_extent(dt, &elb, &ext);
    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    /* a predefined type with a hole (MPI_DOUBLE_INT: 12 bytes, extent 16) is not its own image */
    return comb == MPI_COMBINER_NAMED && tlb == 0 && text == tsize && elb == 0 && ext == tsize;
}

int mc_pack(const void *buf, int count, MPI_Datatype dt, void *out, long long bytes)
{
    int pos = 0;
    if (bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int rc = PMPI_Pack(buf, count, dt, out, (int)bytes, &pos, MPI_COMM_SELF);
    if (rc != MPI_SUCCESS)
        return rc;
    if (pos != bytes) {
        fprintf(stderr, "aapc_mcast: packed size %d differs from count*size %lld\n", pos, bytes);
        return MPI_ERR_TYPE;
    }
    return MPI_SUCCESS;
}

int mc_unpack(const void *in, long long bytes, void *buf, int count, MPI_Datatype dt)
{
    int pos = 0;
    if (bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int rc = PMPI_Unpack(in, (int)bytes, &pos, buf, count, dt, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS && pos != bytes)
        return MPI_ERR_TYPE;
    return rc;
}

int mc_local_copy(const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                  MPI_Datatype rtype)
{
    long long sbytes = 0, rbytes = 0;
    MPI_Aint slb = 0, rlb = 0;
    int scontig = mc_is_contig(scount, stype, &sbytes, &slb);
    int rcontig = mc_is_contig(rcount, rtype, &rbytes, &rlb);
    if (src != NULL && dst != NULL && sbytes == rbytes && scontig && rcontig) {
        if (sbytes > 0)
            memcpy((char *)dst + rlb, (const char *)src + slb, (size_t)sbytes);
        return MPI_SUCCESS;
    }
    if (src != NULL && dst != NULL && sbytes == rbytes && sbytes <= INT_MAX &&
        (scontig || rcontig || sbytes <= MC_LOCAL_STAGE_MAX)) {
        void *stage = scontig ? (void *)((const char *)src + slb)
                      : rcontig ? (void *)((char *)dst + rlb)
                                : malloc(sbytes > 0 ? (size_t)sbytes : 1);
        int rc = stage != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        int pos = 0;
        if (rc == MPI_SUCCESS && !scontig)
            rc = PMPI_Pack(src, scount, stype, stage, (int)sbytes, &pos, MPI_COMM_SELF);
        int packed = scontig || pos == sbytes;
        pos = 0;
        if (rc == MPI_SUCCESS && packed && !rcontig)
            rc = PMPI_Unpack(stage, (int)sbytes, &pos, dst, rcount, rtype, MPI_COMM_SELF);
        if (!scontig && !rcontig)
            free(stage);
        if (rc == MPI_SUCCESS && packed && (rcontig || pos == sbytes))
            return MPI_SUCCESS;
    }
    return PMPI_Sendrecv(src, scount, stype, 0, 0, dst, rcount, rtype, 0, 0, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
}
