/*
 * aapc_alltoall_cluster.c: MPI_Alltoall on any intra-communicator, scheduled at its first call
 * from the cluster's switch tree embedded in the library.
 *
 * Algorithm, first call on a communicator (collective, the same on every rank):
 *   1-2. the machine of every rank, gathered once per communicator (common/aapc_cluster_comm.c:
 *      AAPC_MACHINE, else MPI_Get_processor_name; one MPI_Allgather of an int). A rank on an
 *      unknown host makes every rank fall back to the library's MPI_Alltoall on that
 *      communicator; that rank warns, naming its host;
 *   3. the job tree and seed 002's optimal contention-free phases (cluster/aapc_cluster_tree.c,
 *      aapc_cluster_phases.c): any subset of machines, rank order and ranks per machine;
 *   4. this rank's rows and the synchronisation of the variant (no-sync, sender-all,
 *      receiver-all, barrier-all) from the phases on the job tree (aapc_alltoall_rows.c);
 *   5. AAPC_DUMP_SCHEDULE=DIR: rank 0 writes the schedule as JSON (docs/scheduling.md contract,
 *      plus the machine of every rank) for `aapcgen verify TOPO --schedule FILE`;
 *   6. the result (or the decision to fall back) is cached on the communicator, in a slot per
 *      variant of aapc_cluster_comm.c, and freed with it. Later calls: one attribute lookup.
 * Then the phase executor (common/aapc_exec.c) runs this rank's rows.
 * Cost of the first call: one MPI_Comm_dup, one Allgather of P ints (lg P alpha + 4 P beta),
 * O(P^2 d) local work and about 16 P^2 bytes for P ranks of a depth-d tree (119 ms, 34 MiB at
 * 1024 ranks: docs/performance.md); each call: the
 * executor's P_phases (alpha + n beta) on the critical path plus its syncs.
 */
#define _POSIX_C_SOURCE 200809L
#include "aapc_alltoall_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aapc_alltoall_rows.h"
#include "aapc_cluster_comm.h"
#include "aapc_comm.h"
#include "aapc_exec.h" /* aapc_alltoall_block */

/* One variant's schedule on one communicator (a slot of aapc_cluster_comm_t). */
struct cluster_entry {
    int usable;
    aapc_rows_t rows;
};

static void entry_free(void *p)
{
    struct cluster_entry *e = p;
    aapc_rows_free(&e->rows);
    free(e);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* AAPC_DUMP_SCHEDULE: the JSON contract with the job's rank names and cluster machines. */
static void dump_schedule(const aapc_cluster_t *cl, const int *rm, int P,
                          const aapc_job_phases_t *ph)
{
    const char *dir = getenv("AAPC_DUMP_SCHEDULE");
    static int serial = 0;
    if (dir == NULL || dir[0] == '\0')
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/aapc-schedule-%ld-%d.json", dir, (long)getpid(), serial++);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "aapcgen: AAPC_DUMP_SCHEDULE: cannot write %s\n", path);
        return;
    }
    int *seen = calloc((size_t)cl->n_machines, sizeof *seen), *count = calloc((size_t)cl->n_machines, sizeof *count);
    if (seen == NULL || count == NULL) {
        free(seen);
        free(count);
        fclose(f);
        return;
    }
    for (int r = 0; r < P; r++)
        count[rm[r]]++;
    fprintf(f, "{\"topology\": ");
    json_string(f, cl->name);
    fprintf(f, ", \"rank_machines\": [");
    for (int r = 0; r < P; r++) {
        fprintf(f, r ? ", " : "");
        json_string(f, cl->machine_name[rm[r]]);
    }
    fprintf(f, "], \"machines\": [");
    for (int r = 0; r < P; r++) { /* the job tree's leaf names (aapcgen/alltoall/job.py) */
        fprintf(f, r ? ", " : "");
        if (count[rm[r]] > 1) {
            char leaf[512];
            snprintf(leaf, sizeof leaf, "%s#%d", cl->machine_name[rm[r]], seen[rm[r]]++);
            json_string(f, leaf);
        } else {
            json_string(f, cl->machine_name[rm[r]]);
        }
    }
    fprintf(f, "], \"phases\": [");
    for (int64_t e = 0, p = -1; e < ph->n_messages; e++) {
        if (ph->phase[e] != p) {
            fprintf(f, "%s[", p >= 0 ? "], " : "");
            p = ph->phase[e];
        } else {
            fprintf(f, ", ");
        }
        fprintf(f, "[%d, %d]", (int)ph->src[e], (int)ph->dst[e]);
    }
    fprintf(f, "]]}\n");
    fclose(f);
    free(seen);
    free(count);
}

/* Steps 3-5 for a communicator whose ranks are all on known machines. */
static int build_entry(struct cluster_entry *e, aapc_cluster_comm_t *cc, int sync,
                       const char *name, MPI_Comm comm)
{
    int nomem = 0;
    const aapc_job_tree_t *tree = aapc_cluster_comm_tree(cc, &nomem);
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (tree == NULL) {
        aapc_warn_fallback(comm, name, cc->tree_error, "MPI_Alltoall");
        return MPI_SUCCESS; /* usable stays 0: the library's routine runs */
    }
    aapc_job_phases_t ph;
    int rc = aapc_job_phases(cc->cluster, cc->rank_machine, cc->size, &ph);
    if (rc == AAPC_JOB_ERANGE || rc == AAPC_JOB_EINVAL) {
        aapc_warn_fallback(comm, name, ph.error, "MPI_Alltoall");
        return MPI_SUCCESS;
    }
    if (rc != AAPC_JOB_OK)
        return MPI_ERR_NO_MEM;
    if (cc->rank == 0)
        dump_schedule(cc->cluster, cc->rank_machine, cc->size, &ph);
    rc = aapc_rows_build(&ph, tree, sync, cc->rank, name, &e->rows);
    aapc_job_phases_free(&ph);
    if (rc != 0)
        return MPI_ERR_NO_MEM;
    e->usable = 1;
    return MPI_SUCCESS;
}

/* Keys of the variants' slots on a communicator. */
static const char sync_keys[4];

static int lookup(const aapc_cluster_t *cl, int sync, const char *name, MPI_Comm comm,
                  int warn_unknown, aapc_cluster_comm_t **state, struct cluster_entry **out)
{
    int rc;
    *out = NULL;
    if (sync < 0 || sync > 3)
        return MPI_ERR_ARG;
    if ((rc = aapc_cluster_comm(cl, comm, name, "MPI_Alltoall", warn_unknown, state)) !=
            MPI_SUCCESS ||
        *state == NULL)
        return rc;
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(*state, &sync_keys[sync], entry_free);
    if (slot == NULL)
        return MPI_ERR_NO_MEM;
    if (slot->data == NULL) {
        struct cluster_entry *e = calloc(1, sizeof *e);
        if (e == NULL)
            return MPI_ERR_NO_MEM;
        if ((*state)->all_known && (rc = build_entry(e, *state, sync, name, comm)) != MPI_SUCCESS) {
            entry_free(e);
            return rc; /* not cached: a later call tries again */
        }
        slot->data = e;
    }
    *out = slot->data;
    return MPI_SUCCESS;
}

static int run(const aapc_cluster_t *cl, int sync, const char *name, aapc_cluster_fallback_fn otherwise,
               const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, ssize = 0, done;
    MPI_Aint bytes = 0;
    if ((rc = aapc_args_alltoall(name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                 comm, &done)) != MPI_SUCCESS || done)
        return rc; /* common/aapc_args.c: raised error, library's result, or nothing to move */
    if ((rc = aapc_alltoall_block(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes,
                                  &ssize)) != MPI_SUCCESS)
        return rc;
    if (cl == NULL)
        return MPI_ERR_ARG;
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    aapc_cluster_comm_t *state = NULL;
    struct cluster_entry *e = NULL;
    if ((rc = lookup(cl, sync, name, comm, otherwise == NULL, &state, &e)) != MPI_SUCCESS)
        return rc;
    if ((e == NULL || !e->usable) && otherwise != NULL)
        return otherwise(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (e == NULL || !e->usable || bytes == 0)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    aapc_comm_info_t info = {1, state->dup, state->rank, NULL, NULL};
    return aapc_alltoall_exec(&e->rows.sched, &info, sendbuf, sendcount, sendtype, recvbuf,
                              recvcount, recvtype);
}

int aapc_alltoall_cluster(const aapc_cluster_t *cl, int sync, const char *name,
                          const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return run(cl, sync, name, NULL, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
               comm);
}

int aapc_alltoall_cluster_auto(const aapc_cluster_t *cl, int sync, const char *name,
                               aapc_cluster_fallback_fn precomputed, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm)
{
    return run(cl, sync, name, precomputed, sendbuf, sendcount, sendtype, recvbuf, recvcount,
               recvtype, comm);
}
