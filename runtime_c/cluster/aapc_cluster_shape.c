/*
 * aapc_cluster_shape.c: the shape of a job on the cluster, as the per-call selection of the
 * all-to-all reads it (aapc_cluster_select.c): ranks, machines, ranks per machine, the phases
 * of the per-rank and the per-machine schedules, and the bound.
 *
 * Algorithm: count the ranks of every machine; hang the cluster's switch tree from its first
 * switch (breadth-first) and sum, bottom-up, the ranks and the machines below every switch.
 * Every link then has
 *   - a rank load: ranks on one side x ranks on the other (the messages of an all-to-all of
 *     one block per rank pair that cross it, each way); a machine link carries R_m (P - R_m);
 *   - a machine load: the same with machines (the aggregated, one-message-per-machine-pair
 *     exchange);
 *   - a capacity: messages per phase, floor(bw / bref) with bref the slowest machine link of
 *     the job (1 for a rank's own link), at most the members on either side, as
 *     aapc_cluster_capacity.c counts it.
 * rank_phases = max(P - 1, max over links of ceil(rank load / cap)) is the number of phases of
 * the per-rank schedule (aapc_job_phases reaches it on every tree where the phases are exact),
 * machine_phases the same over machines, machine_load the largest machine load (seed 002's
 * phases: machine_phases reaches it when no link carries two machine pairs in a phase, and the
 * leaders then stream their rows), and bound_s_per_byte = max over links of rank load / bw: no
 * schedule moves blocks of b bytes in less than b x bound_s_per_byte seconds (seed 002
 * section 3). rank_load, the largest rank load, is the phases of a schedule that puts one
 * message on every link per phase (MPI_Alltoallv's, runtime_c/vsched/), and unit_s_per_byte
 * = rank_load / bref its time per byte of block. machine_streamed says whether the leaders
 * stream the machine-level phases: seed 002's, or where faster links make them
 * capacity-aware, aapc_cluster_groups.c's when its plan fits the machine-level tree (built
 * and planned here: O(N d + machine_phases) more). digits:
 * the log-round exchange's digits over the job's machines (aapc_cluster_digits.c).
 * Cost: O(P + S + M) time and O(S + M) memory for P ranks, S switches and M machines; no
 * communication, no rank-level tree (so it holds for jobs far above AAPC_JOB_MAX_RANKS).
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

#define CAP_MAX 65535 /* as aapc_cluster_capacity.c */

/* One link's share: load = below x (total - below) messages each way, at most cap of them per
   phase: floor(bw / bref) (1 for a rank's own link: fast = 0), never more than the members on
   either side can send, as aapc_cluster_capacity.c counts it. */
static void account(int64_t below, int64_t total, double bw, double bref, int fast,
                    int64_t *phases, double *s_per_unit, int64_t *most)
{
    int64_t load = below * (total - below), cap = 1;
    if (load <= 0 || bw <= 0)
        return;
    if (most != NULL && load > *most)
        *most = load;
    if (fast && bref > 0) {
        double ratio = bw / bref * (1 + 1e-9);
        cap = ratio < 1 ? 1 : (ratio > CAP_MAX ? CAP_MAX : (int64_t)ratio);
    }
    if (cap > below)
        cap = below;
    if (cap > total - below)
        cap = total - below;
    int64_t p = (load + cap - 1) / cap;
    if (p > *phases)
        *phases = p;
    if ((double)load / bw > *s_per_unit)
        *s_per_unit = (double)load / bw;
}

/* *fit: 1 when the machine-level phases of the N machines with ranks (one per machine, in
   machine order) are aapc_cluster_groups.c's, which the leaders stream. */
static int groups_fit(const aapc_cluster_t *c, const int64_t *on, int32_t M, int32_t N,
                      int32_t *fit)
{
    int32_t *lm = zalloc((size_t)N, sizeof *lm), n = 0;
    if (lm == NULL)
        return AAPC_JOB_ENOMEM;
    for (int32_t m = 0; m < M; m++)
        if (on[m] > 0)
            lm[n++] = m;
    job_analysis a;
    char err[160];
    int rc = job_analyse(c, lm, N, &a, err, (int)sizeof err);
    *fit = 0;
    if (rc == AAPC_JOB_OK) {
        *fit = job_phases_groups_fit(&a);
        job_analysis_free(&a);
    }
    free(lm);
    return rc == AAPC_JOB_ENOMEM ? rc : AAPC_JOB_OK;
}

int aapc_job_shape(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                   aapc_job_shape_t *out)
{
    memset(out, 0, sizeof *out);
    if (c == NULL || rank_machine == NULL || P < 1 || c->n_machines < 1 || c->n_switches < 1 ||
        c->n_links != c->n_switches - 1)
        return AAPC_JOB_EINVAL;
    int32_t M = c->n_machines, S = c->n_switches;
    int64_t *on = zalloc((size_t)M, sizeof *on);           /* ranks per machine */
    int64_t *rbelow = zalloc((size_t)S, sizeof *rbelow);   /* ranks below each switch */
    int64_t *mbelow = zalloc((size_t)S, sizeof *mbelow);   /* machines below each switch */
    int32_t *order = zalloc((size_t)S, sizeof *order), *up = zalloc((size_t)S, sizeof *up);
    int32_t *uplink = zalloc((size_t)S, sizeof *uplink);
    int rc = AAPC_JOB_ENOMEM;
    if (!on || !rbelow || !mbelow || !order || !up || !uplink)
        goto done;
    rc = AAPC_JOB_EINVAL;
    for (int32_t r = 0; r < P; r++) {
        if (rank_machine[r] < 0 || rank_machine[r] >= M)
            goto done;
        on[rank_machine[r]]++;
    }
    double bref = c->reference_bw;
    int64_t rmax = 0, rmin = P;
    int32_t N = 0;
    for (int32_t m = 0; m < M; m++) {
        if (on[m] == 0)
            continue;
        if (c->machine_switch[m] < 0 || c->machine_switch[m] >= S)
            goto done;
        N++;
        rmax = on[m] > rmax ? on[m] : rmax;
        rmin = on[m] < rmin ? on[m] : rmin;
        if (c->reference_bw <= 0 && (bref <= 0 || c->machine_bw[m] < bref))
            bref = c->machine_bw[m];
        rbelow[c->machine_switch[m]] += on[m];
        mbelow[c->machine_switch[m]] += 1;
    }
    if (aapc_cluster_hang(c, order, up, uplink) != S)
        goto done; /* not a tree */
    int64_t rph = P - 1, mph = N - 1, mmost = 0, rmost = P - 1;
    double rs = 0, ms = 0;
    for (int32_t m = 0; m < M; m++) {
        if (on[m] == 0)
            continue;
        /* a machine of one rank is that rank's own link; of several, a link of the job tree */
        account(on[m], P, c->machine_bw[m], bref, on[m] > 1, &rph, &rs, &rmost);
        account(1, N, c->machine_bw[m], bref, 0, &mph, &ms, &mmost);
    }
    for (int32_t k = S - 1; k > 0; k--) {
        int32_t s = order[k], l = uplink[s];
        account(rbelow[s], P, c->link_bw[l], bref, 1, &rph, &rs, &rmost);
        account(mbelow[s], N, c->link_bw[l], bref, 1, &mph, &ms, &mmost);
        rbelow[up[s]] += rbelow[s];
        mbelow[up[s]] += mbelow[s];
    }
    out->ranks = P;
    out->machines = N;
    out->max_per_machine = (int32_t)rmax;
    out->equal_per_machine = rmax == rmin;
    out->rank_phases = (double)rph;
    out->machine_phases = (double)mph;
    out->bound_s_per_byte = rs;
    out->machine_load = (double)(mmost > N - 1 ? mmost : N - 1);
    out->rank_load = (double)rmost;
    out->unit_s_per_byte = bref > 0 ? (double)rmost / bref : rs;
    out->inflight = c->inflight_bytes > 0 ? c->inflight_bytes : AAPC_INFLIGHT_BYTES;
    /* seed 002's phases (machine_phases reaches the load), or faster links whose phases the
       leaders stream where aapc_cluster_groups.c's construction fits */
    out->machine_streamed = mph >= out->machine_load;
    if (!out->machine_streamed && N >= 2 && N <= AAPC_LEADERS_MAX_MACHINES_STREAMED &&
        (rc = groups_fit(c, on, M, N, &out->machine_streamed)) != AAPC_JOB_OK)
        goto done;
    rc = aapc_cluster_digits(c, rank_machine, P, &out->digits);
    aapc_digits_of_ranks(&out->digits, out->max_per_machine, out->equal_per_machine,
                         &out->rank_digits);
done:
    free(on);
    free(rbelow);
    free(mbelow);
    free(order);
    free(up);
    free(uplink);
    return rc;
}
