/*
 * aapc_shm_impl.h: the per-communicator state and the helpers shared by the shared-memory
 * collectives (private to runtime_c/shm/).
 *
 * Window layout (one allocation by node rank 0, mapped by every rank at its own address, so the
 * state keeps offsets, never pointers into it):
 *   [barrier tree counters, one 128-byte line each][barrier release epoch][flag of rank 0] ...
 *   [flag of rank p-1][single-copy info of rank 0] ... [info of rank p-1]
 *   [slot 0] ... [slot AAPC_SHM_NSLOTS-1]
 * Flags and counters are lock-free _Atomic uint64_t, each alone on a 128-byte line (two cache
 * lines: the adjacent-line prefetcher of x86 would otherwise couple neighbours). Every word a
 * rank may wait on (flags, release epoch) starts its line; AAPC_SHM_WAITERS_OFF bytes further on
 * the same line counts the ranks blocked on it in the kernel (futex, aapc_shm_wait.c), so the
 * writer only makes the wake-up system call when somebody sleeps.
 *
 * Steps and slots. Every collective is a sequence of steps that all ranks of the communicator
 * execute in the same order (the number of steps depends only on arguments that MPI requires to
 * agree). A step is: write my contribution into the current slot, publish the step number in my
 * flag (release store), wait for the flags I need (acquire loads), read. Publishing step s thus
 * also says "I have finished every read of steps < s". Step numbers grow for ever (64 bits), so
 * flags are never reset. Slots are used round robin; a slot last read at step r may be written
 * again once every flag is >= r + 1 (free_after). With 4 slots a writer never waits for a step
 * it has not itself published, so there is no cycle.
 */
#ifndef AAPC_SHM_IMPL_H
#define AAPC_SHM_IMPL_H

#include "aapc_shm.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum {
    AAPC_SHM_LINE = 128,       /* bytes per flag / counter line */
    AAPC_SHM_NSLOTS = 4,       /* slots in the ring */
    AAPC_SHM_BAR_DEGREE = 8,   /* fan-in of the barrier combining tree */
    AAPC_SHM_MAX_BAR_NODES = 4096,
    AAPC_SHM_WAITERS_OFF = 64  /* waiter count of a waited word, on the second half of its line */
};

/* Linux: futex waiting (aapc_shm_wait.c) and single-copy transfers with process_vm_readv
   (aapc_shm_cma.c, aapc_shm_alltoall_cma.c, aapc_shm_allgather_cma.c). */
#if defined(__linux__)
#define AAPC_SHM_HAVE_FUTEX 1
#define AAPC_SHM_HAVE_CMA 1
#endif

typedef _Atomic uint64_t aapc_shm_word;

/* What a rank publishes for a single-copy (CMA) transfer, on its own line of the window. Written
   before the rank publishes a step, read by the others after they saw that step. */
typedef struct {
    int64_t pid;              /* process to read from */
    uint64_t addr;            /* address of the data in that process */
    uint64_t stride;          /* bytes from one block to the next (Alltoall) */
    uint64_t ok;              /* 1: every read of this rank succeeded (completion step) */
} aapc_shm_cma_info;

typedef struct aapc_shm_state {
    int usable;               /* 0: the communicator spans nodes (or is an intercommunicator) */
    int rank, size;
    int oversubscribed;       /* more ranks than online CPUs */
    int futex;                /* block in the kernel (futex) after spinning, else sleep-poll */
    int cma;                  /* single copy: -1 not probed yet, 0 unavailable, 1 usable */
    int cma_fail_reads;       /* test hook: reads still to fail on purpose */
    int64_t pid;
    uint64_t cma_token;       /* probe word the other ranks read with process_vm_readv */
    MPI_Comm node;            /* ranks in the same order as the user communicator */
    MPI_Win win;
    char *base;               /* this rank's mapping of the window */
    MPI_Win chan_win;         /* the channels' window (aapc_shm_channel.c), MPI_WIN_NULL until
                                 aapc_shm_channels_open */
    char *chan_base;
    int chan_on;              /* every rank of the machine wants the channels (agreed when the
                                 window opened: AAPC_SHM_CHANNELS, the oversubscription) */
    size_t slot_bytes;
    size_t off_bar, off_release, off_flags, off_info, off_slots;
    /* barrier combining tree: node i has bar_fanin[i] children, parent bar_parent[i] (-1: root) */
    int bar_nodes;
    int *bar_parent, *bar_fanin;
    uint64_t bar_epoch;
    /* steps and slots */
    uint64_t step;            /* last step this rank published */
    uint64_t seen_all;        /* every flag was observed >= seen_all */
    uint64_t free_after[AAPC_SHM_NSLOTS];
    unsigned next_slot;
} aapc_shm_state;

/* aapc_shm_comm.c */
/* The cached state of comm, created collectively on first use; NULL only on allocation failure
   (*err then holds the MPI error). st->usable says whether the shared path may be used. */
aapc_shm_state *aapc_shm_state_get(MPI_Comm comm, int *err);

static inline aapc_shm_word *aapc_shm_flag(const aapc_shm_state *st, int r)
{
    return (aapc_shm_word *)(void *)(st->base + st->off_flags + (size_t)r * AAPC_SHM_LINE);
}

static inline aapc_shm_cma_info *aapc_shm_info(const aapc_shm_state *st, int r)
{
    return (aapc_shm_cma_info *)(void *)(st->base + st->off_info + (size_t)r * AAPC_SHM_LINE);
}

/* aapc_shm_channel.c: free the channels' window (collective, with the state). */
void aapc_shm_channels_free(aapc_shm_state *st);

/* aapc_shm_wait.c */
/* Wait until *w >= v: spin, then sched_yield, then block on a futex (Linux) or sleep with
   backoff, poking MPI progress. */
void aapc_shm_wait_geq(aapc_shm_state *st, aapc_shm_word *w, uint64_t v);
/* Wait until every rank's flag is >= v. */
void aapc_shm_wait_all(aapc_shm_state *st, uint64_t v);
/* Store v into the waited word w (sequentially consistent) and wake the ranks blocked on it,
   if any. */
void aapc_shm_store_wake(aapc_shm_word *w, uint64_t v);
/* 1 when futex waiting is compiled in and not disabled by AAPC_SHM_FUTEX=0. */
int aapc_shm_futex_default(void);
/* Publish the next step (store of my flag, waking sleepers); returns its number. */
uint64_t aapc_shm_publish(aapc_shm_state *st);
/* Take the next slot of the ring; a writer first waits until it is free. Returns the slot
   index; aapc_shm_slot_ptr gives its address. */
unsigned aapc_shm_slot_take(aapc_shm_state *st, int writer);
/* The slot was last read at step last_read. */
void aapc_shm_slot_done(aapc_shm_state *st, unsigned slot, uint64_t last_read);

static inline char *aapc_shm_slot_ptr(const aapc_shm_state *st, unsigned slot)
{
    return st->base + st->off_slots + (size_t)slot * st->slot_bytes;
}

/* aapc_shm_dtype.c: datatypes */
typedef struct {
    MPI_Aint lb, extent, true_lb, true_extent;
    int size;                 /* bytes of data in one element */
    int contig;               /* count elements are size*count bytes at buf + true_lb, in order */
} aapc_shm_type;

int aapc_shm_type_info(MPI_Datatype dt, aapc_shm_type *t);
/* Bytes spanned by count elements: (count-1)*extent + true_extent (0 if count is 0). */
MPI_Aint aapc_shm_span(const aapc_shm_type *t, MPI_Aint count);
/* The packed bytes of (buf, count, dt): buf itself when contiguous, else MPI_Pack into *scratch
   (malloc'ed, the caller frees it). NULL with *err set on failure. */
const char *aapc_shm_pack(const void *buf, int count, MPI_Datatype dt, const aapc_shm_type *t,
                          void **scratch, int *err);
/* Where to receive the packed bytes of (buf, count, dt): buf + true_lb when contiguous, else a
   new malloc'ed *scratch to pass to aapc_shm_unpack_finish. */
char *aapc_shm_unpack_target(void *buf, int count, const aapc_shm_type *t, void **scratch,
                             int *err);
int aapc_shm_unpack_finish(void *buf, int count, MPI_Datatype dt, void *scratch);
/* Copy count typed elements from src to dst (both buffers as MPI sees them: data at + true_lb),
   touching only the bytes the type map names. */
int aapc_shm_typed_copy(void *dst, const void *src, int count, MPI_Datatype dt,
                        const aapc_shm_type *t);

/* aapc_shm_reduce_short.c and aapc_shm_reduce_parallel.c: root < 0 means every rank receives
   (Allreduce). sendbuf is never MPI_IN_PLACE here (the entry points substitute recvbuf). */
int aapc_shm_reduce_short(aapc_shm_state *st, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype dt, const aapc_shm_type *t, MPI_Op op, int root);
int aapc_shm_reduce_parallel(aapc_shm_state *st, const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype dt, const aapc_shm_type *t, MPI_Op op, int root);

/* aapc_shm_cma.c: single-copy transfers (Linux). */
/* 1 when the ranks of st can read each other's memory with process_vm_readv. Collective on the
   first call for a communicator (every rank probes every other, then one agreement: any failure,
   or AAPC_SHM_CMA=0 on any rank, makes it 0 everywhere); later calls return the cached answer. */
int aapc_shm_cma_ready(aapc_shm_state *st);
/* Read len bytes at address remote of rank peer (its published pid) into local; 0 on success,
   -1 on any failure (nothing is trusted then). */
int aapc_shm_cma_read(aapc_shm_state *st, int peer, void *local, uint64_t remote, size_t len);
/* The end of a single-copy call: publish this rank's ok, wait for every rank's (that step is
   also the barrier keeping every source buffer alive until all reads are done), and return 1
   when all succeeded; else 0 on every rank, and the path is off on this communicator. */
int aapc_shm_cma_agree(aapc_shm_state *st, int ok);
/* The Alltoall / Allgather over packed streams: src holds p blocks of n bytes sstride apart
   (Allgather: one block), dst receives p blocks rstride apart. Return 1 when done, 0 when some
   rank's read failed: every rank then returns 0 (one agreement through the window) and the
   caller redoes the call through the window (the send data is intact). */
int aapc_shm_alltoall_cma(aapc_shm_state *st, const char *src, size_t sstride, char *dst,
                          size_t rstride, size_t n);
int aapc_shm_allgather_cma(aapc_shm_state *st, const char *src, char *dst, size_t rstride,
                           size_t n);

/* aapc_shm_select.c: algorithm choice */
/* 1 when an Alltoall (or Allgather) of n bytes per block takes the single-copy path; collective
   (may run the one-time probe). in_place: MPI_IN_PLACE Alltoall (the send data is overwritten
   while others read it, so never single copy). */
int aapc_shm_alltoall_use_cma(aapc_shm_state *st, size_t n, int in_place);
int aapc_shm_allgather_use_cma(aapc_shm_state *st, size_t n);
/* 1 when a reduction of this many bytes per rank takes the short (gather + reducers) path. */
int aapc_shm_reduce_is_short(const aapc_shm_state *st, MPI_Aint bytes);
/* Elements of type t per block when a slot is cut into `blocks` blocks; 0 if one element does
   not fit (the caller then falls back to the MPI library). */
MPI_Aint aapc_shm_elems_per_block(const aapc_shm_state *st, const aapc_shm_type *t, int blocks);

/* Bytes per pipeline chunk of a Bcast of n bytes (at most one slot). */
size_t aapc_shm_bcast_chunk(const aapc_shm_state *st, size_t n);

/* Round n down to a multiple of 64 (cache-line aligned block starts). */
static inline size_t aapc_shm_align_down(size_t n)
{
    return n & ~(size_t)63;
}

#endif
