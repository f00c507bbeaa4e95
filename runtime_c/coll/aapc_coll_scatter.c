/*
 * aapc_coll_scatter.c: MPI_Scatter and MPI_Scatterv across machines, machine by machine (seed
 * 004's leader-based composition, sections 6.2-6.3, applied to the one-to-all scatter; the
 * aggregation of seed 000 section 4.1: one message per machine, not per rank).
 *
 * Algorithm (N machines, R_k ranks on machine k, P ranks, b_q bytes for rank q):
 *   1. Scatterv only: on every machine but the root's, the leader gathers its ranks' byte
 *      counts (seed 003's lock-free channels in the machine's segment, runtime_c/shm/);
 *   2. the root sends every other machine its ranks' blocks, in the machine's local order, as
 *      one message to the machine's leader, straight from the send buffer (an indexed datatype
 *      per machine, no copy at the root; the N - 1 messages in flight at once);
 *   3. on the root's machine the root scatters the machine's blocks from the send buffer with
 *      the MPI library's Scatterv on the machine's ranks; on every other machine the leader
 *      scatters the part it received: the library's Scatter (equal blocks), or one message
 *      per rank (Scatterv, as MPICH's linear Scatterv, through the lock-free channels; a block
 *      beyond INT_MAX bytes goes through the library's send, as one count of bytes could not
 *      say it).
 *   The parts travel packed (MPI_PACKED: a message of any type may be received as packed
 *   bytes, and packed bytes received with any type of the same signature), so every rank's
 *   own datatype and count describe its block, as in the library's routine.
 * With AAPC_SCATTER=mcast (Scatter only), step 2 is seed 000's aggregate over IP multicast
 * among the leaders (aapc_coll_mcast.c): the root packs the other machines' blocks in machine
 * order, hands them to its leader (one message on the machine) when it is not the leader, and
 * that leader multicasts the aggregate once; each leader keeps its machine's part. Cost: one
 * reliable multicast of (P - R) b bytes (every leader receives all of it), 2 alpha + the ACK
 * round, against N - 1 messages: it wins while (P - R) b is small (seed 000 section 4.1).
 * Cost: the root's link carries the other machines' bytes once, sum_{q off the root's machine}
 * b_q beta, in N - 1 messages ((N - 1) o + alpha) instead of P - 1 (linear: MPICH's Scatterv)
 * or log2 P sequential steps with forwarding (binomial: MPICH's Scatter, the same bytes leave
 * the root in log2 P rounds); each machine then pays its leader's copy out, R_k b beta_m, and
 * the library's on-machine scatter.
 */
#include <limits.h>
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_exec.h" /* aapc_local_copy */
#include "aapc_mpi.h"  /* aapc_statuses_ignore */
#include "aapc_shm.h"  /* aapc_shm_chan_send, aapc_shm_chan_recv */

#define TAG_PART 0x5ca7

/* A datatype of `bytes` packed bytes in one element: MPI_PACKED itself up to INT_MAX bytes,
   else whole MiB followed by the rest (freed with free_bytes). */
#define MIB ((MPI_Aint)1 << 20)
static int bytes_type(long long bytes, int *count, MPI_Datatype *t)
{
    *count = 1;
    *t = MPI_PACKED;
    if (bytes <= INT_MAX) {
        *count = (int)bytes;
        return MPI_SUCCESS;
    }
    MPI_Datatype mib;
    int rc = PMPI_Type_contiguous((int)MIB, MPI_PACKED, &mib);
    if (rc != MPI_SUCCESS)
        return rc;
    int lens[2] = {(int)(bytes / MIB), (int)(bytes % MIB)};
    MPI_Aint at[2] = {0, (MPI_Aint)(bytes / MIB) * MIB};
    MPI_Datatype of[2] = {mib, MPI_PACKED};
    rc = PMPI_Type_create_struct(2, lens, at, of, t);
    PMPI_Type_free(&mib);
    if (rc == MPI_SUCCESS && (rc = PMPI_Type_commit(t)) != MPI_SUCCESS)
        PMPI_Type_free(t);
    if (rc != MPI_SUCCESS)
        *t = MPI_PACKED;
    return rc;
}

static void free_bytes(MPI_Datatype *t)
{
    if (*t != MPI_PACKED)
        PMPI_Type_free(t);
}

/* The counts and displacements (in elements of the send type) of machine k's ranks' blocks in
   the send buffer, in local order: counts[q] at displs[q] (counts NULL: `count` each at
   q * count). A new array of 2 R_k ints (lengths, then displacements), NULL without memory. */
static int *machine_blocks(const aapc_coll_layout_t *l, int k, const int *counts,
                           const int *displs, int count)
{
    int R = l->count[k], *len = malloc(sizeof *len * (size_t)R * 2 + 1);
    for (int i = 0; len != NULL && i < R; i++) {
        int q = l->order[l->first[k] + i];
        len[i] = counts != NULL ? counts[q] : count;
        len[R + i] = displs != NULL ? displs[q] : q * count;
    }
    return len;
}

/* The blocks of machine k's ranks in sendbuf as one datatype, in local order. */
static int machine_view(const aapc_coll_layout_t *l, int k, const int *counts, const int *displs,
                        int count, MPI_Datatype t, MPI_Datatype *view)
{
    int R = l->count[k], *len = machine_blocks(l, k, counts, displs, count);
    if (len == NULL)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Type_indexed(R, len, len + R, t, view);
    if (rc == MPI_SUCCESS && (rc = PMPI_Type_commit(view)) != MPI_SUCCESS)
        PMPI_Type_free(view);
    free(len);
    return rc;
}

/* Step 2 at the root: every other machine's part to its leader, started (sends_start) while
   the root scatters its own machine's blocks, and completed (sends_finish). */
struct sends {
    MPI_Request *req;
    MPI_Datatype *view;
    int made;
};

static int sends_finish(const aapc_coll_layout_t *l, struct sends *s, int rc)
{
    int rc2 = s->req != NULL ? PMPI_Waitall(l->n, s->req, aapc_statuses_ignore()) : MPI_SUCCESS;
    for (int i = 0; i < s->made; i++)
        PMPI_Type_free(&s->view[i]);
    free(s->req);
    free(s->view);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static int sends_start(const aapc_coll_layout_t *l, struct sends *s, const void *sendbuf,
                       const int *counts, const int *displs, int count, MPI_Datatype t)
{
    s->made = 0;
    s->req = malloc(sizeof *s->req * (size_t)l->n);
    s->view = malloc(sizeof *s->view * (size_t)l->n);
    if (s->req == NULL || s->view == NULL) {
        free(s->req);
        s->req = NULL;
        return sends_finish(l, s, MPI_ERR_NO_MEM);
    }
    for (int k = 0; k < l->n; k++)
        s->req[k] = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    for (int k = 0; k < l->n && rc == MPI_SUCCESS; k++)
        if (k != l->mine &&
            (rc = machine_view(l, k, counts, displs, count, t, &s->view[s->made])) ==
                MPI_SUCCESS)
            rc = PMPI_Isend(sendbuf, 1, s->view[s->made++], l->order[l->first[k]], TAG_PART,
                            l->dup, &s->req[k]);
    return rc != MPI_SUCCESS ? sends_finish(l, s, rc) : MPI_SUCCESS;
}

/* Step 2 on a leader off the root's machine: its machine's part, `bytes` packed bytes, from
   the root into a new buffer (*part; free() it). A part of another length is the user's
   mistake (the counts do not match the root's): MPI_ERR_TRUNCATE. */
static int receive_part(const aapc_coll_layout_t *l, int root, long long bytes, char **part)
{
    int count, got = 0;
    MPI_Datatype t;
    MPI_Status st;
    if ((*part = malloc(bytes > 0 ? (size_t)bytes : 1)) == NULL)
        return MPI_ERR_NO_MEM;
    int rc = bytes_type(bytes, &count, &t);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Recv(*part, count, t, root, TAG_PART, l->dup, &st);
    if (rc == MPI_SUCCESS && (rc = PMPI_Get_count(&st, t, &got)) == MPI_SUCCESS && got != count)
        rc = MPI_ERR_TRUNCATE;
    free_bytes(&t);
    return rc;
}

/* Step 3 of Scatterv on a leader off the root's machine: rank i of the machine gets bytes[i]
   packed bytes of part (the leader's own copied to recvbuf with its type). */
static int hand_out(const aapc_coll_layout_t *l, const char *part, const long long *bytes,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    int R = l->count[l->mine], rc = MPI_SUCCESS;
    MPI_Request *req = malloc(sizeof *req * (size_t)R);
    MPI_Datatype *t = malloc(sizeof *t * (size_t)R);
    if (req == NULL || t == NULL) {
        free(req);
        free(t);
        return MPI_ERR_NO_MEM;
    }
    long long at = bytes[0];
    for (int i = 0; i < R; i++)
        req[i] = MPI_REQUEST_NULL, t[i] = MPI_PACKED;
    for (int i = 1; i < R && rc == MPI_SUCCESS; at += bytes[i], i++) {
        int count;
        if ((rc = bytes_type(bytes[i], &count, &t[i])) == MPI_SUCCESS)
            rc = bytes[i] <= INT_MAX /* seed 003's lock-free channel (runtime_c/shm/) */
                     ? aapc_shm_chan_send(part + at, count, MPI_PACKED, i, l->node)
                     : PMPI_Isend(part + at, count, t[i], i, TAG_PART, l->node, &req[i]);
    }
    int count;
    if (rc == MPI_SUCCESS && (rc = bytes_type(bytes[0], &count, &t[0])) == MPI_SUCCESS)
        rc = aapc_local_copy(part, count, t[0], recvbuf, recvcount, recvtype, MPI_COMM_SELF, 0,
                             TAG_PART);
    int rc2 = PMPI_Waitall(R, req, aapc_statuses_ignore());
    for (int i = 0; i < R; i++)
        free_bytes(&t[i]);
    free(req);
    free(t);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Step 3 on the root's machine: the root's Scatterv of the machine's blocks, straight from
   sendbuf (counts NULL: `count` each at q * count). */
static int scatter_from_root(const aapc_coll_layout_t *l, const void *sendbuf,
                             const int *counts, const int *displs, int count,
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root)
{
    int root_local = aapc_coll_local_of(l, root), R = l->count[l->mine];
    if (l->rank != root)
        return PMPI_Scatterv(NULL, NULL, NULL, MPI_BYTE, recvbuf, recvcount, recvtype,
                             root_local, l->node);
    int *len = machine_blocks(l, l->mine, counts, displs, count);
    if (len == NULL)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Scatterv(sendbuf, len, len + R, sendtype, recvbuf, recvcount, recvtype,
                           root_local, l->node);
    free(len);
    return rc;
}

/* Multicast's step 2 on the root's machine, after its own scatter: the root packs every other
   machine's blocks at first[k] * block of the aggregate (the root machine's part left empty)
   and hands it to its leader, which multicasts it to the other leaders. */
static int mcast_from_root_machine(const aapc_coll_layout_t *l, const void *sendbuf,
                                   int sendcount, MPI_Datatype sendtype, int root,
                                   long long block)
{
    int total = (int)(block * l->size), rc = MPI_SUCCESS, root_local = aapc_coll_local_of(l, root);
    if (l->rank != root && l->local != 0)
        return MPI_SUCCESS;
    char *agg = calloc((size_t)total + 1, 1);
    if (agg == NULL)
        return MPI_ERR_NO_MEM;
    for (int k = 0; k < l->n && rc == MPI_SUCCESS && l->rank == root; k++) {
        MPI_Datatype view;
        int at = (int)(l->first[k] * block);
        if (k != l->mine &&
            (rc = machine_view(l, k, NULL, NULL, sendcount, sendtype, &view)) == MPI_SUCCESS) {
            rc = PMPI_Pack(sendbuf, 1, view, agg, total, &at, l->dup);
            PMPI_Type_free(&view);
        }
    }
    if (rc == MPI_SUCCESS && root_local != 0) /* seed 003's lock-free channel (runtime_c/shm/) */
        rc = l->rank == root ? aapc_shm_chan_send(agg, total, MPI_PACKED, 0, l->node)
                             : aapc_shm_chan_recv(agg, total, MPI_PACKED, root_local, l->node);
    if (rc == MPI_SUCCESS && l->local == 0)
        rc = aapc_coll_leaders_mcast_scatter(l, agg, NULL, block, l->mine);
    free(agg);
    return rc;
}

int aapc_coll_scatter(const aapc_coll_layout_t *l, enum aapc_coll_step step, const void *sendbuf,
                      int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, long long block)
{
    int rc = MPI_SUCCESS, mcast = step == AAPC_STEP_MCAST && l->n > 1;
    if (l->mine == l->machine[root]) {
        struct sends s = {NULL, NULL, 0};
        if (l->rank == root && !mcast &&
            (rc = sends_start(l, &s, sendbuf, NULL, NULL, sendcount, sendtype)) != MPI_SUCCESS)
            return rc;
        rc = scatter_from_root(l, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcount,
                               recvtype, root);
        if (mcast)
            return rc != MPI_SUCCESS ? rc
                                     : mcast_from_root_machine(l, sendbuf, sendcount, sendtype,
                                                               root, block);
        return l->rank == root ? sends_finish(l, &s, rc) : rc;
    }
    char *part = NULL;
    if (l->local == 0 && mcast &&
        (part = malloc((size_t)(block * l->count[l->mine]) + 1)) == NULL)
        return MPI_ERR_NO_MEM;
    if (l->local == 0 &&
        (rc = mcast ? aapc_coll_leaders_mcast_scatter(l, NULL, part, block, l->machine[root])
                    : receive_part(l, root, block * l->count[l->mine], &part)) != MPI_SUCCESS) {
        free(part);
        return rc;
    }
    rc = PMPI_Scatter(part, (int)block, MPI_PACKED, recvbuf, recvcount, recvtype, 0, l->node);
    free(part);
    return rc;
}

int aapc_coll_scatterv(const aapc_coll_layout_t *l, const void *sendbuf, const int *sendcounts,
                       const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, long long mine)
{
    int rc = MPI_SUCCESS;
    if (l->mine == l->machine[root]) {
        struct sends s = {NULL, NULL, 0};
        if (l->rank == root && (rc = sends_start(l, &s, sendbuf, sendcounts, displs, 0,
                                                  sendtype)) != MPI_SUCCESS)
            return rc;
        rc = scatter_from_root(l, sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount,
                               recvtype, root);
        return l->rank == root ? sends_finish(l, &s, rc) : rc;
    }
    if (l->local != 0) {
        if ((rc = aapc_shm_chan_send(&mine, 1, MPI_LONG_LONG, 0, l->node)) != MPI_SUCCESS)
            return rc;
        return mine <= INT_MAX
                   ? aapc_shm_chan_recv(recvbuf, recvcount, recvtype, 0, l->node)
                   : PMPI_Recv(recvbuf, recvcount, recvtype, 0, TAG_PART, l->node,
                               MPI_STATUS_IGNORE);
    }
    int R = l->count[l->mine];
    long long *bytes = malloc(sizeof *bytes * (size_t)R), total = 0;
    char *part = NULL;
    if (bytes == NULL)
        return MPI_ERR_NO_MEM; /* a leader short of memory fails alone, as elsewhere */
    bytes[0] = mine;
    for (int i = 1; i < R && rc == MPI_SUCCESS; i++)
        rc = aapc_shm_chan_recv(&bytes[i], 1, MPI_LONG_LONG, i, l->node);
    for (int i = 0; i < R; i++)
        total += bytes[i];
    if (rc == MPI_SUCCESS && (rc = receive_part(l, root, total, &part)) == MPI_SUCCESS)
        rc = hand_out(l, part, bytes, recvbuf, recvcount, recvtype);
    free(part);
    free(bytes);
    return rc;
}
