/*
 * aapc_shm_reduce_parallel.c: long Reduce/Allreduce: shmem-parallel and shmem-cyclic.
 *
 * Algorithm (seed 004 section 9.2.2): the slot is cut into p blocks, one per rank; a chunk of
 * the vector (as many elements as fit a block, user layout kept so MPI_Reduce_local can use the
 * datatype) is split into p sub-ranges. Per chunk c (step s): every rank copies its chunk into
 * its block, publishes s, waits for all flags to reach s, copies out the result of chunk c-1
 * (all ranks for Allreduce, the root for Reduce), then reduces its own sub-range of chunk c
 * across the p blocks in place. One extra step drains the last chunk. So all cores compute (an
 * in-place reduce-scatter) and the copy-out of one chunk shares a synchronisation with the
 * copy-in of the next: one flag round per chunk, not two.
 *   - commutative op (MPI_Op_commutative): shmem-cyclic, rank j folds blocks j+1, j+2, ... into
 *     its own block j, which is still in its cache, and the p ranks start on p different blocks
 *     (no hot block);
 *   - otherwise: shmem-parallel in rank order, folding blocks p-2, ..., 0 into block p-1, so the
 *     result is x0 op (x1 op (... op x(p-1))).
 * Cost for n bytes per rank, chunk C: (n/C + 1) alpha_f p + n beta_m (in) + n beta_m (out)
 * + (p-1) (n/p) gamma per rank: the arithmetic is divided by p, against (p-1) n gamma for one
 * reducer (and log p (alpha + n beta + n gamma) for a binomial tree).
 */
#include "aapc_shm_impl.h"

#include <string.h>

typedef struct {
    char *base;
    MPI_Aint e0;
    int k;
} chunk_t;

static int sub_lo(int k, int p, int j)
{
    return (int)((long long)k * j / p);
}

static int copy_out(aapc_shm_state *st, const chunk_t *c, void *recvbuf, MPI_Datatype dt,
                    const aapc_shm_type *t, int commutative, size_t block)
{
    int p = st->size;
    char *out = (char *)recvbuf + c->e0 * t->extent;
    if (!commutative) { /* every sub-range ended in block p-1 */
        return aapc_shm_typed_copy(out, c->base + (size_t)(p - 1) * block - t->true_lb, c->k, dt,
                                   t);
    }
    for (int j = 0; j < p; j++) {
        int a = sub_lo(c->k, p, j), m = sub_lo(c->k, p, j + 1) - a;
        if (m > 0) {
            int rc = aapc_shm_typed_copy(out + a * t->extent,
                                         c->base + (size_t)j * block - t->true_lb + a * t->extent,
                                         m, dt, t);
            if (rc != MPI_SUCCESS) {
                return rc;
            }
        }
    }
    return MPI_SUCCESS;
}

static int reduce_mine(aapc_shm_state *st, const chunk_t *c, MPI_Datatype dt,
                       const aapc_shm_type *t, MPI_Op op, int commutative, size_t block)
{
    int p = st->size, j = st->rank;
    int a = sub_lo(c->k, p, j), m = sub_lo(c->k, p, j + 1) - a;
    if (m <= 0) {
        return MPI_SUCCESS;
    }
    char *first = c->base - t->true_lb + a * t->extent; /* element a of block 0 */
    int rc = MPI_SUCCESS;
    if (commutative) {
        for (int d = 1; d < p && rc == MPI_SUCCESS; d++) {
            int i = (j + d) % p;
            rc = PMPI_Reduce_local(first + (size_t)i * block, first + (size_t)j * block, m, dt, op);
        }
    } else {
        for (int i = p - 2; i >= 0 && rc == MPI_SUCCESS; i--) {
            rc = PMPI_Reduce_local(first + (size_t)i * block, first + (size_t)(p - 1) * block, m,
                                   dt, op);
        }
    }
    return rc;
}

int aapc_shm_reduce_parallel(aapc_shm_state *st, const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype dt, const aapc_shm_type *t, MPI_Op op, int root)
{
    int p = st->size, commutative = 0;
    int rc = PMPI_Op_commutative(op, &commutative);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Aint per = aapc_shm_elems_per_block(st, t, p);
    size_t block = aapc_shm_align_down(st->slot_bytes / (size_t)p);
    int receiver = root < 0 || st->rank == root;
    MPI_Aint nchunks = (count + per - 1) / per;
    chunk_t prev = {NULL, 0, 0}, cur = {NULL, 0, 0};
    unsigned prev_slot = 0;
    for (MPI_Aint c = 0; c <= nchunks; c++) {
        unsigned slot = 0;
        if (c < nchunks) {
            cur.e0 = c * per;
            cur.k = (int)(count - cur.e0 < per ? count - cur.e0 : per);
            slot = aapc_shm_slot_take(st, 1);
            cur.base = aapc_shm_slot_ptr(st, slot);
            memcpy(cur.base + (size_t)st->rank * block,
                   (const char *)sendbuf + t->true_lb + cur.e0 * t->extent,
                   (size_t)aapc_shm_span(t, cur.k));
        }
        uint64_t s = aapc_shm_publish(st);
        if (c < nchunks || receiver) {
            aapc_shm_wait_all(st, s);
        }
        if (c > 0) {
            if (receiver && rc == MPI_SUCCESS) {
                rc = copy_out(st, &prev, recvbuf, dt, t, commutative, block);
            }
            aapc_shm_slot_done(st, prev_slot, s);
        }
        if (c < nchunks) {
            if (rc == MPI_SUCCESS) {
                rc = reduce_mine(st, &cur, dt, t, op, commutative, block);
            }
            prev = cur;
            prev_slot = slot;
        }
    }
    return rc;
}
