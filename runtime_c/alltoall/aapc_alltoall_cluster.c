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
 *      receiver-all, barrier-all) from the phases on the job tree (aapc_alltoall_rows.c; seed
 *      002's phases are streamed into the rows, none stored, unless rank 0 dumps them), for
 *      a window of AAPC_WINDOW phases that every rank agrees on (one MPI_Allreduce of 2 ints;
 *      disagreement runs 1);
 *   5. AAPC_DUMP_SCHEDULE=DIR: rank 0 writes the schedule as JSON (docs/scheduling.md contract,
 *      plus the machine of every rank) for `aapcgen verify TOPO --schedule FILE`;
 *   6. the result (or the decision to fall back) is cached on the communicator, in a slot per
 *      variant of aapc_cluster_comm.c, and freed with it. Later calls: one attribute lookup.
 * Siblings (a communicator from a recorded MPI_Comm_split: common/aapc_cluster_comm.c
 * aapc_cluster_split, the generated MPI_Comm_split under AAPC_SIBLINGS=union): the schedule is
 * the union of every sibling's all-to-all on the parent's job tree, so that all of them calling
 * at once are contention-free together: the messages (a, b) of ranks of one colour, scheduled
 * by the greedy of vsched/ (first fit, largest first, ties in the order of seed 002's phases of
 * the parent: every phase puts at most one message on every directed link), and the syncs of
 * the variant along every link across the siblings (aapc_alltoall_rows.c on the parent's
 * numbering). The data and the syncs travel on the family's dup of the parent, each block
 * addressed by the sender's rank in its own communicator (aapc_comm_info_t machine_block).
 * Every sibling must then call MPI_Alltoall together, the same number of times (a 2-D FFT's
 * transposes): a sibling that does not call leaves the others waiting for its syncs. Not for
 * barrier-all (a barrier would span the parent); a union the scheduler refuses (a parent of more
 * than AAPC_JOB_MAX_RANKS ranks) leaves each communicator its own schedule.
 * Then the phase executor (common/aapc_exec.c) runs this rank's rows: those of the agreed
 * window, or, for a small block, those of the larger window the block size sets (the most
 * phases whose blocks fit AAPC_INFLIGHT bytes, 64 KiB unset: cluster/aapc_cluster.h
 * aapc_inflight_window), built at the first call that takes it; the last ROW_SETS such sets are
 * kept. The leaders choose theirs alike, by their aggregated block per machine. Where every
 * phase fits one window (no syncs left), the call skips the rows and the argument agreement's
 * reduction: it sends every block at once with the agreement carried in each message
 * (aapc_alltoall_carried.c; carried_fits below).
 * Cost of the first call: one MPI_Comm_dup, one Allgather of P ints (lg P alpha + 4 P beta),
 * O(P^2 d) local work and about 16 P^2 bytes for P ranks of a depth-d tree (119 ms, 34 MiB at
 * 1024 ranks: docs/measurements/runtime-scheduling.md); each call: the
 * executor's P_phases (alpha + n beta) on the critical path plus its syncs. A union adds, on its
 * first call, O(P^2) memory for the parent's P ranks (its count matrix and template) and the
 * greedy over the M = sum of the siblings' n(n-1) messages.
 */
#define _POSIX_C_SOURCE 200809L
#include "aapc_alltoall_cluster.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alltoall_carried.h"
#include "aapc_alltoall_loground.h"
#include "aapc_alltoall_treedigits.h"
#include "aapc_alltoall_rows.h"
#include "aapc_cluster_comm.h"
#include "aapc_comm.h"
#include "aapc_exec.h" /* aapc_alltoall_block */
#include "aapc_args.h" /* aapc_args_raise_code */
#include "aapc_hier.h"
#include "aapc_mpi.h" /* aapc_type_size */
#include "aapc_report.h"
#include "aapc_settings.h"
#include "aapc_vsched.h"

/* Calls served per way in this process (aapc_alltoall_ways_served). */
static _Atomic long long served[AAPC_N_WAYS];

void aapc_alltoall_ways_served(long long counts[AAPC_N_WAYS])
{
    for (int w = 0; w < AAPC_N_WAYS; w++)
        counts[w] = atomic_load(&served[w]);
}

/* ---- row sets by window ------------------------------------------------------------------ */

/* The row sets a communicator keeps for the windows its calls take by block size (the leaders'
   machine-level phases, and the per-rank phases beyond the user's window): those it ran last.
   A window is a power of two up to AAPC_INFLIGHT_MAX_WINDOW (aapc_inflight_window) or the
   user's (AAPC_WINDOW); a program whose calls cycle through more window classes rebuilds the
   least recently used set (a first call's local work), so the memory stays ROW_SETS sets. */
#define ROW_SETS 3
_Static_assert(AAPC_INFLIGHT_MAX_WINDOW == AAPC_MAX_WINDOW, "one window limit");

struct row_sets {
    int n;
    long long uses; /* lookups so far (for the least recently used) */
    struct {
        int32_t window;
        long long used;
        aapc_rows_t rows;
    } set[ROW_SETS];
};

static void row_sets_free(struct row_sets *r)
{
    for (int k = 0; k < r->n; k++)
        aapc_rows_free(&r->set[k].rows);
    r->n = 0;
}

/* Member me's rows, for `sync` and `window`, of the all-to-all among n members, member j on
   machine machines[j]: seed 002's phases streamed where they are the job's, else the stored
   capacity-aware ones. Returns 0, or -1 (out of memory, or no phases for this job). */
static int build_rows(const aapc_cluster_t *cl, const int32_t *machines, int n, int me,
                      int sync, int32_t window, const char *name, aapc_rows_t *rows)
{
    aapc_job_phases_t ph;
    aapc_job_tree_t tree;
    char err[160];
    memset(&ph, 0, sizeof ph);
    memset(&tree, 0, sizeof tree);
    int jr = aapc_job_tree(cl, machines, n, &tree, err, (int)sizeof err);
    int streamed = jr != AAPC_JOB_OK ? 1
                                     : aapc_rows_build_seed(cl, machines, n, &tree, sync, window,
                                                            me, name, rows);
    if (streamed < 0)
        jr = AAPC_JOB_ENOMEM;
    if (streamed > 0 && jr == AAPC_JOB_OK) /* the capacity-aware phases: stored */
        jr = aapc_job_phases(cl, machines, n, &ph);
    if (streamed > 0 && jr == AAPC_JOB_OK &&
        aapc_rows_build(&ph, &tree, sync, window, me, name, rows) != 0)
        jr = AAPC_JOB_ENOMEM;
    aapc_job_phases_free(&ph);
    aapc_job_tree_free(&tree);
    return jr == AAPC_JOB_OK ? 0 : -1;
}

/* The rows of `window` from r, built at their first use (build_rows' arguments); NULL when they
   cannot be built. */
static const aapc_rows_t *row_sets_get(struct row_sets *r, const aapc_cluster_t *cl,
                                       const int32_t *machines, int n, int me, int sync,
                                       int32_t window, const char *name)
{
    int old = 0;
    for (int k = 0; k < r->n; k++) {
        if (r->set[k].window == window) {
            r->set[k].used = ++r->uses;
            return &r->set[k].rows;
        }
        if (r->set[k].used < r->set[old].used)
            old = k;
    }
    if (r->n == ROW_SETS) { /* drop the least recently used set */
        aapc_rows_free(&r->set[old].rows);
        r->set[old] = r->set[--r->n];
    }
    aapc_rows_t *rows = &r->set[r->n].rows;
    memset(rows, 0, sizeof *rows);
    if (build_rows(cl, machines, n, me, sync, window, name, rows) != 0)
        return NULL;
    r->set[r->n].window = window;
    r->set[r->n++].used = ++r->uses;
    return rows;
}

/* ---- the per-rank phases ------------------------------------------------------------------ */

/* One variant's schedule on one communicator (a slot of aapc_cluster_comm_t). */
struct cluster_entry {
    int usable;
    aapc_rows_t rows; /* rows.sched.window: agreed by every rank (1 for a union) */
    aapc_comm_info_t info; /* where the rows run (the family's dup for a union) */
    struct row_sets more;  /* the larger windows small blocks take (not for a union) */
};

static void entry_free(void *p)
{
    struct cluster_entry *e = p;
    aapc_rows_free(&e->rows);
    row_sets_free(&e->more);
    free(e);
}

/* AAPC_DUMP_SCHEDULE: the JSON contract with the job's rank names and cluster machines. */
static void dump_schedule(const aapc_cluster_t *cl, const int *rm, int P,
                          const aapc_job_phases_t *ph)
{
    static int serial = 0;
    FILE *f = aapc_dump_open("schedule", &serial);
    if (f == NULL)
        return;
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
    aapc_dump_string(f, cl->name);
    fprintf(f, ", \"rank_machines\": [");
    for (int r = 0; r < P; r++) {
        fprintf(f, r ? ", " : "");
        aapc_dump_string(f, cl->machine_name[rm[r]]);
    }
    fprintf(f, "], \"machines\": [");
    for (int r = 0; r < P; r++) { /* the job tree's leaf names (aapcgen/alltoall/job.py) */
        fprintf(f, r ? ", " : "");
        if (count[rm[r]] > 1) {
            char leaf[512];
            snprintf(leaf, sizeof leaf, "%s#%d", cl->machine_name[rm[r]], seen[rm[r]]++);
            aapc_dump_string(f, leaf);
        } else {
            aapc_dump_string(f, cl->machine_name[rm[r]]);
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

/* AAPC_DUMP_SCHEDULE for a union: the parent's machines, every rank's colour, the messages. */
static void dump_union(const aapc_cluster_t *cl, const aapc_split_family_t *f,
                       const aapc_vsched *vs)
{
    static int serial = 0;
    FILE *f_out = aapc_dump_open("union", &serial);
    if (f_out == NULL)
        return;
    fprintf(f_out, "{\"topology\": ");
    aapc_dump_string(f_out, cl->name);
    fprintf(f_out, ", \"rank_machines\": [");
    for (int r = 0; r < f->size; r++) {
        fprintf(f_out, r ? ", " : "");
        aapc_dump_string(f_out, cl->machine_name[f->rank_machine[r]]);
    }
    fprintf(f_out, "], \"colors\": [");
    for (int r = 0; r < f->size; r++)
        fprintf(f_out, "%s%d", r ? ", " : "", f->color[r] == MPI_UNDEFINED ? -1 : f->color[r]);
    fprintf(f_out, "], \"n_phases\": %d, \"messages\": [", vs->n_phases);
    for (long long k = 0; k < vs->n_pieces; k++)
        fprintf(f_out, "%s[%d, %d, %d]", k ? ", " : "", vs->phase[k], vs->src[k], vs->dst[k]);
    fprintf(f_out, "]}\n");
    fclose(f_out);
}

/* The union of the siblings' all-to-alls (see the top). Returns MPI_SUCCESS with e->usable set
   when built, MPI_SUCCESS with it clear when the scheduler refuses the parent (the caller
   then schedules the communicator alone), MPI_ERR_NO_MEM. */
static int build_union(struct cluster_entry *e, aapc_cluster_comm_t *cc, int sync,
                       const char *name)
{
    const aapc_split_family_t *f = cc->family;
    const aapc_cluster_t *cl = cc->cluster;
    int32_t P = f->size;
    size_t n = (size_t)P;
    char err[160];
    aapc_job_tree_t tree;
    aapc_job_phases_t unit;
    aapc_vsched vs;
    memset(&tree, 0, sizeof tree);
    memset(&unit, 0, sizeof unit);
    memset(&vs, 0, sizeof vs);
    int rc = aapc_job_tree(cl, f->rank_machine, P, &tree, err, (int)sizeof err);
    if (rc != AAPC_JOB_OK)
        return rc == AAPC_JOB_ENOMEM ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    rc = aapc_job_phases_unit(cl, f->rank_machine, P, &unit);
    if (rc != AAPC_JOB_OK) {
        aapc_job_tree_free(&tree);
        return rc == AAPC_JOB_ENOMEM ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    }
    int *parent = malloc(sizeof *parent * (size_t)tree.n_nodes);
    int *tmpl = malloc(sizeof *tmpl * n * n);
    long long *counts = calloc(n * n, sizeof *counts);
    int32_t *phase = NULL, *src = NULL, *dst = NULL;
    int out = MPI_ERR_NO_MEM;
    if (parent == NULL || tmpl == NULL || counts == NULL)
        goto done;
    for (int32_t v = 0; v < tree.n_nodes; v++)
        parent[v] = tree.parent[v];
    for (size_t i = 0; i < n * n; i++)
        tmpl[i] = -1;
    for (int64_t k = 0; k < unit.n_messages; k++)
        tmpl[(size_t)unit.src[k] * n + (size_t)unit.dst[k]] = unit.phase[k];
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++)
            counts[a * n + b] = a != b && f->color[a] != MPI_UNDEFINED && f->color[a] == f->color[b];
    aapc_vtree vt = {P, tree.n_nodes, parent, tree.up_bw, tmpl};
    rc = aapc_vsched_run(&vt, counts, AAPC_VSCHED_GREEDY, 0, 0, &vs);
    if (rc != AAPC_VSCHED_OK) {
        out = rc == AAPC_VSCHED_ENOMEM ? MPI_ERR_NO_MEM : MPI_SUCCESS;
        goto done;
    }
    size_t m = (size_t)vs.n_pieces;
    phase = malloc(sizeof *phase * (m ? m : 1));
    src = malloc(sizeof *src * (m ? m : 1));
    dst = malloc(sizeof *dst * (m ? m : 1));
    if (phase == NULL || src == NULL || dst == NULL)
        goto done;
    for (size_t k = 0; k < m; k++) { /* sorted by (phase, src, dst), as the rows want */
        phase[k] = vs.phase[k];
        src[k] = vs.src[k];
        dst[k] = vs.dst[k];
    }
    aapc_job_phases_t ph;
    memset(&ph, 0, sizeof ph);
    ph.n_ranks = P;
    ph.n_phases = vs.n_phases;
    ph.n_messages = (int64_t)m;
    ph.phase = phase;
    ph.src = src;
    ph.dst = dst;
    if (f->rank == 0)
        dump_union(cl, f, &vs);
    /* window 1: siblings build their union apart, with no collective to agree on a window */
    if (aapc_rows_build(&ph, &tree, sync, 1, f->rank, name, &e->rows) != 0)
        goto done;
    e->info = (aapc_comm_info_t){1, f->dup, f->rank, NULL, NULL, f->child_rank, cc->size};
    e->usable = 1;
    out = MPI_SUCCESS;
done:
    free(phase);
    free(src);
    free(dst);
    free(parent);
    free(tmpl);
    free(counts);
    aapc_vsched_free(&vs);
    aapc_job_phases_free(&unit);
    aapc_job_tree_free(&tree);
    return out;
}

/* AAPC_WINDOW: phases of sends a rank keeps in flight in the run-time routines (docs/
   scheduling.md "Windows"); unset: 1. A setting every rank of the communicator shares
   (common/aapc_settings.h: ranks that differ run 1); a bad value warns once and runs 1. */
static int32_t runtime_window(MPI_Comm comm)
{
    static int warned = 0;
    const char *env = aapc_setting(comm, "AAPC_WINDOW");
    char *end = NULL;
    long v = env != NULL && env[0] != '\0' ? strtol(env, &end, 10) : 1;
    if (env != NULL && env[0] != '\0' && (*end != '\0' || v < 1 || v > AAPC_MAX_WINDOW)) {
        if (!warned++)
            fprintf(stderr, "aapcgen: AAPC_WINDOW=%s is not a window of 1 to %d phases; using 1\n",
                    env, AAPC_MAX_WINDOW);
        return 1;
    }
    return (int32_t)v;
}

/* Steps 3-5 for a communicator whose ranks are all on known machines. */
static int build_entry(struct cluster_entry *e, aapc_cluster_comm_t *cc, int sync,
                       const char *name, MPI_Comm comm)
{
    int nomem = 0;
    int32_t window = runtime_window(comm);
    const aapc_job_tree_t *tree = aapc_cluster_comm_tree(cc, &nomem);
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (tree == NULL) {
        aapc_warn_fallback(comm, name, cc->tree_error, "MPI_Alltoall");
        return MPI_SUCCESS; /* usable stays 0: the library's routine runs */
    }
    if (cc->family != NULL && sync != AAPC_VSYNC_BARRIER) {
        int rc = build_union(e, cc, sync, name);
        if (rc != MPI_SUCCESS || e->usable)
            return rc;
    }
    /* seed 002's phases streamed (none stored) where they are the job's, unless rank 0 is to
       dump the schedule; else the stored build, which says why a job cannot run */
    int streamed = cc->rank == 0 && aapc_dump_wanted()
                       ? 1
                       : aapc_rows_build_seed(cc->cluster, cc->rank_machine, cc->size, tree, sync,
                                              window, cc->rank, name, &e->rows);
    if (streamed < 0)
        return MPI_ERR_NO_MEM;
    if (streamed == 0) {
        e->info = (aapc_comm_info_t){1, cc->dup, cc->rank, NULL, NULL, NULL, 0};
        e->usable = 1;
        return MPI_SUCCESS;
    }
    aapc_job_phases_t ph;
    int rc = aapc_job_phases(cc->cluster, cc->rank_machine, cc->size, &ph);
    if (rc == AAPC_JOB_ERANGE || rc == AAPC_JOB_EINVAL) {
        snprintf(cc->why, sizeof cc->why, "%s", ph.error); /* for the report's later calls */
        aapc_warn_fallback(comm, name, ph.error, "MPI_Alltoall");
        return MPI_SUCCESS;
    }
    if (rc != AAPC_JOB_OK)
        return MPI_ERR_NO_MEM;
    if (cc->rank == 0)
        dump_schedule(cc->cluster, cc->rank_machine, cc->size, &ph);
    rc = aapc_rows_build(&ph, tree, sync, window, cc->rank, name, &e->rows);
    aapc_job_phases_free(&ph);
    if (rc != 0)
        return MPI_ERR_NO_MEM;
    e->info = (aapc_comm_info_t){1, cc->dup, cc->rank, NULL, NULL, NULL, 0};
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

int aapc_alltoall_cluster_rows(const aapc_cluster_t *cl, int sync, const char *name,
                               MPI_Comm comm, const aapc_schedule_t **sched,
                               aapc_comm_info_t *info)
{
    aapc_cluster_comm_t *state = NULL;
    struct cluster_entry *e = NULL;
    *sched = NULL;
    int rc = lookup(cl, sync, name, comm, 1, &state, &e);
    if (rc != MPI_SUCCESS || e == NULL || !e->usable || e->info.machine_block != NULL)
        return rc;
    *sched = &e->rows.sched;
    *info = e->info;
    return MPI_SUCCESS;
}

/* ---- the members' order of the log-round way --------------------------------------------- */

/* The tree's digits of the log-round exchange (the shape's): among the machines' leaders
   (leaders 1) or among the ranks; NULL: Bruck's radix 2. */
static const aapc_digits_t *shape_digits(aapc_cluster_comm_t *cc, int leaders)
{
    int nomem = 0;
    const aapc_job_shape_t *shape = aapc_cluster_comm_shape(cc, &nomem);
    const aapc_digits_t *dg = shape == NULL ? NULL : leaders ? &shape->digits : &shape->rank_digits;
    return dg != NULL && dg->levels > 0 ? dg : NULL;
}

/* The log-round way on a communicator: its ranks in tree order (AAPC_DUMP_SCHEDULE writes it
   at its first use). */
static int order_lookup(aapc_cluster_comm_t *cc, const int **rank_at)
{
    int fresh = 0, rc = aapc_cluster_comm_tree_order(cc, rank_at, &fresh);
    if (rc == MPI_SUCCESS && fresh && cc->rank == 0)
        aapc_cluster_dump_loground(cc->cluster, cc->rank_machine, *rank_at, cc->size,
                                   shape_digits(cc, 0));
    return rc;
}

/* ---- several ranks per machine: the leader-based ways -------------------------------------- */

/* The aggregated ways on one communicator, for one variant (a slot): the ranks of every machine
   share a segment (hier/aapc_hier_segment.c) and L of them (local ranks 0 .. L-1, the leaders,
   L by size: hier/aapc_hier.h aapc_hier_lanes) exchange the machine's blocks with the other
   machines' leaders of their lane, in the machine-level phases (built on a leader's first call
   that takes them) or in log rounds. */
struct leader_entry {
    int usable;
    int r, n;              /* ranks per machine, machines */
    int mine, local;       /* my machine (leader order) and my rank on it */
    int32_t *lm;           /* lm[k]: the cluster's machine of leader k */
    int *order;            /* order[k*R + i]: rank of local rank i of machine k */
    int *machine_at;       /* the leaders in the switch tree's order (log rounds; lazily) */
    const aapc_digits_t *digits; /* the machines' digits of the log rounds (NULL: radix 2) */
    double budget;               /* this call's AAPC_INFLIGHT (the digits' windows) */
    MPI_Comm node, lane;   /* my machine's ranks; local rank `local` of every machine */
    struct row_sets rows;   /* the leaders' machine-level rows by window (leaders only) */
    const aapc_rows_t *now; /* the rows of this call's window */
    aapc_comm_info_t info;  /* where the leaders run them */
};

static void leader_free(void *p)
{
    struct leader_entry *le = p;
    if (le->node != MPI_COMM_NULL)
        PMPI_Comm_free(&le->node);
    if (le->lane != MPI_COMM_NULL)
        PMPI_Comm_free(&le->lane);
    row_sets_free(&le->rows);
    free(le->order);
    free(le->lm);
    free(le->machine_at);
    free(le);
}

static const char leader_keys[4];

/* R when every machine of the communicator runs R > 1 of its ranks and there are at least two
   machines, else 0 (the same on every rank: from the gathered machines). */
static int equal_ranks_per_machine(const aapc_cluster_comm_t *cc, int *machines)
{
    int32_t M = cc->cluster->n_machines;
    int *count = calloc((size_t)M, sizeof *count), r = 0, n = 0;
    if (count == NULL)
        return 0;
    for (int q = 0; q < cc->size; q++)
        n += count[cc->rank_machine[q]]++ == 0;
    for (int32_t m = 0; m < M && r >= 0; m++)
        if (count[m] > 0)
            r = r == 0 || r == count[m] ? count[m] : -1;
    free(count);
    *machines = n;
    return r > 1 && n > 1 ? r : 0;
}

/* The machine-level exchange among the leaders: the run-time rows on the leaders' communicator. */
static int leader_exchange(void *ctx, const void *g, MPI_Datatype gt, void *s, MPI_Datatype st,
                           MPI_Comm leaders)
{
    struct leader_entry *le = ctx;
    (void)leaders;
    return aapc_alltoall_exec(&le->now->sched, &le->info, g, 1, gt, s, 1, st);
}

/* The machine-level exchange in log rounds: Bruck among the leaders in the tree's order. */
static int leader_rounds(void *ctx, const void *g, MPI_Datatype gt, void *s, MPI_Datatype st,
                         MPI_Comm leaders)
{
    struct leader_entry *le = ctx;
    if (le->digits != NULL)
        return aapc_alltoall_treedigits(g, 1, gt, s, 1, st, leaders, le->machine_at, le->digits,
                                        le->budget);
    return aapc_alltoall_loground(g, 1, gt, s, 1, st, leaders, le->machine_at);
}

/* Build (collective over the communicator's dup) the aggregated ways' communicators. */
static int build_leader(struct leader_entry *le, aapc_cluster_comm_t *cc, int r, int n)
{
    int P = cc->size, rc;
    int32_t M = cc->cluster->n_machines;
    int *index = malloc(sizeof *index * (size_t)M), *fill = calloc((size_t)n, sizeof *fill);
    le->lm = malloc(sizeof *le->lm * (size_t)n);
    le->order = malloc(sizeof *le->order * (size_t)P);
    if (index == NULL || fill == NULL || le->lm == NULL || le->order == NULL) {
        free(index);
        free(fill);
        return MPI_ERR_NO_MEM; /* before any collective: every rank has the same sizes, but a
                                  rank short of memory fails alone here (as elsewhere) */
    }
    for (int32_t m = 0; m < M; m++)
        index[m] = -1;
    int k = 0;
    le->mine = -1;
    le->local = 0;
    for (int q = 0; q < P; q++) { /* machines in the order of their lowest rank */
        int32_t m = cc->rank_machine[q];
        if (index[m] < 0) {
            le->lm[k] = m;
            index[m] = k++;
        }
        int i = fill[index[m]]++;
        le->order[index[m] * r + i] = q;
        if (q == cc->rank) {
            le->mine = index[m];
            le->local = i;
        }
    }
    free(index);
    free(fill);
    le->r = r;
    le->n = n;
    if ((rc = PMPI_Comm_split(cc->dup, le->mine, le->local, &le->node)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_split(cc->dup, le->local, le->mine, &le->lane)) != MPI_SUCCESS)
        return rc;
    aapc_args_private_returns(le->lane);
    le->usable = 1;
    return MPI_SUCCESS;
}

/* The leaders' machine-level phases for `sync` and `window` in le->now (local work on a leader
   of one of `lanes` lanes, at its first call of the leader-based way with that window): one
   rank per machine, machine k = rank k of the lane. */
static int leader_rows(struct leader_entry *le, const aapc_cluster_comm_t *cc, int sync,
                       int32_t window, const char *name, int lanes)
{
    if (le->local >= lanes)
        return MPI_SUCCESS;
    le->now = row_sets_get(&le->rows, cc->cluster, le->lm, le->n, le->mine, sync, window, name);
    if (le->now == NULL)
        return MPI_ERR_NO_MEM; /* the per-rank path took this job: only memory fails here */
    le->info = (aapc_comm_info_t){1, le->lane, le->mine, NULL, NULL, NULL, 0};
    return MPI_SUCCESS;
}

/* The leaders in the switch tree's order (leader ranks), from the ranks' tree order rank_at:
   the machines of a machine's ranks are next to each other there. */
static int leader_tree_order(struct leader_entry *le, aapc_cluster_comm_t *cc,
                             const int *rank_at)
{
    int P = cc->size;
    if (le->machine_at != NULL)
        return MPI_SUCCESS;
    int *machine_of = malloc(sizeof *machine_of * (size_t)P);
    int *at = malloc(sizeof *at * (size_t)le->n);
    if (machine_of == NULL || at == NULL) {
        free(machine_of);
        free(at);
        return MPI_ERR_NO_MEM;
    }
    for (int k = 0; k < le->n; k++)
        for (int i = 0; i < le->r; i++)
            machine_of[le->order[k * le->r + i]] = k;
    int m = 0;
    for (int q = 0; q < P; q++) {
        int k = machine_of[rank_at[q]];
        if (m > 0 && at[m - 1] == k)
            continue;
        if (m == le->n) { /* a machine's ranks apart in the tree order (cannot happen) */
            m++;
            break;
        }
        at[m++] = k;
    }
    free(machine_of);
    if (m != le->n) {
        free(at);
        return MPI_ERR_INTERN;
    }
    le->machine_at = at;
    if (cc->rank == 0) { /* the leaders' order, for the checker */
        int32_t *mm = malloc(sizeof *mm * (size_t)m);
        for (int k = 0; mm != NULL && k < m; k++)
            mm[k] = le->lm[at[k]];
        if (mm != NULL)
            aapc_cluster_dump_loground(cc->cluster, mm, NULL, m, shape_digits(cc, 1));
        free(mm);
    }
    return MPI_SUCCESS;
}

/* The aggregated ways of this communicator for `sync` when they apply (NULL otherwise). */
static int leader_lookup(aapc_cluster_comm_t *cc, int sync, struct leader_entry **out)
{
    int n = 0, r = equal_ranks_per_machine(cc, &n), rc, nomem = 0;
    *out = NULL;
    const aapc_job_shape_t *shape = r == 0 ? NULL : aapc_cluster_comm_shape(cc, &nomem);
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (shape == NULL || !aapc_leaders_fit(shape))
        return MPI_SUCCESS;
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(cc, &leader_keys[sync], leader_free);
    if (slot == NULL)
        return MPI_ERR_NO_MEM;
    if (slot->data == NULL) {
        struct leader_entry *le = calloc(1, sizeof *le);
        if (le == NULL)
            return MPI_ERR_NO_MEM;
        le->node = le->lane = MPI_COMM_NULL;
        if ((rc = build_leader(le, cc, r, n)) != MPI_SUCCESS) {
            leader_free(le);
            return rc;
        }
        slot->data = le;
    }
    *out = slot->data;
    return MPI_SUCCESS;
}

/* ---- the per-call selection ---------------------------------------------------------------- */

/* The bytes of one block as this rank describes them: the receive side (the same on every rank
   of a valid call, and on every rank of the usual misuses, which change the send side), else
   the send side; -1 when neither is a usable description (the checks then raise the error). */
static long long block_bytes(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             int recvcount, MPI_Datatype recvtype)
{
    int64_t size = 0;
    if (recvcount >= 0 && recvtype != MPI_DATATYPE_NULL &&
        aapc_type_size(recvtype, &size) == MPI_SUCCESS && size >= 0)
        return (long long)recvcount * size;
    if (sendbuf != MPI_IN_PLACE && sendcount >= 0 && sendtype != MPI_DATATYPE_NULL &&
        aapc_type_size(sendtype, &size) == MPI_SUCCESS && size >= 0)
        return (long long)sendcount * size;
    return -1;
}

/* AAPC_WAY=library|phases|leaders|loground forces a way (a setting every rank shares) where it
   can run (`possible`: leaders need several ranks on every machine); -1: unset, not possible on
   this communicator, or not a way of this routine (the library under a runtime-* variant: said
   once, as an unknown name is). */
static int forced_way(const aapc_cluster_comm_t *cc, unsigned routine_ways, unsigned possible)
{
    static int warned = 0;
    const char *e = NULL;
    int w = aapc_way_env(&e);
    if (w == -1 || !cc->settings_agreed) /* ranks whose settings differ: none forced */
        return -1;
    if (w >= 0 && (routine_ways & (1u << w)))
        return possible & (1u << w) ? w : -1;
    if (!warned++)
        fprintf(stderr,
                "aapcgen: AAPC_WAY=%s is not a way of this routine (library, phases, leaders, "
                "loground; the library only under the default routine auto); choosing by size\n",
                e);
    return -1;
}

/* The way this call takes on comm, the same on every rank (-1: no choice here: the
   communicator is null, an inter-communicator, has a rank on an unknown machine, or the block
   is not described; the checks and the lookup then decide). Collective only on the first use
   of comm (common/aapc_cluster_comm.c). */
static int select_way(const aapc_cluster_t *cl, const char *name, unsigned ways, int warn,
                      const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, int *way,
                      aapc_cluster_comm_t **state)
{
    aapc_cluster_comm_t *cc = NULL;
    const aapc_job_shape_t *shape = NULL;
    *way = -1;
    *state = NULL;
    int rc = aapc_cluster_comm_choice(cl, comm, name, "MPI_Alltoall", warn, &cc, &shape);
    if (rc != MPI_SUCCESS || shape == NULL)
        return rc;
    long long b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
    if (b < 0)
        return MPI_SUCCESS;
    *state = cc;
    if (cc->family != NULL) { /* a recorded sibling: the union of the siblings' phases, which */
        *way = AAPC_WAY_PHASES; /* every sibling runs together whatever its block size */
        return MPI_SUCCESS;
    }
    int forced = forced_way(cc, ways, aapc_ways_possible(shape));
    if (forced >= 0) {
        *way = forced;
    } else if (cc->memo_set && cc->memo_bytes == b && cc->memo_ways == ways) {
        *way = cc->memo_way; /* an application repeats its sizes: the model once per size */
    } else {
        *way = aapc_way_choose(cl->model, shape, (double)b, ways);
        cc->memo_set = 1, cc->memo_bytes = b, cc->memo_ways = ways, cc->memo_way = *way;
    }
    return MPI_SUCCESS;
}

/* The leader-based way (several ranks on every machine): the machine's blocks to its leader
   (shared segment, or MPI_Gather), the machine-level phases among the leaders, back (segment,
   or MPI_Scatter). *ran = 0: not this communicator's shape (the caller runs the per-rank
   phases). */
/* How many leaders per machine an aggregated call takes (1 without a shared segment), and what
   the report says it ran: [log rounds][0 no segment, 1 segment, 2 several leaders]. */
static int call_lanes(const struct leader_entry *le, int shared, MPI_Comm comm, long long b)
{
    return shared ? aapc_hier_lanes(comm, le->r, (MPI_Aint)(b > 0 ? b : 0)) : 1;
}

/* The window of this call's machine-level phases: the user's (AAPC_WINDOW), or more where
   the aggregated blocks are small (aapc_inflight_window on a lane's block to one machine: its
   ceil(R / lanes) ranks' blocks for the R ranks there). The same on every rank. */
static int32_t leader_window(const struct leader_entry *le, const aapc_cluster_comm_t *cc,
                             MPI_Comm comm, int lanes, int32_t user, long long b)
{
    double per_lane = (double)((le->r + lanes - 1) / lanes);
    int32_t w = aapc_inflight_window(per_lane * le->r * (double)(b > 0 ? b : 0),
                                     cc->shape.machine_phases,
                                     aapc_inflight_budget(comm, &cc->shape));
    return w > user ? w : user;
}

static const char *const aggregated_how[3][3] = {
    {"run-time, leader-based", "run-time, leader-based, shared segment",
     "run-time, leader-based, shared segment, several leaders"},
    {"run-time, log-round over machines", "run-time, log-round over machines, shared segment",
     "run-time, log-round over machines, shared segment, several leaders"},
    {"run-time, log-round over machines in the tree's digits",
     "run-time, log-round over machines in the tree's digits, shared segment",
     "run-time, log-round over machines in the tree's digits, shared segment, several leaders"},
};

static int run_leaders(aapc_cluster_comm_t *cc, int sync, const char *name, const void *sendbuf,
                       int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, int *ran)
{
    struct leader_entry *le = NULL;
    int rc = leader_lookup(cc, sync, &le), shared = 0, lanes = 1;
    *ran = rc != MPI_SUCCESS || le != NULL;
    if (rc == MPI_SUCCESS && le != NULL &&
        (rc = aapc_hier_segment_shared(le->node, &shared)) == MPI_SUCCESS) {
        long long b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
        lanes = call_lanes(le, shared, comm, b);
        int32_t window = leader_window(le, cc, comm, lanes, runtime_window(comm), b);
        rc = leader_rows(le, cc, sync, window, name, lanes);
    }
    if (rc != MPI_SUCCESS || le == NULL)
        return aapc_args_raise_alone(comm, rc);
    /* the round size from the user's communicator, whose settings the ranks agreed on (the
       duplicate has no record: each rank would read its own environment) */
    aapc_hier_layout_t h = {le->r,    cc->size,        le->order, le->node,
                            le->lane, leader_exchange, le,        aapc_hier_round_limit(comm),
                            1,        lanes};
    atomic_fetch_add(&served[AAPC_WAY_LEADERS], 1);
    aapc_report_served(aggregated_how[0][shared ? 1 + (lanes > 1) : 0]);
    return aapc_args_raise_alone(comm, aapc_hier_alltoall_core(&h, sendbuf, sendcount, sendtype,
                                                               recvbuf, recvcount, recvtype,
                                                               cc->dup));
}

/* The log-round way: with R > 1 ranks on every machine, a machine's blocks meet in its shared
   segment and its leader runs Bruck among the machines' leaders in the switch tree's order
   (lg N rounds of aggregated blocks instead of lg P rounds of one rank's); otherwise Bruck
   among all the ranks in the tree's order (the ranks of one machine next to each other, then
   the machines of one switch). Where the machines hang from a uniform tree (the shape's
   digits), among the leaders or one rank per machine, the exchange runs in the tree's digits
   (aapc_alltoall_treedigits.c) instead of radix 2. */
static int run_loground(aapc_cluster_comm_t *cc, int sync, const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    const int *rank_at = NULL;
    struct leader_entry *le = NULL;
    int rc = order_lookup(cc, &rank_at);
    if (rc == MPI_SUCCESS)
        rc = leader_lookup(cc, sync, &le);
    if (rc == MPI_SUCCESS && le != NULL)
        rc = leader_tree_order(le, cc, rank_at);
    if (rc != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    int shared = 0;
    if (le != NULL && (rc = aapc_hier_segment_shared(le->node, &shared)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    atomic_fetch_add(&served[AAPC_WAY_LOGROUND], 1);
    if (le != NULL) {
        long long b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
        le->digits = shape_digits(cc, 1);
        le->budget = aapc_inflight_budget(comm, &cc->shape);
        int lanes = call_lanes(le, shared, comm, b);
        aapc_hier_layout_t h = {le->r,    cc->size,      le->order, le->node,
                                le->lane, leader_rounds, le,        aapc_hier_round_limit(comm),
                                1,        lanes};
        int how = shared ? 1 + (lanes > 1) : 0;
        aapc_report_served(aggregated_how[le->digits != NULL ? 2 : 1][how]);
        return aapc_args_raise_alone(comm, aapc_hier_alltoall_core(&h, sendbuf, sendcount,
                                                                   sendtype, recvbuf, recvcount,
                                                                   recvtype, cc->dup));
    }
    aapc_args_private_returns(cc->dup);
    const aapc_digits_t *dg = shape_digits(cc, 0);
    aapc_report_served(dg != NULL ? "run-time, log-round in the tree's digits"
                                  : "run-time, log-round");
    if (dg != NULL) {
        double budget = aapc_inflight_budget(comm, &cc->shape);
        return aapc_args_raise_alone(comm, aapc_alltoall_treedigits(sendbuf, sendcount, sendtype,
                                                                    recvbuf, recvcount, recvtype,
                                                                    cc->dup, rank_at, dg, budget));
    }
    return aapc_args_raise_alone(comm, aapc_alltoall_loground(sendbuf, sendcount, sendtype, recvbuf,
                                                              recvcount, recvtype, cc->dup,
                                                              rank_at));
}

/* The per-rank phases of a call of b-byte blocks fit one window (every phase in flight: no
   syncs, no order among them), so the call carries the argument agreement in its blocks'
   messages (aapc_alltoall_carried.c) instead of reducing it first: unless the phases are a
   siblings' union or barrier-separated, the agreement is to be reduced or left out
   (AAPC_AGREE), or the call is traced (AAPC_TRACE: the executor's time-line) or its schedule
   dumped (AAPC_DUMP_SCHEDULE: the phases' rows, which `aapcgen verify` proves). Decided from the
   receive block, the shape and the settings every rank of comm shares. */
static int carried_fits(const aapc_cluster_comm_t *cc, int sync, MPI_Comm comm, long long b)
{
    if (cc == NULL || cc->family != NULL || sync == AAPC_VSYNC_BARRIER || b < 0 ||
        !aapc_args_carries(comm) || aapc_setting(comm, "AAPC_TRACE") != NULL ||
        aapc_setting(comm, "AAPC_DUMP_SCHEDULE") != NULL)
        return 0;
    return b < INT_MAX / 2 && /* a message's length is an int */
           aapc_phases_in_one_window(&cc->shape, (double)b,
                                     aapc_inflight_budget(comm, &cc->shape));
}

static int run_carried(aapc_cluster_comm_t *cc, const char *name, const void *sendbuf,
                       int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm)
{
    const int *rank_at = NULL;
    int fresh = 0, rc = aapc_cluster_comm_tree_order(cc, &rank_at, &fresh);
    if (rc != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    aapc_args_private_returns(cc->dup);
    aapc_carried_t c = {.sendbuf = sendbuf, .sendcount = sendcount, .sendtype = sendtype,
                        .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype,
                        .comm = comm, .dup = cc->dup, .rank = cc->rank, .size = cc->size,
                        .rank_at = rank_at};
    int delivered = 0;
    rc = aapc_alltoall_carried(&c, name, &delivered);
    if (delivered) {
        atomic_fetch_add(&served[AAPC_WAY_PHASES], 1);
        aapc_report_served("run-time, agreement carried");
    }
    return rc;
}

/* The per-rank rows this call runs: the entry's (the user's window), or those of the larger
   window small blocks take (aapc_inflight_window on one block over the per-rank phases), built
   at their first use; the entry's for a siblings' union or barrier-all, and where a set cannot
   be built (out of memory: a slower call, the same result). */
static const aapc_schedule_t *rank_rows(struct cluster_entry *e, aapc_cluster_comm_t *cc,
                                        int sync, const char *name, MPI_Comm comm,
                                        MPI_Aint bytes)
{
    int nomem = 0;
    const aapc_job_shape_t *shape = aapc_cluster_comm_shape(cc, &nomem);
    if (e->info.machine_block != NULL || sync == AAPC_VSYNC_BARRIER || shape == NULL)
        return &e->rows.sched;
    int32_t w = aapc_inflight_window((double)bytes, shape->rank_phases,
                                     aapc_inflight_budget(comm, shape));
    if (w <= e->rows.sched.window)
        return &e->rows.sched;
    const aapc_rows_t *r = row_sets_get(&e->more, cc->cluster, cc->rank_machine, cc->size,
                                        cc->rank, sync, w, name);
    return r != NULL ? &r->sched : &e->rows.sched;
}

static int run(const aapc_cluster_t *cl, int sync, const char *name, aapc_cluster_fallback_fn otherwise,
               unsigned ways, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int rc, done, way = -1, ran = 0;
    int64_t ssize = 0;
    MPI_Aint bytes = 0;
    aapc_cluster_comm_t *state = NULL;
    /* first the way (before the checks: a call the library serves pays nothing of ours but
       one attribute lookup; the library checks its own arguments) */
    if ((rc = select_way(cl, name, ways, otherwise == NULL, sendbuf, sendcount, sendtype,
                         recvcount, recvtype, comm, &way, &state)) != MPI_SUCCESS)
        return rc;
    /* AAPC_AGREE=always: the agreement before the way, so ranks whose blocks differ enough to
       choose different ways end in the agreement's error instead (common/aapc_args.h) */
    int agreed = way >= 0 && aapc_args_always(comm);
    if (agreed && ((rc = aapc_args_alltoall(name, sendbuf, sendcount, sendtype, recvbuf,
                                            recvcount, recvtype, comm, &done)) != MPI_SUCCESS ||
                   done))
        return rc;
    if (way == AAPC_WAY_LIBRARY) {
        atomic_fetch_add(&served[AAPC_WAY_LIBRARY], 1);
        aapc_report_served("MPI library, chosen by size");
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    if (way == AAPC_WAY_PHASES &&
        carried_fits(state, sync, comm,
                     block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype)))
        return run_carried(state, name, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                           recvtype, comm);
    if (!agreed && ((rc = aapc_args_alltoall(name, sendbuf, sendcount, sendtype, recvbuf,
                                             recvcount, recvtype, comm, &done)) != MPI_SUCCESS ||
                    done))
        return rc; /* common/aapc_args.c: raised error, library's result, or nothing to move */
    if ((rc = aapc_alltoall_block(sendbuf, sendcount, sendtype, recvcount, recvtype, &bytes,
                                  &ssize)) != MPI_SUCCESS)
        return aapc_args_raise_code(comm, rc);
    if (cl == NULL)
        return MPI_ERR_ARG;
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    /* the aggregated ways need no per-rank schedule (so they serve jobs of any size) */
    if (way == AAPC_WAY_LOGROUND && (double)bytes * state->size > (double)INT_MAX / 2)
        way = aapc_ways_possible(&state->shape) & (1u << AAPC_WAY_LEADERS) ? AAPC_WAY_LEADERS
                                                                           : AAPC_WAY_PHASES;
    if (way == AAPC_WAY_LOGROUND)
        return run_loground(state, sync, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvtype, comm);
    if (way == AAPC_WAY_LEADERS &&
        ((rc = run_leaders(state, sync, name, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                           recvtype, comm, &ran)) != MPI_SUCCESS ||
         ran))
        return rc;
    struct cluster_entry *e = NULL;
    if ((rc = lookup(cl, sync, name, comm, otherwise == NULL, &state, &e)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc); /* errors after the agreement: common/aapc_args.h */
    if ((e == NULL || !e->usable) && otherwise != NULL)
        return otherwise(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (e == NULL || !e->usable)
        aapc_report_fallback(aapc_cluster_comm_why(state));
    if (e == NULL || !e->usable || bytes == 0)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    aapc_args_private_returns(e->info.dup);
    atomic_fetch_add(&served[AAPC_WAY_PHASES], 1);
    aapc_report_served(e->info.machine_block != NULL ? "run-time, siblings' union" : "run-time");
    return aapc_args_raise_alone(comm, aapc_alltoall_exec(rank_rows(e, state, sync, name, comm,
                                                                    bytes),
                                                          &e->info, sendbuf, sendcount, sendtype,
                                                          recvbuf, recvcount, recvtype));
}

int aapc_alltoall_cluster(const aapc_cluster_t *cl, int sync, const char *name,
                          const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return run(cl, sync, name, NULL, AAPC_WAYS_OURS, sendbuf, sendcount, sendtype, recvbuf,
               recvcount, recvtype, comm);
}

int aapc_alltoall_cluster_auto(const aapc_cluster_t *cl, int sync, const char *name,
                               aapc_cluster_fallback_fn precomputed, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm)
{
    return run(cl, sync, name, precomputed, AAPC_WAYS_ALL, sendbuf, sendcount, sendtype, recvbuf,
               recvcount, recvtype, comm);
}
