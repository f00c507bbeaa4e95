/*
 * aapc_shm_wait.c: waiting on flags in the shared window, and the step/slot discipline.
 *
 * Algorithm: poll the word up to S times back to back (S = 2000, or 20 when ranks outnumber
 * CPUs: a busy wait there only delays the rank we wait for), then sched_yield() for up to Y
 * microseconds (AAPC_SHM_YIELD_US, default 2000: hands the core to a rank with work at once,
 * whereas a sleep costs at least the timer slack, about 56 us here), then sleep 1, 2, 4, ... microseconds (at most 50) between polls, calling PMPI_Iprobe now and
 * then so that the MPI library keeps progressing other traffic of this process (a peer blocked
 * in a rendezvous send to us must not wait for our collective to finish). Cost: a flag set while
 * we spin is seen within ~100 ns (one cache-line transfer); while sleeping we add at most 50 us.
 * TMPI (seed 003 section 4) and Table V there show why pure busy waiting collapses when
 * oversubscribed.
 *
 * Steps and slots (see aapc_shm_impl.h): publish = one release store to my own flag line;
 * wait_all = p acquire loads (one per flag line) and remembers the lowest step seen, so the slot
 * check after a wait_all is usually free.
 */
#define _POSIX_C_SOURCE 199309L
#include "aapc_shm_impl.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1;; i++) {
        sched_yield();
        if (atomic_load_explicit(w, memory_order_acquire) >= v) {
            return;
        }
        if (i % YIELDS == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ns = (now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec);
            if (ns >= yield_ns()) {
                break;
            }
        }
    }
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
    atomic_store_explicit(aapc_shm_flag(st, st->rank), st->step, memory_order_release);
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
