/*
 * aapc_shm_alltoall.c: MPI_Alltoall directly through the shared window.
 *
 * Algorithm (the "direct" all-to-all of seed 004 section 2.1.3 / 6.1 with the window as the
 * receive buffer): the slot is cut into p*p blocks; block (i, j) carries the chunk rank i sends
 * to rank j. Per chunk (step s) rank i copies its p outgoing chunks into row i, starting with
 * j = i+1 (the (r+i)%p order that staggers hot spots), publishes s, waits until all flags reach
 * s, and copies column i out, again in staggered order; its own block goes straight from the
 * send to the receive buffer (not at all when MPI_IN_PLACE leaves it where it is). MPI_IN_PLACE is safe chunk by chunk: a
 * chunk is written to the window before the same bytes of the receive buffer are overwritten.
 * Cost for n bytes per block: per chunk of floor(slot/p^2) bytes one publish and p flag reads,
 * plus (p-1) n beta_m in, (p-1) n beta_m out and n beta_m local per rank, all ranks copying concurrently; versus
 * (p-1)(alpha + n beta) with two copies per message through point-to-point.
 * Large blocks take the single-copy path instead when the ranks can read each other's memory
 * (aapc_shm_alltoall_cma.c, chosen in aapc_shm_select.c); if a read fails there, the call is
 * redone here.
 */
#include "aapc_shm_impl.h"

#include <stdlib.h>
#include <string.h>

/* The p blocks of n bytes at src (sstride apart) through the window to dst (rstride apart). */
static void alltoall_window(aapc_shm_state *st, const char *src, size_t sstride, char *dst,
                            size_t rstride, size_t n)
{
    int p = st->size;
    size_t block = aapc_shm_align_down(st->slot_bytes / ((size_t)p * (size_t)p));
    if (block == 0) {
        block = st->slot_bytes / ((size_t)p * (size_t)p);
    }
    size_t row = block * (size_t)p;
    int me = st->rank;
    for (size_t off = 0; off < n; off += block) {
        size_t len = n - off < block ? n - off : block;
        unsigned slot = aapc_shm_slot_take(st, 1);
        char *base = aapc_shm_slot_ptr(st, slot);
        for (int i = 1; i < p; i++) { /* own block: copied directly below */
            int j = (me + i) % p;
            memcpy(base + (size_t)me * row + (size_t)j * block, src + (size_t)j * sstride + off,
                   len);
        }
        uint64_t s = aapc_shm_publish(st);
        aapc_shm_wait_all(st, s);
        if (dst + (size_t)me * rstride != src + (size_t)me * sstride) {
            memcpy(dst + (size_t)me * rstride + off, src + (size_t)me * sstride + off, len);
        }
        for (int i = 1; i < p; i++) {
            int j = (me - i + p) % p;
            memcpy(dst + (size_t)j * rstride + off, base + (size_t)j * row + (size_t)me * block,
                   len);
        }
        aapc_shm_slot_done(st, slot, s);
    }
}

int aapc_shm_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    if (st == NULL) {
        return err;
    }
    if (!st->usable) {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
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
    int in_place = sendbuf == MPI_IN_PLACE;
    if (in_place) {
        sendbuf = recvbuf;
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
    const char *src = aapc_shm_pack(sendbuf, p * sendcount, sendtype, &stt, &sscratch, &err);
    if (err != MPI_SUCCESS) {
        return err;
    }
    char *dst = aapc_shm_unpack_target(recvbuf, p * recvcount, &rt, &rscratch, &err);
    if (err != MPI_SUCCESS) {
        free(sscratch);
        return err;
    }
    /* contiguous: block j starts count*extent bytes after block j-1 (== n); packed: n */
    size_t sstride = stt.contig ? (size_t)sendcount * (size_t)stt.extent : n;
    size_t rstride = rt.contig ? (size_t)recvcount * (size_t)rt.extent : n;
    if (!aapc_shm_alltoall_use_cma(st, n, in_place) ||
        !aapc_shm_alltoall_cma(st, src, sstride, dst, rstride, n)) {
        alltoall_window(st, src, sstride, dst, rstride, n);
    }
    free(sscratch);
    return aapc_shm_unpack_finish(recvbuf, p * recvcount, recvtype, rscratch);
}
