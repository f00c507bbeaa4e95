/*
 * aapc_coll.h: MPI_Bcast, MPI_Allgather, MPI_Allreduce, MPI_Reduce, MPI_Barrier, MPI_Scatter
 * and MPI_Scatterv across the machines of a cluster, in the same library as the all-to-all
 * (runtime_c/coll/).
 *
 * The ranks of one machine share a segment (runtime_c/shm/: their collectives there are the
 * shared-memory ones), one of them (the leader, the machine's lowest rank) carries the
 * machine's part between machines, and the leaders run the MPI library's collective among
 * themselves: seed 004's leader-based composition (sections 6.2, 6.3, 9.2), for any placement
 * of the ranks on the machines (blocks, round robin, unequal counts, subsets, splits).
 *
 * The layout (aapc_coll_layout.c) comes from the machines the all-to-all already gathered for
 * the communicator (common/aapc_cluster_comm.c: one gather per communicator), and is cached on
 * it: the machine's ranks (node), the leaders in machine order (leaders), and the order of the
 * ranks machine by machine. The algorithms (one per file, each opening with its cost) take the
 * layout; the choice between them and the MPI library's routine is aapc_coll_select.c's.
 */
#ifndef AAPC_COLL_H
#define AAPC_COLL_H

#include <mpi.h>

#include "aapc_cluster.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aapc_coll_layout {
    int size, rank; /* of the communicator */
    int n;          /* machines it runs on */
    int r_max;      /* the most ranks any machine runs */
    int mine;       /* my machine, machines numbered in the order of their lowest rank */
    int local;      /* my rank on it (0: its leader) */
    int blocks;     /* every machine's ranks are consecutive ranks: order[q] == q */
    int shared;     /* my machine's ranks share a segment (runtime_c/shm/ serves node) */
    int *count;     /* count[k]: the ranks of machine k */
    int *first;     /* first[k] = count[0] + .. + count[k-1] */
    int *order;     /* order[first[k] + i]: the rank of local rank i of machine k */
    int *machine;   /* machine[q]: the machine of rank q */
    int *ring_at;   /* ring_at[j]: the machine at place j of the leaders' ring, the machines
                       in the cluster's order (its topology file's: a switch's machines
                       together, so a ring step crosses each switch link once each way) */
    int ring_pos;   /* my machine's place in that ring */
    int connected;  /* node, leaders and shared are set (aapc_coll_layout_connect) */
    int agreed;     /* the ranks' settings agree (aapc_cluster_comm_agreed, kept here so a
                       call the library serves looks it up once) */
    MPI_Comm dup;     /* the communicator's private duplicate (common/aapc_cluster_comm.h) */
    MPI_Comm node;    /* my machine's ranks, in rank order */
    MPI_Comm leaders; /* local rank 0 of every machine, in machine order (MPI_COMM_NULL on
                         other ranks) */
    MPI_Comm lanes;   /* local rank i of every machine, in machine order, where every machine
                         runs the same number r_max > 1 of ranks (MPI_COMM_NULL otherwise):
                         the Allreduce's lanes (aapc_coll_lanes.c) */
} aapc_coll_layout_t;

/* The layout of comm: its machines numbered and its ranks in machine order (local work, on
   the machines the all-to-all gathered: collective over comm only when that gather has not
   been made yet). *out is NULL when there is none to use: an inter-communicator, one rank, a
   rank on a machine outside the cluster (said once, as the all-to-all says it; the ranks of a
   workstation outside the cluster are one machine). Returns an MPI error code. */
int aapc_coll_layout(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name,
                     const char *routine, aapc_coll_layout_t **out);

/* The place `j` steps along the leaders' ring (modulo N, j may be negative), and the machine
   `steps` places from mine along it. */
static inline int aapc_coll_place(const aapc_coll_layout_t *l, int j)
{
    return ((j % l->n) + l->n) % l->n;
}
static inline int aapc_coll_ring_machine(const aapc_coll_layout_t *l, int steps)
{
    return l->ring_at[aapc_coll_place(l, l->ring_pos + steps)];
}

/* Helpers the algorithms share (aapc_coll_layout.c). The place of rank q among its machine's
   ranks (0: the leader). */
int aapc_coll_local_of(const aapc_coll_layout_t *l, int q);
/* A buffer for count elements of type, or NULL (out of memory, or the type cannot say its
   extent): *base is where it starts as a buffer argument (the true lower bound accounted
   for). free() the returned pointer. */
char *aapc_coll_vector(MPI_Aint count, MPI_Datatype type, char **base);
/* On a leader: a copy of its machine's part of buf (count elements at l->mine * count), so
   that the part can be sent while buf receives (send and receive buffers must not overlap):
   *from is the copy as a buffer argument. NULL and *rc set on failure. free() the result. */
char *aapc_coll_own_part(const aapc_coll_layout_t *l, const void *buf, int count,
                         MPI_Datatype type, char **from, int *rc);

/* The node and leaders communicators and the machine's segment, made on the first call that
   runs a leader-based algorithm (collective over the communicator: every rank of it makes the
   same choice). Returns an MPI error code. */
int aapc_coll_layout_connect(aapc_coll_layout_t *l);

/* The leaders' step of an algorithm: the MPI library's collective among the leaders, a ring
   over the switch tree (aapc_coll_ring.c), the tree's phases (aapc_coll_allgather_phased.c,
   Allgather only), IP multicast (aapc_coll_mcast.c, Bcast and Allgather), or a pipelined
   chain over the tree (aapc_coll_chain.c, Bcast only). */
enum aapc_coll_step {
    AAPC_STEP_LIBRARY,
    AAPC_STEP_RING,
    AAPC_STEP_PHASED,
    AAPC_STEP_MCAST,
    AAPC_STEP_CHAIN,
    AAPC_STEP_LANES /* Allreduce: every local rank a ring of its own on a slice (lanes) */
};

/* The hierarchical algorithms on a layout: MPI semantics (MPI_IN_PLACE where MPI allows it,
   zero counts, derived datatypes), arguments valid (aapc_coll_select.c hands invalid ones to
   the MPI library, which raises the error). Return an MPI error code. */
int aapc_coll_bcast(const aapc_coll_layout_t *l, enum aapc_coll_step step, void *buf, int count,
                    MPI_Datatype type, int root, long long chunk);
/* The leaders' Bcast from the leader of root_machine as a pipelined chain in the ring's order,
   in chunks of about `chunk` bytes (aapc_coll_chain.c; every leader the same chunk). */
int aapc_coll_chain_bcast(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                          int root_machine, long long chunk);
/* The leaders' Reduce to the leader of root_machine as a pipelined chain, in place in buf
   (every leader's operand; the result at the root's leader); commutative op. */
int aapc_coll_chain_reduce(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                           MPI_Op op, int root_machine, long long chunk);
/* (aapc_coll_bcast: chunk, the bytes of AAPC_STEP_CHAIN's chunks, the same on every rank.)
   AAPC_STEP_PHASED needs every machine running the same number of ranks. */
int aapc_coll_allgather(const aapc_coll_layout_t *l, enum aapc_coll_step step,
                        const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype);
/* The rings among the leaders (aapc_coll_ring.c), in place in buf on the leaders' communicator:
   Allgatherv of machine k's part of counts[k] elements at displs[k]; Allreduce (commutative
   op); Bcast from the leader of root_machine. */
int aapc_coll_ring_allgatherv(const aapc_coll_layout_t *l, void *buf, const int *counts,
                              const int *displs, MPI_Datatype type);
int aapc_coll_ring_allreduce(const aapc_coll_layout_t *l, void *buf, int count,
                             MPI_Datatype type, MPI_Op op);
/* The same ring among the ranks of `ring`, a communicator of one rank per machine in machine
   order (the leaders, or a lane). */
int aapc_coll_ring_allreduce_on(const aapc_coll_layout_t *l, MPI_Comm ring, void *buf, int count,
                                MPI_Datatype type, MPI_Op op);
/* Allreduce in lanes (commutative operations, l->lanes set): aapc_coll_lanes.c. */
int aapc_coll_lanes_allreduce(const aapc_coll_layout_t *l, const void *sendbuf, void *recvbuf,
                              int count, MPI_Datatype type, MPI_Op op);
int aapc_coll_ring_bcast(const aapc_coll_layout_t *l, void *buf, int count, MPI_Datatype type,
                         int root_machine);
/* The leaders' Bcast from the leader of root_machine, and their Allgather of one part of count
   elements each (in place in buf), over IP multicast (aapc_coll_mcast.c). */
int aapc_coll_leaders_mcast_bcast(const aapc_coll_layout_t *l, void *buf, int count,
                                  MPI_Datatype type, int root_machine);
int aapc_coll_leaders_mcast_allgather(const aapc_coll_layout_t *l, void *buf, int count,
                                      MPI_Datatype type);
/* The leaders' Scatter over IP multicast from the leader of root_machine (aapc_coll_mcast.c):
   machine k's part is count[k] * block bytes, at first[k] * block of agg on the sender; the
   other leaders receive theirs into part. */
int aapc_coll_leaders_mcast_scatter(const aapc_coll_layout_t *l, const char *agg, char *part,
                                    long long block, int root_machine);
/* The leaders' Allgather of one part of count elements each, in place in buf (part k at
   k * count elements), as an MPI_Alltoall of one send part (aapc_coll_allgather_phased.c). */
int aapc_coll_leaders_phased(const aapc_coll_layout_t *l, void *buf, int count,
                             MPI_Datatype type);
/* Non-commutative operations are combined in rank order only when l->blocks; the selection
   never hands them here otherwise. */
int aapc_coll_allreduce(const aapc_coll_layout_t *l, enum aapc_coll_step step,
                        const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                        MPI_Op op);
/* Reduce: AAPC_STEP_CHAIN for commutative operations (aapc_coll_chain.c), else the library's
   step. */
int aapc_coll_reduce(const aapc_coll_layout_t *l, enum aapc_coll_step step, const void *sendbuf,
                     void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                     long long chunk);
int aapc_coll_barrier(const aapc_coll_layout_t *l);
/* One message per machine from the root to its leader (AAPC_STEP_MCAST, Scatter: one multicast
   of them all), then the library's scatter on each machine (aapc_coll_scatter.c). Scatter:
   block, the bytes of every block (> 0, P blocks within INT_MAX bytes); Scatterv: mine, this
   rank's bytes (0 at a root in place). */
int aapc_coll_scatter(const aapc_coll_layout_t *l, enum aapc_coll_step step, const void *sendbuf,
                      int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, long long block);
int aapc_coll_scatterv(const aapc_coll_layout_t *l, const void *sendbuf, const int *sendcounts,
                       const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, long long mine);

/* The entry points of the generated MPI_Bcast, ... (templates/intercept.c.j2): the choice per
   call (aapc_coll_select.c), the report of what ran, and the algorithm or the MPI library's
   routine. */
int aapc_coll_bcast_entry(const aapc_cluster_t *cluster, const char *name, void *buf, int count,
                          MPI_Datatype type, int root, MPI_Comm comm);
int aapc_coll_allgather_entry(const aapc_cluster_t *cluster, const char *name,
                              const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm);
int aapc_coll_allreduce_entry(const aapc_cluster_t *cluster, const char *name,
                              const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm);
int aapc_coll_reduce_entry(const aapc_cluster_t *cluster, const char *name, const void *sendbuf,
                           void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                           MPI_Comm comm);
int aapc_coll_barrier_entry(const aapc_cluster_t *cluster, const char *name, MPI_Comm comm);
int aapc_coll_scatter_entry(const aapc_cluster_t *cluster, const char *name, const void *sendbuf,
                            int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
int aapc_coll_scatterv_entry(const aapc_cluster_t *cluster, const char *name,
                             const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_COLL_H */
