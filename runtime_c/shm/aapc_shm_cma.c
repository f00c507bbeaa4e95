/*
 * aapc_shm_cma.c: cross-memory attach (CMA) for the single-copy collectives: the one-time probe
 * per communicator and a checked read from another rank's address space.
 *
 * Algorithm: Linux lets a process read another one's memory with process_vm_readv(2) when it
 * may ptrace it (same user and Yama ptrace_scope <= 1 with the usual MPI launch, root, or
 * CAP_SYS_PTRACE); containers and hardened kernels often forbid it. So on the first call that
 * would use it, every rank writes its pid and the address of a private probe word (a value
 * derived from pid and rank) into its info line of the window and publishes a step; after
 * seeing everybody's step each rank reads every other rank's probe word with process_vm_readv
 * and checks the value; one PMPI_Allreduce(MPI_LAND) over the node communicator then makes the
 * answer the same everywhere (AAPC_SHM_CMA=0 on any rank also makes it 0). The answer is cached
 * in the communicator's state. Cost, once per communicator: one flag round, p-1 system calls of
 * 8 bytes per rank and one allreduce.
 *
 * A read (aapc_shm_cma_read) loops over partial transfers and reports any failure (ESRCH, EPERM,
 * EFAULT...) as -1; the callers turn a failure anywhere into the two-copy path for that call and
 * every later one (aapc_shm_alltoall_cma.c), so a result is never wrong and nobody hangs.
 *
 * Test hooks (environment, comm rank r): AAPC_SHM_CMA_FAIL_PROBE=r makes rank r's probe fail;
 * AAPC_SHM_CMA_FAIL_READ=r makes rank r's first single-copy read on each communicator fail.
 */
#define _GNU_SOURCE
#include "aapc_shm_impl.h"

#include <stdlib.h>
#include <string.h>

#ifdef AAPC_SHM_HAVE_CMA
#include <sys/uio.h>
#include <unistd.h>

static long env_rank(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atol(v) : -1;
}

static int env_enabled(void)
{
    const char *v = getenv("AAPC_SHM_CMA");
    return !(v != NULL && strcmp(v, "0") == 0);
}

static uint64_t probe_value(int64_t pid, int rank)
{
    return 0x9e3779b97f4a7c15ULL ^ ((uint64_t)pid << 20) ^ (uint64_t)rank;
}

int aapc_shm_cma_read(aapc_shm_state *st, int peer, void *local, uint64_t remote, size_t len)
{
    if (st->cma_fail_reads > 0) {
        st->cma_fail_reads--;
        return -1;
    }
    pid_t pid = (pid_t)aapc_shm_info(st, peer)->pid;
    char *to = local;
    while (len > 0) {
        struct iovec l = {to, len};
        struct iovec r = {(void *)(uintptr_t)remote, len};
        ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0) {
            return -1;
        }
        to += got;
        remote += (uint64_t)got;
        len -= (size_t)got;
    }
    return 0;
}

int aapc_shm_cma_ready(aapc_shm_state *st)
{
    if (st->cma >= 0) {
        return st->cma;
    }
    int ok = env_enabled() && env_rank("AAPC_SHM_CMA_FAIL_PROBE") != st->rank;
    st->cma_token = probe_value(st->pid, st->rank);
    aapc_shm_cma_info *mine = aapc_shm_info(st, st->rank);
    mine->pid = st->pid;
    mine->addr = (uint64_t)(uintptr_t)&st->cma_token;
    uint64_t s = aapc_shm_publish(st);
    aapc_shm_wait_all(st, s);
    for (int i = 1; ok && i < st->size; i++) {
        int r = (st->rank + i) % st->size;
        uint64_t got = 0;
        const aapc_shm_cma_info *theirs = aapc_shm_info(st, r);
        ok = aapc_shm_cma_read(st, r, &got, theirs->addr, sizeof got) == 0 &&
             got == probe_value(theirs->pid, r);
    }
    int all = 0;
    /* the allreduce also ends every rank's reads of the info lines before anyone rewrites its own */
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, st->node) != MPI_SUCCESS) {
        all = 0;
    }
    st->cma = all;
    long fail_read = env_rank("AAPC_SHM_CMA_FAIL_READ");
    st->cma_fail_reads = all && fail_read == st->rank ? 1 : 0;
    return st->cma;
}

#else

int aapc_shm_cma_ready(aapc_shm_state *st)
{
    st->cma = 0;
    return 0;
}

int aapc_shm_cma_read(aapc_shm_state *st, int peer, void *local, uint64_t remote, size_t len)
{
    (void)st;
    (void)peer;
    (void)local;
    (void)remote;
    (void)len;
    return -1;
}

#endif

int aapc_shm_cma_agree(aapc_shm_state *st, int ok)
{
    aapc_shm_info(st, st->rank)->ok = (uint64_t)ok;
    uint64_t s2 = aapc_shm_publish(st);
    aapc_shm_wait_all(st, s2);
    for (int r = 0; r < st->size; r++) {
        ok &= aapc_shm_info(st, r)->ok == 1;
    }
    if (!ok) {
        st->cma = 0;
    }
    return ok;
}

int aapc_shm_single_copy(MPI_Comm comm, int *flag)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    *flag = st != NULL && st->usable && st->cma == 1;
    return err;
}
