/*
 * aapc_hier_coll.c: Bcast, Allgather and Allreduce for machines running several ranks each,
 * with one leader per machine (seed 004 chapter 7, leader-based hierarchical collectives).
 *
 * Algorithms (N machines, R ranks each in blocks, P = N R ranks, n bytes):
 *   Bcast:     on the root's machine, a node Bcast from the root; the leaders Bcast from the
 *              root's machine; every other machine a node Bcast from its leader.
 *              Cost: 2 T_node(n) + T_bcast,N(n): the network carries the message once per
 *              machine instead of once per rank.
 *   Allgather: node Gather of the R blocks into the leader's receive buffer (a machine's ranks
 *              are contiguous there), leaders Allgather machine segments of R blocks, node
 *              Bcast of all P blocks. Cost: T_gather,R + T_allgather,N(R n) + T_node(P n).
 *   Allreduce: node Reduce to the leader, leaders Allreduce, node Bcast. Ranks of a machine are
 *              contiguous and the leaders are in machine order, so the operands are combined in
 *              rank order: non-commutative operations stay correct.
 *              Cost: T_reduce,R(n) + T_allreduce,N(n) + T_node(n).
 * The intra-machine steps are the MPI library's (shared memory on a real node); the
 * inter-machine step is one library collective among N leaders instead of P ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_hier.h"

static int hier_applies(MPI_Comm comm, int nmachines, int r, MPI_Comm *node, MPI_Comm *leaders,
                        int *rank, int *applies)
{
    int size, inter = 0, rc;
    *applies = 0;
    if (r <= 1 || nmachines < 1)
        return MPI_SUCCESS;
    if ((rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS || inter)
        return rc;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, rank)) != MPI_SUCCESS)
        return rc;
    if (size != nmachines * r)
        return MPI_SUCCESS;
    if ((rc = aapc_hier_comms(comm, r, node, leaders)) != MPI_SUCCESS)
        return rc;
    *applies = 1;
    return MPI_SUCCESS;
}

int aapc_hier_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                    int nmachines, int r)
{
    MPI_Comm node, leaders;
    int rank = 0, applies, rc;
    if ((rc = hier_applies(comm, nmachines, r, &node, &leaders, &rank, &applies)) != MPI_SUCCESS)
        return rc;
    if (!applies)
        return PMPI_Bcast(buf, count, type, root, comm);
    int root_machine = root / r, mine = rank / r;
    if (mine == root_machine && (rc = PMPI_Bcast(buf, count, type, root % r, node)) != MPI_SUCCESS)
        return rc;
    if (leaders != MPI_COMM_NULL &&
        (rc = PMPI_Bcast(buf, count, type, root_machine, leaders)) != MPI_SUCCESS)
        return rc;
    if (mine != root_machine)
        rc = PMPI_Bcast(buf, count, type, 0, node);
    return rc;
}

int aapc_hier_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int nmachines,
                        int r)
{
    MPI_Comm node, leaders;
    int rank = 0, applies, rc, lrank;
    MPI_Aint lb, ext;
    if ((rc = hier_applies(comm, nmachines, r, &node, &leaders, &rank, &applies)) != MPI_SUCCESS)
        return rc;
    if (!applies)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if ((rc = PMPI_Type_get_extent(recvtype, &lb, &ext)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(node, &lrank)) != MPI_SUCCESS)
        return rc;
    char *segment = (char *)recvbuf + (MPI_Aint)(rank / r) * r * recvcount * ext;
    char *own = (char *)recvbuf + (MPI_Aint)rank * recvcount * ext;
    if (lrank == 0) /* my own block lands in place; the others' next to it */
        rc = PMPI_Gather(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : sendbuf, sendcount, sendtype,
                         segment, recvcount, recvtype, 0, node);
    else if (sendbuf == MPI_IN_PLACE)
        rc = PMPI_Gather(own, recvcount, recvtype, NULL, 0, recvtype, 0, node);
    else
        rc = PMPI_Gather(sendbuf, sendcount, sendtype, NULL, 0, recvtype, 0, node);
    if (rc != MPI_SUCCESS)
        return rc;
    if (leaders != MPI_COMM_NULL &&
        (rc = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, r * recvcount, recvtype,
                             leaders)) != MPI_SUCCESS)
        return rc;
    return PMPI_Bcast(recvbuf, nmachines * r * recvcount, recvtype, 0, node);
}

int aapc_hier_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, int nmachines, int r)
{
    MPI_Comm node, leaders;
    int rank = 0, applies, rc, lrank;
    if ((rc = hier_applies(comm, nmachines, r, &node, &leaders, &rank, &applies)) != MPI_SUCCESS)
        return rc;
    if (!applies)
        return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    if ((rc = PMPI_Comm_rank(node, &lrank)) != MPI_SUCCESS)
        return rc;
    if (lrank == 0)
        rc = PMPI_Reduce(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : sendbuf, recvbuf, count, type,
                         op, 0, node);
    else
        rc = PMPI_Reduce(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, NULL, count, type, op, 0,
                         node);
    if (rc != MPI_SUCCESS)
        return rc;
    if (leaders != MPI_COMM_NULL &&
        (rc = PMPI_Allreduce(MPI_IN_PLACE, recvbuf, count, type, op, leaders)) != MPI_SUCCESS)
        return rc;
    return PMPI_Bcast(recvbuf, count, type, 0, node);
}
