/*
 * aapc_alltoallv_cluster.c: MPI_Alltoallv levels 1 and 2 on any intra-communicator (subsets of
 * the cluster, any rank order, several ranks per machine), scheduled at run time on the
 * communicator's job tree from the cluster's switch tree embedded in the library.
 *
 * Algorithm:
 *   1. the machine of every rank, gathered once per communicator (common/aapc_cluster_comm.c,
 *      shared with the run-time MPI_Alltoall); a rank on an unknown host hands the call back to
 *      the caller (the whole cluster's fixed tree, aapc_vlevels.c);
 *   2. once per communicator: the job tree (cluster/aapc_cluster_tree.c: leaf r = rank r, a
 *      machine with several ranks an inner node above its ranks) as an aapc_vtree, and for the
 *      greedy and all-to-all based schedulers the template, seed 002's phases on it
 *      (aapc_job_phases_unit);
 *   3. each call: the N x N byte matrix in rank order (level 1: one MPI_Allgather of N 64-bit
 *      counts per rank; level 2: the caller's); when it differs from the last one of this
 *      routine on this communicator, aapc_vsched_run schedules it on the job tree and
 *      aapc_vtables_build derives the executor tables and syncs (the same on every rank; level
 *      1 then agrees on success with one MPI_Allreduce, so a rank out of memory cannot leave
 *      the others waiting);
 *      AAPC_DUMP_SCHEDULE=DIR: rank 0 writes each new schedule as JSON (aapc-vschedule-*.json:
 *      the ranks' machines, the matrix, the pieces, phase times and cost) for the independent
 *      checker (aapcgen/verify/alltoallv.py on aapcgen/alltoall/job.py's job tree);
 *   4. aapc_alltoallv_exec moves the data in the contention-free phases (machine m of the
 *      schedule = rank m of the communicator's private dup).
 * Selection (aapc_alltoallv_begin, with or before the argument checks): the MPI library's own
 * MPI_Alltoallv, these phases, or (where the ranks hang from a uniform tree) the log rounds in
 * the tree's digits (aapc_alltoallv_treedigits.c, run by aapc_alltoallv_begin after the
 * checks), by the cost model of cluster/aapc_cluster_select.c on the
 * communicator's shape with the block of the busiest rank, b = max over ranks of max(bytes
 * sent, bytes received to and from the others) / (P - 1): level 2 reads it from the matrix
 * every rank holds, level 1 agrees on it with one MPI_Allreduce: of the block alone (3
 * doubles, the third the largest block, for which the log rounds post their receives: the
 * only cost of a call handed to the library) where the last call on the communicator was the
 * library's, else riding on the argument checks' reduction
 * (common/aapc_args.c aapc_args_alltoallv_most), so that a call of ours makes one reduction
 * instead of two where the way stays (an in-place call agrees once more that every rank
 * passing MPI_IN_PLACE can copy its receive span; a call whose way changes pays the other
 * form's cost once); where the model gives the library every block size on the
 * communicator's shape (aapc_way_library_only: fast uplinks, whose capacity MPI_Alltoallv's
 * phases do not use), no reduction at all. AAPC_WAY=library|phases|loground or a routine named
 * by AAPC_ALLTOALLV forces it (the checks' reduction then comes after the way).
 * Everything is cached on the communicator (slots of aapc_cluster_comm.c) and freed with it.
 * Cost: first call the dup and an Allgather of N ints (lg N alpha + 4 N beta), O(N^2 d) for the
 * template (4 N^2 bytes); level 1 adds lg N alpha + 8 N (N - 1) beta per call; scheduling
 * (when the counts change) as aapc_vsched_run and O(pieces d + S log S) for the tables; the data
 * phase the schedule's sum over phases of (alpha + max piece bytes beta) plus its syncs.
 * Threads: everything is per communicator (MPI_THREAD_MULTIPLE programs may call on different
 * communicators at once). Errors are raised here through the user's communicator's handler
 * (common/aapc_args.c: aapc_args_raise_code for what every rank agreed, aapc_args_raise_alone
 * for what one rank may meet alone); element sizes are 64-bit.
 */
#define _POSIX_C_SOURCE 200809L
#include "aapc_alltoallv_cluster.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alltoallv_treedigits.h"
#include "aapc_args.h"
#include "aapc_cluster_comm.h"
#include "aapc_comm.h"
#include "aapc_mpi.h"
#include "aapc_report.h"
#include "aapc_settings.h"

/* calls served per way (aapc_alltoallv_ways_served) */
static _Atomic long long vserved[AAPC_N_WAYS];

/* The job tree of a communicator as the Alltoallv schedulers take it (one slot, shared by
   every level-1/2 routine on the communicator). */
struct vjob_tree {
    int n;
    int *parent;
    double *up_bw;
    int *template_phase; /* n x n, built on first need; NULL until then */
    int template_state;  /* 0: not built, 1: built, -1: refused (error says why) */
    char error[160];
    aapc_vtree vt;
};

/* The last schedule of one routine on one communicator. */
struct vjob_sched {
    int n;
    long long *bytes; /* n x n, diagonal 0; NULL: none yet */
    aapc_vsched vs;
    aapc_vtables_t tab;
};

static const char tree_key;

static void tree_free(void *p)
{
    struct vjob_tree *t = p;
    free(t->parent);
    free(t->up_bw);
    free(t->template_phase);
    free(t);
}

static void sched_clear(struct vjob_sched *s)
{
    if (s->bytes != NULL) {
        aapc_vtables_free(&s->tab);
        aapc_vsched_free(&s->vs);
        free(s->bytes);
        s->bytes = NULL;
    }
}

static void sched_free(void *p)
{
    sched_clear(p);
    free(p);
}

/* The aapc_vtree of the communicator's job tree (machines 0..n-1 = ranks, then the cluster's
   switches, then the machines with several ranks). NULL when out of memory. */
static struct vjob_tree *job_vtree(aapc_cluster_comm_t *cc, const aapc_job_tree_t *jt)
{
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(cc, &tree_key, tree_free);
    if (slot == NULL)
        return NULL;
    if (slot->data == NULL) {
        struct vjob_tree *t = calloc(1, sizeof *t);
        if (t == NULL)
            return NULL;
        t->parent = malloc(sizeof *t->parent * (size_t)jt->n_nodes);
        t->up_bw = malloc(sizeof *t->up_bw * (size_t)jt->n_nodes);
        if (t->parent == NULL || t->up_bw == NULL) {
            tree_free(t);
            return NULL;
        }
        for (int32_t v = 0; v < jt->n_nodes; v++) {
            t->parent[v] = jt->parent[v];
            t->up_bw[v] = jt->up_bw[v];
        }
        t->n = jt->n_leaves;
        t->vt = (aapc_vtree){jt->n_leaves, jt->n_nodes, t->parent, t->up_bw, NULL};
        slot->data = t;
    }
    return slot->data;
}

/* Seed 002's phases on the job tree as the template of greedy and all-to-all based: the phase
   of message src*n+dst, -1 on the diagonal. Returns 0, -1 when out of memory (not
   remembered), 1 when the phase scheduler refuses the communicator (t->error). */
static int job_template(aapc_cluster_comm_t *cc, struct vjob_tree *t)
{
    if (t->template_state != 0)
        return t->template_state == 1 ? 0 : 1;
    aapc_job_phases_t ph;
    int rc = aapc_job_phases_unit(cc->cluster, cc->rank_machine, cc->size, &ph);
    if (rc == AAPC_JOB_ENOMEM)
        return -1;
    if (rc != AAPC_JOB_OK) {
        snprintf(t->error, sizeof t->error, "%s", ph.error);
        t->template_state = -1;
        return 1;
    }
    size_t n = (size_t)t->n;
    int *tp = malloc(sizeof *tp * n * n);
    if (tp == NULL) {
        aapc_job_phases_free(&ph);
        return -1;
    }
    for (size_t i = 0; i < n * n; i++)
        tp[i] = -1;
    for (int64_t e = 0; e < ph.n_messages; e++)
        tp[(size_t)ph.src[e] * n + (size_t)ph.dst[e]] = ph.phase[e];
    aapc_job_phases_free(&ph);
    t->template_phase = tp;
    t->vt.template_phase = tp;
    t->template_state = 1;
    return 0;
}

static void json_ints(FILE *f, const char *key, const int *v, long long n)
{
    fprintf(f, ", \"%s\": [", key);
    for (long long i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void json_longs(FILE *f, const char *key, const long long *v, long long n)
{
    fprintf(f, ", \"%s\": [", key);
    for (long long i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? ", " : "", v[i]);
    fputc(']', f);
}

/* AAPC_DUMP_SCHEDULE: one new schedule of a communicator, from its rank 0. */
static void dump_vschedule(const aapc_vprog_t *prog, const aapc_cluster_comm_t *cc,
                           const long long *m, const aapc_vsched *vs)
{
    static int serial = 0;
    if (cc->rank != 0)
        return;
    FILE *f = aapc_dump_open("vschedule", &serial);
    if (f == NULL)
        return;
    int n = cc->size;
    static const char *const names[] = {"greedy", "alltoall", "balanced"};
    fprintf(f, "{\"routine\": ");
    aapc_dump_string(f, prog->name);
    fprintf(f, ", \"topology\": ");
    aapc_dump_string(f, cc->cluster->name);
    fprintf(f, ", \"scheduler\": \"%s\", \"threshold\": %lld, \"rank_machines\": [",
            prog->scheduler >= 0 && prog->scheduler <= 2 ? names[prog->scheduler] : "?",
            prog->threshold);
    for (int r = 0; r < n; r++) {
        fprintf(f, r ? ", " : "");
        aapc_dump_string(f, cc->cluster->machine_name[cc->rank_machine[r]]);
    }
    fprintf(f, "], \"pattern\": [");
    for (int a = 0; a < n; a++) {
        fprintf(f, "%s[", a ? ", " : "");
        for (int b = 0; b < n; b++)
            fprintf(f, "%s%lld", b ? ", " : "", m[(size_t)a * (size_t)n + (size_t)b]);
        fputc(']', f);
    }
    fputc(']', f);
    json_ints(f, "phase", vs->phase, vs->n_pieces);
    json_ints(f, "src", vs->src, vs->n_pieces);
    json_ints(f, "dst", vs->dst, vs->n_pieces);
    json_longs(f, "offset", vs->offset, vs->n_pieces);
    json_longs(f, "length", vs->length, vs->n_pieces);
    fprintf(f, ", \"n_phases\": %d, \"small_phase\": %d, \"phase_time\": [", vs->n_phases,
            vs->small_phase);
    for (int p = 0; p < vs->n_phases; p++)
        fprintf(f, "%s%.17g", p ? ", " : "", vs->phase_time[p]);
    fprintf(f, "], \"cost\": %.17g, \"bound\": %.17g}\n", vs->cost, vs->bound);
    fclose(f);
}

/* Status of a (re)scheduling: the same on every rank except running out of memory. */
enum { BUILT = 0, REFUSED = 1, NOMEM = 2 };

/* Schedule the rank-order matrix m (n x n, diagonal 0) into s unless it is the last one. */
static int schedule(const aapc_vprog_t *prog, aapc_cluster_comm_t *cc, struct vjob_tree *t,
                    struct vjob_sched *s, const long long *m, char *why, size_t whylen,
                    int *fresh)
{
    size_t nn = (size_t)t->n * (size_t)t->n;
    *fresh = 0;
    if (s->bytes != NULL && s->n == t->n && memcmp(s->bytes, m, nn * sizeof *m) == 0)
        return BUILT;
    *fresh = 1;
    sched_clear(s);
    if (prog->scheduler != AAPC_VSCHED_BALANCED) {
        int rc = job_template(cc, t);
        if (rc < 0)
            return NOMEM;
        if (rc > 0) {
            snprintf(why, whylen, "%s", t->error);
            return REFUSED;
        }
    }
    int rc = aapc_vsched_run(&t->vt, m, prog->scheduler, prog->threshold, prog->chunk, &s->vs);
    if (rc == AAPC_VSCHED_ENOMEM)
        return NOMEM;
    if (rc != AAPC_VSCHED_OK) {
        snprintf(why, whylen, "the Alltoallv scheduler refused the job: %s", s->vs.error);
        return REFUSED;
    }
    if (aapc_vtables_build(&s->vs, &t->vt, prog->sync, prog->name, NULL, &s->tab) != 0) {
        aapc_vsched_free(&s->vs);
        return NOMEM;
    }
    s->bytes = malloc(nn * sizeof *m);
    if (s->bytes == NULL) {
        aapc_vtables_free(&s->tab);
        aapc_vsched_free(&s->vs);
        return NOMEM;
    }
    memcpy(s->bytes, m, nn * sizeof *m);
    s->n = t->n;
    dump_vschedule(prog, cc, m, &s->vs);
    return BUILT;
}

/* The call on a communicator whose ranks are all known (cc). *agreed = 1: the error is every
   rank's (a scheduling all ranks agreed had failed); otherwise an error may be this rank's
   alone. *library = 1: the result is the library's (a fallback), already raised by it. */
static int run_known(const aapc_vprog_t *prog, aapc_cluster_comm_t *cc, const long long *bytes,
                     const void *sendbuf, const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int *agreed,
                     int *library)
{
    int rc;
    *agreed = 0;
    *library = 0;
    aapc_args_private_returns(cc->dup);
    int nomem = 0, n = cc->size;
    const aapc_job_tree_t *jt = aapc_cluster_comm_tree(cc, &nomem);
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (jt == NULL) {
        aapc_warn_fallback(comm, prog->name, cc->tree_error, "MPI_Alltoallv");
        *library = 1;
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    struct vjob_tree *t = job_vtree(cc, jt);
    aapc_cluster_slot_t *slot = aapc_cluster_comm_slot(cc, prog, sched_free);
    if (t == NULL || slot == NULL)
        return MPI_ERR_NO_MEM;
    if (slot->data == NULL && (slot->data = calloc(1, sizeof(struct vjob_sched))) == NULL)
        return MPI_ERR_NO_MEM;
    struct vjob_sched *s = slot->data;

    size_t nn = (size_t)n * (size_t)n;
    long long *m = malloc(sizeof *m * nn);
    if (m == NULL)
        return MPI_ERR_NO_MEM;
    int status = BUILT, fresh = 0;
    char why[256] = "";
    if (bytes == NULL) { /* level 1: every rank's send bytes */
        int64_t esize = 0;
        const int *counts = sendbuf == MPI_IN_PLACE ? recvcounts : sendcounts;
        rc = aapc_type_size(sendbuf == MPI_IN_PLACE ? recvtype : sendtype, &esize);
        long long *row = malloc(sizeof *row * (size_t)n);
        if (rc == MPI_SUCCESS && row == NULL)
            rc = MPI_ERR_NO_MEM;
        if (rc == MPI_SUCCESS) {
            for (int j = 0; j < n; j++)
                row[j] = (long long)counts[j] * esize;
            rc = PMPI_Allgather(row, n, MPI_LONG_LONG, m, n, MPI_LONG_LONG, cc->dup);
        }
        free(row);
        if (rc != MPI_SUCCESS) {
            free(m);
            return rc;
        }
    } else {
        memcpy(m, bytes, sizeof *m * nn);
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            long long *v = &m[(size_t)a * (size_t)n + (size_t)b];
            *v = a == b || *v < 0 ? 0 : *v;
        }
    status = schedule(prog, cc, t, s, m, why, sizeof why, &fresh);
    free(m);
    if (bytes == NULL && fresh) { /* level 1: agree (the matrix, so `fresh`, is the same) */
        if ((rc = PMPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, cc->dup)) !=
            MPI_SUCCESS)
            return rc;
        if (status != BUILT)
            sched_clear(s); /* another rank failed: do not keep a schedule it lacks */
        *agreed = status == NOMEM;
    }
    if (status == NOMEM)
        return MPI_ERR_NO_MEM;
    if (status == REFUSED) {
        aapc_warn_fallback(comm, prog->name, why[0] ? why : "the Alltoallv scheduler refused it",
                           "MPI_Alltoallv");
        *library = 1;
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    aapc_comm_info_t info = {1, cc->dup, cc->rank, NULL, NULL, NULL, 0};
    atomic_fetch_add(&vserved[AAPC_WAY_PHASES], 1);
    aapc_report_served("run-time, job tree");
    return aapc_alltoallv_exec(&s->tab.sched, &info, sendbuf, sendcounts, sdispls, sendtype,
                               recvbuf, recvcounts, rdispls, recvtype);
}

int aapc_alltoallv_cluster_plan(const aapc_vprog_t *prog, aapc_cluster_comm_t *cc,
                                const long long *m, aapc_vplan_t **out, char *why, size_t whylen)
{
    int nomem = 0, rc;
    *out = NULL;
    why[0] = '\0';
    const aapc_job_tree_t *jt = aapc_cluster_comm_tree(cc, &nomem);
    if (nomem)
        return MPI_ERR_NO_MEM;
    if (jt == NULL) {
        snprintf(why, whylen, "%s", cc->tree_error);
        return MPI_SUCCESS;
    }
    struct vjob_tree *t = job_vtree(cc, jt);
    if (t == NULL)
        return MPI_ERR_NO_MEM;
    if (prog->scheduler != AAPC_VSCHED_BALANCED) {
        if ((rc = job_template(cc, t)) < 0)
            return MPI_ERR_NO_MEM;
        if (rc > 0) {
            snprintf(why, whylen, "%s", t->error);
            return MPI_SUCCESS;
        }
    }
    aapc_vplan_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return MPI_ERR_NO_MEM;
    rc = aapc_vsched_run(&t->vt, m, prog->scheduler, prog->threshold, prog->chunk, &p->vs);
    if (rc != AAPC_VSCHED_OK) {
        if (rc != AAPC_VSCHED_ENOMEM)
            snprintf(why, whylen, "the Alltoallv scheduler refused the job: %s", p->vs.error);
        aapc_vsched_free(&p->vs);
        free(p);
        return rc == AAPC_VSCHED_ENOMEM ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    }
    if (aapc_vtables_build(&p->vs, &t->vt, prog->sync, prog->name, NULL, &p->tab) != 0) {
        aapc_vsched_free(&p->vs);
        free(p);
        return MPI_ERR_NO_MEM;
    }
    *out = p;
    return MPI_SUCCESS;
}

void aapc_alltoallv_plan_free(aapc_vplan_t *p)
{
    if (p == NULL)
        return;
    aapc_vtables_free(&p->tab);
    aapc_vsched_free(&p->vs);
    free(p);
}

int aapc_alltoallv_cluster(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                           const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[],
                           MPI_Datatype recvtype, MPI_Comm comm, int *handled)
{
    int rc, size = 0;
    *handled = 0;
    if (prog == NULL || prog->cluster == NULL)
        return MPI_SUCCESS;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        *handled = 1;
        return aapc_args_raise_code(comm, rc);
    }
    if (size == 1) { /* a copy to itself: nothing to schedule */
        *handled = 1;
        aapc_report_fallback("a communicator of 1 rank (the library's local copy)");
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    aapc_cluster_comm_t *cc = NULL;
    rc = aapc_cluster_comm(prog->cluster, comm, prog->name, "MPI_Alltoallv", 0, &cc);
    if (rc != MPI_SUCCESS) {
        *handled = 1;
        return aapc_args_raise_alone(comm, rc);
    }
    if (cc == NULL || !cc->all_known)
        return MPI_SUCCESS; /* the caller's fixed tree (or the library) */
    *handled = 1;
    int agreed = 0, library = 0;
    rc = run_known(prog, cc, bytes, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                   rdispls, recvtype, comm, &agreed, &library);
    if (library)
        return rc; /* the library's own result, raised by it */
    return agreed ? aapc_args_raise_code(comm, rc) : aapc_args_raise_alone(comm, rc);
}


void aapc_alltoallv_ways_served(long long counts[AAPC_N_WAYS])
{
    for (int w = 0; w < AAPC_N_WAYS; w++)
        counts[w] = atomic_load(&vserved[w]);
}

double aapc_alltoallv_busiest(const long long *bytes, int n)
{
    double most = 0;
    for (int a = 0; a < n; a++) {
        double out = 0, in = 0;
        for (int c = 0; c < n; c++) {
            long long o = bytes[(size_t)a * (size_t)n + (size_t)c];
            long long i = bytes[(size_t)c * (size_t)n + (size_t)a];
            out += c != a && o > 0 ? (double)o : 0;
            in += c != a && i > 0 ? (double)i : 0;
        }
        most = out > most ? out : most;
        most = in > most ? in : most;
    }
    return n > 1 ? most / (n - 1) : most;
}

/* Bytes of one element of t: 0 for a type a later check refuses (every rank still reaches the
   agreement). */
static double type_bytes(MPI_Datatype t)
{
    int64_t size = 0;
    return t != MPI_DATATYPE_NULL && aapc_type_size(t, &size) == MPI_SUCCESS && size > 0
               ? (double)size
               : 0;
}

/* This rank's bytes to the other ranks of `counts` elements of t, and the largest of its
   blocks to them (counts may be NULL: 0; t is read only where a count is positive). */
static double others_bytes(const aapc_cluster_comm_t *cc, const int counts[], MPI_Datatype t,
                           double *largest)
{
    double sum = 0, each = -1;
    int most = 0;
    for (int c = 0; counts != NULL && c < cc->size; c++) {
        if (c == cc->rank || counts[c] <= 0)
            continue;
        each = each < 0 ? type_bytes(t) : each;
        sum += (double)counts[c] * each;
        most = counts[c] > most ? counts[c] : most;
    }
    *largest = most > 0 ? most * each : 0;
    return sum;
}

/* The largest block of the byte matrix between two ranks. */
static double largest_of(const long long *bytes, int n)
{
    long long most = 0;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            if (c != a && bytes[(size_t)a * (size_t)n + (size_t)c] > most)
                most = bytes[(size_t)a * (size_t)n + (size_t)c];
    return (double)most;
}

/* The busiest rank's bytes sent to and received from the others, and the largest block any
   rank sends to another: one MPI_Allreduce of 3 doubles, the library's path's only cost
   (level 1, where the last call was the library's). */
static int busiest_alone(const aapc_cluster_comm_t *cc, const void *sendbuf,
                         const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                         MPI_Datatype recvtype, double most[3])
{
    int inplace = sendbuf == MPI_IN_PLACE;
    double out = 0, in = 0;
    most[0] = others_bytes(cc, inplace ? recvcounts : sendcounts, inplace ? recvtype : sendtype,
                           &out);
    most[1] = others_bytes(cc, recvcounts, recvtype, &in);
    most[2] = in > out ? in : out;
    return PMPI_Allreduce(MPI_IN_PLACE, most, 3, MPI_DOUBLE, MPI_MAX, cc->dup);
}

/* The log rounds in the tree's digits can run: the communicator's ranks have digits, what a
   member may hold at once (the busiest block x (P - 1) x P) stays under INT_MAX / 2, and so
   do the receives a member posts at a level (at most P slots of the largest block). */
static int digits_fit(const aapc_job_shape_t *shape, double b, double largest)
{
    double P = shape->ranks;
    return shape->rank_digits.levels > 0 && b * (P - 1) * P <= (double)(INT_MAX / 2) &&
           (largest + (double)sizeof(int)) * P <= (double)(INT_MAX / 2);
}

/* The ways of MPI_Alltoallv by size. */
#define VWAYS                                                                                  \
    ((1u << AAPC_WAY_LIBRARY) | (1u << AAPC_WAY_PHASES) | (1u << AAPC_WAY_LOGROUND) |          \
     AAPC_WAYS_NO_WINDOWS | AAPC_WAYS_ALLTOALLV)

/* The model gives MPI_Alltoallv the library at every block size on the communicator's shape
   (aapc_way_library_only, once per communicator: alike on every rank). */
static int library_only(aapc_cluster_comm_t *cc, const aapc_cluster_t *cl,
                        const aapc_job_shape_t *shape)
{
    if (cc->vlibrary == 0)
        cc->vlibrary = aapc_way_library_only(cl->model, shape, VWAYS) ? 1 : -1;
    return cc->vlibrary == 1;
}

int aapc_alltoallv_library_only(aapc_cluster_comm_t *cc, const aapc_cluster_t *cl)
{
    int nomem = 0;
    const aapc_job_shape_t *shape =
        cc != NULL && cl != NULL && cc->all_known ? aapc_cluster_comm_shape(cc, &nomem) : NULL;
    return shape != NULL && library_only(cc, cl, shape);
}

/* The way of this call, the same on every rank: AAPC_WAY_LIBRARY, AAPC_WAY_PHASES or
   AAPC_WAY_LOGROUND (-1: not a communicator these ways take; the checks and the caller
   decide); *block: the busiest rank's block (computed for the log rounds). Level 1 agrees on
   the block with one reduction: where the last call on the communicator took one of our ways,
   the argument checks' (*checked = 1: the checks ran, and with *done = 1 the call is complete,
   its result returned, errors raised; *copies = 1: some rank passed MPI_IN_PLACE,
   aapc_args_alltoallv_most), so that a call of ours makes one reduction, not two; otherwise
   the block's alone (busiest_alone), so that a call handed to the library runs no checks.
   Where the model gives the library every block size on this communicator's shape
   (aapc_way_library_only, once per communicator), none: the library, with no collective. */
static int select_vway(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                       const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                       const void *recvbuf, const int recvcounts[], const int rdispls[],
                       MPI_Datatype recvtype, MPI_Comm comm, int *way, double *block,
                       double *largest, aapc_cluster_comm_t **state, int *checked, int *copies,
                       int *done)
{
    static int warned = 0;
    aapc_cluster_comm_t *cc = NULL;
    const aapc_job_shape_t *shape = NULL;
    *way = -1;
    *block = *largest = 0;
    *checked = *copies = *done = 0;
    int rc = aapc_cluster_comm_choice(prog ? prog->cluster : NULL, comm, prog ? prog->name : "?",
                                      "MPI_Alltoallv", 0, &cc, &shape);
    if (rc != MPI_SUCCESS || shape == NULL || cc->size < 2) {
        *done = rc != MPI_SUCCESS;
        return rc != MPI_SUCCESS ? aapc_args_raise_alone(comm, rc) : rc;
    }
    const char *v = aapc_setting(comm, "AAPC_ALLTOALLV"), *e = aapc_setting(comm, "AAPC_WAY");
    int forced = v != NULL && v[0] != '\0' ? AAPC_WAY_PHASES /* a routine named: it runs */
                                           : aapc_way_forced(e);
    if (forced == AAPC_WAY_UNKNOWN && !warned++)
        fprintf(stderr,
                "aapcgen: AAPC_WAY=%s is not a way (library, phases, leaders, loground); "
                "MPI_Alltoallv chooses by size\n",
                e);
    *state = cc;
    if (forced >= 0 && forced != AAPC_WAY_LOGROUND) { /* leaders: the phases (no such form) */
        *way = forced == AAPC_WAY_LIBRARY ? AAPC_WAY_LIBRARY : AAPC_WAY_PHASES;
        return MPI_SUCCESS;
    }
    if (bytes == NULL && forced < 0 && library_only(cc, prog->cluster, shape)) {
        /* whatever the block: no reduction */
        *way = AAPC_WAY_LIBRARY;
        cc->vours = 0;
        return MPI_SUCCESS;
    }
    double b, most[3];
    if (bytes != NULL) {
        b = aapc_alltoallv_busiest(bytes, cc->size);
        most[2] = largest_of(bytes, cc->size);
    } else {
        if (cc->vours) { /* likely ours again: the checks' reduction takes the block too */
            *checked = 1;
            rc = aapc_args_alltoallv_most(prog->key->name, sendbuf, sendcounts, sdispls,
                                          sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                                          most, copies, done);
            if (rc != MPI_SUCCESS || *done)
                return rc;
        } else if ((rc = busiest_alone(cc, sendbuf, sendcounts, sendtype, recvcounts, recvtype,
                                       most)) != MPI_SUCCESS) {
            *done = 1;
            return aapc_args_raise_alone(comm, rc);
        }
        b = (most[0] > most[1] ? most[0] : most[1]) / (cc->size - 1);
    }
    *block = b;
    *largest = most[2];
    *way = forced >= 0 ? forced
                       : aapc_way_choose(prog->cluster->model, shape, b, VWAYS);
    if (*way == AAPC_WAY_LOGROUND && !digits_fit(shape, b, most[2]))
        *way = AAPC_WAY_PHASES; /* no digits, or too much to hold: the phases */
    if (bytes == NULL) /* the same on every rank: the way is */
        cc->vours = *way != AAPC_WAY_LIBRARY;
    return MPI_SUCCESS;
}

/* The log rounds in the tree's digits among the communicator's ranks (after the checks). */
static int run_vloground(aapc_cluster_comm_t *cc, double b, double largest,
                         const void *sendbuf, const int sendcounts[], const int sdispls[],
                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                         const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    const int *rank_at = NULL;
    int fresh = 0, nomem = 0;
    const aapc_job_shape_t *shape = aapc_cluster_comm_shape(cc, &nomem);
    int rc = shape == NULL ? MPI_ERR_NO_MEM : aapc_cluster_comm_tree_order(cc, &rank_at, &fresh);
    if (rc != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc);
    if (fresh && cc->rank == 0) /* AAPC_DUMP_SCHEDULE: the members and their digits */
        aapc_cluster_dump_loground(cc->cluster, cc->rank_machine, rank_at, cc->size,
                                   &shape->rank_digits);
    aapc_args_private_returns(cc->dup);
    atomic_fetch_add(&vserved[AAPC_WAY_LOGROUND], 1);
    aapc_report_served("run-time, log-round in the tree's digits");
    return aapc_args_raise_alone(
        comm, aapc_alltoallv_treedigits(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                        recvcounts, rdispls, recvtype, cc->dup, rank_at,
                                        &shape->rank_digits, b, largest,
                                        aapc_inflight_budget(comm, shape)));
}

int aapc_alltoallv_begin(const aapc_vprog_t *prog, const long long *bytes, const void *sendbuf,
                         const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, int *done)
{
    int way = -1, checked = 0, copies = 0;
    double b = 0, largest = 0;
    aapc_cluster_comm_t *cc = NULL;
    const char *name = prog ? prog->key->name : "?";
    int rc = select_vway(prog, bytes, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                         recvcounts, rdispls, recvtype, comm, &way, &b, &largest, &cc, &checked,
                         &copies, done);
    if (rc != MPI_SUCCESS || *done) {
        *done = 1;
        return rc;
    }
    if (way == AAPC_WAY_LIBRARY) {
        *done = 1;
        atomic_fetch_add(&vserved[AAPC_WAY_LIBRARY], 1);
        aapc_report_served("MPI library, chosen by size");
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
    }
    if (!checked)
        rc = aapc_args_alltoallv(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                 recvcounts, rdispls, recvtype, comm, done);
    else if (copies)
        rc = aapc_args_alltoallv_inplace(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm, done);
    if (rc != MPI_SUCCESS || *done || way != AAPC_WAY_LOGROUND)
        return rc;
    *done = 1;
    return run_vloground(cc, b, largest, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                         recvcounts, rdispls, recvtype, comm);
}
