/*
 * aapc_cluster_comm.h: which cluster machine each rank of a communicator runs on, and the job
 * tree of that communicator, cached on it (aapc_cluster_comm.c).
 *
 * Shared by the run-time MPI_Alltoall (alltoall/aapc_alltoall_cluster.c) and MPI_Alltoallv
 * (alltoallv/aapc_alltoallv_cluster.c): one gather per communicator whatever the routines used
 * on it, and per-routine slots freed with the communicator.
 */
#ifndef AAPC_CLUSTER_COMM_H
#define AAPC_CLUSTER_COMM_H

#include <mpi.h>

#include "aapc_cluster.h"
#include "aapc_phased.h" /* aapc_placed_t */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aapc_cluster_slot {
    const void *key;          /* what owns it: a routine's static data */
    void *data;
    void (*free_fn)(void *);  /* frees data with the communicator */
    struct aapc_cluster_slot *next;
} aapc_cluster_slot_t;

/* The sibling communicators of one MPI_Comm_split, recorded on each of them by
   aapc_cluster_split: enough to schedule the union of their all-to-alls on the parent's ranks
   (alltoall/aapc_alltoall_cluster.c). Shared by the children of this rank (one per split),
   freed with the last of them. */
typedef struct aapc_split_family {
    int refs;
    MPI_Comm dup;             /* a private duplicate of the parent: the union's traffic */
    int size, rank;           /* the parent's size and this rank's rank in it */
    int32_t *rank_machine;    /* machine of every parent rank (all known) */
    int *color, *child_rank;  /* colour (MPI_UNDEFINED: no child) and rank in the child */
} aapc_split_family_t;

typedef struct aapc_cluster_comm {
    MPI_Comm dup;                  /* private duplicate: all traffic of the routines */
    int size, rank;
    const aapc_cluster_t *cluster; /* what rank_machine was gathered for */
    int32_t *rank_machine;         /* machine of every rank; -1: a rank on an unknown host */
    int all_known;                 /* every rank is on a known machine (and size >= 2) */
    int one_host;                  /* no rank is: all run on one host outside the cluster */
    char why[256];                 /* not all_known: why (the first unknown rank's host) */
    int settings_agreed;           /* every rank has the same settings (aapc_settings.h) */
    int shape_state;               /* 0: not computed, 1: computed, -1: none */
    aapc_job_shape_t shape;        /* what the per-call selection reads */
    int memo_set;                  /* the last MPI_Alltoall choice on it (the same block size */
    unsigned memo_ways;            /* again: no cost model evaluated): its allowed ways, */
    long long memo_bytes;          /* block bytes */
    int memo_way;                  /* and way */
    int vours;                     /* the last level-1 MPI_Alltoallv on it took one of our ways:
                                      the next agrees on its block in the checks' reduction */
    int vlibrary;                  /* MPI_Alltoallv by size: 1 the library at every size (no
                                      agreement needed), -1 not, 0 not yet known */
    int tree_state;                /* 0: not built, 1: built, -1: the scheduler refused */
    aapc_job_tree_t tree;
    char tree_error[160];
    aapc_cluster_slot_t *slots;
    aapc_split_family_t *family;   /* NULL unless the communicator came from a recorded split */
    struct aapc_cluster_pending *pending; /* a gather posted by a non-blocking call, not adopted */
    unsigned nb_calls;             /* non-blocking and persistent calls begun on it (their tags) */
    int holds;                     /* requests still using this state (aapc_cluster_comm_hold) */
    int deleted;                   /* the communicator is freed: the last hold frees the state */
} aapc_cluster_comm_t;

/* The communicator's state for `cluster`, collective on its first use (one MPI_Comm_dup, one
   MPI_Allgather of two ints; when a rank is on an unknown host, one more of every rank's
   cause). *out is NULL for an inter-communicator. Ranks on unknown hosts: rank 0 warns once
   per cause for `routine` (aapc_warn_fallback: once per job), naming the host or the mistyped
   AAPC_MACHINE, unless `warn_unknown` is 0 and every rank runs on one host outside the
   cluster (a workstation: the caller has another routine for that). Returns an MPI error
   code. */
int aapc_cluster_comm(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name,
                      const char *routine, int warn_unknown, aapc_cluster_comm_t **out);

/* The non-blocking counterpart of aapc_cluster_comm's first use, for MPI_Ialltoall and
   MPI_Alltoall_init (which must not wait for other ranks): local. When comm has no state yet,
   posts MPI_Comm_idup and MPI_Iallgather of the same four ints on comm (in the collective
   order of the call that begins it, the same on every rank) and leaves them in cc->pending;
   aapc_cluster_comm_adopt completes them (*posted = 1). A gather an earlier call posted is
   completed here (every rank posted it: the wait needs only their progress). *out is NULL for
   a null or inter-communicator or outside MPI_Init..MPI_Finalize, and under Open MPI for a
   communicator without its duplicate yet (*why says so: Open MPI's MPI_Comm_idup breaks other
   non-blocking collectives posted on the parent before it completes, open-mpi/ompi#2025, and a
   blocking dup would make the call wait for the other ranks; a blocking MPI_Alltoall or
   MPI_Alltoallv of the library's on the communicator makes the duplicate). Returns an MPI
   error code. */
int aapc_cluster_comm_begin(const aapc_cluster_t *cluster, MPI_Comm comm, aapc_cluster_comm_t **out,
                            int *posted, const char **why);
#define AAPC_NO_IDUP_WHY                                                                        \
    "Open MPI: its MPI_Comm_idup breaks the program's other non-blocking collectives on the "  \
    "communicator (open-mpi/ompi#2025); a blocking MPI_Alltoall of the library's on it first "  \
    "gives it the duplicate the non-blocking ways need"

/* Complete a gather posted by aapc_cluster_comm_begin: test it (wait = 0; *done says whether it
   completed) or wait for it (wait = 1; the other ranks posted it too, so it needs nothing of
   them but their progress). On completion the table is adopted as aapc_cluster_comm's would
   be, except that a rank on an unknown machine or settings that differ are said by rank 0
   from the table alone (no further gather). Returns an MPI error code. */
int aapc_cluster_comm_adopt(aapc_cluster_comm_t *cc, int wait, int *done);

/* A request keeps the state of its communicator alive past MPI_Comm_free until released;
   release returns an MPI error code (freeing the private duplicate). */
void aapc_cluster_comm_hold(aapc_cluster_comm_t *cc);
int aapc_cluster_comm_release(aapc_cluster_comm_t *cc);

/* The state and job shape of comm for a per-call choice of way (the run-time MPI_Alltoall and
   MPI_Alltoallv): *shape is NULL where there is no choice to make (no cluster, a null or
   inter-communicator, a call outside MPI_Init..MPI_Finalize, a rank on an unknown machine).
   Collective only on the first use of comm (aapc_cluster_comm). Returns an MPI error code. */
int aapc_cluster_comm_choice(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name,
                             const char *routine, int warn_unknown, aapc_cluster_comm_t **cc,
                             const aapc_job_shape_t **shape);

/* aapc_placement_t.place of the generated schedules: where the ranks of comm run, from
   aapc_cluster_comm (the same gather as the run-time routines; never warns for a run on one
   host outside the cluster). */
int aapc_cluster_place(const void *cluster, MPI_Comm comm, const char *name, const char *routine,
                       aapc_placed_t *out);

/* Why the run-time routine does not run on this communicator, for the report: the unknown
   host, the scheduler's refusal, or a fixed phrase. */
const char *aapc_cluster_comm_why(const aapc_cluster_comm_t *cc);

/* MPI_Comm_split (PMPI) that records the siblings on the new communicator when every rank of
   comm is on a known machine of `cluster`: collective over comm, one MPI_Allgather of two ints
   and one MPI_Comm_dup on top of the split (plus, on comm's first use, what aapc_cluster_comm
   does). Inter-communicators: the split alone. Returns an MPI error code. */
int aapc_cluster_split(const aapc_cluster_t *cluster, MPI_Comm comm, int color, int key,
                       MPI_Comm *newcomm);

/* MPI_Cart_sub (PMPI) that records the siblings the same way (the children of one call are the
   colours of MPI_Cart_sub's own split: the coordinates in the dropped dimensions). */
int aapc_cluster_cart_sub(const aapc_cluster_t *cluster, MPI_Comm comm, const int remain_dims[],
                          MPI_Comm *newcomm);

/* A recorded sibling's family communicator (the parent's private duplicate, on which every
   rank of the parent takes part), MPI_COMM_NULL when comm is not a recorded sibling. Local. */
MPI_Comm aapc_cluster_family_comm(MPI_Comm comm);

/* The job tree of the communicator (built once): NULL when the scheduler refuses it (the
   reason is in cc->tree_error) or when out of memory (*nomem set). */
const aapc_job_tree_t *aapc_cluster_comm_tree(aapc_cluster_comm_t *cc, int *nomem);

/* The generated entry points' first step on an intra-communicator: its first use gathers the
   machines and the settings (aapc_cluster_comm, no warning), so that every choice a setting
   makes (the variant, the Alltoallv routine, recorded splits) is the same on every rank.
   Later calls: one attribute lookup. Returns an MPI error code. */
int aapc_cluster_comm_settle(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name);

/* What the gather of comm's first use found of the settings (aapc_settings.h): 1 every rank
   has the same, 0 they differ, -1 comm was never gathered. No communication. */
int aapc_cluster_comm_agreed(MPI_Comm comm);

/* The shape of the communicator's job (computed once; cluster/aapc_cluster_shape.c): NULL when
   some rank's machine is unknown, or when out of memory (*nomem set). */
const aapc_job_shape_t *aapc_cluster_comm_shape(aapc_cluster_comm_t *cc, int *nomem);

/* AAPC_INFLIGHT: the bytes of blocks a rank may keep in flight towards the others in the
   windows the block size sets (cluster/aapc_cluster.h aapc_inflight_window); unset: the
   shape's (its cluster's, the topology's `inflight`, or AAPC_INFLIGHT_BYTES: shape->inflight).
   A setting every rank shares; a value that is not a whole number of at least 1 is said once
   and the shape's runs. */
double aapc_inflight_budget(MPI_Comm comm, const aapc_job_shape_t *shape);

/* AAPC_DUMP_SCHEDULE: the log-round members' machines in their order, member k on machine
   machine_of[rank_at[k]] (rank_at NULL: machine_of[k]); aapcgen verify TOPO --schedule FILE
   proves it: aapcgen/verify/loground.py. dg: the tree's digits the exchange runs in (radix
   and groups per level), NULL: Bruck's radix 2. */
void aapc_cluster_dump_loground(const aapc_cluster_t *cl, const int32_t *machine_of,
                                const int *rank_at, int n, const aapc_digits_t *dg);

/* The communicator's ranks in the switch tree's depth-first order (cluster/aapc_cluster_order.c;
   the ranks of a machine together, by rank): rank_at[k] is the rank at place k, the log-round
   ways' numbering. Computed once (*fresh = 1 that time) and kept with the communicator; needs
   all_known. Returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
int aapc_cluster_comm_tree_order(aapc_cluster_comm_t *cc, const int **rank_at, int *fresh);

/* The slot of `key` on this communicator, created empty (data NULL) on first use; NULL when
   out of memory. */
aapc_cluster_slot_t *aapc_cluster_comm_slot(aapc_cluster_comm_t *cc, const void *key,
                                            void (*free_fn)(void *));

#ifdef __cplusplus
}
#endif
#endif /* AAPC_CLUSTER_COMM_H */
