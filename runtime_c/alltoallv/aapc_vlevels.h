/*
 * aapc_vlevels.h: MPI_Alltoallv with the schedule computed at run time (CC-MPI levels 1, 2).
 *
 * Level 1 (aapc_alltoallv_level1): the call's counts are gathered (one MPI_Allgather of N
 * 64-bit integers per rank) and every rank schedules the whole N x N byte matrix with the same
 * deterministic C scheduler, so all ranks agree without further communication. The last
 * schedule is cached per program and communicator: repeated calls with the same counts pay
 * only the Allgather.
 * Level 2 (aapc_alltoallv_level2): the caller passes the whole byte matrix (row = source rank),
 * known locally on every rank (for example from the application's own decomposition); no
 * communication beyond the data. The matrix must be the call's counts on every rank.
 *
 * Any communicator (aapc_alltoallv_cluster.c): when prog->cluster is set and every rank of the
 * communicator is on a known machine of the cluster (AAPC_MACHINE or its host name), both
 * levels schedule on the communicator's job tree: subsets of the machines, any rank order,
 * several ranks per machine, dups, splits. Otherwise they run on the whole cluster's fixed
 * `tree` (one rank per machine, every machine), and any other communicator goes to
 * PMPI_Alltoallv with one warning.
 *
 * Threads: state is per communicator; threads may call on different communicators at once
 * (MPI_THREAD_MULTIPLE). Errors are raised through the communicator's error handler (the
 * caller checked the arguments with aapc_args_alltoallv first and returns the result as is).
 */
#ifndef AAPC_VLEVELS_H
#define AAPC_VLEVELS_H

#include <mpi.h>

#include "aapc_cluster.h"
#include "aapc_phased.h"
#include "aapc_vsched.h"
#include "aapc_vtables.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aapc_vprog {
    const char *name;            /* e.g. "paper_fig1_level1_sender_all", for messages */
    const aapc_schedule_t *key;  /* any schedule of the same machines (and host names): the
                                    communicator lookup; generated code passes its tables */
    const aapc_vtree *tree;      /* the switch tree (generated) */
    int scheduler;               /* AAPC_VSCHED_GREEDY, _ALLTOALL or _BALANCED */
    long long threshold, chunk;  /* as aapc_vsched_run */
    int sync;                    /* enum aapc_vsync */
    const aapc_cluster_t *cluster; /* the cluster's whole tree: on a communicator whose every
                                      rank is on a known machine of it, the schedule is
                                      computed on that communicator's job tree
                                      (aapc_alltoallv_cluster.c); NULL: `tree` only */
} aapc_vprog_t;

int aapc_alltoallv_level1(const aapc_vprog_t *prog, const void *sendbuf, const int sendcounts[],
                          const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                          MPI_Comm comm);

/* bytes: N x N (N = size of comm), bytes[i * N + j] = bytes rank i sends to rank j. */
int aapc_alltoallv_level2(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                          const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                          void *recvbuf, const int recvcounts[], const int rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_VLEVELS_H */
