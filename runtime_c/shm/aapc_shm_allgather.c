/*
 * aapc_shm_allgather.c: MPI_Allgather through the shared window.
 *
 * Algorithm (seed 004 section 6.2, intra-node part): the slot is cut into p blocks; per chunk
 * (step s) every rank copies its chunk into block `rank`, publishes s, waits until all flags
 * reach s and copies the other p-1 blocks out into its receive buffer; its own block goes
 * straight from the (packed) send data, or stays where it is for MPI_IN_PLACE with a contiguous
 * type. Chunks of floor(slot/p) bytes bound the window for any message size; the ring of 4
 * slots lets fast ranks write the next chunk while slow ones are still copying out. Cost for n bytes per rank: per chunk one flag
 * publish and p flag reads (alpha_f p) plus n beta_m in and (p-1) n beta_m out per rank (+ n beta_m local); versus the
 * (p-1)(alpha + n beta) with two copies per message of a point-to-point ring.
 * Large blocks take the single-copy path instead when the ranks can read each other's memory
 * (aapc_shm_allgather_cma.c, chosen in aapc_shm_select.c); if a read fails there, the call is
 * redone here.
 */
#include "aapc_shm_impl.h"

#include <stdlib.h>
#include <string.h>

/* The n bytes at src into block `rank` of every rank's dst (blocks rstride apart), through the
   window. */
static void allgather_window(aapc_shm_state *st, const char *src, char *dst, size_t rstride,
                             size_t n)
{
    int p = st->size;
    size_t block = aapc_shm_align_down(st->slot_bytes / (size_t)p);
    for (size_t off = 0; off < n; off += block) {
        size_t len = n - off < block ? n - off : block;
        unsigned slot = aapc_shm_slot_take(st, 1);
        char *base = aapc_shm_slot_ptr(st, slot);
        memcpy(base + (size_t)st->rank * block, src + off, len);
        uint64_t s = aapc_shm_publish(st);
        aapc_shm_wait_all(st, s);
        char *mine = dst + (size_t)st->rank * rstride + off;
        if (mine != src + off) { /* own block from the source (in place: already there) */
            memcpy(mine, src + off, len);
        }
        for (int i = 1; i < p; i++) {
            int r = (st->rank + i) % p;
            memcpy(dst + (size_t)r * rstride + off, base + (size_t)r * block, len);
        }
        aapc_shm_slot_done(st, slot, s);
    }
}

int aapc_shm_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0)) {
        return MPI_ERR_COUNT;
    }
    aapc_shm_type rt, stt;
    err = aapc_shm_type_info(recvtype, &rt);
    if (err != MPI_SUCCESS) {
        return err;
    }
    int p = st->size;
    if (sendbuf == MPI_IN_PLACE) {
        sendbuf = (const char *)recvbuf + (MPI_Aint)st->rank * recvcount * rt.extent;
        sendcount = recvcount;
        sendtype = recvtype;
        stt = rt;
    } else if ((err = aapc_shm_type_info(sendtype, &stt)) != MPI_SUCCESS) {
        return err;
    }
    size_t n = (size_t)recvcount * (size_t)rt.size;
    if (n == 0) {
        return MPI_SUCCESS;
    }
    void *sscratch = NULL, *rscratch = NULL;
    const char *src = aapc_shm_pack(sendbuf, sendcount, sendtype, &stt, &sscratch, &err);
    if (err != MPI_SUCCESS) {
        return err;
    }
    /* receive stream of block r: contiguous type, straight into recvbuf; else one scratch of
       p*n bytes unpacked at the end as p*recvcount elements */
    char *dst = aapc_shm_unpack_target(recvbuf, p * recvcount, &rt, &rscratch, &err);
    if (err != MPI_SUCCESS) {
        free(sscratch);
        return err;
    }
    size_t rstride = rt.contig ? (size_t)recvcount * (size_t)rt.extent : n;
    if (!aapc_shm_allgather_use_cma(st, n) || !aapc_shm_allgather_cma(st, src, dst, rstride, n)) {
        allgather_window(st, src, dst, rstride, n);
    }
    free(sscratch);
    return aapc_shm_unpack_finish(recvbuf, p * recvcount, recvtype, rscratch);
}
