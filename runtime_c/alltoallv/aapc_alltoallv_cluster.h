/*
 * aapc_alltoallv_cluster.h: MPI_Alltoallv levels 1 and 2 on any intra-communicator, scheduled
 * at run time on the communicator's job tree (aapc_alltoallv_cluster.c).
 */
#ifndef AAPC_ALLTOALLV_CLUSTER_H
#define AAPC_ALLTOALLV_CLUSTER_H

#include <mpi.h>
#include <stddef.h>

#include "aapc_cluster.h" /* AAPC_N_WAYS */
#include "aapc_cluster_comm.h"
#include "aapc_vlevels.h"
#include "aapc_vsched.h"
#include "aapc_vtables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Level 1 (bytes == NULL: the counts are gathered) or level 2 (bytes: the N x N byte matrix of
   the call, row = source rank, N = size of comm) of program `prog` on the job tree of comm,
   when prog->cluster is set and every rank of comm is on a known machine of it. *handled = 0:
   nothing was done (no cluster, an inter-communicator, a rank on an unknown host): the caller
   runs the whole cluster's fixed tree instead. *handled = 1: the call is complete and the
   result is returned (the library's MPI_Alltoallv, with one warning, when the scheduler refuses
   the communicator; an error raised through comm's error handler). Arguments are checked by the
   caller (common/aapc_args.c). */
int aapc_alltoallv_cluster(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                           const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[],
                           MPI_Datatype recvtype, MPI_Comm comm, int *handled);

/* The entry of a level-1/2 routine, before aapc_alltoallv_level1/2: the way of this call
   (the MPI library's MPI_Alltoallv or the phases, the same on every rank: the cost model of
   cluster/aapc_cluster_select.c with the busiest rank's block, which level 1 agrees on in the
   argument checks' one MPI_Allreduce, aapc_args_alltoallv_most; AAPC_WAY or AAPC_ALLTOALLV
   forces it, and the checks, aapc_args_alltoallv, follow). *done = 1: the call is complete (the library ran it, or an error was
   raised, or nothing is to move) and the result is returned; 0: run the level. */
int aapc_alltoallv_begin(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                         const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, int *done);

/* 1 when the model gives MPI_Alltoallv the library at every block size on cc's shape (its
   ranks all known), so that a call need not agree on its block first: the blocking level 1
   then makes no collective of ours, MPI_Ialltoallv hands the call to the library's own.
   Computed once per communicator, alike on every rank. */
int aapc_alltoallv_library_only(aapc_cluster_comm_t *cc, const aapc_cluster_t *cl);

/* A schedule of one call's byte matrix, owned by its caller (the non-blocking entries:
   nbc/aapc_nbc_alltoallv.c): the pieces and the executor tables (tab.sched). */
typedef struct aapc_vplan {
    aapc_vsched vs;
    aapc_vtables_t tab;
} aapc_vplan_t;

/* Schedule the N x N byte matrix m (row = source rank, diagonal and negatives 0) of program
   prog on comm's job tree (cc: every rank on a known machine): local. *out NULL with the
   cause in why when the scheduler refuses the job. Returns an MPI error code. */
int aapc_alltoallv_cluster_plan(const aapc_vprog_t *prog, aapc_cluster_comm_t *cc,
                                const long long *m, aapc_vplan_t **out, char *why, size_t whylen);
void aapc_alltoallv_plan_free(aapc_vplan_t *plan);

/* The block of the busiest rank of the N x N byte matrix: max over ranks of max(bytes sent,
   bytes received, to and from the others) / (N - 1): what the per-call choice reads. */
double aapc_alltoallv_busiest(const long long *bytes, int n);

/* Calls of this process served by each way (AAPC_WAY_LIBRARY: chosen by size; AAPC_WAY_PHASES:
   the job tree's phases), for tests and benchmarks. */
void aapc_alltoallv_ways_served(long long counts[AAPC_N_WAYS]);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALLV_CLUSTER_H */
