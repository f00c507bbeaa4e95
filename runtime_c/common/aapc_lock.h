/*
 * aapc_lock.h: the locks of the runtime's process-wide state, for MPI_THREAD_MULTIPLE
 * programs whose threads call MPI_Alltoall / MPI_Alltoallv on different communicators at once
 * (private to runtime_c/).
 *
 * What is process-wide: lazily created attribute keys, the argument checks' probe
 * communicator, reduction and error codes, the fallback warnings already printed, the machine
 * this process runs on, the trace files' serials. Everything else (schedules, duplicates,
 * scratch buffers) is per communicator, cached as an attribute of it, and MPI forbids two
 * concurrent collectives on one communicator. Each module guards its own state with one mutex;
 * a lock is never held across communication (two ranks each holding a lock while waiting for
 * the other's message would deadlock), only around local work and local MPI calls (keyval
 * creation, MPI_Add_error_code, MPI_Comm_dup of MPI_COMM_SELF).
 *
 * Under SimGrid SMPI the simulated ranks are threads of one process scheduled cooperatively at
 * MPI calls, and their globals are private copies: the locks are no-ops there.
 *
 * Test hook: AAPC_TEST_DELAY_KEYS_US=N (microseconds) makes every lazy creation of a
 * process-wide key or object sleep N us between finding it missing and creating it, so that a
 * test with several threads exposes any creation that is not under its lock (tests/c/
 * threads.c). Not for production use.
 */
#ifndef AAPC_LOCK_H
#define AAPC_LOCK_H

#include <stdlib.h>

#include <mpi.h>

#include "aapc_wait.h" /* aapc_nap_us */

#ifndef SMPI_SHARED_MALLOC
#include <pthread.h>
typedef pthread_mutex_t aapc_mutex_t;
#define AAPC_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#else
typedef int aapc_mutex_t;
#define AAPC_MUTEX_INIT 0
#endif

static inline void aapc_lock(aapc_mutex_t *m)
{
#ifndef SMPI_SHARED_MALLOC
    pthread_mutex_lock(m);
#else
    (void)m;
#endif
}

static inline void aapc_unlock(aapc_mutex_t *m)
{
#ifndef SMPI_SHARED_MALLOC
    pthread_mutex_unlock(m);
#else
    (void)m;
#endif
}

/* The test hook above: sleep AAPC_TEST_DELAY_KEYS_US microseconds, if set. */
static inline void aapc_test_delay_keys(void)
{
    const char *e = getenv("AAPC_TEST_DELAY_KEYS_US");
    long us = e != NULL ? atol(e) : 0;
    if (us > 0)
        aapc_nap_us(us); /* nothing under SimGrid SMPI */
}

/* *keyval, a module's communicator attribute key, created at its first use under `lock`
   (threads on other communicators may get here at once). */
static inline int aapc_keyval_once(aapc_mutex_t *lock, int *keyval,
                                   MPI_Comm_delete_attr_function *del)
{
    int rc = MPI_SUCCESS;
    if (__atomic_load_n(keyval, __ATOMIC_ACQUIRE) != MPI_KEYVAL_INVALID)
        return MPI_SUCCESS; /* made: every later call takes no lock */
    aapc_lock(lock);
    if (*keyval == MPI_KEYVAL_INVALID) {
        int made = MPI_KEYVAL_INVALID;
        aapc_test_delay_keys();
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &made, NULL);
        if (rc == MPI_SUCCESS)
            __atomic_store_n(keyval, made, __ATOMIC_RELEASE);
    }
    aapc_unlock(lock);
    return rc;
}

#endif /* AAPC_LOCK_H */
