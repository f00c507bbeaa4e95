/*
 * aapc_trace.h: the executor's time-line (AAPC_TRACE=FILE), private to runtime_c/.
 *
 * With AAPC_TRACE set, every call of the phase executor records, per rank, when each of its
 * sends waited for its syncs, started and completed, when each data receive and each sync
 * receive completed, and when each sync was fired; at the end of the call the rank appends its
 * records to FILE.<communicator>.<rank in it> (one line per event, see aapc_trace.c), with the
 * offset of its clock against rank 0's. aapcgen/measure/timeline.py reads them.
 */
#ifndef AAPC_TRACE_H
#define AAPC_TRACE_H

#include <mpi.h>

struct aapc_run;

/* Event kinds of a trace line. */
enum aapc_trace_kind {
    AAPC_TR_SYNC_WAIT = 0, /* a send entry starts waiting for its syncs */
    AAPC_TR_SEND_START,    /* the send is posted */
    AAPC_TR_SEND_DONE,     /* the send completed */
    AAPC_TR_RECV_DONE,     /* a data (or dummy) receive completed */
    AAPC_TR_SYNC_IN,       /* a sync receive completed */
    AAPC_TR_SYNC_FIRE,     /* a sync was sent */
    AAPC_TR_BARRIER_DONE,  /* a barrier between blocks returned */
    AAPC_TR_NKINDS
};

/* 1 when $AAPC_TRACE names a file (read once per process). */
int aapc_trace_enabled(void);

/* Start recording one call of st, of `bytes` per block (0: Alltoallv); allocates, and on
   failure the call is not traced. */
void aapc_trace_begin(struct aapc_run *st, MPI_Aint bytes);

/* Record an event: kind, the phase it belongs to and the peer machine (or -1). */
void aapc_trace_event(struct aapc_run *st, int kind, int phase, int peer);

/* Test the pending data and sync receives and record those that completed since the last poll
   (called while the executor waits, so completions are stamped when they happen). */
void aapc_trace_poll(struct aapc_run *st);

/* Test reqs[0..n) (PMPI_Testsome), stamping those of them that are the call's receives;
   *done = 1 when all are complete. Returns an MPI error code. */
int aapc_trace_test(struct aapc_run *st, int n, MPI_Request *reqs, int *done);

/* Stamp the completion of *req if it is one of the call's data or sync receives (used where
   the executor waits for requests one by one instead of polling: under SimGrid SMPI). */
void aapc_trace_stamp(struct aapc_run *st, const MPI_Request *req);

/* Estimate the clock offset against rank 0 (a few ping-pongs on st->dup, after the call's
   data; the communicator's first traced call also names it, one MPI_Bcast), append the
   records to the rank's file and free them. Collective over st->dup. */
int aapc_trace_end(struct aapc_run *st, int myrank);

/* Forget the call's records (after an error: no collective step). */
void aapc_trace_drop(struct aapc_run *st);

#endif
