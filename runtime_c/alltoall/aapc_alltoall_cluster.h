/*
 * aapc_alltoall_cluster.h: MPI_Alltoall scheduled at run time for any communicator, from the
 * cluster's switch tree (aapc_alltoall_cluster.c).
 */
#ifndef AAPC_ALLTOALL_CLUSTER_H
#define AAPC_ALLTOALL_CLUSTER_H

#include <mpi.h>

#include "aapc_cluster.h"
#include "aapc_phased.h"
#include "aapc_alltoall_rows.h" /* AAPC_VSYNC_* */
#include "aapc_comm.h"          /* aapc_comm_info_t */

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Alltoall semantics on any intra-communicator of `cluster`'s machines; `sync` is an
   AAPC_VSYNC_* of aapc_vtables.h (no-sync, sender-all, receiver-all, barrier-all); `name`
   appears in warnings. Inter-communicators, ranks on unknown hosts and communicators the
   scheduler cannot take go to PMPI_Alltoall (one warning naming the reason). */
int aapc_alltoall_cluster(const aapc_cluster_t *cluster, int sync, const char *name,
                          const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* The default MPI_Alltoall of a generated library ("auto"): the run-time routine when every
   rank of the communicator is on a known machine, else `precomputed` (the whole cluster's
   precomputed schedule, which itself uses the library's routine when the communicator does not
   match it), without a warning of its own. */
typedef int (*aapc_cluster_fallback_fn)(const void *, int, MPI_Datatype, void *, int,
                                         MPI_Datatype, MPI_Comm);
int aapc_alltoall_cluster_auto(const aapc_cluster_t *cluster, int sync, const char *name,
                               aapc_cluster_fallback_fn precomputed, const void *sendbuf,
                               int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* The calls of this process the run-time routines served, per way (AAPC_WAY_* of
   aapc_cluster.h: the library's routine chosen by size, the per-rank phases, the leader-based
   phases). Calls handed to the library for another reason (an unknown host, an
   inter-communicator, nothing to move) are not counted. */
void aapc_alltoall_ways_served(long long counts[AAPC_N_WAYS]);

/* MPI_Comm_split that records the siblings for their union schedule (defined by the generated
   aapc_<topology>_intercept.c with its cluster: common/aapc_cluster_comm.c aapc_cluster_split);
   the generated MPI_Comm_split calls it under AAPC_SIBLINGS=union, PMPI_Comm_split otherwise. */
int aapc_comm_split_siblings(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);

/* The run-time rows of synchronisation `sync` on comm, built on first use (local once comm's
   machines are gathered): *sched NULL when the run-time routine does not run on comm (a rank
   on an unknown machine, the scheduler's refusal: said once) or runs a siblings' union.
   Used by the non-blocking entries (nbc/aapc_nbc_alltoall.c). Returns an MPI error code. */
int aapc_alltoall_cluster_rows(const aapc_cluster_t *cluster, int sync, const char *name,
                               MPI_Comm comm, const aapc_schedule_t **sched,
                               aapc_comm_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_CLUSTER_H */
