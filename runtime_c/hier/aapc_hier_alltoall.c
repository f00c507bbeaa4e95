/*
 * aapc_hier_alltoall.c: MPI_Alltoall for machines running several ranks each (seed 004 ch. 7,
 * hierarchical all-to-all with one leader per machine).
 *
 * Algorithm: R ranks per machine, placed in blocks (ranks k*R .. k*R+R-1 on machine k). With
 * N machines, P = N*R ranks and b bytes per block:
 *   1. every rank packs its P send blocks (MPI_Pack, any datatype) and the machine's leader
 *      (local rank 0) gathers them: G[i][q] = block from local rank i to global rank q;
 *   2. the leaders run the generated contention-free machine-level schedule (common/aapc_exec.c):
 *      machine a sends machine c one aggregated block of R*R*b bytes, {G[i][c*R + j]}, described
 *      by an MPI derived datatype (no extra copy), and receives it straight into the layout
 *      S[j][a*R + i] that step 3 scatters; every phase moves one machine-to-machine block, so
 *      the inter-machine traffic keeps the optimal phases of the one-rank-per-machine case;
 *   3. the leader scatters S[j] (P blocks) to local rank j, which unpacks into its receive
 *      buffer. Blocks between ranks of one machine never leave it.
 * Where the machine's ranks share memory (aapc_hier_segment.c; layout->shared), G and S live in
 * the machine's shared segment: step 1 is every rank copying its blocks into its row G[i], a
 * sync, step 2, a sync, and step 3 every rank copying its row S[j] out: one copy on each side
 * and no message inside the machine (rounds then hold at most AAPC_HIER_SEGMENT_MAX bytes).
 * With the segment a machine may have L leaders (layout->lanes, aapc_hier_lanes: by size, or
 * AAPC_LEADERS): local rank l < L carries the blocks of local ranks [l R / L, (l + 1) R / L) in
 * its own run of the machine-level exchange among local rank l of every machine, so the L
 * exchanges run side by side and a machine's traffic leaves it from L processes.
 * The machine-level exchange is the caller's: the contention-free phases (here and
 * alltoall/aapc_alltoall_cluster.c) or log rounds among the leaders (the log-round way).
 * Large calls move in rounds: round k moves bytes [k c, (k + 1) c) of every block, c chosen so
 * that a leader's R*P*c bytes (its gather and scatter buffers, and every count of an internal
 * MPI call) stay under AAPC_HIER_ROUND_BYTES (default 256 MiB, at most INT_MAX): no internal
 * count overflows whatever R^2 N b is, and the leaders' memory stays bounded. Dense datatypes
 * (plain bytes) are read and written in place through indexed byte types; others are packed
 * once into a P*b-byte buffer (MPI_Pack in pieces of at most INT_MAX bytes; the user's buffer
 * may be MPI_BOTTOM with absolute-address datatypes: common/aapc_exec.c aapc_pack_bytes) and
 * unpacked after the last round. Sizes are 64-bit (a derived type may exceed INT_MAX bytes). A rank's blocks are taken in machine order (`order`: any placement of R
 * ranks on each machine), so the leaders' aggregated blocks are the same for every layout.
 * Cost: intra-machine gather + scatter of R*P*b bytes each (2 P b copied per rank and two
 * syncs through the segment; else MPI messages), plus
 * the machine-level schedule with blocks of R^2 b: P_phases (alpha + R^2 b beta) on the
 * critical path, versus (P-1)(alpha + b beta) contended for a flat all-to-all; rounds add
 * (rounds - 1)(2 lg R + P_phases) alpha.
 * The node and leader communicators are created on first use and cached on the user's
 * communicator (freed with it).
 */
#include "aapc_hier.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_exec.h" /* aapc_dense, aapc_pack_bytes */
#include "aapc_lock.h"
#include "aapc_mpi.h"
#include "aapc_report.h"
#include "aapc_settings.h" /* AAPC_HIER_ROUND_BYTES */

struct aapc_hier_cache {
    MPI_Comm node, leaders; /* leaders: MPI_COMM_NULL on non-leaders */
    int ranks_per_machine;
};

static int hier_keyval = MPI_KEYVAL_INVALID;
static aapc_mutex_t hier_lock = AAPC_MUTEX_INIT;

static int hier_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    struct aapc_hier_cache *c = value;
    (void)comm;
    (void)keyval;
    (void)extra;
    if (c->node != MPI_COMM_NULL)
        PMPI_Comm_free(&c->node);
    if (c->leaders != MPI_COMM_NULL)
        PMPI_Comm_free(&c->leaders);
    free(c);
    return MPI_SUCCESS;
}

/* The node and leader communicators of comm (collective on first use): node = the ranks of
   this rank's machine (rank / R), in rank order; leaders = local rank 0 of every machine, in
   machine order (MPI_COMM_NULL on other ranks). */
static int hier_comms(MPI_Comm comm, int r, struct aapc_hier_cache **out)
{
    int rc, flag = 0, rank;
    struct aapc_hier_cache *c = NULL;
    if ((rc = aapc_keyval_once(&hier_lock, &hier_keyval, hier_delete)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_get_attr(comm, hier_keyval, &c, &flag)) != MPI_SUCCESS)
        return rc;
    if (flag && c->ranks_per_machine == r) {
        *out = c;
        return MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    c->ranks_per_machine = r;
    c->node = c->leaders = MPI_COMM_NULL;
    if ((rc = PMPI_Comm_split(comm, rank / r, rank % r, &c->node)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_split(comm, rank % r == 0 ? 0 : MPI_UNDEFINED, rank / r,
                              &c->leaders)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_set_attr(comm, hier_keyval, c)) != MPI_SUCCESS) {
        hier_delete(comm, hier_keyval, c, NULL);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

/* The aggregated machine-to-machine block of sources i in [i0, i0 + ni) as datatypes over
   G + i0*P*b (send) and S + i0*b (receive), blocks of b bytes: send element c =
   {G[i][c*R + j] : i, j} (i outer); receive element a = {S[j][a*R + i]}. */
static int hier_types(int r, int ni, int p, MPI_Aint b, MPI_Datatype *send, MPI_Datatype *recv)
{
    MPI_Datatype row, inner, tmp;
    int rc;
    *send = *recv = MPI_DATATYPE_NULL;
    if ((rc = PMPI_Type_contiguous((int)b, MPI_BYTE, &row)) != MPI_SUCCESS)
        return rc;
    /* send: for i: R consecutive blocks at G + i*P*b + c*R*b */
    rc = PMPI_Type_create_hvector(ni, r, (MPI_Aint)p * b, row, &tmp);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(tmp, 0, (MPI_Aint)r * b, send);
    if (rc == MPI_SUCCESS)
        PMPI_Type_free(&tmp);
    /* receive: for i: for j: block at S + j*P*b + a*R*b + i*b */
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_hvector(r, 1, (MPI_Aint)p * b, row, &inner);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Type_create_hvector(ni, 1, b, inner, &tmp);
        PMPI_Type_free(&inner);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Type_create_resized(tmp, 0, (MPI_Aint)r * b, recv);
        PMPI_Type_free(&tmp);
    }
    PMPI_Type_free(&row);
    if (rc == MPI_SUCCESS && (rc = PMPI_Type_commit(send)) == MPI_SUCCESS)
        rc = PMPI_Type_commit(recv);
    return rc;
}

MPI_Aint aapc_hier_round_limit(MPI_Comm comm)
{
    const char *e = aapc_setting(comm, "AAPC_HIER_ROUND_BYTES");
    long long v = e != NULL ? atoll(e) : 0;
    MPI_Aint limit = v > 0 ? (MPI_Aint)v : (MPI_Aint)256 << 20;
    return limit > INT_MAX ? INT_MAX : limit;
}

static atomic_llong paths[3];

void aapc_hier_alltoall_paths(long long counts[3])
{
    for (int k = 0; k < 3; k++)
        counts[k] = atomic_load(&paths[k]);
}

int aapc_hier_lanes(MPI_Comm comm, int r, MPI_Aint b)
{
    static atomic_int warned;
    const char *e = aapc_setting(comm, "AAPC_LEADERS");
    char *end = NULL;
    long long v = e != NULL && e[0] != '\0' ? strtoll(e, &end, 10) : 0, l;
    if (e != NULL && e[0] != '\0' && (v < 1 || *end != '\0')) {
        if (atomic_exchange(&warned, 1) == 0)
            fprintf(stderr, "aapcgen: AAPC_LEADERS=%s is not a number of leaders per machine "
                            "(1 or more); choosing by size\n", e);
        v = 0;
    }
    if (v > 0)
        l = v;
    else {
        double per = (double)r * r * (double)b / 65536.0;
        l = per >= 4 ? 4 : (long long)per;
    }
    return l < 1 ? 1 : l > r ? r : (int)l;
}

MPI_Aint aapc_hier_round_bytes(MPI_Aint b, int r, int p, MPI_Aint limit)
{
    MPI_Aint per = (MPI_Aint)r * (MPI_Aint)p, c = per > 0 ? limit / per : b;
    if (c < 1)
        c = 1;
    return c < b ? c : b;
}

/* P blocks of `len` bytes at base + disp[q] (q in machine order), as one element. */
static int hier_blocks(int p, MPI_Aint len, const MPI_Aint *disp, MPI_Datatype *t)
{
    int rc = PMPI_Type_create_hindexed_block(p, (int)len, disp, MPI_BYTE, t);
    return rc == MPI_SUCCESS ? PMPI_Type_commit(t) : rc;
}

int aapc_hier_alltoall_core(const aapc_hier_layout_t *h, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, lrank, r = h->r, p = h->p;
    int64_t rsize, ssize;
    MPI_Aint lb, sext, rext, b, total;
    char *mine = NULL, *back = NULL, *gathered = NULL, *scattered = NULL;
    MPI_Aint *disp = NULL;
    MPI_Datatype gtype = MPI_DATATYPE_NULL, stype = MPI_DATATYPE_NULL;
    MPI_Datatype send1 = MPI_DATATYPE_NULL, recv1 = MPI_DATATYPE_NULL;
    int inplace = sendbuf == MPI_IN_PLACE;
    const char *sbase;
    char *rbase;

    if ((rc = aapc_type_size(recvtype, &rsize)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(recvtype, &lb, &rext)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(h->node, &lrank)) != MPI_SUCCESS)
        return rc;
    if (inplace) {
        sendbuf = recvbuf;
        sendcount = recvcount;
        sendtype = recvtype;
    }
    if ((rc = aapc_type_size(sendtype, &ssize)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_extent(sendtype, &lb, &sext)) != MPI_SUCCESS)
        return rc;
    b = (MPI_Aint)recvcount * rsize;
    if (b == 0)
        return MPI_SUCCESS;
    if ((MPI_Aint)sendcount * ssize != b)
        return MPI_ERR_TRUNCATE; /* the send signature does not match recvcount x recvtype */
    total = b * p; /* one rank's P blocks */
    int sdense = !inplace && aapc_dense(sendtype), rdense = aapc_dense(recvtype);
    int pack_in = !sdense && !(inplace && rdense);
    /* a round's G and S: in the leader's buffers (MPI_Gather and MPI_Scatter), or in the
       machine's shared segment, whose rounds are smaller */
    MPI_Aint c = aapc_hier_round_bytes(b, r, p, h->round_limit);
    char *segment = NULL;
    if (h->shared) {
        MPI_Aint cap = AAPC_HIER_SEGMENT_MAX / 2;
        MPI_Aint cs = aapc_hier_round_bytes(b, r, p, h->round_limit < cap ? h->round_limit : cap);
        if ((rc = aapc_hier_segment(h->node, 2 * (MPI_Aint)r * p * cs, &segment)) != MPI_SUCCESS)
            return rc;
        if (segment != NULL)
            c = cs;
    }
    /* my lane: the sources [i0, i0 + ni) I carry as one of L leaders (segment only) */
    int lanes = segment != NULL && h->lanes > 1 ? (h->lanes < r ? h->lanes : r) : 1;
    int leader = lrank < lanes, i0 = lrank * r / lanes, ni = (lrank + 1) * r / lanes - i0;
    atomic_fetch_add(&paths[segment == NULL ? 2 : lanes > 1], 1);

    disp = malloc(sizeof *disp * (size_t)p);
    if (pack_in)
        mine = malloc((size_t)total);
    if (!rdense)
        back = malloc((size_t)total);
    if (segment != NULL) {
        gathered = segment;
        scattered = segment + (MPI_Aint)r * p * c;
    } else if (lrank == 0) {
        gathered = malloc((size_t)((MPI_Aint)r * p * c));
        scattered = malloc((size_t)((MPI_Aint)r * p * c));
    }
    if (disp == NULL || (pack_in && mine == NULL) || (!rdense && back == NULL) ||
        (lrank == 0 && (gathered == NULL || scattered == NULL))) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* the bytes of my P blocks: the user's buffer when it is plain bytes, else packed once */
    if (pack_in) {
        rc = aapc_pack_bytes(1, (void *)sendbuf, (MPI_Aint)sendcount * p, sendtype, sext, ssize,
                             mine, comm);
        if (rc != MPI_SUCCESS)
            goto out;
    }
    sbase = pack_in ? mine : (const char *)sendbuf;
    rbase = rdense ? (char *)recvbuf : back;
    for (int q = 0; q < p; q++) /* my blocks in machine order */
        disp[q] = (MPI_Aint)(h->order ? h->order[q] : q) * b;
    MPI_Aint built = 0; /* the block length the types describe */
    for (MPI_Aint o = 0; o < b; o += c) {
        MPI_Aint len = b - o < c ? b - o : c;
        if (len != built) { /* full rounds, then the last one */
            if (send1 != MPI_DATATYPE_NULL) {
                PMPI_Type_free(&send1);
                PMPI_Type_free(&recv1);
            }
            if (gtype != MPI_DATATYPE_NULL) {
                PMPI_Type_free(&gtype);
                PMPI_Type_free(&stype);
            }
            built = len;
            if (segment == NULL && ((rc = hier_blocks(p, len, disp, &send1)) != MPI_SUCCESS ||
                                    (rc = hier_blocks(p, len, disp, &recv1)) != MPI_SUCCESS))
                goto out;
            if (leader && (rc = hier_types(r, ni, p, len, &gtype, &stype)) != MPI_SUCCESS)
                goto out;
        }
        if (segment != NULL) { /* 1.-3. through the shared segment, one copy each side */
            char *g = gathered + (MPI_Aint)lrank * p * len;
            for (int q = 0; q < p; q++)
                memcpy(g + (MPI_Aint)q * len, sbase + disp[q] + o, (size_t)len);
            if ((rc = aapc_hier_segment_sync(h->node)) != MPI_SUCCESS)
                goto out;
            if (leader && (rc = h->exchange(h->ctx, gathered + (MPI_Aint)i0 * p * len, gtype,
                                            scattered + (MPI_Aint)i0 * len, stype,
                                            h->leaders)) != MPI_SUCCESS)
                goto out; /* the others wait in the sync below: the caller aborts (raise) */
            if ((rc = aapc_hier_segment_sync(h->node)) != MPI_SUCCESS)
                goto out;
            const char *s = scattered + (MPI_Aint)lrank * p * len;
            for (int q = 0; q < p; q++)
                memcpy(rbase + disp[q] + o, s + (MPI_Aint)q * len, (size_t)len);
            continue; /* the next round's first sync comes after every read of this one */
        }
        /* 1. gather bytes [o, o + len) of every block: G[i][k*R + j] */
        if ((rc = PMPI_Gather(sbase + o, 1, send1, gathered, (int)(p * len), MPI_BYTE, 0,
                              h->node)) != MPI_SUCCESS)
            goto out;
        /* 2. leaders: the machine-level contention-free schedule on aggregated blocks */
        if (leader &&
            (rc = h->exchange(h->ctx, gathered, gtype, scattered, stype, h->leaders)) !=
                MPI_SUCCESS)
            goto out;
        /* 3. scatter S[j] to local rank j, into bytes [o, o + len) of its blocks */
        if ((rc = PMPI_Scatter(scattered, (int)(p * len), MPI_BYTE, rbase + o, 1, recv1, 0,
                               h->node)) != MPI_SUCCESS)
            goto out;
    }
    if (!rdense)
        rc = aapc_pack_bytes(0, recvbuf, (MPI_Aint)recvcount * p, recvtype, rext, rsize, back,
                             comm);
out:
    if (gtype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&gtype);
    if (stype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&stype);
    if (send1 != MPI_DATATYPE_NULL)
        PMPI_Type_free(&send1);
    if (recv1 != MPI_DATATYPE_NULL)
        PMPI_Type_free(&recv1);
    free(disp);
    free(mine);
    free(back);
    if (segment == NULL) {
        free(gathered);
        free(scattered);
    }
    return rc;
}

/* The precomputed machine-level schedule among the leaders: leader k runs machine k (they are
   split from the blocks in machine order), or the machine of its host name with a host table. */
static int run_schedule(void *ctx, const void *g, MPI_Datatype gt, void *s, MPI_Datatype st,
                        MPI_Comm leaders)
{
    const aapc_schedule_t *sched = ctx;
    aapc_comm_info_t info;
    int rc = aapc_comm_lookup_identity(sched, leaders, &info);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!info.usable)
        return PMPI_Alltoall(g, 1, gt, s, 1, st, leaders);
    aapc_args_private_returns(info.dup);
    return aapc_alltoall_exec(sched, &info, g, 1, gt, s, 1, st);
}

int aapc_hier_alltoall_run(const aapc_schedule_t *s, int r, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, size, inter = 0;
    struct aapc_hier_cache *c;

    if (s == NULL || r < 1)
        return MPI_ERR_ARG;
    if (r == 1)
        return aapc_alltoall_run(s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                 comm);
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))
        return MPI_ERR_COUNT;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter || size != s->nmachines * r) { /* not this layout */
        if (!inter) {
            char why[160];
            snprintf(why, sizeof why, "communicator has %d ranks, the topology %d machines x %d "
                     "ranks", size, (int)s->nmachines, r);
            aapc_warn_fallback(comm, s->name, why, "MPI_Alltoall");
        }
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    if (recvcount == 0)
        return MPI_SUCCESS;
    if ((rc = hier_comms(comm, r, &c)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    aapc_hier_layout_t h = {r,         size,        NULL, c->node, c->leaders, run_schedule,
                            (void *)s, aapc_hier_round_limit(comm), 1, 1};
    aapc_report_served("precomputed, leader-based");
    return aapc_args_raise_alone(comm, aapc_hier_alltoall_core(&h, sendbuf, sendcount, sendtype,
                                                               recvbuf, recvcount, recvtype, comm));
}
