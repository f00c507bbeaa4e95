/*
 * aapc_shm_bcast.c: MPI_Bcast through the shared window.
 *
 * Algorithm: the root's packed message is cut into chunks of at most one slot (size chosen in
 * aapc_shm_select.c; small messages: one chunk, i.e. "one shared slot"). For chunk c (step s):
 * the root takes the next slot of the ring (waiting until every rank has finished reading what
 * it held four chunks ago), copies the chunk in and publishes s; every other rank publishes s,
 * waits for the root's flag to reach s and copies the chunk out. The root therefore fills chunk c+1..c+3 while the others are still
 * copying chunk c out: a pipeline in which copy-in and the p-1 concurrent copy-outs overlap
 * (seed 004 section 6.3 intra-node half, and the digest's "chunked pipeline with copy-out
 * overlapped"). Derived datatypes are packed at the root and unpacked at the receivers.
 * Cost for n bytes, chunk C, copy rate 1/beta_m: alpha_f (one flag line transfer) per chunk plus
 * n*beta_m (copy-in) + C*beta_m (last copy-out) on the critical path, instead of the
 * 2 log p (alpha + n beta) of a point-to-point binomial tree; small messages: one copy in, one
 * flag, one copy out.
 */
#include "aapc_shm_impl.h"

#include <stdlib.h>
#include <string.h>

int aapc_shm_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Bcast(buf, count, datatype, root, comm);
    }
    if (root < 0 || root >= st->size) {
        return MPI_ERR_ROOT;
    }
    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    aapc_shm_type t;
    err = aapc_shm_type_info(datatype, &t);
    if (err != MPI_SUCCESS) {
        return err;
    }
    size_t n = (size_t)count * (size_t)t.size;
    if (n == 0 || st->size == 1) {
        return MPI_SUCCESS;
    }
    int is_root = st->rank == root;
    void *scratch = NULL;
    const char *src = NULL;
    char *dst = NULL;
    if (is_root) {
        src = aapc_shm_pack(buf, count, datatype, &t, &scratch, &err);
    } else {
        dst = aapc_shm_unpack_target(buf, count, &t, &scratch, &err);
    }
    if (err != MPI_SUCCESS) {
        return err;
    }
    size_t chunk = aapc_shm_bcast_chunk(st, n);
    aapc_shm_word *root_flag = aapc_shm_flag(st, root);
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        unsigned slot = aapc_shm_slot_take(st, is_root);
        char *p = aapc_shm_slot_ptr(st, slot);
        uint64_t s;
        if (is_root) {
            memcpy(p, src + off, len);
            s = aapc_shm_publish(st);
        } else {
            s = aapc_shm_publish(st);
            aapc_shm_wait_geq(st, root_flag, s);
            memcpy(dst + off, p, len);
        }
        aapc_shm_slot_done(st, slot, s);
    }
    if (is_root) {
        free(scratch);
        return MPI_SUCCESS;
    }
    return aapc_shm_unpack_finish(buf, count, datatype, scratch);
}
