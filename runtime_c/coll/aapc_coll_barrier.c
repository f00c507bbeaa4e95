/*
 * aapc_coll_barrier.c: MPI_Barrier across machines, leader-based.
 *
 * Algorithm (N machines, R ranks each): the shared-memory barrier of every machine (a
 * combining tree of atomic counters: runtime_c/shm/aapc_shm_barrier.c), the MPI library's
 * Barrier among the N leaders (MPICH, Open MPI: dissemination or recursive doubling), and the
 * machine's barrier again, which releases its ranks once their leader has left the leaders'.
 * No rank leaves before every rank has entered: a rank leaves the second machine barrier only
 * after its leader left the leaders' barrier, which every leader entered only after all of its
 * machine's ranks entered the first.
 * Cost: 2 T_shmbarrier(R) + ceil(log2 N) alpha, against the library's ceil(log2(R N)) alpha
 * (every step a network message for a rank whose partner is on another machine).
 */
#include "aapc_coll.h"
#include "aapc_shm.h"

int aapc_coll_barrier(const aapc_coll_layout_t *l)
{
    int rc;
    if ((rc = aapc_shm_barrier(l->node)) != MPI_SUCCESS || l->n < 2)
        return rc;
    if (l->leaders != MPI_COMM_NULL && (rc = PMPI_Barrier(l->leaders)) != MPI_SUCCESS)
        return rc;
    return aapc_shm_barrier(l->node);
}
