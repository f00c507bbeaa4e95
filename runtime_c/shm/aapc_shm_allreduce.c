/*
 * aapc_shm_allreduce.c: MPI_Allreduce in shared memory (argument handling; the algorithms are in
 * aapc_shm_reduce_short.c and aapc_shm_reduce_parallel.c, chosen in aapc_shm_select.c).
 *
 * Algorithm: MPI_IN_PLACE means every contribution is in recvbuf; a vector of n bytes takes the
 * short path (window gather, every rank reduces all blocks: one synchronisation) when
 * aapc_shm_reduce_is_short(n), else shmem-cyclic (commutative op) or shmem-parallel (any op),
 * where each rank reduces 1/p of the vector and everybody copies the result out. A datatype whose
 * single element does not fit a window block goes to PMPI_Allreduce. Cost: that of the chosen
 * algorithm.
 */
#include "aapc_shm_impl.h"

int aapc_shm_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    aapc_shm_type t;
    err = aapc_shm_type_info(datatype, &t);
    if (err != MPI_SUCCESS || count == 0) {
        return err;
    }
    if (aapc_shm_elems_per_block(st, &t, st->size) == 0) {
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
    if (sendbuf == MPI_IN_PLACE) {
        sendbuf = recvbuf;
    }
    if (aapc_shm_reduce_is_short(st, (MPI_Aint)count * t.size)) {
        return aapc_shm_reduce_short(st, sendbuf, recvbuf, count, datatype, &t, op, -1);
    }
    return aapc_shm_reduce_parallel(st, sendbuf, recvbuf, count, datatype, &t, op, -1);
}
