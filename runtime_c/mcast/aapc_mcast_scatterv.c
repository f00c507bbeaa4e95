/*
 * aapc_mcast_scatterv.c: MPI_Scatterv over multicast under the three group management schemes
 * of seed 001 (section III) / seed 000 (section 4.1).
 *
 * Algorithm:
 *   static  - two reliable multicasts on the communicator's group: the P byte counts (8P bytes),
 *             then the aggregate of the non-root blocks in rank order; every rank takes part
 *             (one-to-many degenerates to one-to-all) and copies its block out.
 *             Cost: 2 (P alpha) + (8P + S) beta at every rank, S = sum of the non-root blocks.
 *   dynamic - the root multicasts (new group, counts) on the static group; the ranks with a
 *             non-zero count join, confirm, receive the aggregate of their blocks on the new group
 *             and leave it; the others move on after the first multicast.
 *             Cost: the static cost for the description, plus m joins (IGMP and an MPI message
 *             each) and the data multicast to the m members only; the worst of the three.
 *   compiler-assisted - aapc_scatterv_open_group does the dynamic scheme's set-up once;
 *             aapc_scatterv_data_movement is then one multicast of S bytes to the m members
 *             ((m + S/F) alpha + S beta, ranks outside the group do nothing); close_group frees.
 * The root's own block is copied locally in every scheme.
 */
#include "aapc_mcast_internal.h"

#include <stdio.h>
#include <stdlib.h>

static int local_copy(const void *sendbuf, const int *sendcounts, const int *displs,
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root)
{
    if (recvbuf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(sendtype, &lb, &ext);
    return mc_local_copy((const char *)sendbuf + (MPI_Aint)displs[root] * ext, sendcounts[root],
                         sendtype, recvbuf, recvcount, recvtype);
}

/* One multicast of the blocks of g's receivers (bytes[r] each, rank order) from root. */
static int scatterv_move(struct aapc_mcast_group_s *g, int root, const long long *bytes,
                         const void *sendbuf, const int *sendcounts, const int *displs,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype)
{
    long long total = 0, myoff = 0;
    for (int k = 0; k < g->nmemb; k++) {
        int r = g->memb[k];
        if (r == root)
            continue;
        if (r == g->rank)
            myoff = total;
        total += bytes[r];
    }
    int me = g->rank, rc = MPI_SUCCESS;
    if (me != root) {
        int rsize;
        PMPI_Type_size(recvtype, &rsize);
        if (bytes[me] != (long long)recvcount * rsize) {
            fprintf(stderr, "aapc_mcast: rank %d: root %d sends %lld bytes, recvcount is %lld\n",
                    me, root, bytes[me], (long long)recvcount * rsize);
            rc = MPI_ERR_TRUNCATE;
        }
    }
    if (total == 0)
        return rc;
    unsigned char *agg = malloc((size_t)total);
    if (agg == NULL)
        return MPI_ERR_NO_MEM;
    if (me == root) {
        MPI_Aint lb, ext;
        PMPI_Type_get_extent(sendtype, &lb, &ext);
        long long pos = 0;
        for (int k = 0; k < g->nmemb; k++) {
            int r = g->memb[k];
            if (r == root || bytes[r] == 0)
                continue;
            int prc = mc_pack((const char *)sendbuf + (MPI_Aint)displs[r] * ext, sendcounts[r],
                              sendtype, agg + pos, bytes[r]);
            if (rc == MPI_SUCCESS)
                rc = prc;
            pos += bytes[r];
        }
        int src = mc_reliable_send(g, agg, (uint64_t)total);
        if (rc == MPI_SUCCESS)
            rc = src;
    } else {
        int rrc = mc_reliable_recv(g, root, agg, (uint64_t)total);
        if (rc == MPI_SUCCESS)
            rc = rrc;
        if (rc == MPI_SUCCESS && bytes[me] > 0)
            rc = mc_unpack(agg + myoff, bytes[me], recvbuf, recvcount, recvtype);
    }
    free(agg);
    return rc;
}

static long long *root_bytes(int size, const int *sendcounts, MPI_Datatype sendtype, int is_root)
{
    long long *bytes = calloc((size_t)size, sizeof *bytes);
    if (bytes != NULL && is_root) {
        int tsize;
        PMPI_Type_size(sendtype, &tsize);
        for (int r = 0; r < size; r++)
            bytes[r] = (long long)sendcounts[r] * tsize;
    }
    return bytes;
}

int aapc_mcast_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm,
                        aapc_mcast_scheme_t scheme)
{
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (rc != MPI_SUCCESS || !st->enabled)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                             root, comm);
    struct aapc_mcast_group_s *g = st->group;
    if (root < 0 || root >= g->size)
        return mc_error(comm, MPI_ERR_ROOT);
    int me = g->rank;
    long long *bytes = root_bytes(g->size, sendcounts, sendtype, me == root);
    if (bytes == NULL)
        return mc_error(comm, MPI_ERR_NO_MEM);
    if (scheme == AAPC_MCAST_DYNAMIC) {
        struct aapc_mcast_group_s *sub = NULL;
        rc = mc_group_open_subset(st, root, bytes, &sub);
        if (rc == -1) { /* no address for a new group: every rank falls back */
            free(bytes);
            return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm);
        }
        if (rc == MPI_SUCCESS && sub != NULL)
            rc = scatterv_move(sub, root, bytes, sendbuf, sendcounts, displs, sendtype, recvbuf,
                               recvcount, recvtype);
        else if (rc == MPI_SUCCESS && me != root && bytes[me] != 0)
            rc = MPI_ERR_INTERN;
        else if (rc == MPI_SUCCESS && me != root && recvcount != 0) {
            int rsize;
            PMPI_Type_size(recvtype, &rsize);
            if (rsize != 0)
                rc = MPI_ERR_TRUNCATE;
        }
        mc_group_free(sub);
    } else {
        rc = me == root ? mc_reliable_send(g, bytes, sizeof *bytes * (size_t)g->size)
                        : mc_reliable_recv(g, root, bytes, sizeof *bytes * (size_t)g->size);
        if (rc == MPI_SUCCESS)
            rc = scatterv_move(g, root, bytes, sendbuf, sendcounts, displs, sendtype, recvbuf,
                               recvcount, recvtype);
    }
    if (rc == MPI_SUCCESS && me == root)
        rc = local_copy(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                        root);
    free(bytes);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
}

/* ------------------------------------------------------------------ compiler-assisted */

static struct aapc_mcast_group_s *plain_handle(MPI_Comm comm, int root, int mode)
{
    struct aapc_mcast_group_s *h = calloc(1, sizeof *h);
    if (h != NULL) {
        h->sock = -1;
        h->slot = -1;
        h->comm = comm;
        h->root = root;
        h->mode = mode;
        PMPI_Comm_rank(comm, &h->rank);
        PMPI_Comm_size(comm, &h->size);
    }
    return h;
}

int aapc_scatterv_open_group(const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm,
                             aapc_mcast_group_t *group)
{
    (void)sendbuf;
    (void)displs;
    (void)recvbuf;
    (void)recvcount;
    (void)recvtype;
    *group = AAPC_MCAST_GROUP_NULL;
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (rc != MPI_SUCCESS || !st->enabled) {
        *group = plain_handle(comm, root, 2);
        return *group != NULL ? MPI_SUCCESS : mc_error(comm, MPI_ERR_NO_MEM);
    }
    int size = st->group->size, me = st->group->rank;
    if (root < 0 || root >= size)
        return mc_error(comm, MPI_ERR_ROOT);
    long long *bytes = root_bytes(size, sendcounts, sendtype, me == root);
    if (bytes == NULL)
        return mc_error(comm, MPI_ERR_NO_MEM);
    struct aapc_mcast_group_s *sub = NULL;
    rc = mc_group_open_subset(st, root, bytes, &sub);
    if (rc == -1 || (rc == MPI_SUCCESS && sub == NULL)) {
        sub = plain_handle(comm, root, rc == -1 ? 2 : 1);
        rc = sub != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    }
    if (sub != NULL) {
        sub->bytes = bytes;
        *group = sub;
    } else {
        free(bytes);
    }
    return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
}

int aapc_scatterv_data_movement(const void *sendbuf, const int sendcounts[], const int displs[],
                                MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, int root, MPI_Comm comm,
                                aapc_mcast_group_t group)
{
    if (group == AAPC_MCAST_GROUP_NULL)
        return mc_error(comm, MPI_ERR_ARG);
    if (group->comm != comm || group->root != root) {
        fprintf(stderr, "aapc_mcast: aapc_scatterv_data_movement: root or communicator differs "
                        "from aapc_scatterv_open_group's\n");
        return mc_error(comm, MPI_ERR_ARG);
    }
    if (group->mode == 2)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                             root, comm);
    int me = group->rank, rc = MPI_SUCCESS;
    if (me == root) {
        int tsize;
        PMPI_Type_size(sendtype, &tsize);
        for (int r = 0; r < group->size && rc == MPI_SUCCESS; r++)
            if ((long long)sendcounts[r] * tsize != group->bytes[r]) {
                fprintf(stderr, "aapc_mcast: aapc_scatterv_data_movement: rank %d's count "
                                "differs from aapc_scatterv_open_group's\n", r);
                rc = MPI_ERR_COUNT;
            }
    }
    if (group->mode == 1) { /* outside the group: nothing to receive */
        int rsize;
        PMPI_Type_size(recvtype, &rsize);
        if ((long long)recvcount * rsize != 0)
            rc = MPI_ERR_TRUNCATE;
        return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
    }
    if (rc == MPI_SUCCESS)
        rc = scatterv_move(group, root, group->bytes, sendbuf, sendcounts, displs, sendtype,
                           recvbuf, recvcount, recvtype);
    if (rc == MPI_SUCCESS && me == root)
        rc = local_copy(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                        root);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
}

int aapc_scatterv_close_group(aapc_mcast_group_t *group)
{
    if (group == NULL)
        return MPI_ERR_ARG;
    mc_group_free(*group);
    *group = AAPC_MCAST_GROUP_NULL;
    return MPI_SUCCESS;
}
