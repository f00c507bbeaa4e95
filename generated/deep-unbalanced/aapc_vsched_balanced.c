/* Balanced Alltoallv scheduling on a switch tree: preemptive load balancing that splits
 * messages into pieces (Gonzalez-Sahni open shop generalised to tree paths).
 *
 * Algorithm (aapcgen/alltoallv/schedule.py balanced, identical floating-point decisions):
 *   work in seconds: message m still needs w_m = remaining_m / rate_m; edge e still carries
 *   T_e = sum of w over its messages (summed in message order, as np.bincount); L = max T_e.
 *   Each phase:
 *     1. order the unfinished messages by criticality max T_e on the path, then the sum of T_e
 *        (summed in edge order), then larger w, then smaller index (np.lexsort), and pick a
 *        contention-free set greedily in that order. crit is the load of one path edge, so
 *        the messages are bucketed by the rank of that load (counting sort) and each bucket is
 *        sorted only when the pick reaches it; the pick stops once every source (or
 *        destination) with unfinished work has used its machine link: no later message fits;
 *     2. delta = min over loaded edges of (L - T_e) + (w of the chosen piece on e, else 0),
 *        at least the quantum (chunk bytes / fastest path rate; default bound / 4096), at most
 *        the largest chosen w;
 *     3. send min(remaining, max(1, ceil(delta * rate - 1e-9))) bytes of each chosen message.
 *   The product delta * rate is kept apart from the subtraction (no fused multiply-add), so the
 *   rounding is numpy's.
 *
 * Cost: per phase O(pairs + k + E log E + g log g) for the k unfinished messages, their pairs
 * (message, path edge), E directed edges and the g messages in the crit buckets the pick
 * reaches (about half of them on a dense one-switch pattern); at most k + 4096 phases, in
 * practice a few times N (1973 phases for 256 machines, dense, one switch). Local computation
 * only (alpha = beta = 0); the schedule it builds comes within a few percent of the bound
 * max_e bytes_e / B_e (the sum over phases of alpha + max piece x beta).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vsched_impl.h"

typedef struct {
    double crit, total, w;
    int x;
} bal_entry;

/* a before b in the pick order: larger crit, then larger total, then larger w, then index */
static int bal_before(const bal_entry *a, const bal_entry *b)
{
    if (a->crit != b->crit)
        return a->crit > b->crit;
    if (a->total != b->total)
        return a->total > b->total;
    if (a->w != b->w)
        return a->w > b->w;
    return a->x < b->x;
}

/* sort a[0..n) in pick order: insertion sort of runs of 16, then bottom-up merges via buf */
static void sort_entries(bal_entry *a, int n, bal_entry *buf)
{
    for (int lo = 0; lo < n; lo += 16) {
        int hi = lo + 16 < n ? lo + 16 : n;
        for (int i = lo + 1; i < hi; i++) {
            bal_entry v = a[i];
            int j = i;
            while (j > lo && bal_before(&v, &a[j - 1])) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
    }
    bal_entry *src = a, *dst = buf;
    for (int w = 16; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                dst[o++] = bal_before(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[o++] = src[i++];
            while (j < hi)
                dst[o++] = src[j++];
        }
        bal_entry *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof *a);
}

typedef struct {
    double load;
    int e;
} edge_load;

static int cmp_load_desc(const void *a, const void *b)
{
    double x = ((const edge_load *)a)->load, y = ((const edge_load *)b)->load;
    return (x < y) - (x > y);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ceil(delta * rate - 1e-9) with the product rounded on its own (no contraction into an FMA) */
static double ceil_take(double delta, double rate)
{
    volatile double prod = delta * rate;
    return ceil(prod - 1e-9);
}

int vs_balanced(const vs_msgs *m, long long chunk, vs_pieces *out, int *n_phases)
{
    int k = m->k, n = m->n, ne = m->n_edges;
    *n_phases = 0;
    if (k == 0)
        return AAPC_VSCHED_OK;
    int rc = AAPC_VSCHED_ENOMEM;
    long long *remaining = malloc((size_t)k * sizeof *remaining);
    double *w = calloc((size_t)k, sizeof *w);
    int *active = malloc((size_t)k * sizeof *active); /* unfinished, ascending */
    bal_entry *entry = malloc((size_t)k * sizeof *entry);
    bal_entry *tmp = malloc((size_t)k * sizeof *tmp);
    int *grank = malloc((size_t)k * sizeof *grank);
    edge_load *eorder = malloc((size_t)ne * sizeof *eorder);
    int *erank = malloc((size_t)ne * sizeof *erank);
    int *gstart = malloc((size_t)(ne + 1) * sizeof *gstart);
    int *chosen = malloc((size_t)k * sizeof *chosen);
    double *load = malloc((size_t)ne * sizeof *load);
    double *cap = malloc((size_t)ne * sizeof *cap);
    int *stamp = malloc((size_t)ne * sizeof *stamp);
    int *left_src = calloc((size_t)n, sizeof *left_src);
    int *left_dst = calloc((size_t)n, sizeof *left_dst);
    if (!remaining || !w || !active || !entry || !tmp || !grank || !eorder || !erank || !gstart || !chosen || !load || !cap ||
        !stamp || !left_src || !left_dst)
        goto done;
    double rate_max = -INFINITY;
    for (int x = 0; x < k; x++) {
        remaining[x] = m->count[x];
        active[x] = x;
        left_src[m->src[x]]++;
        left_dst[m->dst[x]]++;
        if (m->rate[x] > rate_max)
            rate_max = m->rate[x];
    }
    int n_act = k, act_src = 0, act_dst = 0;
    for (int i = 0; i < n; i++) {
        act_src += left_src[i] > 0;
        act_dst += left_dst[i] > 0;
    }
    double quantum = chunk ? (double)chunk / rate_max
                           : vs_bound(m) / (double)AAPC_VSCHED_BALANCED_QUANTA;
    for (int e = 0; e < ne; e++)
        stamp[e] = -1;
    int p = 0;
    while (n_act > 0) {
        for (int e = 0; e < ne; e++)
            load[e] = 0.0;
        for (int i = 0; i < n_act; i++) {
            int x = active[i];
            w[x] = (double)remaining[x] / m->rate[x];
            for (long long j = m->estart[x]; j < m->estart[x + 1]; j++)
                load[m->edge[j]] += w[x];
        }
        double top = load[0];
        for (int e = 1; e < ne; e++)
            if (load[e] > top)
                top = load[e];
        /* groups of equal criticality: crit is the load of one edge of the path, so rank the
         * loaded edges by load (descending, equal loads share a rank) */
        int nl = 0;
        for (int e = 0; e < ne; e++)
            if (load[e] > 0) {
                eorder[nl].load = load[e];
                eorder[nl++].e = e;
            }
        qsort(eorder, (size_t)nl, sizeof *eorder, cmp_load_desc);
        for (int i = 0, r = -1; i < nl; i++) {
            if (i == 0 || eorder[i].load != eorder[i - 1].load)
                r++;
            erank[eorder[i].e] = r;
        }
        for (int i = 0; i < nl + 1; i++)
            gstart[i] = 0;
        for (int i = 0; i < n_act; i++) {
            int x = active[i], ce = -1;
            double c = 0.0, t = 0.0;
            for (long long j = m->estart[x]; j < m->estart[x + 1]; j++) {
                double l = load[m->edge[j]];
                if (l > c) {
                    c = l;
                    ce = m->edge[j];
                }
                t += l;
            }
            grank[i] = erank[ce]; /* active: w > 0, so every edge of its path is loaded */
            gstart[grank[i] + 1]++;
            tmp[i].crit = c;
            tmp[i].total = t;
            tmp[i].w = w[x];
            tmp[i].x = x;
        }
        for (int g = 0; g < nl; g++)
            gstart[g + 1] += gstart[g];
        for (int i = 0; i < n_act; i++) /* stable: message order inside a group */
            entry[gstart[grank[i]]++] = tmp[i];
        for (int g = nl; g > 0; g--)
            gstart[g] = gstart[g - 1];
        gstart[0] = 0;
        /* step 1: greedy contention-free pick in (crit, total, w, index) order, one group of
         * equal crit at a time, each sorted only when reached */
        int nc = 0, used_src = 0, used_dst = 0;
        double wmax = -INFINITY;
        for (int g = 0; g < nl && used_src < act_src && used_dst < act_dst; g++) {
            sort_entries(entry + gstart[g], gstart[g + 1] - gstart[g], tmp);
            for (int i = gstart[g]; i < gstart[g + 1]; i++) {
                if (used_src == act_src || used_dst == act_dst)
                    break;
                int x = entry[i].x;
                long long j = m->estart[x];
                for (; j < m->estart[x + 1]; j++)
                    if (stamp[m->edge[j]] == p)
                        break;
                if (j < m->estart[x + 1])
                    continue;
                for (j = m->estart[x]; j < m->estart[x + 1]; j++) {
                    stamp[m->edge[j]] = p;
                    cap[m->edge[j]] = w[x];
                }
                used_src++; /* contention-free: each source and destination at most once */
                used_dst++;
                chosen[nc++] = x;
                if (w[x] > wmax)
                    wmax = w[x];
            }
        }
        /* step 2: the phase length */
        double delta = INFINITY;
        int any = 0;
        for (int e = 0; e < ne; e++)
            if (load[e] > 0) {
                double v = (top - load[e]) + (stamp[e] == p ? cap[e] : 0.0);
                if (!any || v < delta)
                    delta = v;
                any = 1;
            }
        if (!any)
            delta = 0.0;
        if (quantum > delta)
            delta = quantum;
        if (wmax < delta)
            delta = wmax;
        /* step 3: the pieces, in message order */
        qsort(chosen, (size_t)nc, sizeof *chosen, cmp_int);
        for (int i = 0; i < nc; i++) {
            int x = chosen[i];
            double want = ceil_take(delta, m->rate[x]); /* a whole number >= 0 */
            long long wi = want >= 9.2e18 ? LLONG_MAX : (long long)want;
            long long take = remaining[x] < wi ? remaining[x] : wi;
            if (take < 1)
                take = 1;
            if (vs_pieces_push(out, p, x, m->count[x] - remaining[x], take) != AAPC_VSCHED_OK)
                goto done;
            remaining[x] -= take;
            if (remaining[x] == 0) {
                w[x] = 0.0;
                if (--left_src[m->src[x]] == 0)
                    act_src--;
                if (--left_dst[m->dst[x]] == 0)
                    act_dst--;
            }
        }
        int o = 0;
        for (int i = 0; i < n_act; i++)
            if (remaining[active[i]] > 0)
                active[o++] = active[i];
        n_act = o;
        p++;
    }
    *n_phases = p;
    rc = AAPC_VSCHED_OK;
done:
    free(remaining);
    free(w);
    free(active);
    free(entry);
    free(tmp);
    free(grank);
    free(eorder);
    free(erank);
    free(gstart);
    free(chosen);
    free(load);
    free(cap);
    free(stamp);
    free(left_src);
    free(left_dst);
    return rc;
}
