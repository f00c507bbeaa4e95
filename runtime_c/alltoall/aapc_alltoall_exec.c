/*
 * aapc_alltoall_exec.c: MPI_Alltoall through a precomputed contention-free schedule.
 *
 * Algorithm: a null or inter-communicator goes to PMPI_Alltoall untouched (before anything
 * else: a zero-byte call on an inter-communicator still moves the other group's data); look the
 * communicator up (aapc_comm.c: private dup, rank -> machine mapping; a communicator that does
 * not match the schedule goes to PMPI_Alltoall untouched), resolve MPI_IN_PLACE (the whole
 * receive span copied aside once), then run this machine's rows with the phase executor
 * (common/aapc_exec.c), which gives the cost: P (alpha + n beta) along the critical path for P
 * contention-free phases of n-byte blocks, plus the syncs, dummies and barriers of the variant.
 * The arguments were checked by the generated entry point (common/aapc_args.c: every rank
 * agreed on them, and that every rank can allocate the in-place copy); an error inside the
 * executor or the first call's set-up is returned by the private communicator and raised here
 * through the user's communicator's error handler, aborting the job when the handler returns
 * (aapc_args_raise_alone: the other ranks may be waiting for this one). Buffers may be
 * MPI_BOTTOM with absolute-address datatypes (addresses by integer arithmetic, aapc_at).
 * Extra cost here: one attribute lookup and one MPI_Comm_test_inter per call; the in-place
 * copy of p n bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_args.h"
#include "aapc_exec.h"
#include "aapc_mpi.h"
#include "aapc_report.h"

int aapc_alltoall_run(const aapc_schedule_t *s, const void *sendbuf, int sendcount,
                      MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, inter = 0;
    int64_t ssize = 0;
    MPI_Aint bytes = 0;

    if (s == NULL)
        return MPI_ERR_ARG;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if ((rc = aapc_alltoall_block(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes,
                                  &ssize)) != MPI_SUCCESS)
        return aapc_args_raise_code(comm, rc);
    if (bytes == 0) /* after the entry's agreement: zero on every rank */
        return MPI_SUCCESS;

    aapc_comm_info_t info;
    if ((rc = aapc_comm_lookup(s, comm, &info)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (!info.usable) {
        aapc_report_fallback(aapc_comm_why(s, &info));
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    aapc_report_served(aapc_comm_why(s, &info)[0] ? aapc_comm_why(s, &info) : "precomputed");
    aapc_args_private_returns(info.dup);
    return aapc_args_raise_alone(comm, aapc_alltoall_exec(s, &info, sendbuf, sendcount, sendtype,
                                                          recvbuf, recvcount, recvtype));
}

int aapc_alltoall_exec(const aapc_schedule_t *s, const struct aapc_comm_info *info,
                       const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype)
{
    struct aapc_run st;
    int rc, myrank = 0, size = 0;
    int64_t ssize = 0;
    MPI_Aint lb, sext, rext, bytes = 0;
    char *tmp = NULL;

    memset(&st, 0, sizeof st);
    if (s == NULL || info == NULL || !info->usable)
        return MPI_ERR_ARG;
    if ((rc = aapc_alltoall_block(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes,
                                  &ssize)) != MPI_SUCCESS)
        return rc;
    if (bytes == 0)
        return MPI_SUCCESS;
    st.s = s;
    st.info = *info;
    st.dup = st.info.dup;
    st.m = st.info.my_machine;
    if ((rc = PMPI_Comm_rank(st.dup, &myrank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(st.dup, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(recvtype, &lb, &rext)) != MPI_SUCCESS)
        return rc;
    if (st.info.machine_block != NULL)
        size = st.info.nblocks; /* the blocks of the caller's communicator */
    st.rbuf = recvbuf;
    st.rcount = recvcount;
    st.rtype = recvtype;
    st.rblock = (MPI_Aint)recvcount * rext;

    if (sendbuf == MPI_IN_PLACE) {
        /* Copy the span of all p blocks (true extent, any sign of lb/extent) aside. */
        MPI_Aint tlb, text, last = (MPI_Aint)size * recvcount - 1;
        if ((rc = PMPI_Type_get_true_extent(recvtype, &tlb, &text)) != MPI_SUCCESS)
            return rc;
        MPI_Aint lo = tlb + (rext < 0 ? last * rext : 0);
        MPI_Aint hi = tlb + text + (rext > 0 ? last * rext : 0);
        tmp = malloc((size_t)(hi - lo));
        if (tmp == NULL)
            return MPI_ERR_NO_MEM;
        memcpy(tmp, aapc_at(recvbuf, lo), (size_t)(hi - lo));
        st.sbuf = aapc_at(tmp, -lo); /* the same addressing as recvbuf, as MPI libraries do */
        st.scount = recvcount;
        st.stype = recvtype;
        st.sblock = st.rblock;
    } else {
        if ((rc = PMPI_Type_get_extent(sendtype, &lb, &sext)) != MPI_SUCCESS)
            return rc;
        st.sbuf = sendbuf;
        st.scount = sendcount;
        st.stype = sendtype;
        st.sblock = (MPI_Aint)sendcount * sext;
    }
    rc = aapc_execute(&st, myrank, bytes);
    free(tmp);
    return rc;
}

