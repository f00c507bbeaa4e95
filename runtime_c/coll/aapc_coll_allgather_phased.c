/*
 * aapc_coll_allgather_phased.c: the leaders' step of MPI_Allgather in the switch tree's
 * contention-free phases (seed 000, "phased Allgather").
 *
 * Algorithm: an Allgather is an all-to-all whose blocks to every destination are one and the
 * same: each leader sends its machine's part to every other leader. So the leaders run the
 * library's own MPI_Alltoall (this library's, in a build with -DAAPC_INTERCEPT: the run-time
 * scheduled phases of the leaders' communicator, one rank per machine, or whichever way its
 * per-call choice takes) with a send datatype of extent 0: the part, copied once out of the
 * receive buffer (send and receive buffers of an all-to-all must not overlap), serves every
 * destination. Every machine runs the same number of ranks (the same part size).
 * Cost (N leaders, parts of m bytes, the tree's bottleneck link shared by B pairs per phase):
 * the all-to-all's, P_phases (alpha + m beta) with no two messages of a phase on one link, plus
 * one copy of m bytes; against the library's Allgather among the leaders, ring (N - 1 steps
 * of m bytes, contention-free only when the rank order follows the tree) or recursive
 * doubling (log2 N steps whose later messages cross the tree's top links all at once).
 */
#include <stdlib.h>

#include "aapc_coll.h"

int aapc_coll_leaders_phased(const aapc_coll_layout_t *l, void *buf, int count,
                             MPI_Datatype type)
{
    MPI_Aint plb, pext;
    MPI_Datatype part, same;
    int rc;
    if ((rc = PMPI_Type_contiguous(count, type, &part)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Type_get_extent(part, &plb, &pext)) == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(part, plb, 0, &same);
    PMPI_Type_free(&part);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Type_commit(&same)) != MPI_SUCCESS) {
        PMPI_Type_free(&same);
        return rc;
    }
    char *from, *copy = aapc_coll_own_part(l, buf, count, type, &from, &rc);
    if (copy != NULL) /* the interposed MPI_Alltoall: ours under -DAAPC_INTERCEPT */
        rc = MPI_Alltoall(from, 1, same, buf, count, type, l->leaders);
    free(copy);
    PMPI_Type_free(&same);
    return rc;
}
