/*
 * aapc_cluster_comm.c: the machine of every rank of a communicator, and its job tree, cached on
 * the communicator for the routines scheduled at run time.
 *
 * Algorithm, first use on a communicator (collective, the same on every rank):
 *   1. this process's machine: AAPC_MACHINE, else MPI_Get_processor_name matched against the
 *      cluster's hosts (cluster/aapc_cluster_machine.c), looked up once per process;
 *   2. one MPI_Comm_dup (the routines' private traffic) and one MPI_Allgather of four ints: the
 *      machine of every rank, how it was found, and the hash of its settings
 *      (common/aapc_settings.h: a communicator whose ranks differ runs the defaults, and rank 0
 *      names the variables in one warning). When some rank is on an unknown host, one more
 *      MPI_Allgather of every rank's cause (256 bytes: the host, or the mistyped AAPC_MACHINE
 *      with the closest machine names); rank 0 warns once per distinct cause (once per job:
 *      aapc_warn_fallback). Every rank sees the same gathered table, so every rank reaches the
 *      same decision;
 *   3. on demand, the job tree of those ranks;
 *   4. the state is an attribute of the user's communicator (MPI_COMM_NULL_COPY_FN: a user's dup
 *      gathers again; a delete callback frees the dup, the tree and every routine's slot).
 * aapc_cluster_split (the generated MPI_Comm_split under AAPC_SIBLINGS=union, and
 * aapc_comm_split_siblings): PMPI_Comm_split, then, when every rank of the parent is on a known
 * machine, one MPI_Allgather of (colour, rank in the child) over the parent's dup and one
 * MPI_Comm_dup of it, shared by the siblings of this rank as their family (freed with the last).
 * Cost: first use lg P alpha + 16 P beta (the Allgather; + 256 P beta with an unknown host)
 * plus the dup, and O(P + S + M) for the
 * tree (cluster/aapc_cluster_tree.c); later uses one attribute lookup. A recorded split adds
 * lg P alpha + 8 P beta and a dup of the parent.
 * Threads: the keyval and this process's machine are set under a lock (common/aapc_lock.h);
 * the rest is per communicator (MPI forbids concurrent collectives on one communicator).
 */
#define _POSIX_C_SOURCE 200809L
#include "aapc_cluster_comm.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_lock.h"
#include "aapc_mpi.h"      /* aapc_outside_mpi */
#include "aapc_settings.h" /* the settings' hash */

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

struct aapc_cluster_pending {
    int32_t mine[4];
    int32_t *all;
    char why[sizeof ((aapc_cluster_comm_t *)0)->why];
    MPI_Comm dup;
    MPI_Request req[2]; /* the MPI_Comm_idup and the MPI_Iallgather */
};

static int free_state(aapc_cluster_comm_t *cc)
{
    int rc = MPI_SUCCESS;
    if (cc->pending != NULL) { /* every rank posted it: completes with their progress */
        rc = PMPI_Waitall(2, cc->pending->req, aapc_statuses_ignore());
        if (cc->pending->dup != MPI_COMM_NULL)
            PMPI_Comm_free(&cc->pending->dup);
        free(cc->pending->all);
        free(cc->pending);
    }
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

static int comm_delete(MPI_Comm comm, int kv, void *attr, void *extra)
{
    aapc_cluster_comm_t *cc = attr;
    (void)comm;
    (void)kv;
    (void)extra;
    if (cc == NULL)
        return MPI_SUCCESS;
    if (cc->holds > 0) { /* a request still runs on it: the last release frees it */
        cc->deleted = 1;
        return MPI_SUCCESS;
    }
    return free_state(cc);
}

void aapc_cluster_comm_hold(aapc_cluster_comm_t *cc)
{
    cc->holds++;
}

int aapc_cluster_comm_release(aapc_cluster_comm_t *cc)
{
    if (--cc->holds > 0 || !cc->deleted)
        return MPI_SUCCESS;
    return free_state(cc);
}

static int state_of(MPI_Comm comm, aapc_cluster_comm_t **out)
{
    int rc, flag = 0;
    void *attr = NULL;
    if ((rc = aapc_keyval_once(&lock, &keyval, comm_delete)) != MPI_SUCCESS)
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

/* How this process's machine was found. */
enum { KNOWN = 0, UNKNOWN_HOST = 1, UNKNOWN_NAME = 2 };

/* This process's machine (-1: unknown), how (*kind), and the cause when unknown (`why`). */
static int32_t my_machine(const aapc_cluster_t *cl, int *kind, char *why, size_t whylen)
{
    const char *env = getenv("AAPC_MACHINE");
    if (env != NULL && env[0] != '\0') {
        int32_t m = aapc_cluster_machine_named(cl, env);
        *kind = m >= 0 ? KNOWN : UNKNOWN_NAME;
        if (m < 0) {
            char close[160];
            aapc_closest_names(env, cl->machine_name, cl->n_machines, close, sizeof close);
            if (snprintf(why, whylen, "AAPC_MACHINE=%s is not a machine of cluster %s%s%s%s",
                         env, cl->name, close[0] ? " (did you mean " : "", close,
                         close[0] ? "?)" : "") >= (int)whylen)
                why[whylen - 1] = '\0'; /* a long cause is cut: the report keeps its start */
        }
        return m;
    }
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    if (PMPI_Get_processor_name(name, &len) != MPI_SUCCESS)
        name[0] = '\0';
    int32_t m = aapc_cluster_machine_of_host(cl, name);
    *kind = m >= 0 ? KNOWN : UNKNOWN_HOST;
    if (m < 0 && snprintf(why, whylen,
                          "host '%s' is not a machine of cluster %s (a machine answers to its "
                          "host: or name:; AAPC_MACHINE=<machine> places a rank by hand)",
                          name, cl->name) >= (int)whylen)
        why[whylen - 1] = '\0'; /* cut, as above */
    return m;
}

/* After the gather, when some rank is on an unknown host: every rank's cause (one more
   MPI_Allgather of a fixed-size text), the first one in cc->why, whether all ranks share one
   host outside the cluster, and the warnings: one per distinct cause, from rank 0 (every rank
   notes them: aapc_warn_fallback), or under AAPC_WARN=all every unknown rank its own. */
static int explain_unknown(aapc_cluster_comm_t *cc, const int32_t *pairs, const char *mine,
                           const char *name, const char *routine, int warn_unknown)
{
    enum { LEN = sizeof cc->why };
    char *all = malloc((size_t)cc->size * LEN), own[LEN];
    if (all == NULL)
        return MPI_ERR_NO_MEM;
    snprintf(own, sizeof own, "%s", mine);
    int rc = PMPI_Allgather(own, LEN, MPI_CHAR, all, LEN, MPI_CHAR, cc->dup);
    if (rc != MPI_SUCCESS) {
        free(all);
        return rc;
    }
    int first = -1;
    cc->one_host = cc->size >= 1;
    for (int r = 0; r < cc->size; r++) {
        all[(size_t)r * LEN + LEN - 1] = '\0';
        if (pairs[2 * r] < 0 && first < 0)
            first = r;
        cc->one_host &= pairs[2 * r + 1] == UNKNOWN_HOST &&
                        strcmp(all + (size_t)r * LEN, all) == 0;
    }
    snprintf(cc->why, sizeof cc->why, "%s", all + (size_t)first * LEN);
    if (warn_unknown || !cc->one_host) {
        if (aapc_warn_every()) {
            if (mine[0] != '\0')
                aapc_warn_fallback(MPI_COMM_NULL, name, mine, routine);
        } else {
            for (int r = 0; r < cc->size; r++) { /* each distinct cause once, in rank order */
                const char *text = all + (size_t)r * LEN;
                int seen = pairs[2 * r] >= 0;
                for (int q = 0; q < r && !seen; q++)
                    seen = pairs[2 * q] < 0 && strcmp(all + (size_t)q * LEN, text) == 0;
                if (!seen)
                    aapc_warn_fallback(cc->dup, name, text, routine);
            }
        }
    }
    free(all);
    return MPI_SUCCESS;
}

/* This process's row of the gather (machine, how it was found, settings hash high, low) and,
   on an unknown machine, its cause. */
static void my_row(const aapc_cluster_t *cl, int32_t mine[4], char why[256])
{
    static const aapc_cluster_t *known_for = NULL;
    static int32_t known_machine = -2;
    static int known_kind = KNOWN;
    static char known_why[256];
    aapc_lock(&lock); /* threads calling on other communicators at once */
    if (known_for != cl) {
        known_why[0] = '\0';
        known_machine = my_machine(cl, &known_kind, known_why, sizeof known_why);
        known_for = cl;
    }
    mine[0] = known_machine;
    mine[1] = known_kind;
    memcpy(why, known_why, sizeof known_why);
    aapc_unlock(&lock);
    uint64_t h = aapc_settings_hash();
    mine[2] = (int32_t)(uint32_t)(h >> 32);
    mine[3] = (int32_t)(uint32_t)h;
}

/* The gathered rows (4 ints per rank) made cc's table; pairs (machine, how found) per rank for
   explain_unknown. Local. Takes rm. */
static void adopt_rows(aapc_cluster_comm_t *cc, const aapc_cluster_t *cl, const int32_t *all,
                       const int32_t mine[4], int32_t *rm, int32_t *pairs, int *any_unknown)
{
    *any_unknown = 0;
    cc->settings_agreed = 1;
    for (int r = 0; r < cc->size; r++) {
        rm[r] = all[4 * r];
        if (pairs != NULL) {
            pairs[2 * r] = all[4 * r];
            pairs[2 * r + 1] = all[4 * r + 1];
        }
        *any_unknown |= rm[r] < 0;
        cc->settings_agreed &= all[4 * r + 2] == mine[2] && all[4 * r + 3] == mine[3];
    }
    free(cc->rank_machine);
    aapc_job_tree_free(&cc->tree);
    cc->tree_state = 0;
    cc->shape_state = 0;
    cc->rank_machine = rm;
    cc->cluster = cl;
    cc->all_known = cc->size >= 2 && !*any_unknown;
    cc->one_host = 0;
    cc->why[0] = '\0';
}

int aapc_cluster_comm_begin(const aapc_cluster_t *cl, MPI_Comm comm, aapc_cluster_comm_t **out,
                            int *posted, const char **why)
{
    int rc, inter = 0;
    aapc_cluster_comm_t *cc;
    *out = NULL;
    *posted = 0;
    *why = NULL;
    if (cl == NULL || comm == MPI_COMM_NULL || aapc_outside_mpi(comm) ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return MPI_SUCCESS;
    if ((rc = state_of(comm, &cc)) != MPI_SUCCESS)
        return rc;
    *out = cc;
    if (cc->pending != NULL) { /* an earlier call's gather: every rank posted it */
        int done = 0;
        return aapc_cluster_comm_adopt(cc, 1, &done);
    }
    if (cc->rank_machine != NULL && cc->cluster == cl)
        return MPI_SUCCESS;
#ifdef OPEN_MPI
    if (cc->dup == MPI_COMM_NULL) { /* every rank alike: no state on comm yet on any */
        *out = NULL;
        *why = AAPC_NO_IDUP_WHY;
        return MPI_SUCCESS;
    }
#endif
    if ((rc = PMPI_Comm_size(comm, &cc->size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &cc->rank)) != MPI_SUCCESS)
        return rc;
    struct aapc_cluster_pending *p = calloc(1, sizeof *p);
    if (p == NULL || (p->all = malloc((size_t)cc->size * sizeof p->mine)) == NULL) {
        free(p);
        return MPI_ERR_NO_MEM;
    }
    my_row(cl, p->mine, p->why);
    p->dup = MPI_COMM_NULL;
    p->req[0] = p->req[1] = MPI_REQUEST_NULL;
    if (cc->dup == MPI_COMM_NULL && (rc = PMPI_Comm_idup(comm, &p->dup, &p->req[0])) != MPI_SUCCESS)
        goto fail;
    if ((rc = PMPI_Iallgather(p->mine, 4, MPI_INT32_T, p->all, 4, MPI_INT32_T, comm,
                              &p->req[1])) != MPI_SUCCESS) {
        PMPI_Wait(&p->req[0], MPI_STATUS_IGNORE);
        if (p->dup != MPI_COMM_NULL)
            PMPI_Comm_free(&p->dup);
        goto fail;
    }
    cc->cluster = cl; /* what the pending gather is for */
    cc->pending = p;
    *posted = 1;
    return MPI_SUCCESS;
fail:
    free(p->all);
    free(p);
    return rc;
}

int aapc_cluster_comm_adopt(aapc_cluster_comm_t *cc, int wait, int *done)
{
    struct aapc_cluster_pending *p = cc->pending;
    int rc, flag = 1, any_unknown = 0;
    *done = 1;
    if (p == NULL)
        return MPI_SUCCESS;
    if (wait)
        rc = PMPI_Waitall(2, p->req, aapc_statuses_ignore());
    else
        rc = PMPI_Testall(2, p->req, &flag, aapc_statuses_ignore());
    if (rc != MPI_SUCCESS || !flag) {
        *done = rc != MPI_SUCCESS;
        return rc;
    }
    int32_t *rm = malloc((size_t)cc->size * sizeof *rm);
    if (rm == NULL)
        return MPI_ERR_NO_MEM;
    if (p->dup != MPI_COMM_NULL)
        cc->dup = p->dup;
    adopt_rows(cc, cc->cluster, p->all, p->mine, rm, NULL, &any_unknown);
    /* said from the table alone: a further gather here could wait for other ranks */
    if (any_unknown) {
        int first = 0;
        while (first < cc->size && rm[first] >= 0)
            first++;
        if (p->why[0] != '\0') /* this rank's own cause: its host or its AAPC_MACHINE */
            snprintf(cc->why, sizeof cc->why, "%s", p->why);
        else
            snprintf(cc->why, sizeof cc->why,
                     "rank %d of the communicator is on a machine not in the cluster", first);
        aapc_warn_fallback(cc->dup, "non-blocking all-to-all", cc->why, "MPI_Ialltoall");
    }
    if (!cc->settings_agreed)
        aapc_warn_fallback(cc->dup, "non-blocking all-to-all",
                           "the ranks' AAPC_* settings differ: every rank runs the defaults",
                           "MPI_Ialltoall");
    if (cc->size < 2)
        snprintf(cc->why, sizeof cc->why, "a communicator of 1 rank (the library's local copy)");
    free(p->all);
    free(p);
    cc->pending = NULL;
    return MPI_SUCCESS;
}

int aapc_cluster_comm(const aapc_cluster_t *cl, MPI_Comm comm, const char *name,
                      const char *routine, int warn_unknown, aapc_cluster_comm_t **out)
{
    int rc, inter = 0, done = 0;
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
    if (cc->pending != NULL && (rc = aapc_cluster_comm_adopt(cc, 1, &done)) != MPI_SUCCESS)
        return rc; /* a non-blocking call's gather: every rank posted it before this call */
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
    char why[sizeof cc->why];
    int32_t mine[4];
    my_row(cl, mine, why);
    int32_t *rm = malloc((size_t)cc->size * sizeof *rm);
    int32_t *all = malloc((size_t)cc->size * sizeof mine);
    int32_t *pairs = malloc((size_t)cc->size * sizeof *pairs * 2);
    if (rm == NULL || all == NULL || pairs == NULL) {
        free(rm);
        free(all);
        free(pairs);
        return MPI_ERR_NO_MEM;
    }
    if ((rc = PMPI_Allgather(mine, 4, MPI_INT32_T, all, 4, MPI_INT32_T, cc->dup)) !=
        MPI_SUCCESS) {
        free(rm);
        free(all);
        free(pairs);
        return rc;
    }
    int any_unknown = 0;
    adopt_rows(cc, cl, all, mine, rm, pairs, &any_unknown);
    free(all);
    /* every rank saw the same table, so every rank takes part (or none does) */
    if (!cc->settings_agreed)
        rc = aapc_settings_warn_differ(cc->dup, name);
    if (rc == MPI_SUCCESS && any_unknown)
        rc = explain_unknown(cc, pairs, why, name, routine, warn_unknown);
    else if (rc == MPI_SUCCESS && cc->size < 2)
        snprintf(cc->why, sizeof cc->why, "a communicator of 1 rank (the library's local copy)");
    free(pairs);
    if (rc != MPI_SUCCESS) {
        cc->rank_machine = NULL; /* gather again next time */
        free(rm);
        return rc;
    }
    *out = cc;
    return MPI_SUCCESS;
}

int aapc_cluster_place(const void *cluster, MPI_Comm comm, const char *name, const char *routine,
                       aapc_placed_t *out)
{
    aapc_cluster_comm_t *cc = NULL;
    memset(out, 0, sizeof *out);
    out->why = "";
    int rc = aapc_cluster_comm(cluster, comm, name, routine, 0, &cc);
    if (rc != MPI_SUCCESS || cc == NULL)
        return rc;
    out->size = cc->size;
    out->rank_machine = cc->rank_machine;
    out->all_known = cc->all_known || (cc->size == 1 && cc->rank_machine[0] >= 0);
    out->one_host = cc->one_host;
    out->why = cc->why;
    out->machine_name = cc->cluster->machine_name;
    return MPI_SUCCESS;
}

const char *aapc_cluster_comm_why(const aapc_cluster_comm_t *cc)
{
    if (cc == NULL)
        return "the communicator is an inter-communicator";
    if (cc->why[0] != '\0')
        return cc->why;
    if (cc->tree_state < 0 && cc->tree_error[0] != '\0')
        return cc->tree_error;
    return "the run-time scheduler refused this communicator (see the warning)";
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

/* Records the siblings of a split of comm just made (*newcomm: this rank's child, of colour
   `color`; MPI_COMM_NULL for none) on the child: collective over comm. `failed`: this rank
   could not tell its colour (no memory), so no rank records (agreed below). */
static int record_family(const aapc_cluster_t *cl, MPI_Comm comm, int color, MPI_Comm *newcomm,
                         const char *name, int failed)
{
    int rc = MPI_SUCCESS, inter = 0;
    if (cl == NULL || comm == MPI_COMM_NULL ||
        (rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS || inter)
        return rc;
    aapc_cluster_comm_t *pc = NULL;
    if ((rc = aapc_cluster_comm(cl, comm, name, "MPI_Alltoall", 0, &pc)) != MPI_SUCCESS ||
        pc == NULL || !pc->all_known) /* the same on every rank: no family */
        return rc;
    int mine[2] = {color, -1}, P = pc->size;
    if (*newcomm != MPI_COMM_NULL && (rc = PMPI_Comm_rank(*newcomm, &mine[1])) != MPI_SUCCESS)
        return rc;
    aapc_split_family_t *f = calloc(1, sizeof *f);
    int *both = malloc(sizeof *both * 2 * (size_t)P);
    int nomem = failed || f == NULL || both == NULL;
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

int aapc_cluster_split(const aapc_cluster_t *cl, MPI_Comm comm, int color, int key,
                       MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    return rc != MPI_SUCCESS ? rc : record_family(cl, comm, color, newcomm, "MPI_Comm_split", 0);
}

int aapc_cluster_cart_sub(const aapc_cluster_t *cl, MPI_Comm comm, const int remain_dims[],
                          MPI_Comm *newcomm)
{
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm), nd = 0;
    if (rc != MPI_SUCCESS || (rc = PMPI_Cartdim_get(comm, &nd)) != MPI_SUCCESS)
        return rc;
    /* the child is the ranks with my coordinates in the dropped dimensions: its colour is
       their mixed-radix number, as MPI_Cart_sub's own split by them */
    int *dims = malloc(sizeof *dims * 3 * (size_t)(nd > 0 ? nd : 1)), color = 0, failed = 1;
    if (dims != NULL) {
        int *periods = dims + nd, *coords = periods + nd;
        failed = nd > 0 && PMPI_Cart_get(comm, nd, dims, periods, coords) != MPI_SUCCESS;
        for (int d = 0; d < nd && !failed; d++)
            if (!remain_dims[d])
                color = color * dims[d] + coords[d];
        free(dims);
    }
    return record_family(cl, comm, color, newcomm, "MPI_Cart_sub", failed);
}

/* comm's state if it has one (no gather, no communication), else NULL */
static const aapc_cluster_comm_t *state_if_any(MPI_Comm comm)
{
    int flag = 0;
    void *attr = NULL;
    if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL ||
        PMPI_Comm_get_attr(comm, keyval, &attr, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return attr;
}

MPI_Comm aapc_cluster_family_comm(MPI_Comm comm)
{
    const aapc_cluster_comm_t *cc = state_if_any(comm);
    return cc != NULL && cc->family != NULL ? cc->family->dup : MPI_COMM_NULL;
}

int aapc_cluster_comm_agreed(MPI_Comm comm)
{
    const aapc_cluster_comm_t *cc = state_if_any(comm);
    return cc == NULL || cc->rank_machine == NULL ? -1 : cc->settings_agreed;
}

const aapc_job_shape_t *aapc_cluster_comm_shape(aapc_cluster_comm_t *cc, int *nomem)
{
    *nomem = 0;
    if (cc->shape_state == 0 && cc->all_known) {
        int rc = aapc_job_shape(cc->cluster, cc->rank_machine, cc->size, &cc->shape);
        if (rc == AAPC_JOB_ENOMEM) {
            *nomem = 1;
            return NULL;
        }
        cc->shape_state = rc == AAPC_JOB_OK ? 1 : -1;
    }
    return cc->shape_state == 1 ? &cc->shape : NULL;
}

int aapc_cluster_comm_choice(const aapc_cluster_t *cluster, MPI_Comm comm, const char *name,
                             const char *routine, int warn_unknown, aapc_cluster_comm_t **cc,
                             const aapc_job_shape_t **shape)
{
    int rc, inter = 0, nomem = 0;
    *cc = NULL;
    *shape = NULL;
    if (cluster == NULL || comm == MPI_COMM_NULL || aapc_outside_mpi(comm))
        return MPI_SUCCESS; /* an inter-communicator: aapc_cluster_comm leaves *cc NULL */
    rc = aapc_cluster_comm(cluster, comm, name, routine, warn_unknown, cc);
    if (rc != MPI_SUCCESS) /* not a communicator: no choice, the routine meets the argument */
        return PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ? MPI_SUCCESS : rc;
    *shape = *cc == NULL ? NULL : aapc_cluster_comm_shape(*cc, &nomem);
    return nomem ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

int aapc_cluster_comm_settle(const aapc_cluster_t *cl, MPI_Comm comm, const char *name)
{
    int inter = 0;
    aapc_cluster_comm_t *cc = NULL;
    if (cl == NULL || comm == MPI_COMM_NULL || aapc_outside_mpi(comm))
        return MPI_SUCCESS; /* nothing to gather: the routine meets the argument itself */
    int rc = aapc_cluster_comm(cl, comm, name, "MPI_Alltoall", 0, &cc);
    if (rc != MPI_SUCCESS && PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return MPI_SUCCESS; /* not a communicator: the routine meets the argument itself */
    return rc;
}

/* ---- the ranks in the switch tree's order (the log-round ways) ---------------------------- */

/* rank_at[k]: the member (0..n-1, member j on machine machine_of[j]) at place k of the switch
   tree's depth-first order (cluster/aapc_cluster_order.c), members of one machine by number.
   Returns MPI_SUCCESS or MPI_ERR_NO_MEM (the cluster is a tree: the gather checked it). */
static int tree_order(const aapc_cluster_t *cl, const int32_t *machine_of, int n, int *rank_at)
{
    int32_t *position = malloc(sizeof *position * (size_t)cl->n_machines);
    int *count = calloc((size_t)cl->n_machines + 1, sizeof *count);
    if (position == NULL || count == NULL || aapc_cluster_machine_order(cl, position) != 0) {
        free(position);
        free(count);
        return MPI_ERR_NO_MEM;
    }
    for (int j = 0; j < n; j++) /* counting sort by position, stable */
        count[position[machine_of[j]] + 1]++;
    for (int32_t m = 0; m < cl->n_machines; m++)
        count[m + 1] += count[m];
    for (int j = 0; j < n; j++)
        rank_at[count[position[machine_of[j]]]++] = j;
    free(position);
    free(count);
    return MPI_SUCCESS;
}

struct order_entry {
    int *rank_at;
};

static void order_free(void *p)
{
    struct order_entry *o = p;
    free(o->rank_at);
    free(o);
}

static const char order_key;

int aapc_cluster_comm_tree_order(aapc_cluster_comm_t *cc, const int **rank_at, int *fresh)
{
    *fresh = 0;
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(cc, &order_key, order_free);
    if (slot == NULL)
        return MPI_ERR_NO_MEM;
    if (slot->data == NULL) {
        struct order_entry *o = calloc(1, sizeof *o);
        if (o == NULL || (o->rank_at = malloc(sizeof *o->rank_at * (size_t)cc->size)) == NULL ||
            tree_order(cc->cluster, cc->rank_machine, cc->size, o->rank_at) != MPI_SUCCESS) {
            if (o != NULL)
                order_free(o);
            return MPI_ERR_NO_MEM;
        }
        slot->data = o;
        *fresh = 1;
    }
    *rank_at = ((struct order_entry *)slot->data)->rank_at;
    return MPI_SUCCESS;
}

/* ---- AAPC_INFLIGHT ------------------------------------------------------------------------ */

double aapc_inflight_budget(MPI_Comm comm, const aapc_job_shape_t *shape)
{
    static atomic_int warned;
    double own = shape->inflight;
    const char *e = aapc_setting(comm, "AAPC_INFLIGHT");
    char *end = NULL;
    long long v = e != NULL && e[0] != '\0' ? strtoll(e, &end, 10) : 0;
    if (e != NULL && e[0] != '\0' && (v < 1 || *end != '\0')) {
        if (atomic_exchange(&warned, 1) == 0)
            fprintf(stderr, "aapcgen: AAPC_INFLIGHT=%s is not a number of bytes (1 or more); "
                            "using %.0f\n", e, own);
        v = 0;
    }
    return v > 0 ? (double)v : own;
}

/* ---- AAPC_DUMP_SCHEDULE of the log-round members --------------------------------------------- */

void aapc_cluster_dump_loground(const aapc_cluster_t *cl, const int32_t *machine_of,
                                const int *rank_at, int n, const aapc_digits_t *dg)
{
    static int serial = 0;
    FILE *f = aapc_dump_open("loground", &serial);
    if (f == NULL)
        return;
    fprintf(f, "{\"topology\": ");
    aapc_dump_string(f, cl->name);
    fprintf(f, ", \"kind\": \"loground\", \"radix\": ");
    if (dg == NULL)
        fprintf(f, "2");
    for (int32_t l = 0; dg != NULL && l < dg->levels; l++)
        fprintf(f, "%s%d", l ? ", " : "[", (int)dg->radix[l]);
    fprintf(f, dg != NULL ? "], \"groups\": " : "");
    for (int32_t l = 0; dg != NULL && l < dg->levels; l++)
        fprintf(f, "%s%d", l ? ", " : "[", (int)dg->groups[l]);
    fprintf(f, dg != NULL ? "], \"members\": [" : ", \"members\": [");
    for (int k = 0; k < n; k++) {
        fprintf(f, k ? ", " : "");
        aapc_dump_string(f, cl->machine_name[machine_of[rank_at != NULL ? rank_at[k] : k]]);
    }
    fprintf(f, "]}\n");
    fclose(f);
}
