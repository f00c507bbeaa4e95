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

#ifdef __cplusplus
extern "C" {
#endif

int aapc_args_alltoall(const char *name, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       const void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                       int *done);

int aapc_args_alltoallv(const char *name, const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, const void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int *done);

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

/* Make the executor's private duplicate return its errors to the entry point (which raises
   them on the user's communicator with aapc_args_raise_code) whatever handler the user's
   communicator had when it was duplicated. */
void aapc_args_private_returns(MPI_Comm dup);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ARGS_H */
