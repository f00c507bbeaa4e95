/*
 * aapc_args.h: the argument checks every entry point of a generated MPI_Alltoall /
 * MPI_Alltoallv runs before it posts a message (common/aapc_args.c).
 *
 * Usage at the top of an entry point:
 *
 *     int done, rc = aapc_args_alltoall(name, sendbuf, sendcount, sendtype, recvbuf,
 *                                       recvcount, recvtype, comm, &done);
 *     if (done)
 *         return rc;
 *
 * done = 1: the call is complete and rc is its result (an error already raised through the
 * communicator's error handler; the MPI library's own result for MPI_COMM_NULL,
 * inter-communicators and calls on MPI_COMM_WORLD / MPI_COMM_SELF before MPI_Init or after
 * MPI_Finalize, which are handed to it untouched, an inter-communicator with one fallback
 * warning naming `name`; the library's result for an in-place call some rank cannot copy
 * (one fallback warning); MPI_SUCCESS when no rank has a byte to move).
 * done = 0: every rank of comm agreed that the call is valid (rc == MPI_SUCCESS).
 */
#ifndef AAPC_ARGS_H
#define AAPC_ARGS_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int aapc_args_alltoall(const char *name, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       const void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                       int *done);

/* The elements of MPI_Alltoall's vote (the agreement's vector, reduced with MPI_MAX): the
   first finding's key, the block bytes sent (max, -min) and expected (max, -min), and whether
   an in-place copy could not be allocated. */
enum { AAPC_ARGS_VOTE = 6 };
/* An exchange that carries the vote in its own messages (alltoall/aapc_alltoall_carried.c:
   in a compact form): every rank sends its vote to every other rank, with its blocks unless
   `vote_only` (this rank found an error), and takes every other rank's; it leaves in v the
   maximum of all the votes, and sets *mismatch when a message was longer than this rank
   expects (the blocks differ). Returns an MPI error code (this rank's alone). */
typedef int (*aapc_args_carry_fn)(void *ctx, int vote_only, int64_t v[AAPC_ARGS_VOTE],
                                  int *mismatch);
/* 1 when calls on comm may carry the agreement in their exchange (AAPC_AGREE unset or not
   "0", which leaves the agreement out, nor "reduce" or "always", which keep the reduction). */
int aapc_args_carries(MPI_Comm comm);
/* 1 under AAPC_AGREE=always: a blocking MPI_Alltoall agrees before it chooses its way, so the
   calls it would hand to the MPI library by size agree too (ranks whose block sizes differ
   across a way's threshold end in an error, not in two protocols); the non-blocking forms,
   which may not wait to agree, are then the library's. A setting every rank of comm shares. */
int aapc_args_always(MPI_Comm comm);
/* aapc_args_alltoall with the agreement carried by the call's exchange instead of one
   reduction before it: the checks, then `carry` (on every rank, whatever it found), then the
   same decision from the votes (*done = 0: every rank's blocks arrived and ctx may deliver
   them). Every rank of comm must take this path for the call. */
int aapc_args_alltoall_carried(const char *name, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, const void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm, aapc_args_carry_fn carry,
                               void *ctx, int *done);

int aapc_args_alltoallv(const char *name, const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, const void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int *done);

/* aapc_args_alltoallv whose one reduction also agrees on most[3], the most bytes any rank
   sends to and receives from the others and the largest block any rank sends to or receives
   from another (set when *done = 0; a count or datatype the checks refuse counts as 0), for a
   selection that needs them before it chooses (alltoallv/
   aapc_alltoallv_cluster.c): one MPI_Allreduce for both. It leaves out what only the ways of
   the run-time routine need, so that a call then handed to the MPI library allocates nothing:
   where *copies = 1 (some rank passed MPI_IN_PLACE) and one of those ways takes the call,
   every rank calls aapc_args_alltoallv_inplace next. Under AAPC_AGREE=0 the bytes are reduced
   alone, then this rank's checks (*copies = 0). Every rank of comm must take this path for
   the call. */
int aapc_args_alltoallv_most(const char *name, const void *sendbuf, const int sendcounts[],
                             const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                             const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                             MPI_Comm comm, double most[3], int *copies, int *done);
/* After aapc_args_alltoallv_most, for the ways that copy an in-place call's receive span: the
   agreement that every rank passing MPI_IN_PLACE can allocate it (one reduction on every rank;
   the MPI library's result, with the fallback warning, where a rank cannot). */
int aapc_args_alltoallv_inplace(const char *name, const void *sendbuf, const int sendcounts[],
                                const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                                const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, int *done);

/* 1 when a call on comm goes to the MPI library untouched, as aapc_args_alltoall hands it
   (MPI_COMM_NULL; an inter-communicator, with the fallback warning naming `name` and
   `routine`; MPI_COMM_WORLD or MPI_COMM_SELF outside MPI_Init..MPI_Finalize; a handle the
   library refuses): for the entry points that convert their arguments first. */
int aapc_args_to_library(MPI_Comm comm, const char *name, const char *routine);

/* 0 when t is a datatype that is not committed (the probe of the checks: a zero-element
   MPI_Pack on a private one-rank communicator that returns errors), else 1 (also when no probe
   could be made: the library checks then). t is not MPI_DATATYPE_NULL. */
int aapc_args_committed(MPI_Comm comm, MPI_Datatype t);

/* An entry point that converts its arguments before handing them to MPI_Alltoall
   (MPI_Alltoall_c: alltoall/aapc_alltoall_large.c) notes here an error of this rank that the
   converted arguments cannot say (a count beyond int64 bytes); it passes a negative count in
   its place, and the next aapc_args_alltoall of this thread reports the note as this rank's
   finding, through the agreement, so every rank raises. cls 0 clears the note (after the
   call: the library's path never reads it). Per thread. */
void aapc_args_note(int cls, const char *what);

/* An entry point's own agreement (one MPI_Allreduce with MPI_MAX of aapc_args_key on every
   rank: 0 where a rank found nothing) found an error: raise it through comm's error handler on
   every rank, this rank's finding (cls != 0, `what` says it) in its words, another's as
   "rank R of this communicator passed invalid arguments (class)". Returns the code. */
long long aapc_args_key(int cls, int rank, int size);
int aapc_args_raise_found(MPI_Comm comm, const char *routine, int cls, const char *what,
                          long long key, int size);

/* An error every rank of comm meets after the checks (an agreed decision, or local objects
   that fail alike everywhere): raise it through comm's error handler once and return it.
   MPI_SUCCESS passes through. */
int aapc_args_raise_code(MPI_Comm comm, int code);

/* An error this rank may meet alone after the checks (inside the executor, on its private
   communicator whose handler is MPI_ERRORS_RETURN; out of memory; a failed send): raise it
   through comm's error handler, and when the handler returns (MPI_ERRORS_RETURN, a user's
   handler), say so on stderr and MPI_Abort the job: the other ranks may be waiting for this
   rank's messages, and an error on one rank must not leave them hanging. MPI_SUCCESS passes
   through. */
int aapc_args_raise_alone(MPI_Comm comm, int code);

/* An error code of class cls whose string is `what` (MPI_Add_error_code/string, one code per
   distinct message; cls itself when no code can be added), for aapc_args_raise_alone. */
int aapc_args_error_code(int cls, const char *what);

/* Make the executor's private duplicate return its errors to the entry point (which raises
   them on the user's communicator with aapc_args_raise_code) whatever handler the user's
   communicator had when it was duplicated. */
void aapc_args_private_returns(MPI_Comm dup);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ARGS_H */
