/*
 * aapc_coll_allgather.c: MPI_Allgather across machines, leader-based (seed 004 section 6.2).
 *
 * Algorithm (N machines, R_k ranks on machine k, P ranks, b bytes per rank):
 *   1. every machine gathers its ranks' blocks at its leader (the MPI library's Gather on the
 *      machine's ranks: its shared-memory path), next to each other in machine order;
 *   2. the leaders exchange the machines' blocks, in place: the MPI library's Allgather
 *      (Allgatherv when machines run different numbers of ranks) among the N leaders, or a
 *      ring over the tree (aapc_coll_ring.c), the tree's phases
 *      (aapc_coll_allgather_phased.c), or IP multicast (aapc_coll_mcast.c);
 *   3. every leader broadcasts all P blocks to its machine's ranks through the shared segment
 *      (runtime_c/shm/aapc_shm_bcast.c: one copy in, the copies out overlapped).
 *   Ranks placed in blocks (each machine's ranks consecutive) gather straight into the receive
 *   buffer. Any other placement gathers into a buffer in machine order on the leaders, and the
 *   leader's copy into the receive buffer and the broadcast both use one indexed datatype that
 *   puts block j of that order at its rank's place.
 * Cost: T_gather,R(R b) + T_allgather,N(R b) + T_shm(P b), against the library's
 * T_allgather,P(b): the same bytes cross each machine's link ((P - R) b in), but in log2 N or
 * N - 1 steps of R-block messages instead of log2 P or P - 1 steps of single blocks, and one
 * sender per machine instead of R sharing its link.
 */
#include <stdlib.h>

#include "aapc_coll.h"
#include "aapc_exec.h" /* aapc_local_copy */
#include "aapc_shm.h"

/* The leaders' exchange of the machines' blocks, in place in buf (machine order). */
static int leaders_exchange(const aapc_coll_layout_t *l, enum aapc_coll_step step, void *buf,
                            int recvcount, MPI_Datatype recvtype)
{
    int equal = 1;
    for (int k = 1; k < l->n; k++)
        equal &= l->count[k] == l->count[0];
    if (equal && step == AAPC_STEP_PHASED)
        return aapc_coll_leaders_phased(l, buf, l->count[0] * recvcount, recvtype);
    if (equal && step == AAPC_STEP_MCAST)
        return aapc_coll_leaders_mcast_allgather(l, buf, l->count[0] * recvcount, recvtype);
    if (equal && step == AAPC_STEP_LIBRARY)
        return PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, l->count[0] * recvcount,
                              recvtype, l->leaders);
    int *counts = malloc(sizeof *counts * (size_t)l->n * 2);
    if (counts == NULL)
        return MPI_ERR_NO_MEM;
    int *displs = counts + l->n;
    for (int k = 0; k < l->n; k++) {
        counts[k] = l->count[k] * recvcount;
        displs[k] = l->first[k] * recvcount;
    }
    int rc = step == AAPC_STEP_LIBRARY
                 ? PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
                                   recvtype, l->leaders)
                 : aapc_coll_ring_allgatherv(l, buf, counts, displs, recvtype);
    free(counts);
    return rc;
}

/* Steps 1 and 2 into `gathered` (P blocks in machine order) on a leader; step 1 alone
   elsewhere. own: where this rank's block is when sendbuf is MPI_IN_PLACE. */
static int gather_and_exchange(const aapc_coll_layout_t *l, enum aapc_coll_step step,
                               const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               char *gathered, const char *own, int recvcount,
                               MPI_Datatype recvtype, MPI_Aint block)
{
    int rc;
    char *segment = l->local == 0 ? gathered + (MPI_Aint)l->first[l->mine] * block : NULL;
    if (l->local != 0)
        rc = sendbuf == MPI_IN_PLACE
                 ? PMPI_Gather(own, recvcount, recvtype, NULL, 0, recvtype, 0, l->node)
                 : PMPI_Gather(sendbuf, sendcount, sendtype, NULL, 0, recvtype, 0, l->node);
    else if (sendbuf != MPI_IN_PLACE)
        rc = PMPI_Gather(sendbuf, sendcount, sendtype, segment, recvcount, recvtype, 0, l->node);
    else if (own == segment)
        rc = PMPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, segment, recvcount, recvtype, 0,
                         l->node);
    else if ((rc = aapc_local_copy(own, recvcount, recvtype, segment, recvcount, recvtype,
                                   l->node, 0, 1)) == MPI_SUCCESS) /* to itself */
        rc = PMPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, segment, recvcount, recvtype, 0,
                         l->node);
    if (rc != MPI_SUCCESS || l->leaders == MPI_COMM_NULL || l->n < 2)
        return rc;
    return leaders_exchange(l, step, gathered, recvcount, recvtype);
}

int aapc_coll_allgather(const aapc_coll_layout_t *l, enum aapc_coll_step step,
                        const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype)
{
    MPI_Aint lb, extent;
    int rc, P = l->size;
    if ((rc = PMPI_Type_get_extent(recvtype, &lb, &extent)) != MPI_SUCCESS)
        return rc;
    MPI_Aint block = (MPI_Aint)recvcount * extent;
    char *own = (char *)recvbuf + (MPI_Aint)l->rank * block;
    if (l->blocks) { /* machine order is rank order: straight into the receive buffer */
        if ((rc = gather_and_exchange(l, step, sendbuf, sendcount, sendtype, recvbuf, own,
                                      recvcount, recvtype, block)) != MPI_SUCCESS)
            return rc;
        return aapc_shm_bcast(recvbuf, P * recvcount, recvtype, 0, l->node);
    }
    MPI_Datatype one, placed;
    if ((rc = PMPI_Type_contiguous(recvcount, recvtype, &one)) != MPI_SUCCESS)
        return rc;
    rc = PMPI_Type_create_indexed_block(P, 1, l->order, one, &placed);
    PMPI_Type_free(&one);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Type_commit(&placed)) != MPI_SUCCESS) {
        PMPI_Type_free(&placed);
        return rc;
    }
    char *gathered = NULL, *tmp = NULL;
    if (l->local == 0 && /* P blocks in machine order */
        (tmp = aapc_coll_vector(P * (MPI_Aint)recvcount, recvtype, &gathered)) == NULL) {
        PMPI_Type_free(&placed);
        return MPI_ERR_NO_MEM;
    }
    rc = gather_and_exchange(l, step, sendbuf, sendcount, sendtype, gathered, own, recvcount,
                             recvtype, block);
    if (rc == MPI_SUCCESS && l->local == 0)
        rc = aapc_local_copy(gathered, P * recvcount, recvtype, recvbuf, 1, placed, l->node, 0,
                             1); /* the leader to itself */
    free(tmp);
    if (rc == MPI_SUCCESS)
        rc = aapc_shm_bcast(recvbuf, 1, placed, 0, l->node);
    PMPI_Type_free(&placed);
    return rc;
}
