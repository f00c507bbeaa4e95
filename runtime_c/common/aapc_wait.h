/*
 * aapc_wait.h: completing requests without monopolising a CPU (private to runtime_c/).
 */
#ifndef AAPC_WAIT_H
#define AAPC_WAIT_H

#include <mpi.h>

/* PMPI_Waitall with a waiting policy chosen once per process by $AAPC_WAIT:
   "spin" (the MPI library's own wait: busy polling), or "poll" (default: test, spin briefly,
   yield the CPU between tests for up to 200 us (20 us when ranks outnumber cores), then sleep
   with exponential backoff between tests, up to 50 us or 1/16 of the time waited
   (aapc_nap_cap_us), so ranks sharing cores with each other or with the kernel's network
   processing leave them the CPU; when each rank has a core, a test that took over 2 us moved
   data and the wait goes back to yielding). Returns an MPI error code. */
int aapc_waitall(int n, MPI_Request *reqs);
/* aapc_waitall, keeping each request's own outcome: errs[i] is request i's error code
   (MPI_SUCCESS when it completed normally: a receive longer than its buffer ends in
   MPI_ERR_TRUNCATE there, not in the return value). idx and st: scratch of n each. Returns an
   error of the waiting itself. */
int aapc_waitall_errors(int n, MPI_Request *reqs, int *errs, int *idx, MPI_Status *st);
/* aapc_waitall_errors that also keeps each request's count of MPI_BYTE (counts[i]: what
   receive i took; MPI_UNDEFINED where the library cannot say; meaningless for a send). */
int aapc_waitall_counts(int n, MPI_Request *reqs, int *errs, int *counts, int *idx,
                        MPI_Status *st);

/* The same policy between the tests of a caller's own loop: call aapc_backoff after each
   failed test, starting from AAPC_BACKOFF_INIT (nothing under SimGrid SMPI). */
typedef struct aapc_backoff {
    int tries;
    long sleep_us;
    double yield_until;
    double back_at; /* when the last call returned (us) */
    double since;   /* when the wait began to yield or sleep (us); 0 before */
} aapc_backoff_t;
#define AAPC_BACKOFF_INIT {0, 1, 0.0, 0.0, 0.0}
void aapc_backoff(aapc_backoff_t *b);

/* The longest nap between two tests of a wait that has lasted waited_us: floor_us, or 1/16
   of the time waited, at most 1 ms (a nap then delays a completion by at most 6.25% of the
   wait so far, and a long wait wakes its rank about 16 times per doubling of its length, not
   every few tens of microseconds). */
long aapc_nap_cap_us(double waited_us, long floor_us);
/* A monotonic clock in microseconds (0 under SimGrid SMPI, which never naps). */
double aapc_clock_us(void);

/* Sleep about `us` microseconds (nothing under SimGrid SMPI, where it would only cost wall
   time). */
void aapc_nap_us(long us);

#endif
