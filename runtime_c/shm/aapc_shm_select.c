/*
 * aapc_shm_select.c: selection logic of the shared-memory collectives, kept apart from the
 * algorithms: the size thresholds between algorithms, and (with -DAAPC_INTERCEPT_SHM) the drop-in
 * MPI_Barrier, MPI_Bcast, MPI_Allgather, MPI_Reduce, MPI_Allreduce and MPI_Alltoall, which use
 * the shared-memory versions when the communicator lies on one node and PMPI_* otherwise.
 *
 * Thresholds (environment overrides, read once):
 *   AAPC_SHM_REDUCE_SHORT  bytes per rank up to which Reduce/Allreduce gather and reduce whole
 *                          (aapc_shm_reduce_short.c); above, shmem-cyclic/parallel. Default
 *                          16384 (tuning/bench_shm.py).
 *   AAPC_SHM_BCAST_CHUNK_KB  pipeline chunk of Bcast (default 128, at most one slot).
 *   AAPC_SHM_CMA           0: never use the single-copy (process_vm_readv) paths.
 *   AAPC_SHM_CMA_ALLTOALL_MIN  bytes per block (recvcount * type size) from which Alltoall
 *                          reads the peers' send buffers directly (aapc_shm_alltoall_cma.c)
 *                          instead of going through the window; default 16384 (2 ranks,
 *                          shm_bench: window 2.17 / single copy 2.26 us at 8 KB blocks, 3.26 /
 *                          2.83 us at 16 KB, 5.07 / 3.75 us at 32 KB).
 *   AAPC_SHM_CMA_ALLGATHER_MIN  the same for Allgather (bytes per rank); default 16384 (window
 *                          2.26 / single copy 2.08 us at 8 KB, 3.38 / 2.31 us at 16 KB).
 *   AAPC_SHM_ALLTOALL_MAX  bytes per rank from which the intercepted MPI_Alltoall calls
 *                          PMPI_Alltoall when every rank has its own core and the single-copy
 *                          path is unavailable (default 131072; 0: never).
 * Every choice depends only on arguments MPI requires to agree across ranks (byte counts,
 * datatype of reductions, MPI_IN_PLACE for Alltoall, communicator) and on the single-copy probe,
 * which is itself one agreement (aapc_shm_cma.c), so all ranks take the same path (thresholds
 * set by environment must be the same on every rank).
 */
#include "aapc_shm_impl.h"

#include <stdlib.h>

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v != NULL && atol(v) > 0 ? atol(v) : dflt;
}

int aapc_shm_reduce_is_short(const aapc_shm_state *st, MPI_Aint bytes)
{
    static long limit = -1;
    (void)st;
    if (limit < 0) {
        limit = env_long("AAPC_SHM_REDUCE_SHORT", 16384);
    }
    return bytes <= limit;
}

size_t aapc_shm_bcast_chunk(const aapc_shm_state *st, size_t n)
{
    static long kb = -1;
    (void)n;
    if (kb < 0) {
        kb = env_long("AAPC_SHM_BCAST_CHUNK_KB", 128);
    }
    size_t chunk = (size_t)kb * 1024;
    return chunk < st->slot_bytes ? chunk : st->slot_bytes;
}

MPI_Aint aapc_shm_elems_per_block(const aapc_shm_state *st, const aapc_shm_type *t, int blocks)
{
    MPI_Aint block = (MPI_Aint)aapc_shm_align_down(st->slot_bytes / (size_t)blocks);
    if (t->extent <= 0 || t->true_extent > block || t->true_extent <= 0) {
        return 0;
    }
    MPI_Aint per = 1 + (block - t->true_extent) / t->extent;
    return per > 0x3fffffff ? 0x3fffffff : per;
}

/* Single copy from *min bytes per block (read once from the environment variable `name`). */
static int use_cma(aapc_shm_state *st, size_t n, long *min, const char *name)
{
    if (*min < 0) {
        *min = env_long(name, 16384);
    }
    return st->size > 1 && (long long)n >= *min && aapc_shm_cma_ready(st);
}

int aapc_shm_alltoall_use_cma(aapc_shm_state *st, size_t n, int in_place)
{
    static long min = -1;
    return !in_place && use_cma(st, n, &min, "AAPC_SHM_CMA_ALLTOALL_MIN");
}

int aapc_shm_allgather_use_cma(aapc_shm_state *st, size_t n)
{
    static long min = -1;
    return use_cma(st, n, &min, "AAPC_SHM_CMA_ALLGATHER_MIN");
}

/* The drop-in of a build without a topology. The generated library (-DAAPC_INTERCEPT) defines
   these entry points itself and serves a communicator on one machine with the same functions
   (runtime_c/coll/aapc_coll_select.c), so there the option adds nothing. */
#if defined(AAPC_INTERCEPT_SHM) && !defined(AAPC_INTERCEPT)

/* An error the shared-memory path finds itself (an invalid root or count, its own memory
   short) goes through the communicator's error handler, as the MPI library's own collective
   raises it: fatal by default, returned under MPI_ERRORS_RETURN. Errors of the MPI calls it
   makes were raised by those calls. */
static int raised(MPI_Comm comm, int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS && PMPI_Error_class(rc, &cls) == MPI_SUCCESS &&
        (cls == MPI_ERR_ROOT || cls == MPI_ERR_COUNT || cls == MPI_ERR_NO_MEM))
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

static int on_one_node(MPI_Comm comm)
{
    int flag = 0;
    return aapc_shm_usable(comm, &flag) == MPI_SUCCESS && flag;
}

/* Large Alltoall with a core per rank and no single-copy path: the library's single-copy
   transfer beats the two copies through the window (tuning/bench_shm.py, docs/multicore.md), so
   leave it to the library. */
static int alltoall_to_library(MPI_Comm comm, const void *sendbuf, int recvcount,
                               MPI_Datatype recvtype)
{
    static long limit = -1;
    if (limit < 0) {
        const char *v = getenv("AAPC_SHM_ALLTOALL_MAX");
        limit = v != NULL && atol(v) >= 0 ? atol(v) : 131072;
    }
    int err, size = 0;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL || limit == 0 || st->oversubscribed) {
        return 0;
    }
    PMPI_Type_size(recvtype, &size);
    size_t n = (size_t)recvcount * (size_t)(size > 0 ? size : 0);
    if ((long long)n * st->size < limit) {
        return 0;
    }
    return !aapc_shm_alltoall_use_cma(st, n, sendbuf == MPI_IN_PLACE);
}

int MPI_Barrier(MPI_Comm comm)
{
    return on_one_node(comm) ? raised(comm, aapc_shm_barrier(comm)) : PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (on_one_node(comm)) {
        return raised(comm, aapc_shm_bcast(buf, count, datatype, root, comm));
    }
    return PMPI_Bcast(buf, count, datatype, root, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (on_one_node(comm)) {
        return raised(comm, aapc_shm_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                               recvcount, recvtype, comm));
    }
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    if (on_one_node(comm)) {
        return raised(comm, aapc_shm_reduce(sendbuf, recvbuf, count, datatype, op, root, comm));
    }
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    if (on_one_node(comm)) {
        return raised(comm, aapc_shm_allreduce(sendbuf, recvbuf, count, datatype, op, comm));
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (on_one_node(comm) && !alltoall_to_library(comm, sendbuf, recvcount, recvtype)) {
        return raised(comm, aapc_shm_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm));
    }
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

#endif
