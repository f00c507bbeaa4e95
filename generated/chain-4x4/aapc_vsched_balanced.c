/* Balanced Alltoallv scheduling on a switch tree: preemptive load balancing that splits
 * messages into pieces (Gonzalez-Sahni open shop generalised to tree paths).
 *
 * Algorithm (aapcgen/vschedule.py balanced, identical floating-point decisions):
 *   work in seconds: message m still needs w_m = remaining_m / rate_m; edge e still carries
 *   T_e = sum of w over its messages (summed in message order, as np.bincount); L = max T_e.
 *   Each phase:
 *     1. order the unfinished messages by criticality max T_e on the path, then the sum of T_e
 *        (summed in edge order), then larger w, then smaller index (np.lexsort), and pick a
 *        contention-free set greedily in that order. The order is drawn lazily from a binary
 *        heap, and the pick stops once every source (or destination) with unfinished work has
 *        used its machine link: no later message could fit;
 *     2. delta = min over loaded edges of (L - T_e) + (w of the chosen piece on e, else 0),
 *        at least the quantum (chunk bytes / fastest path rate; default bound / 4096), at most
 *        the largest chosen w;
 *     3. send min(remaining, max(1, ceil(delta * rate - 1e-9))) bytes of each chosen message.
 *   The product delta * rate is kept apart from the subtraction (no fused multiply-add), so the
 *   rounding is numpy's.
 *
 * Cost: per phase O(pairs + k + picked log k) for the k unfinished messages and their pairs
 * (message, path edge); at most k + 4096 phases, in practice a few times N. Local computation
 * only (alpha = beta = 0); the schedule it builds comes within a few percent of the bound
 * max_e bytes_e / B_e (the sum over phases of alpha + max piece x beta).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vsched_impl.h"

typedef struct {
    const double *crit, *total, *w;
} bal_key;

/* a before b in the pick order: larger crit, then larger total, then larger w, then index */
static int bal_before(const bal_key *k, int a, int b)
{
    if (k->crit[a] != k->crit[b])
        return k->crit[a] > k->crit[b];
    if (k->total[a] != k->total[b])
        return k->total[a] > k->total[b];
    if (k->w[a] != k->w[b])
        return k->w[a] > k->w[b];
    return a < b;
}

static void sift_down(const bal_key *k, int *h, int n, int i)
{
    int x = h[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && bal_before(k, h[c + 1], h[c]))
            c++;
        if (!bal_before(k, h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
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
    double *crit = calloc((size_t)k, sizeof *crit);
    double *total = calloc((size_t)k, sizeof *total);
    int *active = malloc((size_t)k * sizeof *active); /* unfinished, ascending */
    int *heap = malloc((size_t)k * sizeof *heap);
    int *chosen = malloc((size_t)k * sizeof *chosen);
    double *load = malloc((size_t)ne * sizeof *load);
    double *cap = malloc((size_t)ne * sizeof *cap);
    int *stamp = malloc((size_t)ne * sizeof *stamp);
    int *left_src = calloc((size_t)n, sizeof *left_src);
    int *left_dst = calloc((size_t)n, sizeof *left_dst);
    if (!remaining || !w || !crit || !total || !active || !heap || !chosen || !load || !cap ||
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
    bal_key key = {crit, total, w};
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
        for (int i = 0; i < n_act; i++) {
            int x = active[i];
            double c = 0.0, t = 0.0;
            for (long long j = m->estart[x]; j < m->estart[x + 1]; j++) {
                double l = load[m->edge[j]];
                if (l > c)
                    c = l;
                t += l;
            }
            crit[x] = c;
            total[x] = t;
        }
        /* step 1: greedy contention-free pick in (crit, total, w, index) order */
        memcpy(heap, active, (size_t)n_act * sizeof *heap);
        for (int i = n_act / 2 - 1; i >= 0; i--)
            sift_down(&key, heap, n_act, i);
        int hn = n_act, nc = 0, used_src = 0, used_dst = 0;
        double wmax = -INFINITY;
        while (hn > 0 && used_src < act_src && used_dst < act_dst) {
            int x = heap[0];
            heap[0] = heap[--hn];
            sift_down(&key, heap, hn, 0);
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
    free(crit);
    free(total);
    free(active);
    free(heap);
    free(chosen);
    free(load);
    free(cap);
    free(stamp);
    free(left_src);
    free(left_dst);
    return rc;
}
