/*
 * aapc_coll_reduce.c: MPI_Allreduce and MPI_Reduce across machines, leader-based (seed 004
 * section 9.2: reduce inside the machine, combine among the leaders, hand back).
 *
 * Allreduce (N machines, R ranks each, n bytes):
 *   1. every machine reduces its ranks' vectors at its leader through the shared segment
 *      (runtime_c/shm/: whole-vector for short, shmem-parallel/cyclic for long vectors);
 *   2. the leaders: the MPI library's Allreduce among the N leaders, in place, or for large
 *      vectors and commutative operations a ring reduce-scatter and allgather over the tree
 *      (aapc_coll_ring.c);
 *   3. every leader broadcasts the result to its ranks through the segment.
 *   With every machine running the same number of ranks the leaders' step can instead be R
 *   lanes, every rank a ring of its own on a slice (aapc_coll_lanes.c, AAPC_ALLREDUCE=lanes).
 *   Cost: T_shmreduce,R(n) + T_allreduce,N(n) + T_shm(n), against the library's
 *   T_allreduce,P(n): log2 N instead of log2(R N) message steps for short vectors, and one
 *   reduce-scatter/allgather among N senders instead of R N for long ones.
 * Reduce: steps 1 and 2 with the library's Reduce among the leaders to the root's machine (or
 *   for large vectors and commutative operations a pipelined chain: aapc_coll_chain.c),
 *   whose leader sends the result to the root when the root is not the leader (one more
 *   message inside the machine, through seed 003's lock-free channel: runtime_c/shm/). On
 *   one machine: the shared-memory Reduce to the root.
 *   Cost: T_shmreduce,R(n) + T_reduce,N(n) (+ alpha + n beta_m).
 * Order of the operands: a machine's ranks are combined in rank order, then the machines in
 * machine order (the order of their lowest rank): rank order when the ranks are placed in
 * blocks, which is when the selection hands non-commutative operations here.
 */
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_shm.h"

/* Step 1: the machine's vectors reduced into `into` on its leader. */
static int reduce_on_machine(const aapc_coll_layout_t *l, const void *sendbuf, void *into,
                             int count, MPI_Datatype type, MPI_Op op)
{
    if (l->local == 0)
        return aapc_shm_reduce(sendbuf, into, count, type, op, 0, l->node);
    return aapc_shm_reduce(sendbuf, NULL, count, type, op, 0, l->node);
}

int aapc_coll_allreduce(const aapc_coll_layout_t *l, enum aapc_coll_step step,
                        const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                        MPI_Op op)
{
    int rc;
    if (step == AAPC_STEP_LANES && l->lanes != MPI_COMM_NULL)
        return aapc_coll_lanes_allreduce(l, sendbuf, recvbuf, count, type, op);
    if (step == AAPC_STEP_LANES)
        step = AAPC_STEP_RING; /* machines of different sizes: the leaders' ring */
    if (l->local != 0 && sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if ((rc = reduce_on_machine(l, sendbuf, recvbuf, count, type, op)) != MPI_SUCCESS)
        return rc;
    if (l->leaders != MPI_COMM_NULL && l->n > 1 &&
        (rc = step == AAPC_STEP_RING
                  ? aapc_coll_ring_allreduce(l, recvbuf, count, type, op)
                  : PMPI_Allreduce(MPI_IN_PLACE, recvbuf, count, type, op, l->leaders)) !=
            MPI_SUCCESS)
        return rc;
    return aapc_shm_bcast(recvbuf, count, type, 0, l->node);
}

int aapc_coll_reduce(const aapc_coll_layout_t *l, enum aapc_coll_step step, const void *sendbuf,
                     void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                     long long chunk)
{
    int rc = MPI_SUCCESS, root_machine = l->machine[root];
    int root_local = aapc_coll_local_of(l, root);
    if (l->n == 1)
        return aapc_shm_reduce(sendbuf, recvbuf, count, type, op, root_local, l->node);
    if (l->rank == root && root_local != 0 && sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf; /* its operand is in recvbuf, which the result overwrites later */
    char *tmp = NULL, *into = recvbuf;
    if (l->local == 0 && l->rank != root && (tmp = aapc_coll_vector(count, type, &into)) == NULL)
        return MPI_ERR_NO_MEM; /* a leader short of memory fails alone, as elsewhere */
    rc = reduce_on_machine(l, sendbuf, into, count, type, op);
    if (rc == MPI_SUCCESS && l->leaders != MPI_COMM_NULL && step == AAPC_STEP_CHAIN)
        rc = aapc_coll_chain_reduce(l, into, count, type, op, root_machine, chunk);
    else if (rc == MPI_SUCCESS && l->leaders != MPI_COMM_NULL)
        rc = l->mine == root_machine
                 ? PMPI_Reduce(MPI_IN_PLACE, into, count, type, op, root_machine, l->leaders)
                 : PMPI_Reduce(into, NULL, count, type, op, root_machine, l->leaders);
    if (rc == MPI_SUCCESS && l->mine == root_machine && root_local != 0) {
        if (l->local == 0) /* seed 003's lock-free channel (runtime_c/shm/) */
            rc = aapc_shm_chan_send(into, count, type, root_local, l->node);
        else if (l->rank == root)
            rc = aapc_shm_chan_recv(recvbuf, count, type, 0, l->node);
    }
    free(tmp);
    return rc;
}
