/*
 * aapc_cluster_phases.c: seed 002's optimal contention-free AAPC phases (sections 4.2, 4.3)
 * for the job tree of a communicator; message for message the schedule of
 * aapcgen/alltoall/phases.py build_phases.
 *
 * Algorithm (notation of the paper; subtrees T0..Tk-1 of the root, |M0| >= |M1| >= ...,
 * L = |M0| (P - |M0|) phases; the messages Ti -> Tj take consecutive phases from
 * |Mi| (|M_{i+1}| + ... + |M_{j-1}|) when j > i, from L - |Mj| (|M_{j+1}| + ... + |M_i|) when
 * i > j):
 *   1. T0 -> Tj: receiver m[j][(p - L) mod |Mj|], sender m[0][(q + q / lcm(|M0|,|Mj|)) mod |M0|];
 *   2. Ti -> T0: sender m[i][q / |M0|], receiver (sender of phase p in step 1 + shift) mod |M0|
 *      with shift 1 + (p / |M0|) mod (|M0| - 1) (Table 3 as Table 4 uses it);
 *   3. local messages of T0 in phases p < |M0|(|M0|-1): the receiver of p sends to the sender;
 *   4, 6. Ti -> Tj, i, j >= 1: broadcast pattern m[i][q / |Mj|] -> m[j][q mod |Mj|];
 *   5. local messages of Ti (i >= 1) in the window of Ti -> T(i-1).
 * Then a counting sort by source and a stable counting sort by phase give (phase, src) order.
 * Cost: O(P^2) time and 12 P^2 bytes for the P(P-1) messages plus 16 P^2 bytes of sort
 * buffers (about 28 MiB at P = 1024); no communication.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

void aapc_job_phases_free(aapc_job_phases_t *p)
{
    free(p->phase);
    free(p->src);
    free(p->dst);
    p->phase = p->src = p->dst = NULL;
    p->n_messages = 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t pmod(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

struct emit {
    int32_t *phase, *src, *dst;
    int64_t n;
};

static void put(struct emit *o, int64_t phase, int32_t src, int32_t dst)
{
    o->phase[o->n] = (int32_t)phase;
    o->src[o->n] = src;
    o->dst[o->n] = dst;
    o->n++;
}

/* First phase of Ti -> Tj (offs[x] = |M0| + ... + |M(x-1)|). */
static int64_t block_start(const int64_t *sizes, const int64_t *offs, int64_t load, int i, int j)
{
    if (j > i)
        return sizes[i] * (offs[j] - offs[i + 1]);
    return load - sizes[j] * (offs[i + 1] - offs[j + 1]);
}

static void schedule(const job_analysis *a, int64_t *sizes, int64_t *offs, int32_t *send0,
                     int32_t *recv0, struct emit *o)
{
    int k = a->n_subtrees;
    const int32_t *mem = a->members;
    for (int i = 0; i < k; i++) {
        sizes[i] = a->sub_size[i];
        offs[i + 1] = offs[i] + sizes[i];
    }
    int64_t n = offs[k], m0 = sizes[0], load = m0 * (n - m0);
    for (int j = 1; j < k; j++) { /* 1: T0 -> Tj */
        int64_t mj = sizes[j], lcm = m0 / gcd64(m0, mj) * mj;
        int64_t start = block_start(sizes, offs, load, 0, j);
        for (int64_t q = 0; q < m0 * mj; q++) {
            int64_t p = start + q, x = (q + q / lcm) % m0, y = pmod(p - load, mj);
            send0[p] = (int32_t)x;
            put(o, p, mem[x], mem[offs[j] + y]);
        }
    }
    for (int i = 1; i < k; i++) { /* 2: Ti -> T0 */
        int64_t start = block_start(sizes, offs, load, i, 0);
        for (int64_t q = 0; q < sizes[i] * m0; q++) {
            int64_t p = start + q, shift = m0 == 1 ? 0 : 1 + (p / m0) % (m0 - 1);
            int64_t y = (send0[p] + shift) % m0;
            recv0[p] = (int32_t)y;
            put(o, p, mem[offs[i] + q / m0], mem[y]);
        }
    }
    for (int64_t p = 0; p < m0 * (m0 - 1); p++) /* 3: local messages of T0 */
        put(o, p, mem[recv0[p]], mem[send0[p]]);
    for (int i = 1; i < k; i++) /* 4, 6: Ti -> Tj, i, j >= 1 */
        for (int j = 1; j < k; j++) {
            if (i == j)
                continue;
            int64_t mj = sizes[j], start = block_start(sizes, offs, load, i, j);
            for (int64_t q = 0; q < sizes[i] * mj; q++)
                put(o, start + q, mem[offs[i] + q / mj], mem[offs[j] + q % mj]);
        }
    for (int i = 1; i < k; i++) { /* 5: local messages of Ti */
        int64_t mi = sizes[i], mprev = sizes[i - 1];
        if (mi < 2)
            continue;
        for (int64_t e = 0; e < mi * mi; e++) {
            int64_t sender = e / mi, w = e % mi, receiver = (sender * mprev + w) % mi;
            if (receiver != sender)
                put(o, load - mprev * mi + sender * mprev + w, mem[offs[i] + receiver],
                    mem[offs[i] + sender]);
        }
    }
}

/* Stable counting sort by key[] (0..nkeys-1) of the messages in[0..n) (NULL: 0..n-1, in
   order): out gets them in key order. */
static void counting_order(const int32_t *key, int64_t n, int32_t nkeys, const int32_t *in,
                           int32_t *out, int64_t *count)
{
    memset(count, 0, ((size_t)nkeys + 1) * sizeof *count);
    for (int64_t e = 0; e < n; e++)
        count[key[in ? in[e] : e] + 1]++;
    for (int32_t v = 0; v < nkeys; v++)
        count[v + 1] += count[v];
    for (int64_t e = 0; e < n; e++) {
        int32_t m = in ? in[e] : (int32_t)e;
        out[count[key[m]]++] = m;
    }
}

/* Seed 002's phases on an analysed tree (a is freed). */
static int seed_phases(job_analysis *a_, aapc_job_phases_t *out)
{
    job_analysis a = *a_;
    int32_t P = a.tree.n_leaves;
    int rc;
    int64_t nm = (int64_t)P * (P - 1);
    int64_t *sizes = calloc((size_t)a.n_subtrees, sizeof *sizes);
    int64_t *offs = calloc((size_t)a.n_subtrees + 1, sizeof *offs);
    int32_t *send0 = malloc((size_t)a.load * sizeof *send0);
    int32_t *recv0 = malloc((size_t)a.load * sizeof *recv0);
    struct emit raw = {malloc((size_t)nm * sizeof(int32_t)), malloc((size_t)nm * sizeof(int32_t)),
                       malloc((size_t)nm * sizeof(int32_t)), 0};
    int32_t *idx = malloc((size_t)nm * sizeof *idx), *tmp = malloc((size_t)nm * sizeof *tmp);
    int64_t *count = malloc(((size_t)(a.load > P ? a.load : P) + 1) * sizeof *count);
    out->phase = malloc((size_t)nm * sizeof *out->phase);
    out->src = malloc((size_t)nm * sizeof *out->src);
    out->dst = malloc((size_t)nm * sizeof *out->dst);
    rc = AAPC_JOB_ENOMEM;
    if (!sizes || !offs || !send0 || !recv0 || !raw.phase || !raw.src || !raw.dst || !idx ||
        !tmp || !count || !out->phase || !out->src || !out->dst) {
        snprintf(out->error, sizeof out->error, "out of memory for %lld messages",
                 (long long)nm);
        goto done;
    }
    schedule(&a, sizes, offs, send0, recv0, &raw);
    if (raw.n != nm) { /* the construction always yields every ordered pair once */
        snprintf(out->error, sizeof out->error, "internal: %lld messages, expected %lld",
                 (long long)raw.n, (long long)nm);
        rc = AAPC_JOB_EINVAL;
        goto done;
    }
    counting_order(raw.src, nm, P, NULL, tmp, count);                   /* by source */
    counting_order(raw.phase, nm, (int32_t)a.load, tmp, idx, count); /* stable: by phase */
    for (int64_t e = 0; e < nm; e++) {
        out->phase[e] = raw.phase[idx[e]];
        out->src[e] = raw.src[idx[e]];
        out->dst[e] = raw.dst[idx[e]];
    }
    out->n_ranks = P;
    out->n_phases = (int32_t)a.load;
    out->n_messages = nm;
    rc = AAPC_JOB_OK;
done:
    free(sizes);
    free(offs);
    free(send0);
    free(recv0);
    free(raw.phase);
    free(raw.src);
    free(raw.dst);
    free(idx);
    free(tmp);
    free(count);
    return rc;
}

/* The streamed phases of aapc_cluster_groups.c kept (they come in (phase, src) order). */
static void keep(void *ctx, int32_t phase, int32_t n, const int32_t *src, const int32_t *dst)
{
    struct emit *o = ctx;
    for (int32_t i = 0; i < n; i++)
        put(o, phase, src[i], dst[i]);
}

/* The exact phases of aapc_cluster_groups.c stored, or AAPC_JOB_EINVAL where they do not
   apply. */
static int groups_stored(const job_analysis *a, aapc_job_phases_t *out)
{
    int32_t P = a->tree.n_leaves;
    int64_t nm = (int64_t)P * (P - 1);
    struct emit o = {malloc((size_t)nm * sizeof(int32_t)), malloc((size_t)nm * sizeof(int32_t)),
                     malloc((size_t)nm * sizeof(int32_t)), 0};
    int32_t T = 0;
    int rc = !o.phase || !o.src || !o.dst ? AAPC_JOB_ENOMEM : job_phases_groups(a, keep, &o, &T);
    if (rc != AAPC_JOB_OK) {
        free(o.phase);
        free(o.src);
        free(o.dst);
        if (rc == AAPC_JOB_ENOMEM)
            snprintf(out->error, sizeof out->error,
                     "out of memory for the capacity phases of %d ranks", (int)P);
        return rc;
    }
    out->phase = o.phase;
    out->src = o.src;
    out->dst = o.dst;
    out->n_ranks = P;
    out->n_phases = T;
    out->n_messages = nm;
    return AAPC_JOB_OK;
}

/* unit: seed 002 whatever the capacities; else capacity-aware where that needs fewer phases
   (aapc_cluster_groups.c's where it applies, else aapc_cluster_capacity.c's) */
static int job_phases(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                      aapc_job_phases_t *out, int unit)
{
    job_analysis a;
    memset(out, 0, sizeof *out);
    int rc = job_analyse(c, rank_machine, P, &a, out->error, (int)sizeof out->error);
    if (rc != AAPC_JOB_OK)
        return rc;
    if (unit || a.lower_bound >= a.load)
        rc = seed_phases(&a, out);
    else if ((rc = groups_stored(&a, out)) == AAPC_JOB_EINVAL)
        rc = job_phases_capacity(&a, out, (int64_t)1 << 23);
    if (rc == AAPC_JOB_OK) {
        out->lower_bound = (int32_t)(unit ? a.load : a.lower_bound);
        out->root = a.root;
        out->bottleneck_a = a.bottleneck_a;
        out->bottleneck_b = a.bottleneck_b;
    }
    job_analysis_free(&a);
    if (rc != AAPC_JOB_OK)
        aapc_job_phases_free(out);
    return rc;
}

int aapc_job_phases(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                    aapc_job_phases_t *out)
{
    return job_phases(c, rank_machine, P, out, 0);
}

int aapc_job_phases_unit(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         aapc_job_phases_t *out)
{
    return job_phases(c, rank_machine, P, out, 1);
}

/*
 * Seed 002's phases streamed in phase order, none stored (aapc_job_phases_each).
 *
 * The messages Ti -> Tj of one sender subtree i and every j > i take consecutive phases
 * [0, |Mi| (P - offs[i+1])) (block j after block j - 1), those of one receiver subtree j from
 * every i > j the phases [L - |Mj| (P - offs[j+1]), L) (block i after block i + 1): one
 * "group" each, which carries exactly one message in every phase of its range (the local
 * messages of T0 in [0, |M0| (|M0| - 1)); of Ti, i >= 1, at most one in every phase of the
 * window of Ti -> T(i-1)). Step 1 is the forward group of T0, step 2 the backward group of T0;
 * both cover every phase, so the senders and receivers of T0 in a phase (send0, recv0 above)
 * are read off their counters. A sweep over the phases keeps the groups whose range holds the
 * phase; each group keeps its block and the quotients and remainders of its place in it, which
 * step by one per phase (no division per message), and a phase's messages go out together.
 * Cost: O(P^2) time (one emit per phase, O(1) per message) and O(k) memory for k subtrees of
 * the root.
 */
enum { G_FWD, G_BWD, G_LOCAL0, G_LOCAL };

struct group {
    int64_t start, end; /* phases [start, end) */
    int kind, sub;      /* G_FWD: sender subtree; G_BWD: receiver subtree; G_LOCAL: subtree */
    int cur;            /* G_FWD: receiver subtree j; G_BWD: sender subtree i */
    int64_t bend;       /* G_FWD, G_BWD: the end of the cursor's block */
    int64_t div, a, b;  /* q = a div + b: G_FWD, G_BWD div = the receivers' count; G_LOCAL the
                           previous subtree's size */
    int64_t c, l, lcm;  /* G_LOCAL: q mod |Mi|; T0's forward group: the receiver's place,
                           q mod lcm(|M0|, |Mj|), and that lcm */
};

struct sweep {
    const int64_t *sizes, *offs;
    const int32_t *mem;
    int k;
    int64_t load;
};

/* First phase of the block of the cursor of g (forward: Ti -> Tcur; backward: Tcur -> Tj). */
static int64_t group_block(const struct sweep *w, const struct group *g)
{
    return g->kind == G_FWD ? block_start(w->sizes, w->offs, w->load, g->sub, g->cur)
                            : block_start(w->sizes, w->offs, w->load, g->cur, g->sub);
}

/* Move g's cursor to the block that holds phase p and set its counters for p (G_FWD, G_BWD;
   once per block). The sender of T0's forward group is a = (q + q / lcm) mod |M0|. */
static void group_enter(const struct sweep *w, struct group *g, int64_t p)
{
    int64_t b, len;
    for (;;) {
        b = group_block(w, g);
        len = w->sizes[g->sub] * w->sizes[g->cur];
        if (p < b + len)
            break;
        g->cur += g->kind == G_FWD ? 1 : -1;
    }
    int64_t q = p - b;
    g->bend = b + len;
    g->div = w->sizes[g->kind == G_FWD ? g->cur : g->sub];
    g->a = q / g->div;
    g->b = q % g->div;
    if (g->kind == G_FWD && g->sub == 0) {
        int64_t m0 = w->sizes[0];
        g->lcm = m0 / gcd64(m0, g->div) * g->div;
        g->l = q % g->lcm;
        g->a = (q + q / g->lcm) % m0;
        g->c = pmod(p - w->load, g->div);
    }
}

/* One phase on: q + 1. */
static void group_step(struct group *g, int64_t m0)
{
    if (g->kind == G_FWD && g->sub == 0) {
        g->c = g->c + 1 == g->div ? 0 : g->c + 1;
        g->a = g->a + 1 == m0 ? 0 : g->a + 1;
        if (++g->l == g->lcm) {
            g->l = 0;
            g->a = g->a + 1 == m0 ? 0 : g->a + 1;
        }
        return;
    }
    if (++g->b == g->div) {
        g->b = 0;
        g->a++;
    }
    if (g->kind == G_LOCAL && ++g->c == g->l)
        g->c = 0;
}

static int by_start(const void *x, const void *y)
{
    const struct group *a = x, *b = y;
    return (a->start > b->start) - (a->start < b->start);
}

int aapc_job_phases_each(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         aapc_job_emit_fn emit, void *ctx, aapc_job_phases_t *info)
{
    job_analysis a;
    memset(info, 0, sizeof *info);
    int rc = job_analyse(c, rank_machine, P, &a, info->error, (int)sizeof info->error);
    if (rc != AAPC_JOB_OK)
        return rc;
    if (a.lower_bound < a.load) { /* faster links: aapc_cluster_groups.c's phases, or stored */
        int32_t T = 0;
        rc = job_phases_groups(&a, emit, ctx, &T);
        if (rc == AAPC_JOB_OK) {
            info->n_ranks = P;
            info->n_phases = info->lower_bound = T;
            info->root = a.root;
            info->bottleneck_a = a.bottleneck_a;
            info->bottleneck_b = a.bottleneck_b;
        } else if (rc == AAPC_JOB_ENOMEM) {
            snprintf(info->error, sizeof info->error,
                     "out of memory for the capacity phases of %d ranks", (int)P);
        }
        job_analysis_free(&a);
        return rc == AAPC_JOB_EINVAL ? AAPC_JOB_ECAPACITY : rc;
    }
    int k = a.n_subtrees;
    int64_t *sizes = calloc((size_t)k, sizeof *sizes);
    int64_t *offs = calloc((size_t)k + 1, sizeof *offs);
    struct group *g = calloc(2 * (size_t)k + (size_t)k + 1, sizeof *g);
    int *act = malloc((3 * (size_t)k + 1) * sizeof *act);
    int32_t *bsrc = malloc((3 * (size_t)k + 1) * 2 * sizeof *bsrc); /* a phase's messages */
    rc = AAPC_JOB_ENOMEM;
    if (!sizes || !offs || !g || !act || !bsrc) {
        snprintf(info->error, sizeof info->error, "out of memory for %d subtrees", k);
        goto done;
    }
    int32_t *bdst = bsrc + 3 * k + 1;
    for (int i = 0; i < k; i++) {
        sizes[i] = a.sub_size[i];
        offs[i + 1] = offs[i] + sizes[i];
    }
    int64_t n = offs[k], m0 = sizes[0], load = m0 * (n - m0), emitted = 0;
    struct sweep w = {sizes, offs, a.members, k, load};
    int ng = 0;
    for (int i = 0; i < k; i++) {
        if (i + 1 < k) /* Ti -> Tj, j > i; from T0 step 1 */
            g[ng++] = (struct group){.end = sizes[i] * (n - offs[i + 1]), .kind = G_FWD,
                                     .sub = i, .cur = i + 1};
        if (i + 1 < k) /* Ti -> Tj, i > j; into T0 step 2 */
            g[ng++] = (struct group){.start = load - sizes[i] * (n - offs[i + 1]), .end = load,
                                     .kind = G_BWD, .sub = i, .cur = k - 1};
        if (i == 0 && m0 > 1)
            g[ng++] = (struct group){.end = m0 * (m0 - 1), .kind = G_LOCAL0};
        if (i > 0 && sizes[i] > 1) /* q = p - start: a = q / |M(i-1)|, b, c = q mod |Mi| */
            g[ng++] = (struct group){.start = load - sizes[i - 1] * sizes[i], .end = load,
                                     .kind = G_LOCAL, .sub = i, .div = sizes[i - 1],
                                     .l = sizes[i]};
    }
    qsort(g, (size_t)ng, sizeof *g, by_start);
    struct group *fwd0 = NULL, *bwd0 = NULL;
    for (int x = 0; x < ng; x++) {
        fwd0 = g[x].kind == G_FWD && g[x].sub == 0 ? &g[x] : fwd0;
        bwd0 = g[x].kind == G_BWD && g[x].sub == 0 ? &g[x] : bwd0;
    }
    const int32_t *mem = a.members;
    int nact = 0, next = 0;
    int64_t shift = 1, shift_at = 0; /* 1 + (p / |M0|) mod (|M0| - 1); p mod |M0| */
    for (int64_t p = 0; p < load; p++) {
        while (next < ng && g[next].start <= p)
            act[nact++] = next++;
        if (p >= fwd0->bend)
            group_enter(&w, fwd0, p);
        /* T0's sender in step 1 and receiver in step 2 of this phase */
        int64_t send0 = fwd0->a, recv0 = m0 == 1 ? 0 : send0 + shift;
        recv0 -= recv0 >= m0 ? m0 : 0;
        int nb = 0;
        for (int x = 0; x < nact; x++) {
            struct group *h = &g[act[x]];
            if (p >= h->end) { /* its range is over */
                act[x--] = act[--nact];
                continue;
            }
            int64_t s, d;
            switch (h->kind) {
            case G_FWD:
                if (p >= h->bend)
                    group_enter(&w, h, p);
                s = h == fwd0 ? send0 : offs[h->sub] + h->a;
                d = offs[h->cur] + (h == fwd0 ? h->c : h->b);
                break;
            case G_BWD:
                if (p >= h->bend)
                    group_enter(&w, h, p);
                s = offs[h->cur] + h->a;
                d = h == bwd0 ? recv0 : offs[h->sub] + h->b;
                break;
            case G_LOCAL0:
                s = recv0;
                d = send0;
                break;
            default: /* G_LOCAL: q = sender mprev + w (w < mi), receiver q mod mi; the paper's
                        sender receives (step 5 above) */
                s = h->b >= h->l || h->c == h->a ? -1 : offs[h->sub] + h->c;
                d = offs[h->sub] + h->a;
                break;
            }
            if (h->kind != G_LOCAL0)
                group_step(h, m0);
            if (s < 0)
                continue;
            bsrc[nb] = mem[s];
            bdst[nb++] = mem[d];
        }
        if (nb > 0)
            emit(ctx, (int32_t)p, nb, bsrc, bdst);
        emitted += nb;
        if (m0 > 1 && ++shift_at == m0) {
            shift_at = 0;
            shift = shift + 1 == m0 ? 1 : shift + 1;
        }
    }
    rc = AAPC_JOB_OK;
    if (emitted != n * (n - 1)) { /* the construction always yields every ordered pair once */
        snprintf(info->error, sizeof info->error, "internal: %lld messages, expected %lld",
                 (long long)emitted, (long long)(n * (n - 1)));
        rc = AAPC_JOB_EINVAL;
    }
    info->n_ranks = P;
    info->n_phases = (int32_t)load;
    info->lower_bound = (int32_t)load;
    info->root = a.root;
    info->bottleneck_a = a.bottleneck_a;
    info->bottleneck_b = a.bottleneck_b;
done:
    free(sizes);
    free(offs);
    free(g);
    free(act);
    free(bsrc);
    job_analysis_free(&a);
    return rc;
}
