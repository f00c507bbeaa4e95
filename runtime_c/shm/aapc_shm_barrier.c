/*
 * aapc_shm_barrier.c: MPI_Barrier in shared memory.
 *
 * Algorithm: up to AAPC_SHM_BAR_DEGREE (8) ranks, one arrival counter and one release epoch
 * word: barrier number k (k = 1, 2, ...) does fetch_add on the counter; the rank that brings it
 * to k*p is last and stores k into the release word, every other rank polls the release word
 * (one write, p readers: the shared-memory form of seed 004's multicast release, chapter 7).
 * More ranks: a combining tree of fan-in 8 (groups of 8 ranks, then groups of 8 groups, ...):
 * the last arriver at a node climbs to its parent, the last arriver at the root releases
 * everybody. Counters only grow (the target is k times the fan-in), so nothing is ever reset.
 * Cost: p atomic increments on one line (flat) or about 8 per node on ceil(log8 p) levels (tree),
 * plus one cache-line broadcast of the release word: O(p) line transfers in the flat case,
 * O(8 log8 p) on the critical path of the tree.
 */
#include "aapc_shm_impl.h"

static aapc_shm_word *counter(const aapc_shm_state *st, int node)
{
    return (aapc_shm_word *)(void *)(st->base + st->off_bar + (size_t)node * AAPC_SHM_LINE);
}

static void barrier_run(aapc_shm_state *st)
{
    uint64_t k = ++st->bar_epoch;
    aapc_shm_word *release = (aapc_shm_word *)(void *)(st->base + st->off_release);
    int node = st->bar_nodes == 1 ? 0 : st->rank / AAPC_SHM_BAR_DEGREE;
    for (;;) {
        uint64_t target = k * (uint64_t)st->bar_fanin[node];
        uint64_t before = atomic_fetch_add_explicit(counter(st, node), 1, memory_order_acq_rel);
        if (before + 1 != target) {
            aapc_shm_wait_geq(st, release, k);
            return;
        }
        if (st->bar_parent[node] < 0) {
            aapc_shm_store_wake(release, k);
            return;
        }
        node = st->bar_parent[node];
    }
}

int aapc_shm_barrier(MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Barrier(comm);
    }
    barrier_run(st);
    return MPI_SUCCESS;
}
