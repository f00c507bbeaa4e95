/*
 * aapc_mcast_scatter.c: MPI_Scatter by aggregation (seed 001 section III, seed 000 section 4.1).
 *
 * Algorithm: the root concatenates the P-1 blocks of the other ranks (rank order, its own block
 * left out) into one message and multicasts it reliably on the static group; rank r copies its
 * block out of the aggregate at offset (r - (r > root)) * m. The root copies its own block
 * locally (skipped under MPI_IN_PLACE).
 * Cost (P ranks, m bytes per block): ((P-1)m/F + P) alpha + (P-1) m beta at the root and at
 * every receiver, i.e. every receiver handles the whole aggregate: it wins only while (P-1) m is
 * small (the seeds found below about 50-100 B on 29 nodes), versus (P-1)(alpha + m beta) at the
 * root for a linear scatter and lg(P) alpha + (P-1) m beta for a binomial one.
 */
#include "aapc_mcast_internal.h"

#include <stdlib.h>
#include <string.h>

int aapc_mcast_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (rc != MPI_SUCCESS || !st->enabled)
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                            comm);
    struct aapc_mcast_group_s *g = st->group;
    if (root < 0 || root >= g->size)
        return mc_error(comm, MPI_ERR_ROOT);
    int P = g->size, me = g->rank;
    long long m;
    MPI_Aint lb, ext;
    if (me == root) {
        int tsize;
        PMPI_Type_size(sendtype, &tsize);
        m = (long long)sendcount * tsize;
    } else {
        int tsize;
        PMPI_Type_size(recvtype, &tsize);
        m = (long long)recvcount * tsize;
    }
    long long total = m * (P - 1);
    unsigned char *agg = malloc(total ? (size_t)total : 1);
    if (agg == NULL)
        return mc_error(comm, MPI_ERR_NO_MEM);
    if (me == root) {
        PMPI_Type_get_extent(sendtype, &lb, &ext);
        rc = MPI_SUCCESS;
        for (int r = 0, k = 0; r < P && rc == MPI_SUCCESS; r++) {
            if (r == root)
                continue;
            const char *blk = (const char *)sendbuf + (MPI_Aint)r * sendcount * ext;
            rc = mc_pack(blk, sendcount, sendtype, agg + (size_t)k * (size_t)m, m);
            k++;
        }
        int rc2 = mc_reliable_send(g, agg, (uint64_t)total);
        if (rc == MPI_SUCCESS)
            rc = rc2;
        if (rc == MPI_SUCCESS && recvbuf != MPI_IN_PLACE)
            rc = mc_local_copy((const char *)sendbuf + (MPI_Aint)root * sendcount * ext,
                               sendcount, sendtype, recvbuf, recvcount, recvtype);
    } else {
        rc = mc_reliable_recv(g, root, agg, (uint64_t)total);
        int k = me - (me > root);
        if (rc == MPI_SUCCESS)
            rc = mc_unpack(agg + (size_t)k * (size_t)m, m, recvbuf, recvcount, recvtype);
    }
    free(agg);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
}
