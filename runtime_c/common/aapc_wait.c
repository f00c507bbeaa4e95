/*
 * aapc_wait.c: wait for MPI requests by testing, spinning briefly, then sleeping.
 *
 * Algorithm: call PMPI_Testall; while incomplete, retry up to AAPC_SPINS times back to back,
 * then for up to AAPC_YIELD_US microseconds (AAPC_YIELD_SHARED_US when the node runs more ranks
 * than it has cores) yield the CPU (sched_yield) between tests, then
 * sleep 1, 2, 4, ... microseconds between tests, at most AAPC_MAX_SLEEP_US (50) or, once the
 * wait has lasted longer than 16 times that, 1/16 of the time waited so far (AAPC_SLEEP_SHARE),
 * up to AAPC_LONG_SLEEP_US (1 ms). MPI progress
 * happens inside each test. Cost: a completion within the first AAPC_YIELD_US is seen at once
 * when the rank has a core of its own (a yield with nothing else to run returns at once), and
 * after the other runnable ranks' time slices when cores are shared; later ones get at most
 * AAPC_MAX_SLEEP_US of latency, or 6.25% of the time already waited; sleeping saves the CPU
 * time of a busy wait, which matters when ranks outnumber cores or share them with the
 * kernel's protocol processing. (With 50 us naps throughout, 16 ranks on 2 cores waiting
 * 20-400 ms for 256 KB-1 MB blocks at 100 Mbit/s kept the CPUs 70% busy and each rank 25% of
 * its time waiting for a CPU; with naps up to 1 ms, 30% and 2%, in the same time:
 * docs/measurements/cpu-fairness.md.) (Sleeping from
 * the 65th test on made a 64 KB call on 2 ranks of one machine 2-7x MPICH's pairwise: a 40-byte
 * argument agreement or a shared-memory copy finishing a few us into a sleep waited out the
 * sleep; docs/measurements/executor-overhead.md.) When each rank has a core, a test that took
 * more than AAPC_WORK_US did work (MPICH packs a large non-contiguous send between ranks of one
 * machine a piece per test: 14-17 us each for 8 KB of 8-byte elements), so the next piece is
 * waiting for the next test: the backoff goes back to yielding. (Without that, the sleeps
 * between pieces made 2 GiB between 2 ranks of one machine take 48 s instead of 7. When ranks
 * share cores a long test is as likely a preemption, and going back to yielding made 8 ranks on
 * 2 cores about 7 % slower.) AAPC_WAIT=spin selects the library's own PMPI_Waitall instead
 * (poll, the default, can be named too; any other value is said once per process and counts as
 * poll).
 *
 * Under SimGrid SMPI (smpicc; its mpi.h defines SMPI_SHARED_MALLOC) the requests are waited
 * for one by one, in order, with the library's blocking MPI_Wait: there every failed MPI_Test
 * advances the rank's simulated clock (smpi/test) and the real nanosleep only burns wall time.
 * SMPI 3.32 builds MPI_Waitall on repeated waitany, which registers on and unregisters from every
 * pending request at each completion: cubic in the requests per rank, so 1024 ranks with 1023
 * pre-posted receives each never finished. Waiting in order gives the same simulated time (every
 * request is already posted and progresses without being waited on; the rank resumes at the
 * latest completion either way) at O(1) wall cost per request.
 */
#define _POSIX_C_SOURCE 199309L
#include "aapc_mpi.h"
#include "aapc_wait.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    AAPC_SPINS = 64,
    AAPC_YIELD_US = 200,
    AAPC_YIELD_SHARED_US = 20,
    AAPC_MAX_SLEEP_US = 50,    /* the longest nap of a wait shorter than 16 x this */
    AAPC_SLEEP_SHARE = 16,     /* ... then a nap is at most 1/16 of the time waited so far */
    AAPC_LONG_SLEEP_US = 1000, /* ... and at most this */
};

/* A test that took more than AAPC_WORK_US did work (a test with nothing to do takes 0.05-0.3 us
   here; MPICH packing a piece of a large non-contiguous send takes 14-17 us) */
#define AAPC_WORK_US 2.0

#ifndef SMPI_SHARED_MALLOC
/* How long to yield before sleeping: AAPC_YIELD_US when the launcher says this node runs no
   more ranks than it has cores (MPICH/Hydra's MPI_LOCALNRANKS, Open MPI's
   OMPI_COMM_WORLD_LOCAL_SIZE), else AAPC_YIELD_SHARED_US: ranks sharing cores must leave them
   to the one with work soon. */
static long aapc_yield_us(void)
{
    static long us = -1;
    if (us < 0) {
        const char *v = getenv("MPI_LOCALNRANKS");
        if (v == NULL)
            v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long local = v != NULL ? atol(v) : 0, cores = sysconf(_SC_NPROCESSORS_ONLN);
        us = local > 0 && cores > 0 && local <= cores ? AAPC_YIELD_US : AAPC_YIELD_SHARED_US;
    }
    return us;
}
#endif

#ifndef SMPI_SHARED_MALLOC
static int use_library_wait(void)
{
    static int choice = -1;
    if (choice < 0) {
        const char *v = getenv("AAPC_WAIT");
        choice = v != NULL && strcmp(v, "spin") == 0;
        if (!choice && v != NULL && v[0] != '\0' && strcmp(v, "poll") != 0)
            fprintf(stderr, "aapcgen: AAPC_WAIT=%s is not one of poll, spin; using poll\n", v);
    }
    return choice;
}
#endif

long aapc_nap_cap_us(double waited_us, long floor_us)
{
    long cap = (long)(waited_us / AAPC_SLEEP_SHARE);
    return cap < floor_us ? floor_us : cap > AAPC_LONG_SLEEP_US ? AAPC_LONG_SLEEP_US : cap;
}

double aapc_clock_us(void)
{
#ifdef SMPI_SHARED_MALLOC
    return 0.0;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
#endif
}

void aapc_nap_us(long us)
{
#ifdef SMPI_SHARED_MALLOC
    (void)us;
#else
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
#endif
}

void aapc_backoff(aapc_backoff_t *b)
{
#ifdef SMPI_SHARED_MALLOC
    (void)b;
#else
    if (b->tries < AAPC_SPINS) {
        b->tries++;
        return;
    }
    double now = aapc_clock_us();
    /* the caller's test took long: it moved data, the next piece is near: yield again */
    if (b->tries > AAPC_SPINS && now - b->back_at > AAPC_WORK_US &&
        aapc_yield_us() == AAPC_YIELD_US) {
        b->tries = AAPC_SPINS;
        b->sleep_us = 1;
    }
    if (b->tries++ == AAPC_SPINS)
        b->yield_until = now + (double)aapc_yield_us();
    if (b->since == 0.0)
        b->since = now;
    if (now < b->yield_until) {
        sched_yield();
    } else {
        struct timespec ts = {0, b->sleep_us * 1000L};
        nanosleep(&ts, NULL);
        long cap = aapc_nap_cap_us(now - b->since, AAPC_MAX_SLEEP_US);
        b->sleep_us = b->sleep_us * 2 > cap ? cap : b->sleep_us * 2;
    }
    b->back_at = aapc_clock_us();
#endif
}

int aapc_waitall(int n, MPI_Request *reqs)
{
    if (n <= 0) {
        return MPI_SUCCESS;
    }
#ifdef SMPI_SHARED_MALLOC
    for (int i = 0; i < n; i++) {
        int rc = PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
#else
    if (use_library_wait()) {
        return PMPI_Waitall(n, reqs, aapc_statuses_ignore());
    }
    aapc_backoff_t b = AAPC_BACKOFF_INIT;
    for (;;) {
        int done = 0;
        int rc = PMPI_Testall(n, reqs, &done, aapc_statuses_ignore());
        if (rc != MPI_SUCCESS || done) {
            return rc;
        }
        aapc_backoff(&b);
    }
#endif
}

int aapc_waitall_counts(int n, MPI_Request *reqs, int *errs, int *counts, int *idx,
                        MPI_Status *st)
{
    for (int i = 0; i < n; i++)
        errs[i] = MPI_SUCCESS;
#ifdef SMPI_SHARED_MALLOC
    (void)idx;
    for (int i = 0; i < n; i++) {
        errs[i] = PMPI_Wait(&reqs[i], &st[0]);
        if (counts != NULL && PMPI_Get_count(&st[0], MPI_BYTE, &counts[i]) != MPI_SUCCESS)
            counts[i] = MPI_UNDEFINED;
    }
    return MPI_SUCCESS;
#else
    aapc_backoff_t b = AAPC_BACKOFF_INIT;
    for (;;) {
        int out = 0;
        for (int k = 0; k < n; k++) /* a library may set it only where a request failed */
            st[k].MPI_ERROR = MPI_SUCCESS;
        int rc = PMPI_Testsome(n, reqs, &out, idx, st), cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS && (PMPI_Error_class(rc, &cls) != MPI_SUCCESS ||
                                  cls != MPI_ERR_IN_STATUS))
            return rc;
        if (out == MPI_UNDEFINED) /* no active request left */
            return MPI_SUCCESS;
        for (int k = 0; rc != MPI_SUCCESS && k < out; k++)
            errs[idx[k]] = st[k].MPI_ERROR;
        for (int k = 0; counts != NULL && k < out; k++)
            if (PMPI_Get_count(&st[k], MPI_BYTE, &counts[idx[k]]) != MPI_SUCCESS)
                counts[idx[k]] = MPI_UNDEFINED;
        if (out == 0 && !use_library_wait())
            aapc_backoff(&b);
    }
#endif
}

int aapc_waitall_errors(int n, MPI_Request *reqs, int *errs, int *idx, MPI_Status *st)
{
    return aapc_waitall_counts(n, reqs, errs, NULL, idx, st);
}
