/* Tree paths, lower bound and schedule assembly for the Alltoallv schedulers.
 *
 * Algorithm (aapcgen/alltoallv/schedule.py _messages, _bound, _assemble; tree.path_edges):
 *   - check the tree (one root, no cycle, parents in range, positive finite bandwidths);
 *   - messages = non-zero off-diagonal counts in row-major order; the path of s -> d climbs from
 *     both ends to the lowest common ancestor: up-edge 2*c for every node c on the source side,
 *     down-edge 2*c + 1 on the destination side; edges sorted ascending per message;
 *   - bound = max over directed edges of (sum of counts crossing it, summed in message order as
 *     np.bincount) / bandwidth;
 *   - assembly: per phase, the seconds of every edge (sum over its pieces of length / bandwidth,
 *     in piece order), the phase time is their maximum; the cost is numpy's pairwise sum of the
 *     phase times (np.sum), so cost and bound are bit-identical to Python's.
 *
 * Cost: O(k * D) for k messages and tree depth D (two passes over the paths: lengths, then
 * edges), O(P * D) for assembling P pieces; no network communication (alpha = 0, beta = 0:
 * this is local computation, run identically on every rank).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vsched_impl.h"

static void *xmalloc(size_t count, size_t size)
{
    if (count == 0)
        count = 1;
    if (count > (size_t)-1 / size)
        return NULL;
    return malloc(count * size);
}

void vs_messages_free(vs_msgs *m)
{
    free(m->src);
    free(m->dst);
    free(m->count);
    free(m->rate);
    free(m->tmpl);
    free(m->estart);
    free(m->edge);
    free(m->edge_bw);
    free(m->sw_of);
    memset(m, 0, sizeof *m);
}

/* depth of every node below the root; -1 on a cycle or a bad parent (err filled) */
static int tree_depths(const aapc_vtree *t, int *depth, int *stack, char *err, int errlen)
{
    int nn = t->n_nodes, roots = 0;
    for (int i = 0; i < nn; i++) {
        int p = t->parent[i];
        if (p < -1 || p >= nn || p == i) {
            snprintf(err, (size_t)errlen, "tree: parent[%d] = %d is not a node id (0..%d) or -1",
                     i, p, nn - 1);
            return -1;
        }
        if (p == -1) {
            if (i < t->n_machines) {
                snprintf(err, (size_t)errlen, "tree: machine %d is the root (parent -1)", i);
                return -1;
            }
            roots++;
        } else {
            double bw = t->up_bw[i];
            if (!(bw > 0) || !isfinite(bw)) {
                snprintf(err, (size_t)errlen,
                         "tree: up_bw[%d] = %g is not a positive finite bandwidth", i, bw);
                return -1;
            }
        }
        depth[i] = -1;
    }
    if (roots != 1) {
        snprintf(err, (size_t)errlen, "tree: %d nodes have parent -1 (need exactly one root)",
                 roots);
        return -1;
    }
    for (int i = 0; i < nn; i++) {
        int top = 0, x = i;
        while (x >= 0 && depth[x] < 0) {
            if (top >= nn) {
                snprintf(err, (size_t)errlen, "tree: parent chain of node %d has a cycle", i);
                return -1;
            }
            stack[top++] = x;
            x = t->parent[x];
        }
        int d = x < 0 ? -1 : depth[x];
        while (top > 0)
            depth[stack[--top]] = ++d;
    }
    return 0;
}

static int path_into(const int *parent, const int *depth, int a, int b, int *buf)
{
    int len = 0;
    while (depth[a] > depth[b]) {
        buf[len++] = 2 * a;
        a = parent[a];
    }
    while (depth[b] > depth[a]) {
        buf[len++] = 2 * b + 1;
        b = parent[b];
    }
    while (a != b) {
        buf[len++] = 2 * a;
        buf[len++] = 2 * b + 1;
        a = parent[a];
        b = parent[b];
    }
    for (int i = 1; i < len; i++) { /* insertion sort: paths are short */
        int v = buf[i], j = i;
        while (j > 0 && buf[j - 1] > v) {
            buf[j] = buf[j - 1];
            j--;
        }
        buf[j] = v;
    }
    return len;
}

static int path_length(const int *parent, const int *depth, int a, int b)
{
    int len = 0;
    while (depth[a] > depth[b]) {
        len++;
        a = parent[a];
    }
    while (depth[b] > depth[a]) {
        len++;
        b = parent[b];
    }
    while (a != b) {
        len += 2;
        a = parent[a];
        b = parent[b];
    }
    return len;
}

int vs_messages(const aapc_vtree *t, const long long *counts, vs_msgs *m, char *err, int errlen)
{
    memset(m, 0, sizeof *m);
    if (!t || !counts || !t->parent || !t->up_bw) {
        snprintf(err, (size_t)errlen, "null tree, parent, up_bw or counts pointer");
        return AAPC_VSCHED_EINVAL;
    }
    int n = t->n_machines, nn = t->n_nodes;
    if (n < 1 || nn <= n) {
        snprintf(err, (size_t)errlen,
                 "tree: n_machines = %d, n_nodes = %d (need 1 <= n_machines < n_nodes)", n, nn);
        return AAPC_VSCHED_EINVAL;
    }
    if (n > AAPC_VSCHED_MAX_MACHINES || nn > (1 << 29)) {
        snprintf(err, (size_t)errlen, "tree: %d machines, %d nodes: too many (max %d machines)",
                 n, nn, AAPC_VSCHED_MAX_MACHINES);
        return AAPC_VSCHED_ERANGE;
    }
    int *depth = xmalloc((size_t)nn, sizeof *depth);
    int *stack = xmalloc((size_t)nn, sizeof *stack);
    if (!depth || !stack) {
        free(depth);
        free(stack);
        snprintf(err, (size_t)errlen, "out of memory");
        return AAPC_VSCHED_ENOMEM;
    }
    int rc = AAPC_VSCHED_OK;
    if (tree_depths(t, depth, stack, err, errlen) != 0) {
        rc = AAPC_VSCHED_EINVAL;
        goto done;
    }
    int k = 0;
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            long long c = counts[(size_t)s * (size_t)n + (size_t)d];
            if (s == d)
                continue;
            if (c < 0) {
                snprintf(err, (size_t)errlen, "counts[%d][%d] = %lld is negative", s, d, c);
                rc = AAPC_VSCHED_EINVAL;
                goto done;
            }
            k += c > 0;
        }
    if (t->template_phase) {
        for (int s = 0; s < n; s++)
            for (int d = 0; d < n; d++) {
                int v = t->template_phase[(size_t)s * (size_t)n + (size_t)d];
                if (s != d && (v < 0 || (long long)v >= (long long)n * n)) {
                    snprintf(err, (size_t)errlen,
                             "tree: template_phase[%d][%d] = %d is not a phase (0..%lld)", s, d,
                             v, (long long)n * n - 1);
                    rc = AAPC_VSCHED_EINVAL;
                    goto done;
                }
            }
    }
    m->n = n;
    m->n_nodes = nn;
    m->n_edges = 2 * nn;
    m->k = k;
    m->src = xmalloc((size_t)k, sizeof *m->src);
    m->dst = xmalloc((size_t)k, sizeof *m->dst);
    m->count = xmalloc((size_t)k, sizeof *m->count);
    m->rate = xmalloc((size_t)k, sizeof *m->rate);
    m->estart = xmalloc((size_t)k + 1, sizeof *m->estart);
    m->edge_bw = xmalloc((size_t)m->n_edges, sizeof *m->edge_bw);
    m->sw_of = xmalloc((size_t)n, sizeof *m->sw_of);
    if (t->template_phase)
        m->tmpl = xmalloc((size_t)k, sizeof *m->tmpl);
    if (!m->src || !m->dst || !m->count || !m->rate || !m->estart || !m->edge_bw || !m->sw_of ||
        (t->template_phase && !m->tmpl))
        goto nomem;
    for (int r = 0; r < n; r++)
        m->sw_of[r] = t->parent[r];
    for (int c = 0; c < nn; c++) {
        double bw = t->parent[c] < 0 ? 0.0 : t->up_bw[c];
        m->edge_bw[2 * c] = bw;
        m->edge_bw[2 * c + 1] = bw;
    }
    long long pairs = 0;
    int x = 0;
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            long long c = counts[(size_t)s * (size_t)n + (size_t)d];
            if (s == d || c == 0)
                continue;
            m->src[x] = s;
            m->dst[x] = d;
            m->count[x] = c;
            if (m->tmpl)
                m->tmpl[x] = t->template_phase[(size_t)s * (size_t)n + (size_t)d];
            m->estart[x] = pairs;
            pairs += path_length(t->parent, depth, s, d);
            x++;
        }
    m->estart[k] = pairs;
    m->edge = xmalloc((size_t)pairs, sizeof *m->edge);
    if (!m->edge)
        goto nomem;
    for (x = 0; x < k; x++) {
        int *e = m->edge + m->estart[x];
        int len = path_into(t->parent, depth, m->src[x], m->dst[x], e);
        double r = INFINITY;
        for (int i = 0; i < len; i++)
            if (m->edge_bw[e[i]] < r)
                r = m->edge_bw[e[i]];
        m->rate[x] = r;
    }
    goto done;
nomem:
    vs_messages_free(m);
    snprintf(err, (size_t)errlen, "out of memory");
    rc = AAPC_VSCHED_ENOMEM;
done:
    if (rc != AAPC_VSCHED_OK && rc != AAPC_VSCHED_ENOMEM)
        vs_messages_free(m);
    free(depth);
    free(stack);
    return rc;
}

double vs_bound(const vs_msgs *m)
{
    if (m->k == 0)
        return 0.0;
    double *load = calloc((size_t)m->n_edges, sizeof *load);
    if (!load)
        return -1.0;
    for (int x = 0; x < m->k; x++) {
        double c = (double)m->count[x];
        for (long long i = m->estart[x]; i < m->estart[x + 1]; i++)
            load[m->edge[i]] += c;
    }
    double top = -INFINITY;
    for (int e = 0; e < m->n_edges; e++) {
        double bw = m->edge_bw[e] > 0 ? m->edge_bw[e] : 1.0;
        double v = load[e] / bw;
        if (v > top)
            top = v;
    }
    free(load);
    return top;
}

/* numpy's pairwise summation (pairwise_sum_DOUBLE, blocks of 8, 128 per leaf), plus 0.0 */
static double pairwise(const double *a, long long n)
{
    if (n < 8) {
        double res = 0.;
        for (long long i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        long long i;
        for (int j = 0; j < 8; j++)
            r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    long long n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

double vs_pairwise_sum(const double *a, long long n)
{
    return 0.0 + pairwise(a, n);
}

int vs_pieces_push(vs_pieces *p, int phase, int msg, long long off, long long len)
{
    if (p->n == p->cap) {
        long long cap = p->cap ? 2 * p->cap : 1024;
        int *ph = realloc(p->phase, (size_t)cap * sizeof *ph);
        if (ph)
            p->phase = ph;
        int *ms = realloc(p->msg, (size_t)cap * sizeof *ms);
        if (ms)
            p->msg = ms;
        long long *of = realloc(p->off, (size_t)cap * sizeof *of);
        if (of)
            p->off = of;
        long long *ln = realloc(p->len, (size_t)cap * sizeof *ln);
        if (ln)
            p->len = ln;
        if (!ph || !ms || !of || !ln)
            return AAPC_VSCHED_ENOMEM;
        p->cap = cap;
    }
    p->phase[p->n] = phase;
    p->msg[p->n] = msg;
    p->off[p->n] = off;
    p->len[p->n] = len;
    p->n++;
    return AAPC_VSCHED_OK;
}

void vs_pieces_free(vs_pieces *p)
{
    free(p->phase);
    free(p->msg);
    free(p->off);
    free(p->len);
    memset(p, 0, sizeof *p);
}

int vs_assemble(const vs_msgs *m, const vs_pieces *pc, int n_phases, int small_phase,
                aapc_vsched *out)
{
    long long np = pc->n;
    out->n_machines = m->n;
    out->n_phases = n_phases;
    out->n_pieces = np;
    out->small_phase = small_phase;
    out->phase = xmalloc((size_t)np, sizeof *out->phase);
    out->src = xmalloc((size_t)np, sizeof *out->src);
    out->dst = xmalloc((size_t)np, sizeof *out->dst);
    out->offset = xmalloc((size_t)np, sizeof *out->offset);
    out->length = xmalloc((size_t)np, sizeof *out->length);
    out->phase_start = xmalloc((size_t)n_phases + 1, sizeof *out->phase_start);
    out->phase_time = xmalloc((size_t)n_phases, sizeof *out->phase_time);
    double *secs = xmalloc((size_t)m->n_edges, sizeof *secs);
    int *stamp = xmalloc((size_t)m->n_edges, sizeof *stamp);
    int *touched = xmalloc((size_t)m->n_edges, sizeof *touched);
    int rc = AAPC_VSCHED_OK;
    if (!out->phase || !out->src || !out->dst || !out->offset || !out->length ||
        !out->phase_start || !out->phase_time || !secs || !stamp || !touched) {
        rc = AAPC_VSCHED_ENOMEM;
        goto done;
    }
    for (int e = 0; e < m->n_edges; e++)
        stamp[e] = -1;
    long long i = 0;
    for (int p = 0; p < n_phases; p++) {
        out->phase_start[p] = i;
        int nt = 0;
        for (; i < np && pc->phase[i] == p; i++) {
            int x = pc->msg[i];
            out->phase[i] = p;
            out->src[i] = m->src[x];
            out->dst[i] = m->dst[x];
            out->offset[i] = pc->off[i];
            out->length[i] = pc->len[i];
            double ln = (double)pc->len[i];
            for (long long j = m->estart[x]; j < m->estart[x + 1]; j++) {
                int e = m->edge[j];
                if (stamp[e] != p) {
                    stamp[e] = p;
                    secs[e] = 0.0;
                    touched[nt++] = e;
                }
                secs[e] += ln / m->edge_bw[e];
            }
        }
        double top = 0.0;
        for (int j = 0; j < nt; j++)
            if (secs[touched[j]] > top)
                top = secs[touched[j]];
        out->phase_time[p] = top;
    }
    out->phase_start[n_phases] = i;
    if (i != np) { /* pieces not in (phase, message) order: an internal error */
        rc = AAPC_VSCHED_EINVAL;
        goto done;
    }
    out->cost = vs_pairwise_sum(out->phase_time, n_phases);
    out->bound = vs_bound(m);
    if (out->bound < 0)
        rc = AAPC_VSCHED_ENOMEM;
done:
    free(secs);
    free(stamp);
    free(touched);
    return rc;
}
