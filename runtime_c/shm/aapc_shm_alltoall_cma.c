/*
 * aapc_shm_alltoall_cma.c: MPI_Alltoall with a single copy per byte, each rank reading its
 * blocks straight out of the other ranks' send buffers (Linux cross-memory attach).
 *
 * Algorithm: every rank writes (pid, address of its packed send data, block stride) into its
 * info line of the window and publishes step s1; after seeing s1 from everybody, rank i copies
 * its own block locally and, for j = i-1, i-2, ... (staggered like the window path), reads
 * block i of rank j's send data into block j of its receive buffer with one process_vm_readv
 * per peer. It then records whether all its reads succeeded in its info line and publishes s2;
 * waiting for every rank's s2 is the barrier that keeps each send buffer alive until everybody
 * has read it. If any rank's read failed (every rank sees the same p ok words), all return 0
 * and the caller redoes the call through the window and stops using this path on the
 * communicator. MPI_IN_PLACE is never sent here (the receive buffer being read would be
 * overwritten); non-contiguous types arrive packed (the peers read the private packed copy).
 * With sstride 0 (every peer's "block i" is its one block) this is the single-copy Allgather
 * (aapc_shm_allgather_cma.c).
 * Cost for n bytes per block: 2 flag rounds (2 alpha_f p) + (p-1) system calls (alpha_s, about
 * 1-2 us each, plus page pinning) + (p-1) n beta_m per rank, one copy, all ranks concurrently;
 * versus 2 (p-1) n beta_m and one flag round per chunk of slot/p^2 bytes through the window.
 * Pays from a few tens of KB per block (aapc_shm_select.c).
 */
#include "aapc_shm_impl.h"

#include <string.h>

int aapc_shm_alltoall_cma(aapc_shm_state *st, const char *src, size_t sstride, char *dst,
                          size_t rstride, size_t n)
{
    int p = st->size, me = st->rank;
    aapc_shm_cma_info *mine = aapc_shm_info(st, me);
    mine->pid = st->pid;
    mine->addr = (uint64_t)(uintptr_t)src;
    mine->stride = sstride;
    uint64_t s1 = aapc_shm_publish(st);
    aapc_shm_wait_all(st, s1);
    char *own = dst + (size_t)me * rstride;
    if (own != src + (size_t)me * sstride) { /* Allgather in place: already there */
        memcpy(own, src + (size_t)me * sstride, n);
    }
    int ok = 1;
    for (int i = 1; ok && i < p; i++) {
        int j = (me - i + p) % p;
        const aapc_shm_cma_info *theirs = aapc_shm_info(st, j);
        uint64_t from = theirs->addr + (uint64_t)me * theirs->stride;
        ok = aapc_shm_cma_read(st, j, dst + (size_t)j * rstride, from, n) == 0;
    }
    return aapc_shm_cma_agree(st, ok);
}
