/*
 * aapc_alltoallv_exec.c: MPI_Alltoallv through a precomputed piece schedule (levels 1-3).
 *
 * Algorithm: every data entry of the schedule moves the byte range [pos, pos + len) of its
 * (source, destination) message, so one message may travel in pieces in different phases.
 * Whole messages go with the user's datatypes; a piece of a message with a non-dense datatype
 * travels packed (MPI_Pack into one buffer per direction before the phases, MPI_Unpack after).
 * Level 3 (aapc_alltoallv_run) first checks the arguments on every rank and that the ranks'
 * counts match each other (common/aapc_args.c: one MPI_Allreduce; errors go through the
 * communicator's error handler, null and inter-communicators to PMPI_Alltoallv untouched),
 * then that this call's counts are the compiled pattern on every rank (one MPI_Allreduce of an
 * int); otherwise the call goes to PMPI_Alltoallv untouched. An error inside the executor is
 * returned by its private communicator and raised through the user's communicator (aborting
 * the job when the handler returns: common/aapc_args.c aapc_args_raise_alone). Element sizes
 * are 64-bit (a derived type may exceed INT_MAX bytes) and buffers may be MPI_BOTTOM.
 * Cost: the schedule's sum over phases of (alpha + max piece bytes beta) plus its syncs (common/
 * aapc_exec.c); plus 2 lg(p) alpha for the level-3 checks and the packing copies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_args.h"
#include "aapc_exec.h"
#include "aapc_mpi.h"
#include "aapc_report.h"

/* Byte span [*lo, *hi) of `count` elements of `type` at displacement disp (in extents). */
static void aapc_span(MPI_Aint disp, int count, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text,
                      MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint base = disp * ext, last = (MPI_Aint)(count - 1);
    *lo = base + tlb + (ext < 0 ? last * ext : 0);
    *hi = base + tlb + text + (ext > 0 ? last * ext : 0);
}

/* For messages moved in pieces with a non-dense type: offsets into one packed buffer per
   direction (-1: not packed). Returns the buffer size through *total. */
static int aapc_pack_plan(struct aapc_run *st, int send, int nranks, MPI_Aint **off,
                          MPI_Aint *total)
{
    const aapc_schedule_t *s = st->s;
    int lo = send ? st->s0 : st->r0, hi = send ? st->s1 : st->r1;
    const int32_t *peer = send ? s->send_peer : s->recv_peer;
    const int64_t *pos = send ? s->send_pos : s->recv_pos, *len = send ? s->send_len : s->recv_len;
    const int *counts = send ? st->scounts : st->rcounts;
    int64_t size = send ? st->ssize : st->rsize;
    *total = 0;
    *off = malloc((size_t)nranks * sizeof **off);
    if (*off == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < nranks; i++)
        (*off)[i] = -1;
    if (send ? st->sdense : st->rdense)
        return MPI_SUCCESS;
    for (int e = lo; e < hi; e++) {
        int r = aapc_rank(st, peer[e]);
        if ((*off)[r] >= 0 || (pos[e] == 0 && len[e] == (int64_t)counts[r] * size))
            continue;
        (*off)[r] = *total; /* packed as its raw bytes (aapc_pack_bytes checks) */
        *total += (MPI_Aint)counts[r] * size;
    }
    return MPI_SUCCESS;
}

/* Pack (send) or unpack (receive) every message listed in off[]. */
static int aapc_pack_all(struct aapc_run *st, int send, int nranks)
{
    MPI_Aint *off = send ? st->spoff : st->rpoff;
    for (int r = 0; r < nranks; r++) {
        if (off[r] < 0)
            continue;
        int n = send ? st->scounts[r] : st->rcounts[r], rc;
        if (send)
            rc = aapc_pack_bytes(1, aapc_at(st->sbuf, (MPI_Aint)st->sdispls[r] * st->sext), n,
                                 st->stype, st->sext, st->ssize, st->spack + off[r], st->dup);
        else
            rc = aapc_pack_bytes(0, aapc_at(st->rbuf, (MPI_Aint)st->rdispls[r] * st->rext), n,
                                 st->rtype, st->rext, st->rsize, st->rpack + off[r], st->dup);
        if (rc != MPI_SUCCESS)
            return rc == MPI_ERR_TRUNCATE ? MPI_ERR_INTERN : rc; /* packed form not raw bytes */
    }
    return MPI_SUCCESS;
}

int aapc_alltoallv_exec(const aapc_schedule_t *s, struct aapc_comm_info *info,
                        const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype)
{
    struct aapc_run st;
    int rc, me = 0, size = 0;
    MPI_Aint lb, spack = 0, rpack = 0;
    char *tmp = NULL;

    memset(&st, 0, sizeof st);
    if (s == NULL || info == NULL || !info->usable || s->send_pos == NULL ||
        s->send_len == NULL || s->recv_pos == NULL || s->recv_len == NULL)
        return MPI_ERR_ARG;
    st.s = s;
    st.info = *info;
    st.dup = info->dup;
    st.m = info->my_machine;
    st.vmode = 1;
    if ((rc = PMPI_Comm_rank(st.dup, &me)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(st.dup, &size)) != MPI_SUCCESS ||
        (rc = aapc_type_size(recvtype, &st.rsize)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(recvtype, &lb, &st.rext)) != MPI_SUCCESS)
        return rc;
    st.rbuf = recvbuf;
    st.rcounts = recvcounts;
    st.rdispls = rdispls;
    st.rtype = recvtype;
    if (sendbuf == MPI_IN_PLACE) { /* copy the span of every block aside */
        MPI_Aint tlb, text, lo = 0, hi = 0;
        int any = 0;
        if ((rc = PMPI_Type_get_true_extent(recvtype, &tlb, &text)) != MPI_SUCCESS)
            return rc;
        for (int i = 0; i < size; i++) {
            MPI_Aint a, b;
            if (recvcounts[i] <= 0)
                continue;
            aapc_span(rdispls[i], recvcounts[i], st.rext, tlb, text, &a, &b);
            lo = any && lo < a ? lo : a;
            hi = any && hi > b ? hi : b;
            any = 1;
        }
        tmp = malloc(hi > lo ? (size_t)(hi - lo) : 1);
        if (tmp == NULL)
            return MPI_ERR_NO_MEM;
        if (hi > lo)
            memcpy(tmp, aapc_at(recvbuf, lo), (size_t)(hi - lo));
        st.sbuf = aapc_at(tmp, -lo); /* the same addressing as recvbuf */
        st.scounts = recvcounts;
        st.sdispls = rdispls;
        st.stype = recvtype;
        st.ssize = st.rsize;
        st.sext = st.rext;
    } else {
        if ((rc = aapc_type_size(sendtype, &st.ssize)) != MPI_SUCCESS ||
            (rc = PMPI_Type_get_extent(sendtype, &lb, &st.sext)) != MPI_SUCCESS)
            return rc;
        st.sbuf = sendbuf;
        st.scounts = sendcounts;
        st.sdispls = sdispls;
        st.stype = sendtype;
    }
    st.sdense = aapc_dense(st.stype);
    st.rdense = aapc_dense(st.rtype);
    st.s0 = s->send_off[st.m];
    st.s1 = s->send_off[st.m + 1];
    st.r0 = s->recv_off[st.m];
    st.r1 = s->recv_off[st.m + 1];
    for (int e = st.s0; e < st.s1; e++) /* rows are checked again in aapc_execute */
        if (!aapc_peer_ok(s, s->send_peer[e]) || s->send_peer[e] < 0)
            rc = MPI_ERR_INTERN;
    for (int r = st.r0; r < st.r1; r++)
        if (!aapc_peer_ok(s, s->recv_peer[r]) || s->recv_peer[r] < 0)
            rc = MPI_ERR_INTERN;
    if (rc == MPI_SUCCESS &&
        (rc = aapc_pack_plan(&st, 1, size, &st.spoff, &spack)) == MPI_SUCCESS &&
        (rc = aapc_pack_plan(&st, 0, size, &st.rpoff, &rpack)) == MPI_SUCCESS) {
        st.spack = malloc(spack ? (size_t)spack : 1);
        st.rpack = malloc(rpack ? (size_t)rpack : 1);
        if (st.spack == NULL || st.rpack == NULL)
            rc = MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS && (rc = aapc_pack_all(&st, 1, size)) == MPI_SUCCESS &&
        (rc = aapc_execute(&st, me, 0)) == MPI_SUCCESS)
        rc = aapc_pack_all(&st, 0, size);
    free(st.spack);
    free(st.rpack);
    free(st.spoff);
    free(st.rpoff);
    free(tmp);
    return rc;
}

/* Level 3: do this call's counts equal the compiled pattern on every rank? (1 Allreduce) */
static int aapc_pattern_matches(const aapc_schedule_t *s, const aapc_comm_info_t *info,
                                const int sendcounts[], MPI_Datatype sendtype, int inplace,
                                const int recvcounts[], MPI_Datatype recvtype, int *all_ok)
{
    int rc, ok = 1, m = info->my_machine, n = s->nmachines;
    int64_t ssize, rsize;
    if ((rc = aapc_type_size(recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    if (inplace) {
        ssize = rsize;
        sendcounts = recvcounts;
    } else if ((rc = aapc_type_size(sendtype, &ssize)) != MPI_SUCCESS) {
        return rc;
    }
    for (int j = 0; j < n && ok; j++) {
        int r = aapc_comm_rank_of(info, j);
        if (j == m)
            continue;
        ok = (int64_t)sendcounts[r] * ssize == s->pattern[(int64_t)m * n + j] &&
             (int64_t)recvcounts[r] * rsize == s->pattern[(int64_t)j * n + m];
    }
    *all_ok = ok;
    return PMPI_Allreduce(MPI_IN_PLACE, all_ok, 1, MPI_INT, MPI_MIN, info->dup);
}

int aapc_alltoallv_run(const aapc_schedule_t *s, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm)
{
    aapc_comm_info_t info;
    int rc, ok = 1, done;
    if (s == NULL)
        return MPI_ERR_ARG;
    rc = aapc_args_alltoallv(s->name, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                             recvcounts, rdispls, recvtype, comm, &done);
    if (done)
        return rc;
    if ((rc = aapc_comm_lookup(s, comm, &info)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (info.usable)
        aapc_args_private_returns(info.dup);
    if (info.usable && s->pattern != NULL &&
        (rc = aapc_pattern_matches(s, &info, sendcounts, sendtype, sendbuf == MPI_IN_PLACE,
                                   recvcounts, recvtype, &ok)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (!ok)
        aapc_warn_fallback(comm, s->name, "this call's counts differ from the compiled pattern",
                       "MPI_Alltoallv");
    if (!info.usable)
        aapc_report_fallback(aapc_comm_why(s, &info));
    if (!info.usable || !ok)
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    aapc_report_served("precomputed, compiled pattern");
    return aapc_args_raise_alone(comm, aapc_alltoallv_exec(s, &info, sendbuf, sendcounts, sdispls,
                                                           sendtype, recvbuf, recvcounts, rdispls,
                                                           recvtype));
}
