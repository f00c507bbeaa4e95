/*
 * aapc_nbc.h: the non-blocking and persistent all-to-all (MPI_Ialltoall, MPI_Alltoall_init):
 * requests of our own that the application completes with its usual calls.
 *
 *   aapc_nbc_request.c   the request handles and the interposed completion calls (MPI_Wait*,
 *                        MPI_Test*, MPI_Start*, MPI_Request_free, MPI_Cancel,
 *                        MPI_Request_get_status), which drive our requests' progress;
 *   aapc_nbc_exec.c      a contention-free schedule run by tests instead of waits;
 *   aapc_nbc_alltoall.c  MPI_Ialltoall / MPI_Alltoall_init: the choice of way and the request;
 *   aapc_nbc_alltoallv.c MPI_Ialltoallv / MPI_Alltoallv_init;
 *   aapc_nbc_large.c     their large-count forms (_c) and MPI_Ialltoallw / MPI_Alltoallw_init.
 * Internal to runtime_c/.
 */
#ifndef AAPC_NBC_H
#define AAPC_NBC_H

#include <mpi.h>
#include <stdint.h>

#include "aapc_cluster.h"
#include "aapc_cluster_comm.h"
#include "aapc_comm.h"
#include "aapc_phased.h"
#include "aapc_vlevels.h" /* aapc_vprog_t */

#ifdef __cplusplus
extern "C" {
#endif

/* The MPI library has persistent collectives (MPI_Alltoall_init): MPI 4, or Open MPI 5, whose
   mpi.h still says 3.1. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define AAPC_HAVE_PERSISTENT_COLL 1
#endif

/* The tags of the next non-blocking or persistent call of ours on cc's private duplicate: 4 per
   call (data, syncs, the own block, MPI_Ialltoallv's rows of the byte matrix), slots cycling
   over a counter per communicator that every rank advances alike (the calls begin in the same
   order everywhere); the last tag, 64 + 4 * 8000 - 1, is below MPI's least MPI_TAG_UB, 32767. */
enum { AAPC_NBC_TAG0 = 64, AAPC_NBC_SLOTS = 8000 };
static inline int aapc_nbc_tag(aapc_cluster_comm_t *cc)
{
    return AAPC_NBC_TAG0 + 4 * (int)(cc->nb_calls++ % AAPC_NBC_SLOTS);
}

/* ---- requests (aapc_nbc_request.c) ------------------------------------------------------- */

/* What a request of ours does. start: begin one run (a persistent request's MPI_Start; a
   non-persistent request is started once, when it is made). progress: advance without waiting
   for other ranks; *done = 1 when the run is complete (rc is then the run's outcome).
   abandon: after an error, cancel what is posted. release: free ctx. */
typedef struct aapc_nbc_ops {
    int (*start)(void *ctx);
    int (*progress)(void *ctx, int *done);
    void (*release)(void *ctx);
} aapc_nbc_ops_t;

/* Make a request of ours on the user's communicator comm (whose error handler reports its
   errors), started at once unless persistent. *handle is an MPI_Request no other call returns
   (a never-started persistent request of the MPI library, kept as the name of ours). Returns an
   MPI error code; on error ctx is released. */
int aapc_nbc_request_make(const aapc_nbc_ops_t *ops, void *ctx, MPI_Comm comm, int persistent,
                          MPI_Request *handle);

/* Requests of ours in this process that are not freed (the completion calls' fast path). */
int aapc_nbc_live(void);

/* A datatype an operation of ours uses after its call has returned: the application may free
   its handle then, and the operation must still complete (MPI_Type_free: "any communication
   that is currently using this datatype will complete normally"). A named datatype (and
   MPI_DATATYPE_NULL) is kept as it is; a derived one is duplicated, and aapc_nbc_type_drop frees
   the duplicate when the operation is released. */
int aapc_nbc_type_hold(MPI_Datatype t, MPI_Datatype *kept);
void aapc_nbc_type_drop(MPI_Datatype *kept, MPI_Datatype original);

/* ---- the schedule run by tests (aapc_nbc_exec.c) ------------------------------------------ */

typedef struct aapc_nbexec {
    const aapc_schedule_t *s;
    aapc_comm_info_t info;
    int m, tag; /* this rank's machine (row) of s; data travel with tag, syncs with tag + 1 */
    int s0, s1, r0, r1, y0, y1, nfire, nfired, window;
    MPI_Request *rreq, *yreq, *freq, *sreq; /* one allocation */
    /* one run */
    const char *sbuf;
    char *rbuf;
    int scount, rcount;
    MPI_Datatype stype, rtype;
    MPI_Aint sblock, rblock;
    int64_t rbytes;         /* bytes every receive must bring */
    int next, rdone, sdone; /* next send to start; receives and sends complete, in order */
    int self_in_schedule, copied;
    /* MPI_Alltoallv (vmode): per-rank counts and displacements; pieces of messages travel as
       bytes (dense types only) */
    int vmode;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint sext, rext;
    int64_t ssize, rsize;
} aapc_nbexec_t;

/* Set x up for rows m of s on info (once per request; allocates the requests). */
int aapc_nbexec_init(aapc_nbexec_t *x, const aapc_schedule_t *s, const aapc_comm_info_t *info,
                     int tag);
/* One run: resolved buffers (send side already redirected for MPI_IN_PLACE); posts every data
   and sync receive and takes a first progress step (the first sends leave at once). */
int aapc_nbexec_start(aapc_nbexec_t *x, const void *sbuf, int scount, MPI_Datatype stype,
                      MPI_Aint sblock, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Aint rblock,
                      int64_t block_bytes);
/* One run of an Alltoallv piece schedule (s->send_pos etc.): dense types only (a piece of a
   message is its bytes); the send side already redirected for MPI_IN_PLACE. */
int aapc_nbexec_start_v(aapc_nbexec_t *x, const void *sbuf, const int scounts[],
                        const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[],
                        const int rdispls[], MPI_Datatype rtype);
/* Advance the run; *done = 1 when every request of it is complete. */
int aapc_nbexec_progress(aapc_nbexec_t *x, int *done);
/* After an error: cancel the receives, complete the sends. */
void aapc_nbexec_abandon(aapc_nbexec_t *x);
void aapc_nbexec_free(aapc_nbexec_t *x);

/* ---- the caller (aapc_nbc_caller.c) ------------------------------------------------------ */

/* Whether ret (an entry's return address) lies in an MPI library's Fortran bindings whose
   completion calls bypass our interposers (the library's Fortran entries are not the ones the
   process uses): such a call goes to the library's routine. */
int aapc_nbc_from_fortran(const void *ret);
#define AAPC_NBC_FORTRAN_WHY                                                                      \
    "called from the MPI library's Fortran bindings, whose completion calls do not reach this "  \
    "library (preload it, or link it before the MPI's Fortran libraries)"
#if defined(__GNUC__) || defined(__clang__)
#define AAPC_CALLER __builtin_return_address(0)
#else
#define AAPC_CALLER NULL
#endif

/* ---- MPI_Ialltoall and MPI_Alltoall_init (aapc_nbc_alltoall.c) ---------------------------- */

/* sync: the run-time synchronisation (AAPC_VSYNC_*) of the default routine, or -1 when the
   library's routine serves every call (a default the run-time scheduler cannot run).
   persistent: MPI_Alltoall_init (info as given), else MPI_Ialltoall. caller: the entry's
   return address (AAPC_CALLER): a Fortran binding's call goes to the library. */
int aapc_nbc_alltoall(const aapc_cluster_t *cluster, int sync, const char *name,
                      const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int persistent,
                      MPI_Info info, const void *caller, MPI_Request *request);

/* Calls begun per way in this process: [0] the library's, [1] ours (tests). */
void aapc_nbc_ways_begun(long long counts[2]);

/* ---- MPI_Ialltoallv and MPI_Alltoallv_init (aapc_nbc_alltoallv.c) ------------------------- */

/* prog: the level-1 program of the default (its synchronisation and scheduler), or NULL: the
   library's routine serves every call. */
int aapc_nbc_alltoallv(const aapc_vprog_t *prog, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm, int persistent, MPI_Info info, const void *caller,
                       MPI_Request *request);

/* Calls whose way was decided, per way in this process: [0] the linear exchange, [1] the
   phases (tests). */
void aapc_nbc_vways(long long counts[2]);

/* ---- a large-count entry's arguments, owned by the request (aapc_nbc_large.c) ------------- */

/* MPI_Ialltoallv_c / MPI_Alltoallv_init_c and MPI_Ialltoallw / MPI_Alltoallw_init restate
   their arguments in int counts of one datatype (copies, a contiguous type) for MPI_Ialltoallv
   / MPI_Alltoallv_init, which must outlive the call: the
   entry hands them over with aapc_nbc_own_next, and the next aapc_nbc_alltoallv of this thread
   takes them (aapc_nbc_own_take) and, in every case, releases them exactly once: at once when
   the call goes to the library (which then runs `library`: the entry's own call with its
   original arguments), else when the request is freed. A rank whose arguments cannot be said
   as int counts of one dense datatype (`row` and `linear` set; its int arguments are zero
   counts) marks its row of the
   gathered byte matrix (diagonal -1): every rank then takes the linear exchange, this one
   through `linear` (every receive and send of its original arguments at once into reqs[2 n],
   reqs[j] from j and reqs[n + j] to j, on dup with tag; the own block with tag + 2). */
typedef struct aapc_nbc_owned aapc_nbc_owned_t;
struct aapc_nbc_owned {
    int (*library)(aapc_nbc_owned_t *o, int persistent, MPI_Info info, MPI_Request *request);
    const long long *row; /* this rank's row of bytes (NULL: from the int arguments) */
    int (*linear)(aapc_nbc_owned_t *o, MPI_Comm dup, int tag, MPI_Request *reqs);
    void (*release)(aapc_nbc_owned_t *o);
};
void aapc_nbc_own_next(aapc_nbc_owned_t *o);
aapc_nbc_owned_t *aapc_nbc_own_take(void);

/* MPI_Ialltoallw for a Fortran binding (fortran/aapc_fortran_nbc.c) whose datatype arrays were
   converted into `types` (2 n: the send side, unset under MPI_IN_PLACE, then the receive side;
   malloc'd): the request owns them and frees them when it is freed. Where the call goes to the
   MPI library, library(ctx, request) runs instead, during this call: the MPI's own Fortran
   routine with the original arguments (which keeps its own arrays as long as its request), and
   `types` is freed. The count and displacement arrays are the caller's, read until completion
   as MPI allows. */
typedef int aapc_nbc_w_library_fn(void *ctx, MPI_Request *request);
int aapc_ialltoallw_owned(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          void *recvbuf, const int recvcounts[], const int rdispls[],
                          MPI_Datatype *types, MPI_Comm comm, aapc_nbc_w_library_fn *library,
                          void *ctx, MPI_Request *request);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_NBC_H */
