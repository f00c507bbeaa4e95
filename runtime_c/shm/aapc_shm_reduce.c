/*
 * aapc_shm_reduce.c: MPI_Reduce in shared memory (argument handling; the algorithms are in
 * aapc_shm_reduce_short.c and aapc_shm_reduce_parallel.c, chosen in aapc_shm_select.c).
 *
 * Algorithm: MPI_IN_PLACE at the root means the root's contribution is in recvbuf; a vector of
 * n bytes takes the short path (window gather, the root reduces) when
 * aapc_shm_reduce_is_short(n), else shmem-cyclic/parallel (all ranks reduce a sub-range, the
 * root copies out). A datatype whose single element does not fit a window block goes to
 * PMPI_Reduce. Cost: that of the chosen algorithm.
 */
#include "aapc_shm_impl.h"

int aapc_shm_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
    if (root < 0 || root >= st->size) {
        return MPI_ERR_ROOT;
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
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
    if (sendbuf == MPI_IN_PLACE) {
        sendbuf = recvbuf; /* only legal at the root */
    }
    if (aapc_shm_reduce_is_short(st, (MPI_Aint)count * t.size)) {
        return aapc_shm_reduce_short(st, sendbuf, recvbuf, count, datatype, &t, op, root);
    }
    return aapc_shm_reduce_parallel(st, sendbuf, recvbuf, count, datatype, &t, op, root);
}
