/*
 * aapc_phased.h: the contract between generated schedule tables and the phase executor.
 *
 * A generated routine is a set of constant tables (one row range per machine, CSR style: a rank
 * reads only its own rows) plus a thin entry point that calls aapc_alltoall_run(). All decisions
 * (phases, synchronisation, dummies, barriers) are made offline in Python; this runtime only
 * executes them.
 *
 * Machines are numbered 0..nmachines-1 in the topology's rank order. Machine m runs on the
 * communicator rank given by the rank mapping (`placement`, else by hostname when `hosts` is
 * set, else identity).
 */
#ifndef AAPC_PHASED_H
#define AAPC_PHASED_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What event fires a machine's outgoing synchronisation messages. */
enum aapc_sync_kind {
    AAPC_SYNC_NONE = 0,     /* no pair-wise syncs (no-sync, dummy, barrier-all, barrier-partial-none) */
    AAPC_SYNC_SENDER = 1,   /* after my send of that send entry completes (sender-based, seed 002 s5) */
    AAPC_SYNC_RECEIVER = 2  /* after my receive of that recv entry completes (receiver-based) */
};

/* Where the ranks of a communicator run, as the run-time routines see it (the cluster's
   machines by AAPC_MACHINE or host name: common/aapc_cluster_comm.c aapc_cluster_place). */
typedef struct aapc_placed {
    int size;                    /* ranks of the communicator */
    const int32_t *rank_machine; /* machine of every rank; -1: a rank on an unknown host */
    int all_known;               /* every rank is on a machine of the cluster */
    int one_host;                /* every rank is on one host that is not a machine (a run on
                                    a workstation: no switch link is crossed) */
    const char *why;             /* not all known: the cause, naming the host ("" otherwise) */
    const char *const *machine_name; /* the cluster's machine names, for messages */
} aapc_placed_t;

typedef struct aapc_placement {
    const void *cluster; /* the generated aapc_cluster_t */
    /* Fill *out for comm (collective on its first use, cached on it); `name` and `routine`
       name the caller in a warning. Returns an MPI error code; out->rank_machine is NULL for
       an inter-communicator. */
    int (*place)(const void *cluster, MPI_Comm comm, const char *name, const char *routine,
                 aapc_placed_t *out);
} aapc_placement_t;

typedef struct aapc_schedule {
    const char *name;        /* e.g. "paper_fig1_sender_all", used in warnings */
    int32_t nmachines;
    int32_t nphases;
    int32_t sync_kind;       /* enum aapc_sync_kind */
    int32_t barrier_every;   /* 0: no barrier; b > 0: a barrier between blocks of b phases
                                (after phases b-1, 2b-1, ..., never after the last phase) */

    /* Data sends of machine m, in phase order: entries send_off[m] .. send_off[m+1]-1.
       send_peer >= 0: destination machine of a data message (block for that machine).
       send_peer <  0: a dummy message of the same size to machine -(peer+1) (may be m itself). */
    const int32_t *send_off, *send_phase, *send_peer;

    /* Receives of machine m, in phase order: recv_off[m] .. recv_off[m+1]-1.
       recv_peer >= 0: source machine of a data message; < 0: dummy from -(peer+1). */
    const int32_t *recv_off, *recv_phase, *recv_peer;

    /* Sync receives machine m pre-posts, in posting order: syncin_off[m] .. syncin_off[m+1]-1;
       syncin_peer = source machine. For each source, the order equals the order in which that
       source sends its syncs to m, so MPI's non-overtaking rule matches them one to one. */
    const int32_t *syncin_off, *syncin_peer;

    /* Before starting send entry e (global index), wait for the sync receives with posting
       indices wait_idx[wait_off[e] .. wait_off[e+1]-1] (relative to syncin_off[m]). */
    const int32_t *wait_off, *wait_idx;

    /* After event entry e completes (a send entry for AAPC_SYNC_SENDER, a recv entry for
       AAPC_SYNC_RECEIVER; global index), send zero-byte syncs to the machines
       fire_peer[fire_off[e] .. fire_off[e+1]-1], in that order. NULL when sync_kind is NONE. */
    const int32_t *fire_off, *fire_peer;

    /* NULL, or the hostname of every machine: ranks are then mapped to machines by
       MPI_Get_processor_name (first unused machine with that host name, in rank order). */
    const char *const *hosts;

    /* MPI_Alltoallv schedules only (NULL for MPI_Alltoall): every data entry moves the byte
       range [pos, pos + len) of its (source, destination) message, so one message may be split
       into pieces sent in different phases. Per send entry and per recv entry. */
    const int64_t *send_pos, *send_len, *recv_pos, *recv_len;

    /* Level 3 only (NULL otherwise): the compiled byte-count matrix, nmachines x nmachines,
       row = source machine. A call whose counts differ falls back to PMPI_Alltoallv on every
       rank (decided collectively with one MPI_Allreduce of an int). */
    const int64_t *pattern;

    /* Phases a rank keeps in flight (0 or 1: one; variants *-w<w>): it starts its send of
       phase q once its sends and (AAPC_SYNC_RECEIVER) receives of phases <= q - window are
       complete; the syncs then order each message before the one `window` places later on its
       link. Only with barrier_every == 0 and no dummy messages. */
    int32_t window;

    /* NULL, or where the ranks run (generated schedules: the cluster's machines). With it the
       schedule runs only on a placement it can confirm: every rank on a known machine, one
       rank per machine (or every rank on one host outside the cluster: rank order, as nothing
       crosses a switch); otherwise the library's routine runs, and the warning names the
       cause. Without it: `hosts`, else MPI_COMM_WORLD rank order (common/aapc_comm.c). */
    const aapc_placement_t *placement;
} aapc_schedule_t;

/* The largest window (aapcgen/alltoall/variants.py MAX_WINDOW; tests/test_window.py). */
#define AAPC_MAX_WINDOW 4096

/* MPI_Alltoall semantics (any datatypes, counts including 0, MPI_IN_PLACE, MPI error codes).
   Falls back to PMPI_Alltoall when comm does not match the schedule. */
int aapc_alltoall_run(const aapc_schedule_t *s, const void *sendbuf, int sendcount,
                      MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm);

/* The same on a communicator already looked up (info->usable): the run-time scheduled
   routines (alltoall/aapc_alltoall_cluster.c) build s and info themselves. */
struct aapc_comm_info;
int aapc_alltoall_exec(const aapc_schedule_t *s, const struct aapc_comm_info *info,
                       const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype);

/* MPI_Alltoallv semantics with the pieces of an Alltoallv schedule (s->send_pos != NULL): any
   datatypes, zero counts, non-contiguous displacements, MPI_IN_PLACE. Falls back to
   PMPI_Alltoallv when comm does not match the schedule or (level 3) the counts differ from
   s->pattern. */
int aapc_alltoallv_run(const aapc_schedule_t *s, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm);

/* The same with the communicator already looked up with aapc_comm_lookup(key, comm, ...) for a
   schedule `key` of the same machines (levels 1 and 2 build s at run time and look up a fixed
   key). `info` is a const struct aapc_comm_info *. */
struct aapc_comm_info;
int aapc_alltoallv_exec(const aapc_schedule_t *s, struct aapc_comm_info *info,
                        const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_PHASED_H */
