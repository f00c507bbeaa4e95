/*
 * aapc_alltoall_cluster.c: MPI_Alltoall on any intra-communicator, scheduled at its first call
 * from the cluster's switch tree embedded in the library.
 *
 * Algorithm, first call on a communicator (collective, the same on every rank):
 *   1. this rank's machine: AAPC_MACHINE, else MPI_Get_processor_name matched against the
 *      cluster's hosts (cluster/aapc_cluster_machine.c), once per process;
 *   2. one MPI_Allgather of an int: the machine of every rank. A rank on an unknown host makes
 *      every rank fall back to the library's MPI_Alltoall on that communicator; that rank warns,
 *      naming its host;
 *   3. the job tree and seed 002's optimal contention-free phases (cluster/aapc_cluster_tree.c,
 *      aapc_cluster_phases.c): any subset of machines, rank order and ranks per machine;
 *   4. this rank's rows and the synchronisation of the variant (no-sync, sender-all,
 *      receiver-all, barrier-all) from the phases on the job tree (aapc_alltoall_rows.c);
 *   5. AAPC_DUMP_SCHEDULE=DIR: rank 0 writes the schedule as JSON (docs/scheduling.md contract,
 *      plus the machine of every rank) for `aapcgen verify TOPO --schedule FILE`;
 *   6. the result (or the decision to fall back) is cached on the communicator with its private
 *      dup and freed with it (attribute delete callback). Later calls: one attribute lookup.
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
#include "aapc_comm.h"
#include "aapc_exec.h" /* aapc_alltoall_block */

/* One variant's schedule on one communicator. */
struct cluster_entry {
    const aapc_cluster_t *cluster;
    int sync;
    int usable;
    aapc_job_tree_t tree;
    aapc_rows_t rows;
    struct cluster_entry *next;
};

struct cluster_cache {
    MPI_Comm dup;
    int *rank_machine; /* NULL until gathered; a negative entry: an unknown host */
    const aapc_cluster_t *gathered_for;
    struct cluster_entry *entries;
};

static int cluster_keyval = MPI_KEYVAL_INVALID;

static int cluster_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    struct cluster_cache *c = attr;
    int rc = MPI_SUCCESS;
    (void)comm;
    (void)keyval;
    (void)extra;
    if (c == NULL)
        return MPI_SUCCESS;
    if (c->dup != MPI_COMM_NULL)
        rc = PMPI_Comm_free(&c->dup);
    while (c->entries != NULL) {
        struct cluster_entry *next = c->entries->next;
        aapc_rows_free(&c->entries->rows);
        aapc_job_tree_free(&c->entries->tree);
        free(c->entries);
        c->entries = next;
    }
    free(c->rank_machine);
    free(c);
    return rc;
}

static int cache_of(MPI_Comm comm, struct cluster_cache **out)
{
    int rc, flag = 0;
    void *attr = NULL;
    if (cluster_keyval == MPI_KEYVAL_INVALID &&
        (rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cluster_delete, &cluster_keyval,
                                      NULL)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_get_attr(comm, cluster_keyval, &attr, &flag)) != MPI_SUCCESS)
        return rc;
    if (flag) {
        *out = attr;
        return MPI_SUCCESS;
    }
    struct cluster_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    c->dup = MPI_COMM_NULL;
    if ((rc = PMPI_Comm_set_attr(comm, cluster_keyval, c)) != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

/* This process's machine (-1: unknown) and the name it was looked up by. */
static int32_t my_machine(const aapc_cluster_t *cl, char *host, int hostlen)
{
    const char *env = getenv("AAPC_MACHINE");
    if (env != NULL && env[0] != '\0') {
        snprintf(host, (size_t)hostlen, "AAPC_MACHINE=%s", env);
        return aapc_cluster_machine_named(cl, env);
    }
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    if (PMPI_Get_processor_name(name, &len) != MPI_SUCCESS)
        name[0] = '\0';
    snprintf(host, (size_t)hostlen, "host '%s'", name);
    return aapc_cluster_machine_of_host(cl, name);
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
static int build_entry(struct cluster_entry *e, const int *rm, int P, int me, const char *name,
                       MPI_Comm comm)
{
    int32_t *rm32 = malloc((size_t)P * sizeof *rm32);
    if (rm32 == NULL)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < P; r++)
        rm32[r] = rm[r];
    char err[160];
    aapc_job_phases_t ph;
    int rc = aapc_job_phases(e->cluster, rm32, P, &ph);
    if (rc == AAPC_JOB_OK)
        rc = aapc_job_tree(e->cluster, rm32, P, &e->tree, err, (int)sizeof err);
    else
        snprintf(err, sizeof err, "%s", ph.error);
    free(rm32);
    if (rc == AAPC_JOB_ERANGE || rc == AAPC_JOB_EINVAL) {
        aapc_warn_fallback(comm, name, err, "MPI_Alltoall");
        return MPI_SUCCESS; /* usable stays 0: the library's routine runs */
    }
    if (rc != AAPC_JOB_OK)
        return MPI_ERR_NO_MEM;
    if (me == 0)
        dump_schedule(e->cluster, rm, P, &ph);
    rc = aapc_rows_build(&ph, &e->tree, e->sync, me, name, &e->rows);
    aapc_job_phases_free(&ph);
    if (rc != 0)
        return MPI_ERR_NO_MEM;
    e->usable = 1;
    return MPI_SUCCESS;
}

static int lookup(const aapc_cluster_t *cl, int sync, const char *name, MPI_Comm comm,
                  int warn_unknown, struct cluster_cache **cache, struct cluster_entry **out)
{
    int rc, inter = 0, P = 0, me = 0;
    *out = NULL;
    if ((rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS)
        return rc;
    if (inter)
        return MPI_SUCCESS; /* the library's routine, untouched */
    struct cluster_cache *c;
    if ((rc = cache_of(comm, &c)) != MPI_SUCCESS)
        return rc;
    *cache = c;
    for (struct cluster_entry *e = c->entries; e != NULL; e = e->next)
        if (e->cluster == cl && e->sync == sync) {
            *out = e;
            return MPI_SUCCESS;
        }
    if ((rc = PMPI_Comm_size(comm, &P)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &me)) != MPI_SUCCESS)
        return rc;
    if (c->dup == MPI_COMM_NULL && (rc = PMPI_Comm_dup(comm, &c->dup)) != MPI_SUCCESS) {
        c->dup = MPI_COMM_NULL;
        return rc;
    }
    if (c->rank_machine == NULL || c->gathered_for != cl) {
        static const aapc_cluster_t *known_for = NULL;
        static int32_t known = -2;
        static char host[MPI_MAX_PROCESSOR_NAME + 32];
        if (known_for != cl) {
            known = my_machine(cl, host, (int)sizeof host);
            known_for = cl;
        }
        int *rm = malloc((size_t)P * sizeof *rm);
        if (rm == NULL)
            return MPI_ERR_NO_MEM;
        int mine = known;
        if ((rc = PMPI_Allgather(&mine, 1, MPI_INT, rm, 1, MPI_INT, c->dup)) != MPI_SUCCESS) {
            free(rm);
            return rc;
        }
        free(c->rank_machine);
        c->rank_machine = rm;
        c->gathered_for = cl;
        if (known < 0 && warn_unknown) {
            char why[MPI_MAX_PROCESSOR_NAME + 160];
            snprintf(why, sizeof why, "%s is not a machine of cluster %s", host, cl->name);
            aapc_warn_fallback(MPI_COMM_NULL, name, why, "MPI_Alltoall");
        }
    }
    struct cluster_entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return MPI_ERR_NO_MEM;
    e->cluster = cl;
    e->sync = sync;
    int all_known = 1;
    for (int r = 0; r < P; r++)
        all_known &= c->rank_machine[r] >= 0;
    if (all_known && P >= 2 && (rc = build_entry(e, c->rank_machine, P, me, name, comm)) != MPI_SUCCESS) {
        aapc_rows_free(&e->rows);
        aapc_job_tree_free(&e->tree);
        free(e);
        return rc; /* not cached: a later call tries again */
    }
    e->next = c->entries;
    c->entries = e;
    *out = e;
    return MPI_SUCCESS;
}

static int run(const aapc_cluster_t *cl, int sync, const char *name, aapc_cluster_fallback_fn otherwise,
               const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, ssize = 0;
    MPI_Aint bytes = 0;
    if ((rc = aapc_alltoall_block(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes,
                                  &ssize)) != MPI_SUCCESS)
        return rc;
    if (cl == NULL)
        return MPI_ERR_ARG;
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    struct cluster_cache *cache = NULL;
    struct cluster_entry *e = NULL;
    if ((rc = lookup(cl, sync, name, comm, otherwise == NULL, &cache, &e)) != MPI_SUCCESS)
        return rc;
    if ((e == NULL || !e->usable) && otherwise != NULL)
        return otherwise(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (e == NULL || !e->usable || bytes == 0)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    int me = 0;
    if ((rc = PMPI_Comm_rank(cache->dup, &me)) != MPI_SUCCESS)
        return rc;
    aapc_comm_info_t info = {1, cache->dup, me, NULL, NULL};
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
