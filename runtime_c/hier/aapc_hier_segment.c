/*
 * aapc_hier_segment.c: the shared segment of one machine's ranks, through which the aggregated
 * all-to-all ways (aapc_hier_alltoall.c) gather a machine's blocks for its leader and hand the
 * leader's received blocks back, one copy on each side instead of an MPI_Gather and an
 * MPI_Scatter (seed 004 chapter 7, with the copies of a shared-memory node).
 *
 * Algorithm: one MPI-3 shared window (MPI_Win_allocate_shared, portable MPI-3: MPICH and Open
 * MPI) on the machine's node communicator, allocated by its rank 0 and mapped by every rank
 * (MPI_Win_shared_query), cached on the node communicator and grown (freed and allocated again,
 * collectively: every rank of a machine asks for the same size in the same call) when a call
 * needs more. Synchronisation is the shared-memory barrier of runtime_c/shm/ (atomic counters,
 * spin then futex) between MPI_Win_sync calls. A node communicator whose ranks cannot share
 * memory (they run on several hosts, or AAPC_SHM=0) has no segment: the caller then moves the
 * blocks with MPI_Gather / MPI_Scatter.
 * The windows are freed with the node communicator, or at the start of MPI_Finalize (an
 * attribute of MPI_COMM_SELF) if that comes first.
 * Cost: one window allocation per communicator and size class (collective over the machine);
 * a sync costs one shared-memory barrier (O(log8 R) cache-line transfers), no message.
 */
#include <stdint.h>
#include <stdlib.h>

#include "aapc_hier.h"
#include "aapc_lock.h"
#include "aapc_shm.h"

struct segment {
    MPI_Win win;
    char *base;
    MPI_Aint size;
    int shared; /* 0: the node's ranks cannot share memory (no window) */
    MPI_Comm node;
    struct segment *prev, *next; /* the live records, in the order they were made */
};

static int segment_keyval = MPI_KEYVAL_INVALID, finalize_keyval = MPI_KEYVAL_INVALID;
static aapc_mutex_t segment_lock = AAPC_MUTEX_INIT;
static struct segment *first, *last;

static void unlink_record(struct segment *s)
{
    aapc_lock(&segment_lock);
    if (s->prev != NULL)
        s->prev->next = s->next;
    else if (first == s)
        first = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    else if (last == s)
        last = s->prev;
    s->prev = s->next = NULL;
    aapc_unlock(&segment_lock);
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still works: the windows
   (ours and runtime_c/shm's) go then, in the order they were made, which every rank of a
   machine shares (they were made by collectives on the same communicators). Left to the
   deletion of the communicators that hold them, later in MPI_Finalize, some MPI libraries
   free a window after their one-sided layer is gone (Open MPI 4.1: a crash at exit). */
static int release_at_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    for (;;) {
        aapc_lock(&segment_lock);
        struct segment *s = first;
        aapc_unlock(&segment_lock);
        if (s == NULL)
            return MPI_SUCCESS;
        MPI_Comm node = s->node;
        /* segment_delete unlinks and frees s; if the deletion fails, s stays attached (freed
           with node) and leaves the list here, so the loop ends */
        if (PMPI_Comm_delete_attr(node, segment_keyval) != MPI_SUCCESS)
            unlink_record(s);
        aapc_shm_release(node);
    }
}

static void segment_release(struct segment *s)
{
    if (s->win != MPI_WIN_NULL) {
        PMPI_Win_unlock_all(s->win);
        PMPI_Win_free(&s->win);
    }
    s->base = NULL;
    s->size = 0;
}

static int segment_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    unlink_record(value);
    segment_release(value);
    free(value);
    return MPI_SUCCESS;
}

/* Round a request up to a power of two of at least 64 KiB, so a growing call size reallocates
   only a few times. */
static MPI_Aint size_class(MPI_Aint bytes)
{
    MPI_Aint s = (MPI_Aint)1 << 16;
    while (s < bytes && s < ((MPI_Aint)1 << 40))
        s *= 2;
    return s;
}

/* The segment record of node (collective on its first use: whether its ranks share memory). */
static int segment_of(MPI_Comm node, struct segment **out)
{
    int rc, flag = 0;
    struct segment *s = NULL;
    *out = NULL;
    if ((rc = aapc_keyval_once(&segment_lock, &segment_keyval, segment_delete)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_get_attr(node, segment_keyval, &s, &flag)) != MPI_SUCCESS)
        return rc;
    if (!flag) {
        static int set_up = 0; /* the release at MPI_Finalize, set up once per process */
        int initialized = 0;   /* an MPI sessions program has no MPI_COMM_SELF: nothing to set
                                  up, its windows go with their communicators */
        PMPI_Initialized(&initialized);
        aapc_lock(&segment_lock);
        int first_time = !set_up && initialized;
        set_up |= initialized;
        aapc_unlock(&segment_lock);
        if (first_time &&
            ((rc = aapc_keyval_once(&segment_lock, &finalize_keyval, release_at_finalize)) !=
                 MPI_SUCCESS ||
             (rc = PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL)) != MPI_SUCCESS))
            return rc;
        int usable = 0; /* no window where threads could race: MPI_Gather/Scatter then */
        if (!aapc_shm_windows_unsafe() && (rc = aapc_shm_usable(node, &usable)) != MPI_SUCCESS)
            return rc;
        if ((s = calloc(1, sizeof *s)) == NULL)
            return MPI_ERR_NO_MEM; /* every rank of the machine asks: a rank short of memory
                                      fails here alone, before any collective of its own */
        s->win = MPI_WIN_NULL;
        s->shared = usable;
        s->node = node;
        if ((rc = PMPI_Comm_set_attr(node, segment_keyval, s)) != MPI_SUCCESS) {
            free(s);
            return rc;
        }
        aapc_lock(&segment_lock);
        s->prev = last;
        if (last != NULL)
            last->next = s;
        else
            first = s;
        last = s;
        aapc_unlock(&segment_lock);
    }
    *out = s;
    return MPI_SUCCESS;
}

int aapc_hier_segment_shared(MPI_Comm node, int *shared)
{
    struct segment *s;
    int rc = segment_of(node, &s);
    *shared = rc == MPI_SUCCESS && s->shared;
    return rc;
}

int aapc_hier_segment(MPI_Comm node, MPI_Aint bytes, char **base)
{
    int rc, rank;
    struct segment *s = NULL;
    *base = NULL;
    if ((rc = segment_of(node, &s)) != MPI_SUCCESS)
        return rc;
    if (!s->shared)
        return MPI_SUCCESS;
    if (s->size < bytes) { /* every rank of the machine is here with the same size */
        MPI_Aint want = size_class(bytes), qsize;
        int disp;
        void *mine = NULL, *at = NULL;
        segment_release(s);
        if ((rc = PMPI_Comm_rank(node, &rank)) != MPI_SUCCESS ||
            (rc = PMPI_Win_allocate_shared(rank == 0 ? want : 0, 1, MPI_INFO_NULL, node, &mine,
                                           &s->win)) != MPI_SUCCESS)
            return rc;
        if ((rc = PMPI_Win_shared_query(s->win, 0, &qsize, &disp, &at)) != MPI_SUCCESS ||
            (rc = PMPI_Win_lock_all(MPI_MODE_NOCHECK, s->win)) != MPI_SUCCESS) {
            PMPI_Win_free(&s->win);
            return rc;
        }
        s->base = at;
        s->size = qsize;
    }
    *base = s->base;
    return MPI_SUCCESS;
}

int aapc_hier_segment_sync(MPI_Comm node)
{
    int rc, flag = 0;
    struct segment *s = NULL;
    if ((rc = PMPI_Comm_get_attr(node, segment_keyval, &s, &flag)) != MPI_SUCCESS)
        return rc;
    if (!flag || s->win == MPI_WIN_NULL)
        return MPI_ERR_OTHER; /* no segment: the caller never syncs one */
    if ((rc = PMPI_Win_sync(s->win)) != MPI_SUCCESS || (rc = aapc_shm_barrier(node)) != MPI_SUCCESS)
        return rc;
    return PMPI_Win_sync(s->win);
}
