/*
 * aapc_shm_comm.c: the per-communicator state of the shared-memory collectives: node check,
 * shared window, barrier tree, cached as a communicator attribute and freed with it.
 *
 * Algorithm: on the first collective call for comm, every rank runs MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED, key = rank, so node ranks equal comm ranks) and compares the node size
 * with the comm size (all ranks agree: an allreduce of the comparison). If one node holds the
 * whole communicator, node rank 0 allocates the whole window with MPI_Win_allocate_shared and the
 * others map it with MPI_Win_shared_query; rank 0 zeroes it before a barrier. The state is set as
 * an attribute with a delete callback, so MPI_Comm_free releases window and node communicator.
 * Cost: one split, one allreduce, one window allocation and one barrier per communicator, paid
 * once; every later call costs one attribute lookup.
 */
#define _GNU_SOURCE
#include "aapc_shm_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int shm_keyval = MPI_KEYVAL_INVALID;
static atomic_flag shm_keyval_lock = ATOMIC_FLAG_INIT;

static int env_disabled(void)
{
    static int disabled = -1;
    if (disabled < 0) {
        const char *v = getenv("AAPC_SHM");
        disabled = v != NULL && strcmp(v, "0") == 0;
    }
    return disabled;
}

static void state_free(aapc_shm_state *st)
{
    if (st == NULL) {
        return;
    }
    aapc_shm_channels_free(st);
    if (st->win != MPI_WIN_NULL) {
        PMPI_Win_unlock_all(st->win);
        PMPI_Win_free(&st->win);
    }
    if (st->node != MPI_COMM_NULL) {
        PMPI_Comm_free(&st->node);
    }
    free(st->bar_parent);
    free(st->bar_fanin);
    free(st);
}

static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    state_free(attr);
    return MPI_SUCCESS;
}

/* Combining tree over p ranks with fan-in d: leaves are groups of d ranks (rank r arrives at node
   r / d); each level groups d nodes of the level below; the last level has one node. */
static int build_barrier_tree(aapc_shm_state *st)
{
    int p = st->size, d = AAPC_SHM_BAR_DEGREE;
    int total = 0;
    for (int level = (p + d - 1) / d;; level = (level + d - 1) / d) {
        total += level;
        if (level == 1) {
            break;
        }
    }
    if (p <= d) {
        total = 1; /* flat: one counter */
    }
    st->bar_nodes = total;
    st->bar_parent = malloc(sizeof(int) * (size_t)total);
    st->bar_fanin = malloc(sizeof(int) * (size_t)total);
    if (st->bar_parent == NULL || st->bar_fanin == NULL) {
        return MPI_ERR_NO_MEM;
    }
    if (total == 1) {
        st->bar_parent[0] = -1;
        st->bar_fanin[0] = p;
        return MPI_SUCCESS;
    }
    /* levels stored consecutively: level 0 nodes [0, n0), level 1 [n0, n0 + n1), ... */
    int first = 0, count = (p + d - 1) / d, below = p;
    for (;;) {
        int next_first = first + count, next_count = (count + d - 1) / d;
        for (int i = 0; i < count; i++) {
            int lo = i * d, hi = lo + d < below ? lo + d : below;
            st->bar_fanin[first + i] = hi - lo;
            st->bar_parent[first + i] = count == 1 ? -1 : next_first + i / d;
        }
        if (count == 1) {
            break;
        }
        below = count;
        first = next_first;
        count = next_count;
    }
    return MPI_SUCCESS;
}

static size_t default_slot_bytes(int p)
{
    const char *v = getenv("AAPC_SHM_SLOT_KB");
    if (v != NULL && atol(v) > 0) {
        return aapc_shm_align_down((size_t)atol(v) * 1024);
    }
    size_t by_pairs = (size_t)p * (size_t)p * 8192;
    return by_pairs > 512 * 1024 ? by_pairs : 512 * 1024;
}

static int state_create(MPI_Comm comm, aapc_shm_state **out)
{
    aapc_shm_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return MPI_ERR_NO_MEM;
    }
    st->node = MPI_COMM_NULL;
    st->win = MPI_WIN_NULL;
    st->chan_win = MPI_WIN_NULL;
    st->cma = 0;
    int rc, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        *out = st; /* unusable: intercommunicator */
        return MPI_SUCCESS;
    }
    PMPI_Comm_rank(comm, &st->rank);
    PMPI_Comm_size(comm, &st->size);
    rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, st->rank, MPI_INFO_NULL, &st->node);
    if (rc != MPI_SUCCESS) {
        state_free(st);
        return rc;
    }
    int node_size = 0, whole = 0;
    PMPI_Comm_size(st->node, &node_size);
    int mine = node_size == st->size && !env_disabled();
    rc = PMPI_Allreduce(&mine, &whole, 1, MPI_INT, MPI_LAND, comm);
    if (rc != MPI_SUCCESS || !whole) {
        PMPI_Comm_free(&st->node);
        *out = st;
        return rc;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    st->oversubscribed = cpus > 0 && st->size > cpus;
    st->futex = aapc_shm_futex_default();
    st->cma = -1; /* probed on the first call that would use it (aapc_shm_cma.c) */
    st->pid = (int64_t)getpid();
    rc = build_barrier_tree(st);
    if (rc != MPI_SUCCESS) {
        state_free(st);
        return rc;
    }
    st->slot_bytes = default_slot_bytes(st->size);
    st->off_bar = 0;
    st->off_release = (size_t)st->bar_nodes * AAPC_SHM_LINE;
    st->off_flags = st->off_release + AAPC_SHM_LINE;
    st->off_info = st->off_flags + (size_t)st->size * AAPC_SHM_LINE;
    size_t ctrl = st->off_info + (size_t)st->size * AAPC_SHM_LINE;
    st->off_slots = (ctrl + 4095) & ~(size_t)4095;
    size_t total = st->off_slots + AAPC_SHM_NSLOTS * st->slot_bytes;

    char *mine_base = NULL;
    rc = PMPI_Win_allocate_shared(st->rank == 0 ? (MPI_Aint)total : 0, 1, MPI_INFO_NULL, st->node,
                                  &mine_base, &st->win);
    if (rc != MPI_SUCCESS) {
        st->win = MPI_WIN_NULL;
        state_free(st);
        return rc;
    }
    MPI_Aint got = 0;
    int disp = 0;
    rc = PMPI_Win_shared_query(st->win, 0, &got, &disp, &st->base);
    if (rc != MPI_SUCCESS || (size_t)got < total) {
        state_free(st);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    PMPI_Win_lock_all(MPI_MODE_NOCHECK, st->win);
    if (st->rank == 0) {
        for (size_t off = 0; off < st->off_slots; off += sizeof(aapc_shm_word)) {
            atomic_init((aapc_shm_word *)(void *)(st->base + off), 0);
        }
    }
    PMPI_Win_sync(st->win);
    rc = PMPI_Barrier(st->node);
    PMPI_Win_sync(st->win);
    st->usable = 1;
    *out = st;
    return rc;
}

aapc_shm_state *aapc_shm_state_get(MPI_Comm comm, int *err)
{
    /* created once under a lock: threads meet here on their own communicators at once (a
       second key orphaned the first one's states: heap corruption under Open MPI) */
    *err = MPI_SUCCESS;
    while (atomic_flag_test_and_set_explicit(&shm_keyval_lock, memory_order_acquire))
        ;
    if (shm_keyval == MPI_KEYVAL_INVALID)
        *err = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &shm_keyval, NULL);
    atomic_flag_clear_explicit(&shm_keyval_lock, memory_order_release);
    if (*err != MPI_SUCCESS) {
        return NULL;
    }
    aapc_shm_state *st = NULL;
    int found = 0;
    *err = PMPI_Comm_get_attr(comm, shm_keyval, &st, &found);
    if (*err != MPI_SUCCESS) {
        return NULL;
    }
    if (found) {
        return st;
    }
    *err = state_create(comm, &st);
    if (*err != MPI_SUCCESS) {
        return NULL;
    }
    *err = PMPI_Comm_set_attr(comm, shm_keyval, st);
    if (*err != MPI_SUCCESS) {
        state_free(st);
        return NULL;
    }
    return st;
}

int aapc_shm_release(MPI_Comm comm)
{
    void *st = NULL;
    int found = 0;
    if (shm_keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, shm_keyval, &st, &found) != MPI_SUCCESS || !found)
        return MPI_SUCCESS;
    return PMPI_Comm_delete_attr(comm, shm_keyval);
}

int aapc_shm_usable(MPI_Comm comm, int *flag)
{
    int err;
    aapc_shm_state *st = aapc_shm_state_get(comm, &err);
    *flag = st != NULL && st->usable;
    return err;
}

int aapc_shm_windows_unsafe(void)
{
    int level = MPI_THREAD_SINGLE;
#ifdef OPEN_MPI
    PMPI_Query_thread(&level);
#endif
    return level == MPI_THREAD_MULTIPLE;
}
