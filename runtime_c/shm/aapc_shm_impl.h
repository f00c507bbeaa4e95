/*
 * aapc_shm_impl.h: the per-communicator state and the helpers shared by the shared-memory
 * collectives (private to runtime_c/shm/).
 *
 * Window layout (one allocation by node rank 0, mapped by every rank at its own address, so the
 * state keeps offsets, never pointers into it):
 *   [barrier tree counters, one 128-byte line each][barrier release epoch][flag of rank 0] ...
 *   [flag of rank p-1][slot 0] ... [slot AAPC_SHM_NSLOTS-1]
 * Flags and counters are lock-free _Atomic uint64_t, each alone on a 128-byte line (two cache
 * lines: the adjacent-line prefetcher of x86 would otherwise couple neighbours).
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
    AAPC_SHM_MAX_BAR_NODES = 4096
};

typedef _Atomic uint64_t aapc_shm_word;

typedef struct aapc_shm_state {
    int usable;               /* 0: the communicator spans nodes (or is an intercommunicator) */
    int rank, size;
    int oversubscribed;       /* more ranks than online CPUs */
    MPI_Comm node;            /* ranks in the same order as the user communicator */
    MPI_Win win;
    char *base;               /* this rank's mapping of the window */
    size_t slot_bytes;
    size_t off_bar, off_release, off_flags, off_slots;
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

/* aapc_shm_wait.c */
/* Wait until *w >= v: spin, then sched_yield, then sleep with backoff (poking MPI progress). */
void aapc_shm_wait_geq(aapc_shm_state *st, aapc_shm_word *w, uint64_t v);
/* Wait until every rank's flag is >= v. */
void aapc_shm_wait_all(aapc_shm_state *st, uint64_t v);
/* Publish the next step (release store of my flag); returns its number. */
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

/* aapc_shm_select.c: algorithm choice */
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
