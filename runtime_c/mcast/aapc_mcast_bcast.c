/*
 * aapc_mcast_bcast.c: MPI_Bcast as one reliable multicast on the communicator's static group
 * (seed 000 section 4.1, seed 001 section III "no extra overheads").
 *
 * Algorithm: the root sends the byte image of (buf, count, datatype) once to the group address;
 * every other rank receives it into place (predefined types) or into a temporary image that it
 * unpacks (derived types). Returns when the root has every receiver's confirmation.
 * Cost (P ranks, n bytes, fragment F, no loss): (n/F + P) alpha + n beta at the root, and the
 * n bytes cross every link of the tree exactly once, versus ceil(lg P)(alpha + n beta) and up to
 * (P-1) n bytes on the links for a binomial tree, or (P-1)(alpha + n beta) for a flat one.
 */
#include "aapc_mcast_internal.h"

#include <stdlib.h>

int aapc_mcast_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    mc_comm_t *st = NULL;
    int rc = mc_comm_get(comm, &st);
    if (rc != MPI_SUCCESS || !st->enabled)
        return PMPI_Bcast(buf, count, datatype, root, comm);
    struct aapc_mcast_group_s *g = st->group;
    if (root < 0 || root >= g->size)
        return mc_error(comm, MPI_ERR_ROOT);
    long long bytes;
    MPI_Aint lb;
    int contig = mc_is_contig(count, datatype, &bytes, &lb);
    unsigned char *img = contig ? (unsigned char *)buf : malloc(bytes ? (size_t)bytes : 1);
    if (img == NULL)
        return mc_error(comm, MPI_ERR_NO_MEM);
    if (g->rank == root) {
        rc = contig ? MPI_SUCCESS : mc_pack(buf, count, datatype, img, bytes);
        if (rc != MPI_SUCCESS) /* still send, so that no receiver waits: zeros of the right size */
            mc_reliable_send(g, img, (uint64_t)bytes);
        else
            rc = mc_reliable_send(g, img, (uint64_t)bytes);
    } else {
        rc = mc_reliable_recv(g, root, img, (uint64_t)bytes);
        if (rc == MPI_SUCCESS && !contig)
            rc = mc_unpack(img, bytes, buf, count, datatype);
    }
    if (!contig)
        free(img);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : mc_error(comm, rc);
}
