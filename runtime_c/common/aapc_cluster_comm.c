/*
 * aapc_cluster_comm.c: the machine of every rank of a communicator, and its job tree, cached on
 * the communicator for the routines scheduled at run time.
 *
 * Algorithm, first use on a communicator (collective, the same on every rank):
 *   1. this process's machine: AAPC_MACHINE, else MPI_Get_processor_name matched against the
 *      cluster's hosts (cluster/aapc_cluster_machine.c), looked up once per process;
 *   2. one MPI_Comm_dup (the routines' private traffic) and one MPI_Allgather of an int: the
 *      machine of every rank. A rank on an unknown host warns, naming its host; every rank sees
 *      the same gathered table, so every rank reaches the same decision;
 *   3. on demand, the job tree of those ranks;
 *   4. the state is an attribute of the user's communicator (MPI_COMM_NULL_COPY_FN: a user's dup
 *      gathers again; a delete callback frees the dup, the tree and every routine's slot).
 * aapc_cluster_split (the generated MPI_Comm_split under AAPC_SIBLINGS=union, and
 * aapc_comm_split_siblings): PMPI_Comm_split, then, when every rank of the parent is on a known
 * machine, one MPI_Allgather of (colour, rank in the child) over the parent's dup and one
 * MPI_Comm_dup of it, shared by the siblings of this rank as their family (freed with the last).
 * Cost: first use lg P alpha + 4 P beta (the Allgather) plus the dup, and O(P + S + M) for the
 * tree (cluster/aapc_cluster_tree.c); later uses one attribute lookup. A recorded split adds
 * lg P alpha + 8 P beta and a dup of the parent.
 * Threads: the keyval and this process's machine are set under a lock (common/aapc_lock.h);
 * the rest is per communicator (MPI forbids concurrent collectives on one communicator).
 */
#define _POSIX_C_SOURCE 200809L
#include "aapc_cluster_comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_lock.h"

static int keyval = MPI_KEYVAL_INVALID;
static aapc_mutex_t lock = AAPC_MUTEX_INIT; /* keyval, this process's machine */

static int family_release(aapc_split_family_t *f)
{
    int rc = MPI_SUCCESS;
    if (f == NULL || --f->refs > 0)
        return MPI_SUCCESS;
    if (f->dup != MPI_COMM_NULL)
        rc = PMPI_Comm_free(&f->dup);
    free(f->rank_machine);
    free(f->color);
    free(f->child_rank);
    free(f);
    return rc;
}

static int comm_delete(MPI_Comm comm, int kv, void *attr, void *extra)
{
    aapc_cluster_comm_t *cc = attr;
    int rc = MPI_SUCCESS;
    (void)comm;
    (void)kv;
    (void)extra;
    if (cc == NULL)
        return MPI_SUCCESS;
    if (cc->dup != MPI_COMM_NULL)
        rc = PMPI_Comm_free(&cc->dup);
    while (cc->slots != NULL) {
        aapc_cluster_slot_t *next = cc->slots->next;
        if (cc->slots->data != NULL && cc->slots->free_fn != NULL)
            cc->slots->free_fn(cc->slots->data);
        free(cc->slots);
        cc->slots = next;
    }
    aapc_job_tree_free(&cc->tree);
    free(cc->rank_machine);
    int rf = family_release(cc->family);
    free(cc);
    return rc != MPI_SUCCESS ? rc : rf;
}

static int state_of(MPI_Comm comm, aapc_cluster_comm_t **out)
{
    int rc, flag = 0;
    void *attr = NULL;
    aapc_lock(&lock); /* threads on other communicators may get here at once */
    rc = MPI_SUCCESS;
    if (keyval == MPI_KEYVAL_INVALID) {
        aapc_test_delay_keys();
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete, &keyval, NULL);
    }
    aapc_unlock(&lock);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_get_attr(comm, keyval, &attr, &flag)) != MPI_SUCCESS)
        return rc;
    if (flag) {
        *out = attr;
        return MPI_SUCCESS;
    }
    aapc_cluster_comm_t *cc = calloc(1, sizeof *cc);
    if (cc == NULL)
        return MPI_ERR_NO_MEM;
    cc->dup = MPI_COMM_NULL;
    if ((rc = PMPI_Comm_set_attr(comm, keyval, cc)) != MPI_SUCCESS) {
        free(cc);
        return rc;
    }
    *out = cc;
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

int aapc_cluster_comm(const aapc_cluster_t *cl, MPI_Comm comm, const char *name,
                      const char *routine, int warn_unknown, aapc_cluster_comm_t **out)
{
    int rc, inter = 0;
    *out = NULL;
    if (cl == NULL)
        return MPI_ERR_ARG;
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    if ((rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS)
        return rc;
    if (inter)
        return MPI_SUCCESS; /* the library's routine, untouched */
    aapc_cluster_comm_t *cc;
    if ((rc = state_of(comm, &cc)) != MPI_SUCCESS)
        return rc;
    if (cc->rank_machine != NULL && cc->cluster == cl) {
        *out = cc;
        return MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_size(comm, &cc->size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &cc->rank)) != MPI_SUCCESS)
        return rc;
    if (cc->dup == MPI_COMM_NULL && (rc = PMPI_Comm_dup(comm, &cc->dup)) != MPI_SUCCESS) {
        cc->dup = MPI_COMM_NULL;
        return rc;
    }
    static const aapc_cluster_t *known_for = NULL;
    static int32_t known_machine = -2;
    static char known_host[MPI_MAX_PROCESSOR_NAME + 32];
    char host[MPI_MAX_PROCESSOR_NAME + 32];
    aapc_lock(&lock);
    if (known_for != cl) {
        known_machine = my_machine(cl, known_host, (int)sizeof known_host);
        known_for = cl;
    }
    int32_t known = known_machine;
    memcpy(host, known_host, sizeof host);
    aapc_unlock(&lock);
    int32_t *rm = malloc((size_t)cc->size * sizeof *rm), mine = known;
    if (rm == NULL)
        return MPI_ERR_NO_MEM;
    if ((rc = PMPI_Allgather(&mine, 1, MPI_INT32_T, rm, 1, MPI_INT32_T, cc->dup)) != MPI_SUCCESS) {
        free(rm);
        return rc;
    }
    free(cc->rank_machine);
    aapc_job_tree_free(&cc->tree);
    cc->tree_state = 0;
    cc->rank_machine = rm;
    cc->cluster = cl;
    cc->all_known = cc->size >= 2;
    for (int r = 0; r < cc->size; r++)
        cc->all_known &= rm[r] >= 0;
    if (known < 0 && warn_unknown) {
        char why[MPI_MAX_PROCESSOR_NAME + 160];
        snprintf(why, sizeof why, "%s is not a machine of cluster %s", host, cl->name);
        aapc_warn_fallback(MPI_COMM_NULL, name, why, routine);
    }
    *out = cc;
    return MPI_SUCCESS;
}

const aapc_job_tree_t *aapc_cluster_comm_tree(aapc_cluster_comm_t *cc, int *nomem)
{
    *nomem = 0;
    if (cc->tree_state == 0 && cc->all_known) {
        int rc = aapc_job_tree(cc->cluster, cc->rank_machine, cc->size, &cc->tree,
                               cc->tree_error, (int)sizeof cc->tree_error);
        if (rc == AAPC_JOB_ENOMEM) {
            *nomem = 1;
            return NULL; /* not remembered: a later call tries again */
        }
        cc->tree_state = rc == AAPC_JOB_OK ? 1 : -1;
    }
    return cc->tree_state == 1 ? &cc->tree : NULL;
}

aapc_cluster_slot_t *aapc_cluster_comm_slot(aapc_cluster_comm_t *cc, const void *key,
                                            void (*free_fn)(void *))
{
    aapc_cluster_slot_t *s = cc->slots;
    while (s != NULL && s->key != key)
        s = s->next;
    if (s == NULL && (s = calloc(1, sizeof *s)) != NULL) {
        s->key = key;
        s->free_fn = free_fn;
        s->next = cc->slots;
        cc->slots = s;
    }
    return s;
}

int aapc_cluster_split(const aapc_cluster_t *cl, MPI_Comm comm, int color, int key,
                       MPI_Comm *newcomm)
{
    int rc, inter = 0;
    if ((rc = PMPI_Comm_split(comm, color, key, newcomm)) != MPI_SUCCESS)
        return rc;
    if (cl == NULL || comm == MPI_COMM_NULL ||
        (rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS || inter)
        return rc;
    aapc_cluster_comm_t *pc = NULL;
    if ((rc = aapc_cluster_comm(cl, comm, "MPI_Comm_split", "MPI_Alltoall", 0, &pc)) !=
            MPI_SUCCESS ||
        pc == NULL || !pc->all_known) /* the same on every rank: no family */
        return rc;
    int mine[2] = {color, -1}, P = pc->size;
    if (*newcomm != MPI_COMM_NULL && (rc = PMPI_Comm_rank(*newcomm, &mine[1])) != MPI_SUCCESS)
        return rc;
    aapc_split_family_t *f = calloc(1, sizeof *f);
    int *both = malloc(sizeof *both * 2 * (size_t)P);
    int nomem = f == NULL || both == NULL;
    if (!nomem) {
        f->dup = MPI_COMM_NULL;
        f->size = P;
        f->rank = pc->rank;
        f->rank_machine = malloc(sizeof *f->rank_machine * (size_t)P);
        f->color = malloc(sizeof *f->color * (size_t)P);
        f->child_rank = malloc(sizeof *f->child_rank * (size_t)P);
        nomem = !f->rank_machine || !f->color || !f->child_rank;
    }
    /* agree on memory first, so that every rank takes part in the same collectives; short of
       memory anywhere: the split stands, unrecorded */
    int any_nomem = nomem;
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, &any_nomem, 1, MPI_INT, MPI_MAX, pc->dup)) !=
            MPI_SUCCESS ||
        any_nomem) {
        if (f != NULL) {
            f->refs = 1;
            family_release(f);
        }
        free(both);
        return rc;
    }
    MPI_Comm dup = MPI_COMM_NULL;
    if ((rc = PMPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, pc->dup)) == MPI_SUCCESS)
        rc = PMPI_Comm_dup(pc->dup, &dup);
    if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
        aapc_cluster_comm_t *cc;
        if ((rc = state_of(*newcomm, &cc)) == MPI_SUCCESS) {
            for (int r = 0; r < P; r++) {
                f->rank_machine[r] = pc->rank_machine[r];
                f->color[r] = both[2 * r];
                f->child_rank[r] = both[2 * r + 1];
            }
            f->dup = dup;
            f->refs = 1;
            family_release(cc->family); /* a state recorded before (none: a fresh comm) */
            cc->family = f;
            f = NULL;
            dup = MPI_COMM_NULL;
        }
    }
    if (dup != MPI_COMM_NULL)
        PMPI_Comm_free(&dup);
    if (f != NULL) {
        f->refs = 1;
        family_release(f);
    }
    free(both);
    return rc;
}
