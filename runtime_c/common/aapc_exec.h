/*
 * aapc_exec.h: the phase executor's state and entry, shared by the MPI_Alltoall entry
 * (alltoall/aapc_alltoall_exec.c) and the MPI_Alltoallv executor (alltoallv/aapc_alltoallv_exec.c).
 * Internal to runtime_c/.
 */
#ifndef AAPC_EXEC_H
#define AAPC_EXEC_H

#include <mpi.h>

#include "aapc_args.h" /* the entry points' argument checks */
#include "aapc_comm.h"
#include "aapc_phased.h"

/* State of one call on machine m. */
struct aapc_run {
    const aapc_schedule_t *s;
    aapc_comm_info_t info;
    MPI_Comm dup;
    int m;
    /* user buffers (sbuf already redirected for MPI_IN_PLACE) */
    const char *sbuf;
    char *rbuf;
    int scount, rcount;
    MPI_Datatype stype, rtype;
    MPI_Aint sblock, rblock; /* bytes between consecutive blocks */
    /* dummy messages */
    MPI_Datatype dtype;
    int dcount;
    const char *dsend;
    char *drecv;
    MPI_Request dreq;       /* the one outstanding dummy receive */
    /* requests: data receives (one slot per recv entry), sync receives, sync sends */
    int r0, r1, s0, s1, y0, y1;
    MPI_Request *rreq, *yreq, *freq;
    int nfire, nfired;
    MPI_Request sreq;       /* the one outstanding data/dummy send */
    int rdone;              /* recv entries < rdone are complete (barrier bookkeeping) */
    int rposted;            /* recv entries < rposted are posted */
    int prepost;            /* data receives are posted this many phases ahead; 0: all at once */
    /* s->window > 1: one send request per send entry; entries < sdone are complete (fired) */
    MPI_Request *wsreq;
    int sdone;
    int next_barrier;
    /* Alltoallv (vmode): per-rank counts and displacements, element sizes and extents */
    int vmode;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint sext, rext;
    int64_t ssize, rsize; /* bytes of one element: 64-bit, a type may exceed INT_MAX */
    int sdense, rdense;
    /* messages moved in pieces with non-dense types travel packed: per rank, the offset of its
       packed message in spack/rpack, or -1 */
    char *spack, *rpack;
    MPI_Aint *spoff, *rpoff;
    struct aapc_trace *trace; /* the call's time-line ($AAPC_TRACE), else NULL */
};

/* Machine index of a table peer (dummy peers are -(m+1)) is in range. */
int aapc_peer_ok(const aapc_schedule_t *s, int32_t peer);
/* Communicator rank of a table peer. */
int aapc_rank(const struct aapc_run *st, int32_t peer);
/* Whether a datatype is plain bytes: no gaps, no offset. */
int aapc_dense(MPI_Datatype t);
/* MPI_Alltoall's counts: MPI_ERR_COUNT for a negative count, else the bytes of one block
   (*bytes) and the size of one send element (*ssize; the receive type's under MPI_IN_PLACE). */
int aapc_alltoall_block(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                        MPI_Datatype recvtype, MPI_Aint *bytes, int64_t *ssize);
/* MPI_Pack (pack = 1) or MPI_Unpack of n elements of `type` (extent ext, esize bytes each) at
   buf, which may be MPI_BOTTOM, to or from the raw bytes at `bytes`, in pieces of at most
   INT_MAX bytes. MPI_ERR_TRUNCATE when the packed form is not the raw bytes, MPI_ERR_COUNT when
   one element exceeds INT_MAX bytes (MPI_Pack counts bytes in an int). */
int aapc_pack_bytes(int pack, void *buf, MPI_Aint n, MPI_Datatype type, MPI_Aint ext,
                    int64_t esize, char *bytes, MPI_Comm comm);
/* Copy scount elements of stype at src to rcount elements of rtype at dst, in this process:
   memcpy when both types are plain bytes; else MPI_Pack and/or MPI_Unpack, through a staging
   buffer when neither side is plain bytes (at most AAPC_LOCAL_COPY_STAGE_MAX bytes), when both
   sides hold the same bytes; else, or when packing is not possible (the packed form is not the
   raw bytes, an element over INT_MAX bytes, no memory for the stage), a message to self
   (rank me of comm, a private communicator, tag). Under MPICH 5 a message to self of a
   non-contiguous type took 10-30x the time of MPI_Pack + MPI_Unpack from 128 KB on, under Open
   MPI 5 1.05-1.5x (docs/measurements/typed-blocks.md). Returns an MPI error code. */
#define AAPC_LOCAL_COPY_STAGE_MAX ((int64_t)1 << 26)
int aapc_local_copy(const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                    MPI_Datatype rtype, MPI_Comm comm, int me, int tag);
/* Run machine st->m's rows; buffers, counts and the communicator already resolved in *st
   (the buffers may be MPI_BOTTOM: addresses are computed with aapc_at).
   bytes: the block size in bytes (MPI_Alltoall) or 0 (Alltoallv, per-rank counts). */
int aapc_execute(struct aapc_run *st, int myrank, MPI_Aint bytes);

#endif /* AAPC_EXEC_H */
