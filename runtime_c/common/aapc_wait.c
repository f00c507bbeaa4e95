/*
 * aapc_wait.c: wait for MPI requests by testing, spinning briefly, then sleeping.
 *
 * Algorithm: call PMPI_Testall; while incomplete, retry up to AAPC_SPINS times back to back,
 * then sleep 1, 2, 4, ... microseconds (at most AAPC_MAX_SLEEP_US) between tests. MPI progress
 * happens inside each test. Cost: adds at most AAPC_MAX_SLEEP_US of latency to a completion that
 * arrives while sleeping; saves the CPU time of a busy wait, which matters when ranks outnumber
 * cores or share them with the kernel's protocol processing. AAPC_WAIT=spin selects the
 * library's own PMPI_Waitall instead.
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
#include "aapc_wait.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { AAPC_SPINS = 64, AAPC_MAX_SLEEP_US = 50 };

#ifndef SMPI_SHARED_MALLOC
static int use_library_wait(void)
{
    static int choice = -1;
    if (choice < 0) {
        const char *v = getenv("AAPC_WAIT");
        choice = v != NULL && strcmp(v, "spin") == 0;
    }
    return choice;
}
#endif

void aapc_nap_us(long us)
{
#ifdef SMPI_SHARED_MALLOC
    (void)us;
#else
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
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
        return PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    }
    long sleep_us = 1;
    for (int tries = 0;; tries++) {
        int done = 0;
        int rc = PMPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) {
            return rc;
        }
        if (tries >= AAPC_SPINS) {
            struct timespec ts = {0, sleep_us * 1000L};
            nanosleep(&ts, NULL);
            sleep_us = sleep_us * 2 > AAPC_MAX_SLEEP_US ? AAPC_MAX_SLEEP_US : sleep_us * 2;
        }
    }
#endif
}
