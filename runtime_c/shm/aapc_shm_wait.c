/*
 * aapc_shm_wait.c: waiting on flags in the shared window, and the step/slot discipline.
 *
 * Algorithm: poll the word up to S times back to back (S = 2000, or 20 when ranks outnumber
 * CPUs: a busy wait there only delays the rank we wait for), then sched_yield() for up to Y
 * microseconds (AAPC_SHM_YIELD_US, default 2000: hands the core to a rank with work at once and
 * keeps every rank runnable; blocking right after the spin, i.e. Y = 0, made oversubscribed
 * calls cost a steady ~0.57 ms on 4 ranks / 2 cores, as each step then waits for a wake-up to
 * be scheduled), then block:
 *   - Linux (default, AAPC_SHM_FUTEX=0 turns it off): FUTEX_WAIT on the low 32 bits of the word
 *     (they change at every store, since values only grow by small steps). Before sleeping the
 *     waiter increments the waiter count on the second half of the word's line and re-reads the
 *     word; the writer stores the word and then reads that count, both sequentially consistent
 *     (Dekker), and calls FUTEX_WAKE only when it is non-zero, so the fast path costs the writer
 *     one load of a line nobody else writes. Shared futex ops (not _PRIVATE): the window is
 *     mapped by several processes. The wait has a 1 ms timeout after which the word is re-read
 *     and PMPI_Iprobe pokes the library's progress.
 *   - elsewhere (or AAPC_SHM_FUTEX=0): sleep 1, 2, 4, ... microseconds (at most 50) between
 *     polls, calling PMPI_Iprobe every 16 sleeps.
 * PMPI_Iprobe keeps the MPI library progressing other traffic of this process (a peer blocked in
 * a rendezvous send to us must not wait for our collective to finish). Cost: a flag set while we
 * spin is seen within ~100 ns (one cache-line transfer); a futex wake-up costs one system call
 * for the writer and a context switch for the sleeper (a few microseconds), the sleep-poll
 * fallback adds up to 50 us plus the timer slack (about 56 us here). TMPI (seed 003 section 4)
 * and Table V there show why pure busy waiting collapses when oversubscribed.
 *
 * Steps and slots (see aapc_shm_impl.h): publish = one store to my own flag line (plus the
 * waiter-count load); wait_all = p acquire loads (one per flag line) and remembers the lowest
 * step seen, so the slot check after a wait_all is usually free.
 */
#define _GNU_SOURCE
#include "aapc_shm_impl.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef AAPC_SHM_HAVE_FUTEX
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { YIELDS = 64, MAX_SLEEP_US = 50, PROBE_EVERY = 16 };

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static long spins_for(const aapc_shm_state *st)
{
    static long configured = -2;
    if (configured == -2) {
        const char *v = getenv("AAPC_SHM_SPINS");
        configured = v != NULL ? atol(v) : -1;
    }
    if (configured >= 0) {
        return configured;
    }
    return st->oversubscribed ? 20 : 2000;
}

static long yield_ns(void)
{
    static long configured = -1;
    if (configured < 0) {
        const char *v = getenv("AAPC_SHM_YIELD_US");
        configured = (v != NULL && atol(v) >= 0 ? atol(v) : 2000) * 1000L;
    }
    return configured;
}

#ifdef AAPC_SHM_HAVE_FUTEX
static aapc_shm_word *waiters_of(aapc_shm_word *w)
{
    return (aapc_shm_word *)(void *)((char *)w + AAPC_SHM_WAITERS_OFF);
}

static int futex_broken = 0; /* FUTEX_WAIT said ENOSYS: sleep-poll from now on */

/* The 32 bits of *w that change first (its low half), as the kernel's futex word. */
static uint32_t *futex_word(aapc_shm_word *w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)(void *)w + 1;
#else
    return (uint32_t *)(void *)w;
#endif
}

/* Block until *w >= v. Returns 0 when done, -1 if futexes do not work here. */
static int futex_block(aapc_shm_state *st, aapc_shm_word *w, uint64_t v)
{
    aapc_shm_word *waiters = waiters_of(w);
    atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
    int rc = 0;
    for (;;) {
        uint64_t cur = atomic_load_explicit(w, memory_order_seq_cst);
        if (cur >= v) {
            break;
        }
        struct timespec timeout = {0, 1000000}; /* re-check and poke MPI progress every 1 ms */
        if (syscall(SYS_futex, futex_word(w), FUTEX_WAIT, (uint32_t)cur, &timeout, NULL, 0) != 0) {
            if (errno == ENOSYS || errno == EINVAL || errno == EFAULT) {
                futex_broken = 1;
                rc = -1;
                break;
            }
            if (errno == ETIMEDOUT) {
                int flag = 0;
                PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, st->node, &flag, MPI_STATUS_IGNORE);
            }
        }
    }
    atomic_fetch_sub_explicit(waiters, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_acquire);
    return rc;
}
#endif

int aapc_shm_futex_default(void)
{
#ifdef AAPC_SHM_HAVE_FUTEX
    const char *v = getenv("AAPC_SHM_FUTEX");
    return !(v != NULL && strcmp(v, "0") == 0);
#else
    return 0;
#endif
}

void aapc_shm_store_wake(aapc_shm_word *w, uint64_t v)
{
    atomic_store_explicit(w, v, memory_order_seq_cst);
#ifdef AAPC_SHM_HAVE_FUTEX
    /* whatever this rank's own AAPC_SHM_FUTEX says, a sleeper elsewhere must be woken */
    if (atomic_load_explicit(waiters_of(w), memory_order_seq_cst) != 0) {
        syscall(SYS_futex, futex_word(w), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
#endif
}

void aapc_shm_wait_geq(aapc_shm_state *st, aapc_shm_word *w, uint64_t v)
{
    if (atomic_load_explicit(w, memory_order_acquire) >= v) {
        return;
    }
    long spins = spins_for(st);
    for (long i = 0; i < spins; i++) {
        cpu_relax();
        if (atomic_load_explicit(w, memory_order_relaxed) >= v) {
            atomic_thread_fence(memory_order_acquire);
            return;
        }
    }
    /* yield for up to yield_ns: when ranks share cores this hands the CPU straight to a rank
       with work, without the timer latency (tens of microseconds) a sleep would add */
    long budget = yield_ns();
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1; budget > 0; i++) {
        sched_yield();
        if (atomic_load_explicit(w, memory_order_acquire) >= v) {
            return;
        }
        if (i % YIELDS == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ns = (now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec);
            if (ns >= budget) {
                break;
            }
        }
    }
#ifdef AAPC_SHM_HAVE_FUTEX
    if (st->futex && !futex_broken && futex_block(st, w, v) == 0) {
        return;
    }
#endif
    long sleep_us = 1;
    for (unsigned n = 0;; n++) {
        struct timespec ts = {0, sleep_us * 1000L};
        nanosleep(&ts, NULL);
        if (atomic_load_explicit(w, memory_order_acquire) >= v) {
            return;
        }
        sleep_us = sleep_us * 2 > MAX_SLEEP_US ? MAX_SLEEP_US : sleep_us * 2;
        if (n % PROBE_EVERY == PROBE_EVERY - 1) {
            int flag = 0;
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, st->node, &flag, MPI_STATUS_IGNORE);
        }
    }
}

void aapc_shm_wait_all(aapc_shm_state *st, uint64_t v)
{
    if (st->seen_all >= v) {
        return;
    }
    for (int r = 0; r < st->size; r++) {
        aapc_shm_wait_geq(st, aapc_shm_flag(st, r), v);
    }
    st->seen_all = v;
}

uint64_t aapc_shm_publish(aapc_shm_state *st)
{
    st->step++;
    aapc_shm_store_wake(aapc_shm_flag(st, st->rank), st->step);
    return st->step;
}

unsigned aapc_shm_slot_take(aapc_shm_state *st, int writer)
{
    unsigned slot = st->next_slot++ % AAPC_SHM_NSLOTS;
    uint64_t need = st->free_after[slot];
    if (writer && st->seen_all < need) {
        if (need > st->step) { /* would wait for a step this rank has not published: a bug */
            fprintf(stderr, "aapc_shm: slot %u reused too early (need step %llu, at %llu)\n", slot,
                    (unsigned long long)need, (unsigned long long)st->step);
            abort();
        }
        aapc_shm_wait_all(st, need);
    }
    return slot;
}

void aapc_shm_slot_done(aapc_shm_state *st, unsigned slot, uint64_t last_read)
{
    st->free_after[slot] = last_read + 1;
}
