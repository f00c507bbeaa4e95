/*
 * aapc_mcast_allgather.c: MPI_Allgather as P reliable multicasts, one per rank in rank order
 * (seed 000 sections 4.2 and 5.1, the "multicast" version of its Table 1).
 *
 * Algorithm: for r = 0 .. P-1, rank r multicasts its block on the static group and every other
 * rank receives it into block r of recvbuf (directly for predefined types, else through an image
 * that is unpacked). A rank that finishes broadcast r early may start r+1 while slower ranks are
 * still in r; their transport stashes the early datagrams.
 * Cost (m bytes per block): P ((m/F + P) alpha + m beta): every link carries each block once,
 * (P-1) m bytes in all on a receiver's link, the same as a ring's (P-1)(alpha + m beta) in
 * bandwidth but with P sequential broadcast latencies and P^2 ACKs in all.
 */
#include "aapc_mcast_internal.h"

#include <stdlib.h>

int aapc_mcast_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (rc != MPI_SUCCESS || !st->enabled)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    struct aapc_mcast_group_s *g = st->group;
    int P = g->size, me = g->rank;
    long long m;
    MPI_Aint lb, ext;
    int contig = mc_is_contig(recvcount, recvtype, &m, &lb);
    PMPI_Type_get_extent(recvtype, &lb, &ext);
    unsigned char *img = malloc(m ? (size_t)m : 1);
    if (img == NULL)
        return mc_error(comm, MPI_ERR_NO_MEM);
    char *mine = (char *)recvbuf + (MPI_Aint)me * recvcount * ext;
    /* own block: into recvbuf (unless in place), and its image for sending */
    if (sendbuf != MPI_IN_PLACE)
        rc = mc_local_copy(sendbuf, sendcount, sendtype, mine, recvcount, recvtype);
    int err = rc;
    for (int r = 0; r < P; r++) {
        char *blk = (char *)recvbuf + (MPI_Aint)r * recvcount * ext;
        if (r == me) {
            int prc = contig ? MPI_SUCCESS : mc_pack(mine, recvcount, recvtype, img, m);
            rc = mc_reliable_send(g, contig ? (unsigned char *)mine : img, (uint64_t)m);
            if (prc != MPI_SUCCESS)
                rc = prc;
        } else {
            rc = mc_reliable_recv(g, r, contig ? (unsigned char *)blk : img, (uint64_t)m);
            if (rc == MPI_SUCCESS && !contig)
                rc = mc_unpack(img, m, blk, recvcount, recvtype);
        }
        if (err == MPI_SUCCESS)
            err = rc;
    }
    free(img);
    return err == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, err);
}
