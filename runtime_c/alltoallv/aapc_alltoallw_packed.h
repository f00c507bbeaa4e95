/*
 * aapc_alltoallw_packed.h: MPI_Alltoallw as this library's MPI_Alltoallv of packed bytes
 * (aapc_alltoallw_packed.c), for calls whose datatypes differ from peer to peer.
 */
#ifndef AAPC_ALLTOALLW_PACKED_H
#define AAPC_ALLTOALLW_PACKED_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One rank's packed layout and staging buffers (owned by the caller). */
typedef struct aapc_wpack {
    int size;
    int *sbytes, *soffs, *rbytes, *roffs; /* per peer: packed bytes and offsets */
    long long stotal, rtotal;             /* bytes of each staging buffer */
    void *sstage, *rstage;
    int union_block; /* >= 0: every block is this many bytes on every rank of every sibling,
                        agreed (aapc_alltoallw.c): MPI_Alltoall of them, the siblings' union */
} aapc_wpack_t;

/* One side's layout: bytes[j] (the packed size of counts[j] x types[j]) at offs[j] of a
   staging buffer of *total bytes. 0; 1 where the side cannot be packed so (a packed form that is
   not the data itself, or more than INT_MAX bytes). */
int aapc_alltoallw_pack_layout(const int counts[], const MPI_Datatype types[], int size,
                               MPI_Comm comm, int bytes[], int offs[], long long *total);

/* c when every block of both sides of the layout is c bytes at offset j c (an all-to-all of c
   bytes), else -1. */
int aapc_alltoallw_uniform_block(const aapc_wpack_t *p);

/* Pack, MPI_Alltoallv of MPI_PACKED (the library's entry point), unpack; every rank of comm
   calls it (the caller agrees on it). MPI_SUCCESS or the first error. */
int aapc_alltoallw_packed(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                          const int rdispls[], const MPI_Datatype recvtypes[],
                          const aapc_wpack_t *p, MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* AAPC_ALLTOALLW_PACKED_H */
