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

int mc_is_contig(int count, MPI_Datatype dt, long long *bytes, MPI_Aint *lb)
{
    int tsize = 0, ni, na, nd, comb;
    MPI_Aint tlb, text;
    PMPI_Type_size(dt, &tsize);
    *bytes = (long long)count * tsize;
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    *lb = tlb;
    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    return comb == MPI_COMBINER_NAMED;
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
