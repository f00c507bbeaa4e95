/*
 * aapc_shm_reduce_short.c: short Reduce/Allreduce: gather into the window, then reducers.
 *
 * Algorithm (seed 004 section 9.2.2, "short: gather + single reducer"): the slot is cut into p
 * blocks; per chunk (step s) every rank copies its contribution into block `rank`, keeping the
 * user layout (the bytes spanned by the elements, holes included, so MPI_Reduce_local can apply
 * the same datatype to the window copy), and publishes s. For Reduce the root alone waits for
 * all flags and reduces; for Allreduce every rank does, which costs (p-1) local reductions per
 * rank but only one synchronisation (no second "result ready" step): for short vectors the flag
 * round trip, not the arithmetic, dominates. The reducer copies block p-1 into its receive
 * buffer (only the typed bytes) and folds blocks p-2, ..., 0 into it with MPI_Reduce_local, so
 * the result is x0 op (x1 op (... op x(p-1))): the rank order MPI requires for non-commutative
 * operations. Cost per chunk of n bytes: alpha_f p + n beta_m (copy in) + n beta_m (copy out)
 * + (p-1) n gamma.
 */
#include "aapc_shm_impl.h"

#include <string.h>

int aapc_shm_reduce_short(aapc_shm_state *st, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype dt, const aapc_shm_type *t, MPI_Op op, int root)
{
    int p = st->size;
    MPI_Aint per = aapc_shm_elems_per_block(st, t, p);
    size_t block = aapc_shm_align_down(st->slot_bytes / (size_t)p);
    int reducer = root < 0 || st->rank == root;
    for (MPI_Aint e0 = 0; e0 < count; e0 += per) {
        int k = (int)(count - e0 < per ? count - e0 : per);
        unsigned slot = aapc_shm_slot_take(st, 1);
        char *base = aapc_shm_slot_ptr(st, slot);
        memcpy(base + (size_t)st->rank * block,
               (const char *)sendbuf + t->true_lb + e0 * t->extent,
               (size_t)aapc_shm_span(t, k));
        uint64_t s = aapc_shm_publish(st);
        if (reducer) {
            aapc_shm_wait_all(st, s);
            char *out = (char *)recvbuf + e0 * t->extent;
            int rc = aapc_shm_typed_copy(out, base + (size_t)(p - 1) * block - t->true_lb, k, dt,
                                         t);
            for (int i = p - 2; i >= 0 && rc == MPI_SUCCESS; i--) {
                rc = PMPI_Reduce_local(base + (size_t)i * block - t->true_lb, out, k, dt, op);
            }
            if (rc != MPI_SUCCESS) {
                return rc;
            }
        }
        aapc_shm_slot_done(st, slot, s);
    }
    return MPI_SUCCESS;
}
