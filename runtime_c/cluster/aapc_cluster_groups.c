/*
 * aapc_cluster_groups.c: exact capacity-aware phases, streamed, for a tree whose root links set
 * the bound: k equal groups of N ranks under the root, each group's link to the root of
 * capacity C (C messages per phase each way), and LB = ceil(N (P - N) / C) phases (P = kN),
 * more than the links below the groups and the ranks need (docs/scheduling.md "Capacities").
 * The three-level tree of a large cluster is of this kind: on three-level-4096 (8 aggregation
 * switches of 512 machines, 40 Gbit/s to the core over 1 Gbit/s machines) LB = 45876 against
 * 13005 for the edge links and 4095 for the machines.
 *
 * Algorithm. The groups must be alike: leaf i of every group (in the interleaved order of
 * aapc_cluster_capacity.c, consecutive leaves spread over the children) has the same path,
 * link for link and capacity for capacity, as leaf i of group 0, so that one group's counts
 * stand for all of them.
 *   1. Between groups: the (k - 1) N^2 messages of every group in the order
 *      Q = (d - 1) N^2 + c N + i, leaf i of group a to leaf (i + c) mod N of group
 *      (a + d) mod k, C consecutive Q per phase (phase Q / C): every group link carries C
 *      messages each way in every phase but the last (LB phases in all); a phase's senders are
 *      C consecutive leaves, its receivers as well (up to one gap), all distinct when C < N.
 *      Step 1 fits every phase when each link below the groups' tops has at most its capacity
 *      of leaves in any C + 1 consecutive ones (checked once); else every phase is counted.
 *   2. Inside groups: the N (N - 1) messages i -> (i + r) mod N, r = 1 .. N - 1, cut into
 *      chunks of B consecutive senders (B the largest that the links below the group can carry
 *      on top of step 1, from each link's fullest window of B leaves, and at most N - C - 1);
 *      each phase tries the next LOOKAHEAD chunks not placed yet, first against step 1's
 *      sender and receiver intervals, then counted exactly with step 1's messages and the
 *      chunks already there (every link below the group), all groups alike. Chunks left over:
 *      B halved (three tries, then single messages, while LOOKAHEAD per phase can hold them).
 *   3. Emission: phase by phase, every group's messages of steps 1 and 2, sorted by source
 *      through a bitmap of the P ranks (the (phase, src) order of the stored schedules, so the
 *      streamed rows' lanes are the stored ones).
 * Anything that does not fit (groups not alike, a window over a link's capacity, chunks left
 * over) returns AAPC_JOB_EINVAL before the first message is emitted, and the general
 * scheduler (aapc_cluster_capacity.c) runs instead.
 * Cost: O(LB (C + B) d) for the plan (d the depth of a group, a few tries of B), O(P^2 + LB P /
 * 64) to emit the P (P - 1) messages; memory O(P d + LB), no stored messages. No
 * communication, deterministic: every rank computes the same phases.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

#define LOOKAHEAD 8 /* step 2 tries this many of the chunks not placed yet in each phase */

struct groups {
    int32_t P, k, N, C, T;
    int32_t *leaf;   /* k N: leaf i of group g at g N + i */
    int32_t D;       /* the longest path below the root */
    int32_t *top;    /* N D: group 0's path of leaf i, top[i D + l], from below the root down */
    int32_t *len;    /* N: its length */
    int32_t *capx;   /* capacity of the link of each node to its parent (hung from the root) */
    int32_t B, per_shift;
    int32_t n_chunks;
    int32_t *first;  /* T + 1: the chunks of phase p are chunk[first[p] .. first[p + 1] - 1] */
    int32_t *chunk;  /* n_chunks, by phase */
    /* step 1's senders and receivers in the current phase, as cyclic intervals (start, length)
       of leaves: one of senders, at most two of receivers */
    int32_t win[6];
    /* counting (group 0): messages on each node's link up and down in the current phase */
    int32_t *up, *dn, *stamp, *log, nlog;
};

static void groups_free(struct groups *g)
{
    free(g->leaf);
    free(g->top);
    free(g->len);
    free(g->capx);
    free(g->first);
    free(g->chunk);
    free(g->up);
    free(g->dn);
    free(g->stamp);
    free(g->log);
}

/* One more message on node x's link (dir 0 up, 1 down) in phase p; 0 when over capacity. */
static int bump(struct groups *g, int32_t x, int dir, int32_t p)
{
    if (g->stamp[x] != p) {
        g->stamp[x] = p;
        g->up[x] = g->dn[x] = 0;
    }
    int32_t *cnt = dir ? g->dn : g->up;
    g->log[g->nlog++] = 2 * x + dir;
    return ++cnt[x] <= g->capx[x];
}

/* Take back the bumps logged since `mark`. */
static void unbump(struct groups *g, int32_t mark)
{
    while (g->nlog > mark) {
        int32_t e = g->log[--g->nlog];
        (e & 1 ? g->dn : g->up)[e / 2]--;
    }
}

/* Group 0's message leaf i -> leaf j (j < 0: the receiver is in another group, leaf -j - 1)
   in phase p: the links below the lowest common ancestor (the root's for other groups). */
static int count_message(struct groups *g, int32_t i, int32_t j, int32_t p)
{
    int32_t l = 0, other = j < 0, jj = other ? -j - 1 : j;
    const int32_t *a = g->top + (size_t)i * (size_t)g->D, *b = g->top + (size_t)jj * (size_t)g->D;
    if (!other)
        while (l < g->len[i] && l < g->len[jj] && a[l] == b[l])
            l++;
    int ok = 1;
    for (int32_t x = l; x < g->len[i]; x++)
        ok &= bump(g, a[x], 0, p);
    for (int32_t x = l; x < g->len[jj]; x++)
        ok &= bump(g, b[x], 1, p);
    return ok;
}

/* Step 1's senders and receivers of phase p (Q from p C) as cyclic intervals of leaves. */
static void inter_windows(struct groups *g, int32_t p)
{
    int64_t N = g->N, total = (int64_t)(g->k - 1) * N * N, q = (int64_t)p * g->C;
    int64_t end = q + g->C < total ? q + g->C : total, cut = (q / N + 1) * N;
    /* senders q .. end - 1 mod N; receivers i + c, c one more from Q = cut on */
    int32_t s = (int32_t)(q % N), c0 = (int32_t)(q / N % N);
    int32_t n0 = (int32_t)((end < cut ? end : cut) - q), n1 = (int32_t)(end > cut ? end - cut : 0);
    g->win[0] = s;
    g->win[1] = n0 + n1;
    g->win[2] = (int32_t)((s + c0) % N);
    g->win[3] = n0;
    g->win[4] = (c0 + 1) % (int32_t)N;
    g->win[5] = n1;
}

/* Step 1's messages of phase p counted in group 0; 0 when a link is over capacity. */
static int count_inter(struct groups *g, int32_t p)
{
    int64_t N = g->N, total = (int64_t)(g->k - 1) * N * N, q = (int64_t)p * g->C;
    int ok = 1;
    for (int64_t e = q; e < q + g->C && e < total; e++) {
        int32_t i = (int32_t)(e % N), c = (int32_t)(e / N % N);
        ok &= count_message(g, i, -(int32_t)((i + c) % N) - 1, p);
    }
    return ok;
}

/* Cyclic intervals (a, la) and (b, lb) of Z_n share an element. */
static int overlap(int32_t a, int32_t la, int32_t b, int32_t lb, int32_t n)
{
    return la > 0 && lb > 0 && ((b - a + n) % n < la || (a - b + n) % n < lb);
}

/* Chunk h of step 2: the senders s .. end - 1 of shift r (i -> (i + r) mod N). */
static void chunk_of(const struct groups *g, int32_t h, int32_t *r, int32_t *s, int32_t *end)
{
    *r = 1 + h / g->per_shift;
    *s = (h % g->per_shift) * g->B;
    *end = *s + g->B < g->N ? *s + g->B : g->N;
}

/* Chunk h of step 2 misses step 1's senders and receivers of the phase (inter_windows). */
static int chunk_free(const struct groups *g, int32_t h)
{
    int32_t r, s, end, N = g->N;
    chunk_of(g, h, &r, &s, &end);
    int32_t n = end - s, rs = (s + r) % N;
    return !overlap(s, n, g->win[0], g->win[1], N) && !overlap(rs, n, g->win[2], g->win[3], N) &&
           !overlap(rs, n, g->win[4], g->win[5], N);
}

/* Chunk h of step 2 in phase p, on top of what is counted (all or nothing). */
static int try_chunk(struct groups *g, int32_t h, int32_t p)
{
    int32_t r, s, end, mark = g->nlog;
    chunk_of(g, h, &r, &s, &end);
    for (int32_t i = s; i < end; i++)
        if (!count_message(g, i, (i + r) % g->N, p)) {
            unbump(g, mark);
            return 0;
        }
    return 1;
}

/* most[x]: the most leaves of node x in a window of W consecutive leaves of group 0 (cyclic),
   for every node below the group's top (whose link to the root step 2 does not use; step 1
   puts exactly C on it). cnt: n zeros, left so. */
static void window_most(const struct groups *g, int32_t n, int32_t W, int32_t *cnt,
                        int32_t *most)
{
    int32_t N = g->N;
    for (int32_t x = 0; x < n; x++)
        most[x] = 0;
    for (int32_t s = 0; s < N + W - 1; s++) { /* leaf s enters, leaf s - W leaves */
        const int32_t *in = g->top + (size_t)(s % N) * (size_t)g->D;
        for (int32_t l = 1; l < g->len[s % N]; l++) {
            int32_t x = in[l];
            most[x] = ++cnt[x] > most[x] ? cnt[x] : most[x];
        }
        if (s >= W - 1) {
            const int32_t *out = g->top + (size_t)((s - W + 1) % N) * (size_t)g->D;
            for (int32_t l = 1; l < g->len[(s - W + 1) % N]; l++)
                cnt[out[l]]--;
        }
    }
    for (int32_t x = 0; x < n; x++)
        cnt[x] = 0;
}

/* Chunks of B senders fit beside step 1 on every link below the root: each node x has at most
   lim(x) of its leaves in every window of B, lim(x) = what step 1 leaves of its link (res),
   at least 1 (the exact count of step 2 decides), 1 for a leaf. */
static int chunks_fit(const struct groups *g, const struct rooted *r, const int32_t *res,
                      int32_t B, int32_t *cnt, int32_t *most)
{
    window_most(g, r->n, B, cnt, most);
    for (int32_t x = 0; x < r->n; x++)
        if (most[x] > (x < r->P || res[x] < 1 ? 1 : res[x]))
            return 0;
    return 1;
}

/* Groups, their leaves, alikeness, group 0's paths. */
static int groups_shape(const job_analysis *a, const struct rooted *r, const int32_t *pos,
                        struct groups *g)
{
    const aapc_job_tree_t *t = &a->tree;
    int32_t n = r->n, P = r->P, root = a->root;
    int32_t kids = r->kid_off[root + 1] - r->kid_off[root];
    g->P = P;
    g->k = kids;
    if (kids < 2 || P % kids != 0)
        return AAPC_JOB_EINVAL;
    g->N = P / kids;
    for (int32_t x = 0; x < n; x++) { /* the link of x to its parent, either way up */
        int32_t y = r->par[x];
        g->capx[x] = y < 0 ? 0 : t->parent[x] == y ? t->cap[x] : t->cap[y];
    }
    int32_t *gof = malloc((size_t)n * sizeof *gof), *fill = calloc((size_t)kids, sizeof *fill);
    int32_t *at = malloc((size_t)P * sizeof *at), *map = malloc((size_t)n * sizeof *map);
    int32_t *owner = malloc((size_t)n * sizeof *owner);
    int rc = AAPC_JOB_ENOMEM;
    if (!gof || !fill || !at || !map || !owner)
        goto done;
    rc = AAPC_JOB_EINVAL;
    for (int32_t q = 0; q < kids; q++) {
        int32_t v = r->kids[r->kid_off[root] + q];
        if (r->size[v] != g->N || g->capx[v] != g->capx[r->kids[r->kid_off[root]]])
            goto done;
    }
    g->C = g->capx[r->kids[r->kid_off[root]]];
    if (g->N < 2 || g->C >= g->N)
        goto done;
    for (int32_t x = 0; x < n; x++)
        gof[x] = map[x] = owner[x] = -1;
    for (int32_t q = 0; q < kids; q++)
        gof[r->kids[r->kid_off[root] + q]] = q;
    for (int32_t i = 0; i < n; i++) { /* breadth-first: parents before children */
        int32_t v = r->bfs[i], u = r->par[v];
        if (u >= 0 && u != root)
            gof[v] = gof[u];
    }
    for (int32_t v = 0; v < P; v++)
        at[pos[v]] = v;
    for (int32_t x = 0; x < P; x++) {
        int32_t v = at[x], q = gof[v];
        g->leaf[(size_t)q * (size_t)g->N + (size_t)fill[q]++] = at[x];
    }
    /* alike: leaf i's path in group q maps node for node onto group 0's, one to one */
    for (int32_t q = 1; q < kids; q++)
        for (int32_t i = 0; i < g->N; i++) {
            int32_t x = g->leaf[(size_t)q * (size_t)g->N + (size_t)i], y = g->leaf[i];
            while (x != root && y != root) {
                if (map[x] < 0) {
                    if (owner[y] == q || g->capx[x] != g->capx[y] || (x < P) != (y < P))
                        goto done;
                    map[x] = y;
                    owner[y] = q;
                } else if (map[x] != y) {
                    goto done;
                }
                x = r->par[x];
                y = r->par[y];
            }
            if (x != root || y != root)
                goto done;
        }
    g->D = 0;
    for (int32_t i = 0; i < g->N; i++) { /* group 0's paths, top down */
        int32_t l = 0;
        for (int32_t x = g->leaf[i]; x != root; x = r->par[x])
            l++;
        g->len[i] = l;
        g->D = l > g->D ? l : g->D;
    }
    free(g->top);
    g->top = malloc((size_t)g->N * (size_t)g->D * sizeof *g->top);
    if (g->top == NULL) {
        rc = AAPC_JOB_ENOMEM;
        goto done;
    }
    for (int32_t i = 0; i < g->N; i++) {
        int32_t l = g->len[i];
        for (int32_t x = g->leaf[i]; x != root; x = r->par[x])
            g->top[(size_t)i * (size_t)g->D + (size_t)--l] = x;
    }
    rc = AAPC_JOB_OK;
done:
    free(gof);
    free(fill);
    free(at);
    free(map);
    free(owner);
    return rc;
}

/* Steps 1 and 2 planned: B and the chunks' phases. */
static int groups_plan(const job_analysis *a, struct groups *g)
{
    struct rooted r;
    memset(g, 0, sizeof *g);
    int rc = job_rooted_build(a, &r);
    if (rc != AAPC_JOB_OK)
        return rc;
    int32_t n = r.n, P = r.P;
    int32_t *pos = malloc((size_t)P * sizeof *pos);
    int32_t *res = calloc((size_t)n, sizeof *res), *cnt = calloc((size_t)n, sizeof *cnt);
    int32_t *most = calloc((size_t)n, sizeof *most);
    g->leaf = malloc((size_t)P * sizeof *g->leaf);
    g->len = malloc((size_t)P * sizeof *g->len);
    g->capx = malloc((size_t)n * sizeof *g->capx);
    g->up = calloc((size_t)n, sizeof *g->up);
    g->dn = calloc((size_t)n, sizeof *g->dn);
    g->stamp = malloc((size_t)n * sizeof *g->stamp);
    rc = AAPC_JOB_ENOMEM;
    if (!pos || !res || !cnt || !most || !g->leaf || !g->len || !g->capx || !g->up || !g->dn ||
        !g->stamp)
        goto done;
    if ((rc = job_interleave(&r, pos)) != AAPC_JOB_OK ||
        (rc = groups_shape(a, &r, pos, g)) != AAPC_JOB_OK)
        goto done;
    rc = AAPC_JOB_EINVAL;
    int64_t N = g->N, T = ((int64_t)(g->k - 1) * N * N + g->C - 1) / g->C;
    if (T != a->lower_bound || T > INT32_MAX - 1)
        goto done; /* another level's links set the bound */
    g->T = (int32_t)T;
    rc = AAPC_JOB_ENOMEM;
    g->first = malloc(((size_t)T + 1) * sizeof *g->first);
    /* a phase logs at most its N senders, C of step 1 and a chunk taken back */
    g->log = malloc(((size_t)2 * (size_t)g->D * (size_t)(2 * N + g->C) + 1) * sizeof *g->log);
    if (!g->first || !g->log)
        goto done;
    /* step 1 puts C consecutive senders in a phase, and its receivers within C + 1 consecutive
       ones (inter_windows): if every link below the groups' tops carries that many, step 1 fits
       every phase; what it leaves of each link at worst bounds the chunks of step 2 (counted
       exactly in the phases that take them) */
    rc = AAPC_JOB_EINVAL;
    int proved = 1; /* else every phase's step 1 is counted */
    window_most(g, n, g->C + 1 < g->N ? g->C + 1 : g->N, cnt, res);
    for (int32_t x = 0; x < n; x++) {
        res[x] = g->capx[x] - res[x];
        proved &= res[x] >= 0;
    }
    int32_t lo = 1, hi = g->N; /* the largest B whose windows fit */
    if (!chunks_fit(g, &r, res, 1, cnt, most))
        goto done;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (chunks_fit(g, &r, res, mid, cnt, most))
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo > g->N - g->C - 1 && g->N - g->C - 1 >= 1)
        lo = g->N - g->C - 1; /* a chunk's senders miss step 1's C, its receivers C + 1 */
    /* step 2, chunks of lo, lo / 2, lo / 4, then single messages */
    for (int32_t B = lo, tries = 0; B >= 1; B = B == 1 ? 0 : ++tries < 3 ? (B + 1) / 2 : 1) {
        g->B = B;
        g->per_shift = (g->N + B - 1) / B;
        g->n_chunks = (g->N - 1) * g->per_shift;
        if ((int64_t)g->n_chunks > (int64_t)LOOKAHEAD * g->T)
            break; /* more chunks than the phases can take (and smaller B: more still) */
        free(g->chunk);
        g->chunk = malloc((size_t)g->n_chunks * sizeof *g->chunk);
        if (g->chunk == NULL) {
            rc = AAPC_JOB_ENOMEM;
            goto done;
        }
        /* front: the first chunks not placed yet, in order; next: the first never tried */
        int32_t front[LOOKAHEAD], nfront = 0, next = 0, placed = 0;
        for (int32_t x = 0; x < n; x++)
            g->stamp[x] = -1;
        for (int32_t p = 0; p < g->T; p++) {
            g->first[p] = placed;
            while (nfront < LOOKAHEAD && next < g->n_chunks)
                front[nfront++] = next++;
            inter_windows(g, p);
            int32_t kept = 0, counted = 0;
            if (!proved) {
                g->nlog = 0;
                counted = 1;
                if (!count_inter(g, p))
                    goto done; /* step 1 alone is over a link's capacity */
            }
            for (int32_t j = 0; j < nfront; j++) {
                int free_here = chunk_free(g, front[j]);
                if (free_here && !counted) { /* step 1's counts, once a chunk may fit */
                    g->nlog = 0;
                    counted = 1;
                    if (!count_inter(g, p))
                        goto done; /* cannot happen: proved above */
                }
                if (free_here && try_chunk(g, front[j], p))
                    g->chunk[placed++] = front[j];
                else
                    front[kept++] = front[j];
            }
            nfront = kept;
        }
        g->first[g->T] = placed;
        if (placed == g->n_chunks) {
            rc = AAPC_JOB_OK;
            break;
        }
    }
done:
    job_rooted_free(&r);
    free(pos);
    free(res);
    free(cnt);
    free(most);
    if (rc != AAPC_JOB_OK)
        groups_free(g);
    return rc;
}

/* The index of the lowest set bit of x != 0. */
static int lowest_bit(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int b = 0;
    while (!(x & 1u)) {
        x >>= 1;
        b++;
    }
    return b;
#endif
}

int job_phases_groups(const job_analysis *a, aapc_job_emit_fn emit, void *ctx, int32_t *n_phases)
{
    struct groups g;
    int rc = groups_plan(a, &g);
    if (rc != AAPC_JOB_OK)
        return rc;
    int32_t P = g.P, N = g.N, k = g.k, words = (P + 63) / 64;
    uint64_t *bits = calloc((size_t)words, sizeof *bits);
    int32_t *to = malloc((size_t)P * sizeof *to), *src = malloc((size_t)P * sizeof *src);
    int32_t *dst = malloc((size_t)P * sizeof *dst);
    rc = AAPC_JOB_ENOMEM;
    if (!bits || !to || !src || !dst)
        goto done;
    int64_t total = (int64_t)(k - 1) * N * N, e = 0, emitted = 0;
    int32_t i = 0, c = 0, d = 1; /* message e of step 1: leaf i of a -> (i + c) of a + d */
    for (int32_t p = 0; p < g.T; p++) {
        for (int32_t m = 0; m < g.C && e < total; m++, e++) {
            int32_t j = i + c < N ? i + c : i + c - N;
            for (int32_t q = 0, qd = d; q < k; q++, qd = qd + 1 == k ? 0 : qd + 1) {
                int32_t s = g.leaf[(size_t)q * (size_t)N + (size_t)i];
                bits[s / 64] |= (uint64_t)1 << (s % 64);
                to[s] = g.leaf[(size_t)qd * (size_t)N + (size_t)j];
            }
            if (++i == N) {
                i = 0;
                if (++c == N) {
                    c = 0;
                    d++;
                }
            }
        }
        for (int32_t y = g.first[p]; y < g.first[p + 1]; y++) {
            int32_t r, s0, end;
            chunk_of(&g, g.chunk[y], &r, &s0, &end);
            for (int32_t x = s0; x < end; x++)
                for (int32_t q = 0; q < k; q++) {
                    const int32_t *lq = g.leaf + (size_t)q * (size_t)N;
                    int32_t s = lq[x];
                    bits[s / 64] |= (uint64_t)1 << (s % 64);
                    to[s] = lq[(x + r) % N];
                }
        }
        int32_t nb = 0;
        for (int32_t w = 0; w < words; w++)
            while (bits[w] != 0) {
                int b = lowest_bit(bits[w]);
                bits[w] &= bits[w] - 1;
                src[nb] = w * 64 + b;
                dst[nb] = to[w * 64 + b];
                nb++;
            }
        if (nb > 0)
            emit(ctx, p, nb, src, dst);
        emitted += nb;
    }
    rc = AAPC_JOB_OK;
    if (emitted != (int64_t)P * (P - 1))
        rc = AAPC_JOB_EINVAL; /* cannot happen: every ordered pair once */
    *n_phases = g.T;
done:
    free(bits);
    free(to);
    free(src);
    free(dst);
    groups_free(&g);
    return rc;
}

int job_phases_groups_fit(const job_analysis *a)
{
    struct groups g;
    int rc = groups_plan(a, &g);
    if (rc == AAPC_JOB_OK)
        groups_free(&g);
    return rc == AAPC_JOB_OK;
}
