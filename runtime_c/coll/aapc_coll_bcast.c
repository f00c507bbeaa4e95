/*
 * aapc_coll_bcast.c: MPI_Bcast across machines, leader-based (seed 004 section 6.3).
 *
 * Algorithm (N machines, R ranks on the root's machine, n bytes):
 *   1. on the root's machine, when the root is not its leader: a shared-memory Bcast from the
 *      root (runtime_c/shm/aapc_shm_bcast.c: one copy in, the copies out overlapped);
 *   2. the leaders: the MPI library's Bcast among the N leaders, from the root's machine, or
 *      for large messages a scatter and a ring allgather over the tree (aapc_coll_ring.c) or a
 *      pipelined chain over the tree (aapc_coll_chain.c), or one IP multicast that only the
 *      leaders receive (aapc_coll_mcast.c);
 *   3. on every other machine: a shared-memory Bcast from its leader.
 * The network carries the message once per machine instead of once per rank, and no rank but
 * a leader touches the network.
 * Cost: T_bcast,N(n) + 2 T_shm(n), T_shm(n) = alpha_f + n beta_m (a flag and a copy, the
 * copy-out overlapped), against the library's T_bcast,P(n) over R N ranks: log2(R N) instead of
 * log2 N message steps for small n, and for large n (scatter + allgather) the same bytes per
 * link but R times fewer senders sharing each machine's link.
 */
#include "aapc_coll.h"
#include "aapc_shm.h"

int aapc_coll_bcast(const aapc_coll_layout_t *l, enum aapc_coll_step step, void *buf, int count,
                    MPI_Datatype type, int root, long long chunk)
{
    int rc = MPI_SUCCESS, root_machine = l->machine[root];
    int root_local = aapc_coll_local_of(l, root);
    if (l->mine == root_machine && root_local != 0 &&
        (rc = aapc_shm_bcast(buf, count, type, root_local, l->node)) != MPI_SUCCESS)
        return rc;
    if (l->leaders != MPI_COMM_NULL && l->n > 1 &&
        (rc = step == AAPC_STEP_RING ? aapc_coll_ring_bcast(l, buf, count, type, root_machine)
              : step == AAPC_STEP_CHAIN
                  ? aapc_coll_chain_bcast(l, buf, count, type, root_machine, chunk)
              : step == AAPC_STEP_MCAST
                  ? aapc_coll_leaders_mcast_bcast(l, buf, count, type, root_machine)
                  : PMPI_Bcast(buf, count, type, root_machine, l->leaders)) != MPI_SUCCESS)
        return rc;
    if (l->mine != root_machine || root_local == 0)
        rc = aapc_shm_bcast(buf, count, type, 0, l->node);
    return rc;
}
