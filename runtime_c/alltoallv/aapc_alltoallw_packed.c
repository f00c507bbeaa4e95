/*
 * aapc_alltoallw_packed.c: an MPI_Alltoallw whose datatypes differ from peer to peer (the
 * subarray types of a distributed FFT's transposes, one per peer) run as this library's
 * MPI_Alltoallv of packed bytes, so it gets the same choice of way and contention-free phases
 * as the byte-count calls (aapc_alltoallw.c decides when, on every rank alike).
 *
 * Algorithm, on each rank:
 *   1. layout (aapc_alltoallw_pack_layout, per side): block j takes counts[j] x size(types[j])
 *      bytes at the running offset of the staging buffer. A side packs only where MPI_Pack_size
 *      says the packed form of every block is exactly its data (true of MPICH and Open MPI
 *      between ranks of one data representation, whose packed form is the data in type-map
 *      order) and every offset fits in an int;
 *   2. pack: MPI_Pack of each send block, in peer order, into the send staging buffer;
 *   3. MPI_Alltoallv of MPI_PACKED with the byte counts and offsets (the generated entry point:
 *      its agreement, its way, its executor); where the caller found every rank of every
 *      sibling of a recorded split packing blocks of one size c at offsets j c
 *      (p->union_block, aapc_alltoallw.c), MPI_Alltoall of c bytes instead: the union of the
 *      siblings' all-to-alls (alltoall/aapc_alltoall_cluster.c), as a process grid's
 *      transposes need;
 *   4. unpack: MPI_Unpack of each received block into place.
 * MPI_IN_PLACE: the receive blocks are packed first (as MPI_Alltoallw in place sends what the
 * receive side describes), then received and unpacked over them.
 * Cost: the MPI_Alltoallv of the same bytes, plus two local copies of the data (2 n beta_mem for
 * n bytes per rank) and 2 P calls of MPI_Pack / MPI_Unpack; the staging buffers are n bytes per
 * side.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "aapc_alltoallw_packed.h"
#include "aapc_mpi.h"

#ifdef AAPC_INTERCEPT

int aapc_alltoallw_pack_layout(const int counts[], const MPI_Datatype types[], int size,
                               MPI_Comm comm, int bytes[], int offs[], long long *total)
{
    long long at = 0;
    for (int j = 0; j < size; j++) {
        int packed = 0;
        int64_t esize = 0;
        bytes[j] = 0;
        offs[j] = (int)(at <= INT_MAX ? at : 0);
        if (counts[j] == 0)
            continue;
        if (aapc_type_size(types[j], &esize) != MPI_SUCCESS ||
            PMPI_Pack_size(counts[j], types[j], comm, &packed) != MPI_SUCCESS ||
            (long long)packed != (long long)counts[j] * esize || at + packed > INT_MAX)
            return 1;
        bytes[j] = packed;
        at += packed;
    }
    *total = at;
    return 0;
}

int aapc_alltoallw_uniform_block(const aapc_wpack_t *p)
{
    int c = p->size > 0 ? p->sbytes[0] : 0;
    for (int j = 0; j < p->size; j++)
        if (p->sbytes[j] != c || p->rbytes[j] != c || p->soffs[j] != j * c ||
            p->roffs[j] != j * c)
            return -1;
    return c;
}

int aapc_alltoallw_packed(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                          const int rdispls[], const MPI_Datatype recvtypes[],
                          const aapc_wpack_t *p, MPI_Comm comm)
{
    int rc = MPI_SUCCESS, size = p->size, inplace = sendbuf == MPI_IN_PLACE;
    const int *scounts = inplace ? recvcounts : sendcounts, *sd = inplace ? rdispls : sdispls;
    const MPI_Datatype *stypes = inplace ? recvtypes : sendtypes;
    const char *sbase = inplace ? (const char *)recvbuf : (const char *)sendbuf;
    for (int j = 0; j < size && rc == MPI_SUCCESS; j++) {
        int pos = p->soffs[j];
        if (scounts[j] > 0)
            rc = PMPI_Pack(sbase + sd[j], scounts[j], stypes[j], p->sstage,
                           (int)(p->stotal > 0 ? p->stotal : 1), &pos, comm);
    }
    /* a recorded sibling whose family agreed (aapc_alltoallw.c): the siblings' union */
    if (rc == MPI_SUCCESS && p->union_block >= 0)
        rc = MPI_Alltoall(p->sstage, p->union_block, MPI_BYTE, p->rstage, p->union_block,
                          MPI_BYTE, comm);
    else if (rc == MPI_SUCCESS)
        rc = MPI_Alltoallv(p->sstage, p->sbytes, p->soffs, MPI_PACKED, p->rstage, p->rbytes,
                           p->roffs, MPI_PACKED, comm);
    for (int j = 0; j < size && rc == MPI_SUCCESS; j++) {
        int pos = p->roffs[j];
        if (recvcounts[j] > 0)
            rc = PMPI_Unpack(p->rstage, (int)(p->rtotal > 0 ? p->rtotal : 1), &pos,
                             (char *)recvbuf + rdispls[j], recvcounts[j], recvtypes[j], comm);
    }
    return rc;
}

#endif /* AAPC_INTERCEPT */
