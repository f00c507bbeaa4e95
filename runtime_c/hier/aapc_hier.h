/*
 * aapc_hier.h: collectives for machines that run several MPI ranks each (multicore machines).
 */
#ifndef AAPC_HIER_H
#define AAPC_HIER_H

#include <mpi.h>

#include "aapc_phased.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoall semantics on a communicator of s->nmachines x ranks_per_machine ranks placed in
   blocks (ranks k*R .. k*R+R-1 on machine k, as mpiexec -ppn R / srun -m block): one leader
   per machine gathers its machine's blocks, the leaders run schedule s on aggregated
   machine-to-machine blocks, and scatter the result. ranks_per_machine == 1 is
   aapc_alltoall_run; another communicator size falls back to PMPI_Alltoall. */
int aapc_hier_alltoall_run(const aapc_schedule_t *s, int ranks_per_machine, const void *sendbuf,
                           int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm);

/* The leader-based all-to-all of one communicator (aapc_hier_alltoall.c): R ranks on every
   machine, in any placement. node: the ranks of this rank's machine, local rank 0 its leader;
   leaders: the leaders in machine order (MPI_COMM_NULL on other ranks); order[k*R + i]: the
   rank of comm that is local rank i of machine k (NULL: blocks, order[q] = q); exchange: the
   machine-level MPI_Alltoall among the leaders of one element of gt/st per machine. */
typedef int (*aapc_hier_exchange_fn)(void *ctx, const void *g, MPI_Datatype gt, void *s,
                                     MPI_Datatype st, MPI_Comm leaders);
typedef struct aapc_hier_layout {
    int r, p; /* ranks per machine, ranks of comm */
    const int *order;
    MPI_Comm node, leaders;
    aapc_hier_exchange_fn exchange;
    void *ctx;
    MPI_Aint round_limit; /* aapc_hier_round_limit() of the user's communicator */
    int shared;           /* 1: move the blocks through the machine's shared segment
                             (aapc_hier_segment) where its ranks share memory; 0: MPI_Gather and
                             MPI_Scatter on node */
    int lanes;            /* L leaders per machine, 1 <= L <= r (segment only; 1 otherwise):
                             local rank l < L carries the blocks of local ranks
                             [l r / L, (l + 1) r / L), and `leaders` is then its lane: local
                             rank l of every machine, in machine order */
} aapc_hier_layout_t;

/* The leaders per machine for blocks of b bytes, R ranks per machine: AAPC_LEADERS (a setting
   every rank of comm shares: common/aapc_settings.h) clamped to [1, R], else
   min(R, 4, R*R*b / 64 KiB) and at least 1: a lane's machine-to-machine message stays at
   least 64 KiB, the size from which one more sender per machine adds bandwidth rather than
   messages (an untuned default). */
int aapc_hier_lanes(MPI_Comm comm, int r, MPI_Aint b);

/* The shared segment of a machine's ranks (aapc_hier_segment.c), at least `bytes` long:
   collective over node on its first use and whenever it grows (every rank of node asks for the
   same size in the same call). *base NULL: node's ranks cannot share memory (several hosts, or
   AAPC_SHM=0). aapc_hier_segment_sync: a barrier of node that also orders the segment's loads
   and stores (MPI_Win_sync on both sides). */
int aapc_hier_segment(MPI_Comm node, MPI_Aint bytes, char **base);
/* *shared = 1 when node's ranks have a segment (collective on node's first use). */
int aapc_hier_segment_shared(MPI_Comm node, int *shared);
int aapc_hier_segment_sync(MPI_Comm node);
/* The most bytes a segment holds per call (the gathered and the received blocks of a round):
   larger calls move in rounds of at most this size. */
#define AAPC_HIER_SEGMENT_MAX ((MPI_Aint)16 << 20)

/* The calls of aapc_hier_alltoall_core in this process so far: [0] through the shared segment
   with one leader per machine, [1] with several, [2] through MPI_Gather and MPI_Scatter. */
void aapc_hier_alltoall_paths(long long counts[3]);

/* MPI_Alltoall semantics on comm laid out as h says, in rounds (AAPC_HIER_ROUND_BYTES). */
int aapc_hier_alltoall_core(const aapc_hier_layout_t *h, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm);

/* Round arithmetic: the bytes of every block one round moves, for blocks of b bytes, R ranks
   per machine and P ranks, so that a leader's R*P*c bytes stay under `limit` (at least 1, at
   most b: one round whenever R*P*b <= limit). aapc_hier_round_limit(comm): AAPC_HIER_ROUND_BYTES
   (a setting every rank of comm shares: common/aapc_settings.h), default 256 MiB, at most
   INT_MAX. */
MPI_Aint aapc_hier_round_bytes(MPI_Aint b, int r, int p, MPI_Aint limit);
MPI_Aint aapc_hier_round_limit(MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_HIER_H */
