/*
 * aapc_alias.h: whether the MPI library refuses a collective's buffers as aliased, so that a
 * program that tests for that error (MPICH's test/mpi/errors/coll noalias, noalias2, noalias3)
 * sees what it sees without the library preloaded. The non-blocking all-to-alls hand such a
 * call to the MPI library's own routine, which raises the error in its own words; the other
 * collectives (coll/aapc_coll_select.c) choose first, as for any call (the layout's first use is
 * collective), then hand it to the library where that is the choice, or raise MPI_ERR_BUFFER
 * themselves without moving a byte; the blocking MPI_Alltoallw raises it through its agreement.
 *
 * Rule. MPICH's bindings (maint/local_python/binding_c.py, MPIR_ERRTEST_ALIAS_COLL: class
 * MPI_ERR_BUFFER, "Buffers must not be aliased") compare two pointers on an intra-communicator,
 * the send side not MPI_IN_PLACE:
 *   - Allreduce (every rank), Reduce (at the root): count > 0 and sendbuf == recvbuf;
 *   - Allgather: sendtype == recvtype, sendcount == recvcount != 0 and
 *     sendbuf == recvbuf + rank x recvcount x size(recvtype);
 *   - Scatter, at the root: the same with the roles swapped (recvbuf against the root's own
 *     block of sendbuf); Scatterv, at the root: sendtype == recvtype, recvcount != 0,
 *     sendcounts[rank] != 0, recvbuf == sendbuf + displs[rank] x size(sendtype);
 *   - Alltoall: sendtype == recvtype, sendcount == recvcount != 0, sendbuf == recvbuf;
 *     Alltoallv and Alltoallw: the same datatype (Alltoallw: the same array of them), the same
 *     array of counts, sendbuf == recvbuf.
 * Open MPI checks none of these and runs such a call: 0 there, so that every rank of a call
 * takes the way it would take without the check. A rank whose arguments are refused does not
 * communicate; a root refused alone leaves the others in the call, as with MPICH alone (its
 * next, correct call of the same collective meets them: the way depends on the sizes only).
 * An MPICH built without argument checks runs such a call where the library's routine is the
 * choice, and the other ranks, which chose the same, run it with it.
 * Cost: a few comparisons and one MPI_Type_size; pure otherwise.
 */
#ifndef AAPC_ALIAS_H
#define AAPC_ALIAS_H

#include <stdint.h>

#include <mpi.h>

#include "aapc_mpi.h" /* aapc_type_size */

#ifdef OPEN_MPI
#define AAPC_ALIAS_CHECKED 0
#else
#define AAPC_ALIAS_CHECKED 1
#endif

/* sendbuf == base + index x count x size(t) */
static inline int aapc_alias_at(const void *sendbuf, const void *base, MPI_Aint index, int count,
                                MPI_Datatype t)
{
    int64_t size = 0;
    if (base == NULL || base == MPI_IN_PLACE || aapc_type_size(t, &size) != MPI_SUCCESS)
        return 0;
    /* as integers: the sum need not point into base's object */
    return (uintptr_t)sendbuf == (uintptr_t)base + (uintptr_t)(index * (MPI_Aint)count * size);
}

/* MPI_Allreduce on every rank; MPI_Reduce with root_here at the root only. */
static inline int aapc_alias_reduce(const void *sendbuf, const void *recvbuf, int count,
                                    int root_here)
{
    return AAPC_ALIAS_CHECKED && root_here && sendbuf != MPI_IN_PLACE && count > 0 &&
           sendbuf == recvbuf;
}

static inline int aapc_alias_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       int rank)
{
    return AAPC_ALIAS_CHECKED && sendbuf != MPI_IN_PLACE && sendtype == recvtype &&
           sendcount == recvcount && sendcount != 0 &&
           aapc_alias_at(sendbuf, recvbuf, rank, recvcount, recvtype);
}

/* At the root (root_here), recvbuf not MPI_IN_PLACE: its own block of sendbuf. */
static inline int aapc_alias_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     int rank, int root_here)
{
    return AAPC_ALIAS_CHECKED && root_here && recvbuf != MPI_IN_PLACE && sendtype == recvtype &&
           sendcount == recvcount && sendcount != 0 &&
           aapc_alias_at(recvbuf, sendbuf, rank, sendcount, sendtype);
}

static inline int aapc_alias_scatterv(const void *sendbuf, const int sendcounts[],
                                      const int displs[], MPI_Datatype sendtype,
                                      const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      int rank, int root_here)
{
    return AAPC_ALIAS_CHECKED && root_here && recvbuf != MPI_IN_PLACE && sendtype == recvtype &&
           recvcount != 0 && sendcounts != NULL && displs != NULL && sendcounts[rank] != 0 &&
           aapc_alias_at(recvbuf, sendbuf, displs[rank], 1, sendtype);
}

static inline int aapc_alias_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      const void *recvbuf, int recvcount, MPI_Datatype recvtype)
{
    return AAPC_ALIAS_CHECKED && sendbuf != MPI_IN_PLACE && sendtype == recvtype &&
           sendcount == recvcount && sendcount != 0 && sendbuf == recvbuf;
}

/* MPI_Alltoallv (same_types: sendtype == recvtype) and MPI_Alltoallw (the same array). */
static inline int aapc_alias_alltoallv(const void *sendbuf, const int sendcounts[],
                                       int same_types, const void *recvbuf,
                                       const int recvcounts[])
{
    return AAPC_ALIAS_CHECKED && sendbuf != MPI_IN_PLACE && same_types &&
           sendcounts == recvcounts && sendbuf == recvbuf;
}

#define AAPC_ALIAS_WHY "sendbuf and recvbuf are aliased: the MPI library judges the call"

#endif
