/*
 * aapc_shm_allgather_cma.c: MPI_Allgather with a single copy per byte, each rank reading the
 * other ranks' blocks straight out of their send buffers (Linux cross-memory attach).
 *
 * Algorithm: every rank writes (pid, address of its packed send block) into its info line of the
 * window and publishes step s1; after seeing s1 from everybody, rank i copies its own block
 * locally (nothing to do for MPI_IN_PLACE with a contiguous type) and reads block j from rank j
 * for j = i+1, i+2, ... (staggered, so the p readers of one block start at different ranks) with
 * one process_vm_readv per peer. It records whether all its reads succeeded and publishes s2;
 * waiting for every s2 is the barrier that keeps each send buffer alive until all have read it.
 * Any failed read (every rank sees the same p ok words) makes every rank return 0, and the
 * caller redoes the call through the window and stops using this path on the communicator.
 * MPI_IN_PLACE is fine: a rank's own block, which the others read, is never written during the
 * call. Cost for n bytes per rank: 2 flag rounds + (p-1) system calls + (p-1) n beta_m per rank
 * (one copy); versus n beta_m in + (p-1) n beta_m out and one flag round per chunk of slot/p
 * bytes through the window.
 */
#include "aapc_shm_impl.h"

#include <string.h>

int aapc_shm_allgather_cma(aapc_shm_state *st, const char *src, char *dst, size_t rstride,
                           size_t n)
{
    int p = st->size, me = st->rank;
    aapc_shm_cma_info *mine = aapc_shm_info(st, me);
    mine->pid = st->pid;
    mine->addr = (uint64_t)(uintptr_t)src;
    mine->stride = 0;
    uint64_t s1 = aapc_shm_publish(st);
    aapc_shm_wait_all(st, s1);
    char *own = dst + (size_t)me * rstride;
    if (own != src) {
        memcpy(own, src, n);
    }
    int ok = 1;
    for (int i = 1; ok && i < p; i++) {
        int j = (me + i) % p;
        ok = aapc_shm_cma_read(st, j, dst + (size_t)j * rstride, aapc_shm_info(st, j)->addr, n) ==
             0;
    }
    return aapc_shm_cma_agree(st, ok);
}
