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
 * Cost: intra-machine gather + scatter of R*P*b bytes each (shared memory or loopback), plus
 * the machine-level schedule with blocks of R^2 b: P_phases (alpha + R^2 b beta) on the
 * critical path, versus (P-1)(alpha + b beta) contended for a flat all-to-all.
 * The node and leader communicators are created on first use and cached on the user's
 * communicator (freed with it).
 */
#include "aapc_hier.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct aapc_hier_cache {
    MPI_Comm node, leaders; /* leaders: MPI_COMM_NULL on non-leaders */
    int ranks_per_machine;
};

static int hier_keyval = MPI_KEYVAL_INVALID;

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

/* The node and leader communicators of comm (collective on first use). */
static int hier_comms(MPI_Comm comm, int r, struct aapc_hier_cache **out);

int aapc_hier_comms(MPI_Comm comm, int ranks_per_machine, MPI_Comm *node, MPI_Comm *leaders)
{
    struct aapc_hier_cache *c;
    int rc = hier_comms(comm, ranks_per_machine, &c);
    if (rc == MPI_SUCCESS) {
        *node = c->node;
        *leaders = c->leaders;
    }
    return rc;
}

static int hier_comms(MPI_Comm comm, int r, struct aapc_hier_cache **out)
{
    int rc, flag = 0, rank;
    struct aapc_hier_cache *c = NULL;
    if (hier_keyval == MPI_KEYVAL_INVALID &&
        (rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hier_delete, &hier_keyval, NULL)) !=
            MPI_SUCCESS)
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

/* The aggregated machine-to-machine block as datatypes over G (send) and S (receive):
   send element c = {G[i][c*R + j] : i, j} (i outer); receive element a = {S[j][a*R + i]}. */
static int hier_types(int r, int p, MPI_Aint b, MPI_Datatype *send, MPI_Datatype *recv)
{
    MPI_Datatype row, inner, tmp;
    int rc;
    *send = *recv = MPI_DATATYPE_NULL;
    if ((rc = PMPI_Type_contiguous((int)b, MPI_BYTE, &row)) != MPI_SUCCESS)
        return rc;
    /* send: for i: R consecutive blocks at G + i*P*b + c*R*b */
    rc = PMPI_Type_create_hvector(r, r, (MPI_Aint)p * b, row, &tmp);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(tmp, 0, (MPI_Aint)r * b, send);
    if (rc == MPI_SUCCESS)
        PMPI_Type_free(&tmp);
    /* receive: for i: for j: block at S + j*P*b + a*R*b + i*b */
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_hvector(r, 1, (MPI_Aint)p * b, row, &inner);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Type_create_hvector(r, 1, b, inner, &tmp);
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

int aapc_hier_alltoall_run(const aapc_schedule_t *s, int r, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, size, rank, rsize, lrank;
    struct aapc_hier_cache *c;
    MPI_Aint b, total;
    char *mine = NULL, *gathered = NULL, *scattered = NULL, *back = NULL;
    MPI_Datatype gtype = MPI_DATATYPE_NULL, stype = MPI_DATATYPE_NULL;

    if (s == NULL || r < 1)
        return MPI_ERR_ARG;
    if (r == 1)
        return aapc_alltoall_run(s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                 comm);
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))
        return MPI_ERR_COUNT;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter || size != s->nmachines * r) /* not this layout */
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    b = (MPI_Aint)recvcount * rsize;
    if (b == 0)
        return MPI_SUCCESS;
    total = b * size; /* one rank's P blocks */
    if ((rc = hier_comms(comm, r, &c)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_rank(c->node, &lrank)) != MPI_SUCCESS)
        return rc;
    if (total > INT_MAX || (MPI_Aint)r * total > INT_MAX)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);

    mine = malloc((size_t)total);
    back = malloc((size_t)total);
    if (lrank == 0) {
        gathered = malloc((size_t)(r * total));
        scattered = malloc((size_t)(r * total));
    }
    if (mine == NULL || back == NULL || (lrank == 0 && (gathered == NULL || scattered == NULL))) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* 1. pack my P blocks (MPI_IN_PLACE: the receive buffer holds them) and gather */
    int pos = 0;
    if (sendbuf == MPI_IN_PLACE)
        rc = PMPI_Pack(recvbuf, recvcount * size, recvtype, mine, (int)total, &pos, comm);
    else
        rc = PMPI_Pack(sendbuf, sendcount * size, sendtype, mine, (int)total, &pos, comm);
    if (rc != MPI_SUCCESS)
        goto out;
    if (pos != total) { /* the send signature does not match recvcount x recvtype */
        rc = MPI_ERR_TRUNCATE;
        goto out;
    }
    if ((rc = PMPI_Gather(mine, (int)total, MPI_BYTE, gathered, (int)total, MPI_BYTE, 0,
                          c->node)) != MPI_SUCCESS)
        goto out;
    /* 2. leaders: the machine-level contention-free schedule on aggregated blocks */
    if (lrank == 0) {
        if ((rc = hier_types(r, size, b, &gtype, &stype)) != MPI_SUCCESS)
            goto out;
        rc = aapc_alltoall_run(s, gathered, 1, gtype, scattered, 1, stype, c->leaders);
        if (rc != MPI_SUCCESS)
            goto out;
    }
    /* 3. scatter S[j] to local rank j and unpack */
    if ((rc = PMPI_Scatter(scattered, (int)total, MPI_BYTE, back, (int)total, MPI_BYTE, 0,
                           c->node)) != MPI_SUCCESS)
        goto out;
    pos = 0;
    rc = PMPI_Unpack(back, (int)total, &pos, recvbuf, recvcount * size, recvtype, comm);
out:
    if (gtype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&gtype);
    if (stype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&stype);
    free(mine);
    free(back);
    free(gathered);
    free(scattered);
    return rc;
}
