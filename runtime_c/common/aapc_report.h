/*
 * aapc_report.h: what ran, reported at MPI_Finalize (AAPC_REPORT=1 on stderr, AAPC_REPORT=FILE
 * into FILE): per communicator its ranks, machines and ranks per machine, and per collective
 * the calls, bytes and time of each routine that served them, the fallbacks to the MPI library
 * and their causes (aapc_report.c, docs/generate.md "What ran: AAPC_REPORT").
 *
 * Usage. A generated entry point wraps its call:
 *
 *     double t0 = aapc_report_begin();
 *     int rc = ...the routine...;
 *     return aapc_report_alltoall(t0, "receiver-all", sendbuf, sendcount, sendtype, recvcount,
 *                                 recvtype, comm, rc);
 *
 * and the runtime says, in one line where it decides, how the call is served:
 *
 *     aapc_report_served("run-time");               before running a schedule
 *     aapc_report_fallback(why);                    before handing the call to the library
 *
 * The last such mark of a call wins (a fallback warning marks the call too:
 * common/aapc_comm.c aapc_warn_fallback). Nested entry points (the tuned routine calling a
 * variant) count once, at the outermost. The generated MPI_Finalize calls
 * aapc_report_finalize before PMPI_Finalize.
 *
 * Cost with AAPC_REPORT unset: one test of a flag read once per process (getenv), per call.
 * Set: two MPI_Wtime, an attribute lookup and a walk over the communicator's few rows per call;
 * the first call on a communicator translates its group to MPI_COMM_WORLD ranks (O(P), local).
 * At MPI_Finalize: one MPI_Allreduce of an int over MPI_COMM_WORLD (whether any rank asked for
 * the report: a rank without AAPC_REPORT still takes part, so none waits alone), and when one
 * did, a dup of MPI_COMM_WORLD, an MPI_Gather of the lengths and an MPI_Gatherv of every rank's
 * rows to world rank 0, which merges them (one communicator of the job = its set of world ranks;
 * calls: the most any rank made; bytes: the sum of what the ranks sent; seconds: the slowest
 * rank) and prints them. A program that never calls MPI_Finalize gets no report; nothing else
 * changes.
 */
#ifndef AAPC_REPORT_H
#define AAPC_REPORT_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* AAPC_REPORT is set (not empty, not "0"): read once per process. */
int aapc_report_on(void);

/* The start of an entry point's call: MPI_Wtime(), 0 when the report is off. */
double aapc_report_begin(void);

/* How the current call is served: "precomputed", "run-time", "run-time, leader-based", ... */
void aapc_report_served(const char *how);

/* The current call goes to the MPI library's routine, for this cause. */
void aapc_report_fallback(const char *reason);

/* The end of an entry point's call begun at t0 (aapc_report_begin) for routine `routine` (the
   name AAPC_VARIANT or AAPC_ALLTOALLV gives it): counts it on `comm` with the bytes this rank
   sends. Returns rc. */
int aapc_report_alltoall(double t0, const char *routine, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm, int rc);
int aapc_report_alltoallv(double t0, const char *routine, const void *sendbuf,
                          const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                          MPI_Datatype recvtype, MPI_Comm comm, int rc);

/* The end of the call of an entry point that converts its arguments and hands them to another
   entry point or to the library (MPI_Alltoall_c, MPI_Alltoallv_c, MPI_Alltoallw: alltoall/
   aapc_alltoall_large.c, alltoallv/aapc_alltoallw.c), or a non-blocking entry (MPI_Ialltoall,
   MPI_Alltoall_init: nbc/aapc_nbc_alltoall.c): counts it once, under `collective`, with
   the routine the nested entry point named (`routine` when none ran: the library's) and the
   `bytes` this rank sends (64-bit, computed by the caller; 0 counted for a call that failed).
   The nested call is not counted
   apart. Returns rc. */
int aapc_report_entry(double t0, const char *collective, const char *routine, long long bytes,
                      MPI_Comm comm, int rc);

/* The end of the call of an entry point that names its own routine whatever nested entry
   points ran (runtime_c/coll/: the leaders' step of an Allgather may be an MPI_Alltoall, not
   counted apart). Returns rc. */
int aapc_report_own(double t0, const char *collective, const char *routine, long long bytes,
                    MPI_Comm comm, int rc);
/* Collective over MPI_COMM_WORLD, before PMPI_Finalize (the generated MPI_Finalize calls it;
   a program linked without -DAAPC_INTERCEPT may call it itself): gather and print the report
   when any rank has AAPC_REPORT set. `topology` names the cluster in the heading (or NULL).
   Does nothing when MPI is not initialized or already finalized, or on a second call. */
void aapc_report_finalize(const char *topology);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_REPORT_H */
