/*
 * aapc_shm_allgather_cma.c: MPI_Allgather with a single copy per byte, each rank reading the
 * other ranks' blocks straight out of their send buffers (Linux cross-memory attach).
 *
 * Algorithm: the single-copy Alltoall exchange (aapc_shm_alltoall_cma.c) with a block stride of
 * 0 in the send data: every rank publishes (pid, address of its packed send block), then reads
 * "its" block of every peer, which is the peer's one block, with one process_vm_readv per peer,
 * staggered so the p readers of one block start at different ranks; a second flag step keeps
 * every send buffer alive until all have read it, and any failed read makes every rank return 0
 * (the caller redoes the call through the window and stops using this path). MPI_IN_PLACE is
 * fine: a rank's own block, which the others read, is never written during the call. Cost for
 * n bytes per rank: 2 flag rounds + (p-1) system calls + (p-1) n beta_m per rank (one copy);
 * versus n beta_m in + (p-1) n beta_m out and one flag round per chunk of slot/p bytes through
 * the window.
 */
#include "aapc_shm_impl.h"

int aapc_shm_allgather_cma(aapc_shm_state *st, const char *src, char *dst, size_t rstride,
                           size_t n)
{
    return aapc_shm_alltoall_cma(st, src, 0, dst, rstride, n);
}
