/*
 * aapc_vlevels.c: MPI_Alltoallv levels 1 and 2 (seed 000 section 4.2, CC-MPI's
 * MPI_Alltoallv_control1/control2 + data_trans2, generalised to switch trees).
 *
 * Algorithm: a communicator whose every rank is on a known machine of the cluster is scheduled
 * on its own job tree (aapc_alltoallv_cluster.c); otherwise, on the whole cluster's fixed tree:
 * (level 1 only) MPI_Allgather of each rank's N send byte counts; the rank-order
 * matrix is mapped to machine order; if it equals the cached one the cached tables run, else
 * aapc_vsched_run schedules it (greedy, all-to-all based or balanced, identical on every rank)
 * and aapc_vtables_build derives the executor tables and syncs; aapc_alltoallv_exec moves the
 * data in contention-free phases.
 * The last schedule of each routine is cached on the communicator (common/aapc_comm.c
 * aapc_comm_slot, freed with it), so threads calling on different communicators at once
 * (MPI_THREAD_MULTIPLE) never share one. Errors after the argument agreement go through the
 * communicator's error handler (aapc_args_raise_alone: the job aborts when the handler
 * returns, since the other ranks may wait for this one); element sizes are 64-bit.
 * Cost: level 1 adds an Allgather of 8N bytes per rank (lg N alpha + 8N(N-1) beta with a
 * recursive-doubling/ring Allgather) plus the scheduling time when the counts change
 * (docs/measurements/alltoallv-scheduling-in-c.md); the data phase costs the schedule's sum over phases of
 * (alpha + max piece bytes beta) plus its syncs.
 */
#include "aapc_vlevels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alltoallv_cluster.h"
#include "aapc_args.h"
#include "aapc_comm.h"
#include "aapc_mpi.h"
#include "aapc_report.h"

/* The last schedule of one program on one communicator (a slot of its cache). */
struct vcache {
    int n;
    long long *bytes; /* machine order */
    aapc_vsched vs;
    aapc_vtables_t tab;
};

static void vcache_free(void *p)
{
    struct vcache *c = p;
    if (c->bytes != NULL) {
        aapc_vtables_free(&c->tab);
        aapc_vsched_free(&c->vs);
        free(c->bytes);
    }
    free(c);
}

static struct vcache *cache_of(const aapc_vprog_t *prog, aapc_comm_info_t *info)
{
    void **slot = aapc_comm_slot(info, prog, vcache_free);
    if (slot != NULL && *slot == NULL)
        *slot = calloc(1, sizeof(struct vcache));
    return slot != NULL ? *slot : NULL;
}

/* The tables for machine-order matrix m (n x n), from the cache or freshly scheduled. */
static const aapc_schedule_t *schedule_for(const aapc_vprog_t *prog, aapc_comm_info_t *info,
                                           long long *m, int n, int *rc)
{
    struct vcache *c = cache_of(prog, info);
    size_t nn = (size_t)n * (size_t)n;
    *rc = MPI_SUCCESS;
    if (c == NULL) {
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    if (c->bytes != NULL && c->n == n && memcmp(c->bytes, m, nn * sizeof *m) == 0)
        return &c->tab.sched;
    if (c->bytes != NULL) {
        aapc_vtables_free(&c->tab);
        aapc_vsched_free(&c->vs);
        free(c->bytes);
        c->bytes = NULL;
    }
    if (aapc_vsched_run(prog->tree, m, prog->scheduler, prog->threshold, prog->chunk, &c->vs) != 0) {
        *rc = MPI_ERR_OTHER;
        return NULL;
    }
    if (aapc_vtables_build(&c->vs, prog->tree, prog->sync, prog->name, prog->key->hosts,
                           &c->tab) != 0) {
        aapc_vsched_free(&c->vs);
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    c->bytes = malloc(nn * sizeof *m);
    if (c->bytes == NULL) {
        aapc_vtables_free(&c->tab);
        aapc_vsched_free(&c->vs);
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    memcpy(c->bytes, m, nn * sizeof *m);
    c->n = n;
    return &c->tab.sched;
}

/* Rank-order matrix -> machine order, then schedule and execute. */
static int run(const aapc_vprog_t *prog, aapc_comm_info_t *info, const long long *bytes,
               const void *sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype)
{
    int n = prog->key->nmachines, rc;
    long long *m = malloc(sizeof *m * (size_t)n * (size_t)n);
    if (m == NULL)
        return MPI_ERR_NO_MEM;
    for (int a = 0; a < n; a++) {
        int ra = aapc_comm_rank_of(info, a);
        for (int b = 0; b < n; b++) {
            long long v = bytes[(size_t)ra * (size_t)n + (size_t)aapc_comm_rank_of(info, b)];
            m[(size_t)a * (size_t)n + (size_t)b] = a == b || v < 0 ? 0 : v;
        }
    }
    const aapc_schedule_t *s = schedule_for(prog, info, m, n, &rc);
    free(m);
    if (s == NULL)
        return rc;
    aapc_report_served("run-time, whole cluster");
    return aapc_alltoallv_exec(s, info, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                               recvcounts, rdispls, recvtype);
}

int aapc_alltoallv_level1(const aapc_vprog_t *prog, const void *sendbuf, const int sendcounts[],
                          const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                          MPI_Comm comm)
{
    aapc_comm_info_t info;
    int rc, n, handled;
    int64_t size;
    if (prog == NULL)
        return aapc_args_raise_code(comm, MPI_ERR_ARG);
    rc = aapc_alltoallv_cluster(prog, NULL, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                recvcounts, rdispls, recvtype, comm, &handled);
    if (handled)
        return rc;
    if ((rc = aapc_comm_lookup(prog->key, comm, &info)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (!info.usable) {
        aapc_report_fallback(aapc_comm_why(prog->key, &info));
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    n = prog->key->nmachines;
    const int *counts = sendbuf == MPI_IN_PLACE ? recvcounts : sendcounts;
    if ((rc = aapc_type_size(sendbuf == MPI_IN_PLACE ? recvtype : sendtype, &size)) !=
        MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    long long *all = malloc(sizeof *all * (size_t)n * (size_t)n);
    long long *row = malloc(sizeof *row * (size_t)n);
    if (all == NULL || row == NULL) {
        free(all);
        free(row);
        return aapc_args_raise_alone(comm, MPI_ERR_NO_MEM);
    }
    for (int j = 0; j < n; j++)
        row[j] = (long long)counts[j] * size;
    rc = PMPI_Allgather(row, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, info.dup);
    if (rc == MPI_SUCCESS)
        rc = run(prog, &info, all, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                 rdispls, recvtype);
    free(all);
    free(row);
    return aapc_args_raise_alone(comm, rc);
}

int aapc_alltoallv_level2(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                          const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                          void *recvbuf, const int recvcounts[], const int rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm)
{
    aapc_comm_info_t info;
    int rc, handled;
    if (prog == NULL || bytes == NULL)
        return aapc_args_raise_code(comm, MPI_ERR_ARG);
    rc = aapc_alltoallv_cluster(prog, bytes, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                recvcounts, rdispls, recvtype, comm, &handled);
    if (handled)
        return rc;
    if ((rc = aapc_comm_lookup(prog->key, comm, &info)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (!info.usable) {
        aapc_report_fallback(aapc_comm_why(prog->key, &info));
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    return aapc_args_raise_alone(comm, run(prog, &info, bytes, sendbuf, sendcounts, sdispls,
                                           sendtype, recvbuf, recvcounts, rdispls, recvtype));
}
