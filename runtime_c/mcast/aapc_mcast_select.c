/*
 * aapc_mcast_select.c: when to use multicast, and the PMPI drop-in entry points.
 *
 * Selection: a pure function of (operation, communicator size, bytes per rank) and of the
 * environment, so every rank takes the same decision for matching calls. Multicast is used only
 * inside the measured winning ranges (docs/multicast.md, "Measured results"), on intra-
 * communicators of at least AAPC_MCAST_MIN_RANKS (3) ranks:
 *   Bcast      bytes >= AAPC_MCAST_BCAST_MIN
 *   Scatter    bytes per block <= AAPC_MCAST_SCATTER_MAX
 *   Allgather  AAPC_MCAST_ALLGATHER_MIN <= bytes per block <= AAPC_MCAST_ALLGATHER_MAX
 *   Scatterv   never by default (a receiver does not know the other ranks' counts, so no
 *              size-based rule is consistent); AAPC_MCAST_SCATTERV=static|dynamic enables it.
 * Where the table says multicast, it is still not used when every rank of the communicator has
 * the same interface address (one host: the library's shared memory is faster).
 * AAPC_MCAST=0 disables multicast, AAPC_MCAST=1 forces it for every size (tests). A negative
 * threshold disables that operation. Where multicast is chosen but cannot be set up on the
 * communicator, the collectives themselves fall back to PMPI_*.
 * Cost of the decision: O(1) per call (environment read once).
 *
 * Compiled with -DAAPC_INTERCEPT_MCAST this file also defines MPI_Bcast, MPI_Scatter,
 * MPI_Scatterv and MPI_Allgather, which call the multicast versions where selected and
 * PMPI_* otherwise.
 */
#include "aapc_mcast_internal.h"

#include <stdlib.h>
#include <string.h>

/* Defaults: the winning ranges measured by `aapcgen bench-mcast topologies/two-switch-4-4.yaml`
 * (8 ranks, 100 Mbit/s, docs/multicast.md): Bcast wins from 4 KiB (1.6x) up (1 KiB: 0.46x);
 * Allgather wins for 1-32 KiB blocks (2-8x), loses at <= 64 B (0.2x) and >= 64 KiB (0.92-0.97x);
 * Scatter by aggregation never wins clearly (0.14-1.04x). */
#define DEF_BCAST_MIN 4096LL
#define DEF_SCATTER_MAX (-1LL)
#define DEF_ALLGATHER_MIN 1024LL
#define DEF_ALLGATHER_MAX 32768LL

static struct {
    int read;
    int mode; /* -1 off, 0 table, 1 force */
    int min_ranks;
    long long bcast_min, scatter_max, allgather_min, allgather_max;
    int scatterv; /* -1 off, AAPC_MCAST_STATIC, AAPC_MCAST_DYNAMIC */
} sel;

static long long env_ll(const char *name, long long def)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return def;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    return (end != s && *end == '\0') ? v : def;
}

static void read_env(void)
{
    if (sel.read)
        return;
    sel.read = 1;
    const char *m = getenv("AAPC_MCAST");
    sel.mode = (m == NULL || *m == '\0') ? 0 : (strcmp(m, "0") == 0 ? -1 : strcmp(m, "1") == 0);
    sel.min_ranks = (int)env_ll("AAPC_MCAST_MIN_RANKS", 3);
    sel.bcast_min = env_ll("AAPC_MCAST_BCAST_MIN", DEF_BCAST_MIN);
    sel.scatter_max = env_ll("AAPC_MCAST_SCATTER_MAX", DEF_SCATTER_MAX);
    sel.allgather_min = env_ll("AAPC_MCAST_ALLGATHER_MIN", DEF_ALLGATHER_MIN);
    sel.allgather_max = env_ll("AAPC_MCAST_ALLGATHER_MAX", DEF_ALLGATHER_MAX);
    const char *v = getenv("AAPC_MCAST_SCATTERV");
    sel.scatterv = v == NULL ? -1
                   : strcmp(v, "static") == 0 ? AAPC_MCAST_STATIC
                   : strcmp(v, "dynamic") == 0 ? AAPC_MCAST_DYNAMIC
                                               : -1;
}

int aapc_mcast_choose(int op, MPI_Comm comm, long long bytes)
{
    read_env();
    int inter = 0, size = 0;
    if (comm == MPI_COMM_NULL || sel.mode < 0)
        return 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    if (inter || size < 2)
        return 0;
    if (op == AAPC_MCAST_OP_SCATTERV)
        return sel.scatterv >= 0 || sel.mode == 1;
    if (sel.mode == 1)
        return 1;
    if (size < sel.min_ranks)
        return 0;
    int wins;
    switch (op) {
    case AAPC_MCAST_OP_BCAST:
        wins = sel.bcast_min >= 0 && bytes >= sel.bcast_min;
        break;
    case AAPC_MCAST_OP_SCATTER:
        wins = sel.scatter_max >= 0 && bytes <= sel.scatter_max;
        break;
    case AAPC_MCAST_OP_ALLGATHER:
        wins = sel.allgather_min >= 0 && bytes >= sel.allgather_min &&
               (sel.allgather_max < 0 || bytes <= sel.allgather_max);
        break;
    default:
        wins = 0;
    }
    if (!wins)
        return 0;
    /* the same answer everywhere so far: set the communicator up (collective, once) and keep
     * the library where multicast is unavailable or every rank is on one host (shared memory) */
    mc_comm_t *st = NULL;
    return mc_comm_get(comm, &st) == MPI_SUCCESS && st->enabled && !st->one_host;
}

/* The drop-in of a build without a topology; the generated library (-DAAPC_INTERCEPT) defines
   MPI_Bcast and MPI_Allgather itself (runtime_c/coll/: AAPC_BCAST=mcast, AAPC_ALLGATHER=mcast). */
#if defined(AAPC_INTERCEPT_MCAST) && !defined(AAPC_INTERCEPT)
static long long type_bytes(int count, MPI_Datatype dt)
{
    int s = 0;
    PMPI_Type_size(dt, &s);
    return (long long)count * s;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (aapc_mcast_choose(AAPC_MCAST_OP_BCAST, comm, type_bytes(count, datatype)))
        return aapc_mcast_bcast(buffer, count, datatype, root, comm);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    long long b = rank == root ? type_bytes(sendcount, sendtype) : type_bytes(recvcount, recvtype);
    if (aapc_mcast_choose(AAPC_MCAST_OP_SCATTER, comm, b))
        return aapc_mcast_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  root, comm);
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm)
{
    if (aapc_mcast_choose(AAPC_MCAST_OP_SCATTERV, comm, -1))
        return aapc_mcast_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                   recvtype, root, comm,
                                   sel.scatterv >= 0 ? (aapc_mcast_scheme_t)sel.scatterv
                                                     : AAPC_MCAST_STATIC);
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                         root, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (aapc_mcast_choose(AAPC_MCAST_OP_ALLGATHER, comm, type_bytes(recvcount, recvtype)))
        return aapc_mcast_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
#endif /* AAPC_INTERCEPT_MCAST */
