/*
 * aapc_cluster_capacity.c: capacity-aware contention-free AAPC phases for a job tree whose
 * switch links may be faster than its machine links (docs/scheduling.md "Capacities").
 *
 * Model. b_ref is the slowest machine link of the job (the link of a machine to its switch, of
 * the machines that run its ranks).
 * A directed link of bandwidth b carries c = max(1, floor(b / b_ref)) messages in one phase;
 * a rank sends at most one and receives at most one message per phase. The lower bound on the
 * number of phases is LB = max(P - 1, max over links of ceil(load / c)) for P ranks, where a
 * link's load is |leaves below| x |leaves above|. With c = 1 everywhere LB is seed 002's L and
 * aapc_job_phases() keeps seed 002's construction; this file is used when LB < L and the
 * streamed construction of aapc_cluster_groups.c (root links setting the bound) does not fit.
 *
 * Algorithm (T = LB to start with). Uniform two-level trees where (almost) every phase must be a
 * full permutation take the exact construction of aapc_cluster_twolevel.c when it fits; else:
 *   1. order: hang the tree from seed 002's root; every subtree lists its leaves in a
 *      proportional interleave of its children's lists (consecutive leaves spread over the
 *      children, so a run of c of them loads every link below evenly). For every node v, root
 *      first, the messages between two of its child subtrees Ci -> Cj: for each shift
 *      d = 1..k-1 the blocks Ci -> C(i+d mod k), item q of block (i, j) is
 *      Ci[(q + q / lcm) mod |Ci|] -> Cj[q mod |Cj|] (every pair once), blocks interleaved item
 *      by item so that every subtree sends all the time. Messages crossing a link whose
 *      ceil(load / c) equals T go first (stable).
 *   2. first fit: each message takes the earliest phase < T in which its sender and receiver
 *      are free and every link of its path has room; the search starts at the first phase
 *      that is not full on any link of the path (per-link pointers, monotone).
 *   3. repair (min-conflicts): a message that does not fit takes the phase with the fewest
 *      conflicts; the messages in its way (the sender's and the receiver's message in that
 *      phase, one message of every link that would overflow) are taken out and placed again,
 *      never straight back into the phase they left. Deterministic (fixed-seed xorshift), so
 *      every rank computes the same schedule. When the step budget runs out, T grows by one.
 *   4. sort by (phase, src) as seed 002's schedules.
 * Cost: O(P^2 d) for the order and first fit for depth d when the fit search stays near the
 * frontier (it does on the trees measured in docs/measurements/runtime-scheduling.md), 12 P^2 bytes for the
 * messages plus 4 n T bytes of link counters for n nodes; repair adds 8 P T bytes, and only
 * when P T <= 2^24.
 * No communication; pure C11.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

#define CAP_MAX 65535

/* ---- the model ---------------------------------------------------------------------- */

int job_capacities(job_analysis *a, const aapc_cluster_t *c, const int32_t *rank_machine)
{
    aapc_job_tree_t *t = &a->tree;
    int32_t n = t->n_nodes, P = t->n_leaves;
    double bref = 0;
    free(t->cap);
    t->cap = calloc((size_t)n, sizeof *t->cap);
    if (t->cap == NULL)
        return AAPC_JOB_ENOMEM;
    for (int32_t r = 0; r < P; r++) { /* the slowest machine link of the job */
        double bw = c->machine_bw[rank_machine[r]];
        if (r == 0 || bw < bref)
            bref = bw;
    }
    if (c->reference_bw > 0)
        bref = c->reference_bw;
    a->bref = bref;
    a->lower_bound = P - 1;
    for (int32_t v = 0; v < n; v++) {
        if (t->parent[v] < 0) {
            t->cap[v] = 0;
            continue;
        }
        int64_t cap = 1;
        if (v >= P && bref > 0) {
            double ratio = floor(t->up_bw[v] / bref * (1 + 1e-9));
            cap = ratio < 1 ? 1 : (ratio > CAP_MAX ? CAP_MAX : (int64_t)ratio);
        }
        int64_t side = a->below[v], load = side * (P - side);
        if (cap > side && side > 0)
            cap = side; /* never more than the leaves on either side can send */
        if (cap > P - side && P - side > 0)
            cap = P - side;
        t->cap[v] = (int32_t)cap;
        if (load > 0) {
            int64_t need = (load + cap - 1) / cap;
            if (need > a->lower_bound)
                a->lower_bound = need;
        }
    }
    return AAPC_JOB_OK;
}

/* ---- step 1: the order ---------------------------------------------------------------- */

void job_rooted_free(struct rooted *r)
{
    free(r->par);
    free(r->kid_off);
    free(r->kids);
    free(r->size);
    free(r->bfs);
}

int job_rooted_build(const job_analysis *a, struct rooted *r)
{
    int32_t n = a->tree.n_nodes, P = a->tree.n_leaves;
    memset(r, 0, sizeof *r);
    r->n = n;
    r->P = P;
    r->par = malloc((size_t)n * sizeof *r->par);
    r->kid_off = calloc((size_t)n + 1, sizeof *r->kid_off);
    r->kids = malloc((size_t)n * sizeof *r->kids);
    r->size = calloc((size_t)n, sizeof *r->size);
    r->bfs = malloc((size_t)n * sizeof *r->bfs);
    int32_t *fill = calloc((size_t)n, sizeof *fill);
    if (!r->par || !r->kid_off || !r->kids || !r->size || !r->bfs || !fill) {
        free(fill);
        job_rooted_free(r);
        return AAPC_JOB_ENOMEM;
    }
    for (int32_t v = 0; v < n; v++)
        r->par[v] = -2;
    int32_t head = 0, tail = 0;
    r->bfs[tail++] = a->root;
    r->par[a->root] = -1;
    while (head < tail) {
        int32_t v = r->bfs[head++];
        for (int32_t k = a->adj_off[v]; k < a->adj_off[v + 1]; k++) {
            int32_t e = a->adj[k], w = a->edge_a[e] == v ? a->edge_b[e] : a->edge_a[e];
            if (r->par[w] == -2) {
                r->par[w] = v;
                r->bfs[tail++] = w;
            }
        }
    }
    for (int32_t v = 0; v < n; v++)
        if (r->par[v] >= 0)
            r->kid_off[r->par[v] + 1]++;
    for (int32_t v = 0; v < n; v++)
        r->kid_off[v + 1] += r->kid_off[v];
    for (int32_t i = 0; i < n; i++) { /* children in BFS order: deterministic */
        int32_t v = r->bfs[i];
        if (r->par[v] >= 0)
            r->kids[r->kid_off[r->par[v]] + fill[r->par[v]]++] = v;
    }
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t v = r->bfs[i];
        if (v < P)
            r->size[v] += 1;
        if (r->par[v] >= 0)
            r->size[r->par[v]] += r->size[v];
    }
    free(fill);
    return AAPC_JOB_OK;
}

/* The interleaved leaf order (aapc_cluster_impl.h), computed bottom-up: a node merges its
   children's lists by the key (j + 1/2) / |child| of the j-th leaf, ties by larger child. */
int job_interleave(const struct rooted *r, int32_t *pos)
{
    int32_t n = r->n, P = r->P;
    int32_t **list = calloc((size_t)n, sizeof *list);
    int rc = AAPC_JOB_ENOMEM;
    if (list == NULL)
        return rc;
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t v = r->bfs[i];
        if (r->size[v] == 0)
            continue;
        int32_t *out = malloc((size_t)r->size[v] * sizeof *out);
        if (out == NULL)
            goto done;
        list[v] = out;
        if (v < P) {
            out[0] = v;
            continue;
        }
        int32_t nk = r->kid_off[v + 1] - r->kid_off[v];
        int32_t *at = calloc((size_t)nk + 1, sizeof *at);
        if (at == NULL)
            goto done;
        for (int32_t x = 0; x < r->size[v]; x++) {
            int32_t best = -1;
            double bkey = 0;
            for (int32_t k = 0; k < nk; k++) {
                int32_t w = r->kids[r->kid_off[v] + k];
                if (at[k] >= r->size[w])
                    continue;
                double key = (at[k] + 0.5) / r->size[w];
                if (best < 0 || key < bkey ||
                    (key == bkey && r->size[w] > r->size[r->kids[r->kid_off[v] + best]])) {
                    best = k;
                    bkey = key;
                }
            }
            int32_t w = r->kids[r->kid_off[v] + best];
            out[x] = list[w][at[best]++];
        }
        free(at);
        for (int32_t k = 0; k < nk; k++) {
            int32_t w = r->kids[r->kid_off[v] + k];
            free(list[w]);
            list[w] = NULL;
        }
    }
    for (int32_t x = 0; x < P; x++)
        pos[list[r->bfs[0]][x]] = x;
    rc = AAPC_JOB_OK;
done:
    for (int32_t v = 0; v < n; v++)
        free(list[v]);
    free(list);
    return rc;
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

/* Emit the messages of node v (between two of its child subtrees) in the order of step 1.
   sub[k] lists the leaves of child k (with leaves), sizes m[k], sorted by size descending. */
static void emit_node(int32_t **sub, const int64_t *m, int32_t k, int32_t *src, int32_t *dst,
                      int64_t *n)
{
    for (int32_t d = 1; d < k; d++) {
        int64_t most = 0;
        for (int32_t i = 0; i < k; i++) {
            int64_t b = m[i] * m[(i + d) % k];
            if (b > most)
                most = b;
        }
        for (int64_t q = 0; q < most; q++)
            for (int32_t i = 0; i < k; i++) {
                int32_t j = (i + d) % k;
                int64_t mi = m[i], mj = m[j];
                if (q >= mi * mj)
                    continue;
                int64_t lcm = mi / gcd64(mi, mj) * mj;
                src[*n] = sub[i][(q + q / lcm) % mi];
                dst[*n] = sub[j][q % mj];
                (*n)++;
            }
    }
}

/* All P(P-1) messages in the order of step 1 (before the critical-first partition). */
static int order_messages(const struct rooted *r, const int32_t *pos, int32_t *src,
                          int32_t *dst)
{
    int32_t n = r->n, P = r->P;
    /* each node's child subtrees list their leaves by filtering the global interleaved order:
       O(P d) per node for depth d */
    int32_t *byp = malloc((size_t)P * sizeof *byp);
    int32_t *buf = malloc((size_t)P * sizeof *buf);
    int32_t **sub = NULL;
    int64_t *m = NULL;
    int32_t *kidx = NULL;
    int rc = AAPC_JOB_ENOMEM;
    int32_t maxk = 0;
    for (int32_t v = 0; v < n; v++) {
        int32_t nk = r->kid_off[v + 1] - r->kid_off[v];
        if (nk > maxk)
            maxk = nk;
    }
    sub = calloc((size_t)maxk + 1, sizeof *sub);
    m = calloc((size_t)maxk + 1, sizeof *m);
    kidx = calloc((size_t)maxk + 1, sizeof *kidx);
    int32_t *slot = calloc((size_t)n, sizeof *slot);
    if (!byp || !buf || !sub || !m || !kidx || !slot)
        goto done;
    for (int32_t x = 0; x < P; x++)
        byp[pos[x]] = x;
    int64_t count = 0;
    /* every node v with two or more child subtrees holding leaves, root first */
    for (int32_t i = 0; i < n; i++) {
        int32_t v = r->bfs[i];
        if (v < P || r->size[v] < 2)
            continue;
        int32_t nk = 0;
        for (int32_t k = r->kid_off[v]; k < r->kid_off[v + 1]; k++) {
            int32_t w = r->kids[k];
            if (r->size[w] > 0) {
                kidx[nk] = w;
                slot[w] = nk;
                m[nk++] = r->size[w];
            }
        }
        if (nk < 2)
            continue;
        /* sort children by size descending, ties by BFS order (insertion sort; stable) */
        for (int32_t x = 1; x < nk; x++) {
            int32_t w = kidx[x];
            int32_t y = x;
            while (y > 0 && r->size[kidx[y - 1]] < r->size[w]) {
                kidx[y] = kidx[y - 1];
                y--;
            }
            kidx[y] = w;
        }
        int64_t off = 0;
        for (int32_t x = 0; x < nk; x++) {
            slot[kidx[x]] = x;
            m[x] = r->size[kidx[x]];
            sub[x] = buf + off;
            off += m[x];
        }
        int64_t *fillc = calloc((size_t)nk, sizeof *fillc);
        if (fillc == NULL)
            goto done;
        for (int32_t x = 0; x < P; x++) { /* leaves in interleaved order */
            int32_t leaf = byp[x], u = leaf;
            while (u >= 0 && r->par[u] != v)
                u = r->par[u];
            if (u < 0)
                continue; /* not below v */
            int32_t s = slot[u];
            sub[s][fillc[s]++] = leaf;
        }
        free(fillc);
        emit_node(sub, m, nk, src, dst, &count);
    }
    rc = count == (int64_t)P * (P - 1) ? AAPC_JOB_OK : AAPC_JOB_EINVAL;
done:
    free(byp);
    free(buf);
    free(sub);
    free(m);
    free(kidx);
    free(slot);
    return rc;
}

/* ---- steps 2 and 3: first fit and repair ----------------------------------------------- */

/* Links are numbered 2x (x -> parent: "up") and 2x + 1 (parent -> x: "down") for node x of the
   tree hung from node P (a->tree.parent). */
struct fit {
    int32_t n, P, T;
    const int32_t *par, *cap;
    int32_t *depth;
    uint16_t *cnt;   /* T x 2n: messages on each link in each phase */
    int32_t *ptr;    /* 2n: first phase in which the link is not full */
    int32_t *lo, *hi, *leafpos; /* DFS ranges of leaves (repair) */
    int32_t *send_at, *recv_at; /* T x P: message of a rank in a phase, -1 (repair only) */
    uint64_t rng;
};

static int32_t path_of(const struct fit *f, int32_t s, int32_t d, int32_t *links)
{
    int32_t np = 0, a = s, b = d;
    while (f->depth[a] > f->depth[b]) {
        links[np++] = 2 * a;
        a = f->par[a];
    }
    while (f->depth[b] > f->depth[a]) {
        links[np++] = 2 * b + 1;
        b = f->par[b];
    }
    while (a != b) {
        links[np++] = 2 * a;
        links[np++] = 2 * b + 1;
        a = f->par[a];
        b = f->par[b];
    }
    return np;
}

static uint16_t *counts_at(const struct fit *f, int32_t t)
{
    return f->cnt + (size_t)t * 2 * (size_t)f->n;
}

static int32_t overflowing(const struct fit *f, const int32_t *links, int32_t np, int32_t t)
{
    const uint16_t *c = counts_at(f, t);
    int32_t over = 0;
    for (int32_t i = 0; i < np; i++)
        over += c[links[i]] >= f->cap[links[i] / 2];
    return over;
}

static void place(struct fit *f, const int32_t *links, int32_t np, int32_t t, int32_t msg,
                  int32_t s, int32_t d)
{
    uint16_t *c = counts_at(f, t);
    for (int32_t i = 0; i < np; i++) {
        int32_t l = links[i];
        c[l]++;
        while (f->ptr[l] < f->T && counts_at(f, f->ptr[l])[l] >= f->cap[l / 2])
            f->ptr[l]++;
    }
    if (f->send_at != NULL) {
        f->send_at[(size_t)t * (size_t)f->P + (size_t)s] = msg;
        f->recv_at[(size_t)t * (size_t)f->P + (size_t)d] = msg;
    }
}

static void unplace(struct fit *f, const int32_t *links, int32_t np, int32_t t, int32_t s,
                    int32_t d)
{
    uint16_t *c = counts_at(f, t);
    for (int32_t i = 0; i < np; i++) {
        c[links[i]]--;
        if (f->ptr[links[i]] > t)
            f->ptr[links[i]] = t;
    }
    f->send_at[(size_t)t * (size_t)f->P + (size_t)s] = -1;
    f->recv_at[(size_t)t * (size_t)f->P + (size_t)d] = -1;
}

/* The first phase from `from` on (wrapping round to the first phase any link of the path has
   room in) in which the message fits, or -1. */
static int32_t first_fit(const struct fit *f, const int32_t *links, int32_t np, int32_t from)
{
    int32_t lo = 0;
    for (int32_t i = 0; i < np; i++)
        if (f->ptr[links[i]] > lo)
            lo = f->ptr[links[i]];
    if (from < lo)
        from = lo;
    for (int32_t t = from; t < f->T; t++)
        if (overflowing(f, links, np, t) == 0)
            return t;
    for (int32_t t = lo; t < from; t++)
        if (overflowing(f, links, np, t) == 0)
            return t;
    return -1;
}

static uint64_t next_random(struct fit *f)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return f->rng;
}

/* A message on link l in phase t (pseudo-random among them), or -1. */
static int32_t victim_on(struct fit *f, int32_t l, int32_t t, const int32_t *src,
                         const int32_t *dst, const int32_t *leaf_at)
{
    int32_t x = l / 2, down = l % 2;
    const int32_t *at = (down ? f->recv_at : f->send_at) + (size_t)t * (size_t)f->P;
    if (x < f->P)
        return at[x];
    int32_t pick = -1;
    int64_t seen = 0;
    for (int32_t i = f->lo[x]; i < f->hi[x]; i++) {
        int32_t m = at[leaf_at[i]];
        if (m < 0)
            continue;
        int32_t other = down ? src[m] : dst[m];
        int32_t op = f->leafpos[other];
        if (op >= f->lo[x] && op < f->hi[x])
            continue; /* stays inside x's subtree: not on this link */
        if (next_random(f) % (uint64_t)++seen == 0)
            pick = m;
    }
    return pick;
}

/* One more phase (all arrays grow by one phase). */
static int grow(struct fit *f)
{
    size_t per = 2 * (size_t)f->n;
    uint16_t *c = realloc(f->cnt, ((size_t)f->T + 1) * per * sizeof *c);
    if (c == NULL)
        return AAPC_JOB_ENOMEM;
    f->cnt = c;
    memset(c + (size_t)f->T * per, 0, per * sizeof *c);
    if (f->send_at != NULL) {
        size_t pp = (size_t)f->P;
        int32_t *s = realloc(f->send_at, ((size_t)f->T + 1) * pp * sizeof *s);
        if (s == NULL)
            return AAPC_JOB_ENOMEM;
        f->send_at = s;
        int32_t *r = realloc(f->recv_at, ((size_t)f->T + 1) * pp * sizeof *r);
        if (r == NULL)
            return AAPC_JOB_ENOMEM;
        f->recv_at = r;
        for (size_t i = 0; i < pp; i++)
            s[(size_t)f->T * pp + i] = r[(size_t)f->T * pp + i] = -1;
    }
    f->T++; /* a pointer at the old end (no room) now points at the new phase */
    return AAPC_JOB_OK;
}

static int under(const struct fit *f, int32_t x, int32_t leaf)
{
    return f->leafpos[leaf] >= f->lo[x] && f->leafpos[leaf] < f->hi[x];
}

/* Does placed message v use link l? */
static int uses(const struct fit *f, int32_t v, int32_t l, const int32_t *src, const int32_t *dst)
{
    if (v < 0)
        return 0;
    int32_t x = l / 2;
    int32_t in = l % 2 ? dst[v] : src[v], out = l % 2 ? src[v] : dst[v];
    return under(f, x, in) && !under(f, x, out);
}

/* Messages to take out of phase t for message (s, d) to fit there: the sender's and the
   receiver's message in t, plus one for each other link still full without them. */
static int32_t conflicts(const struct fit *f, const int32_t *links, int32_t np, int32_t t,
                         int32_t s, int32_t d, const int32_t *src, const int32_t *dst)
{
    const uint16_t *c = counts_at(f, t);
    int32_t v1 = f->send_at[(size_t)t * (size_t)f->P + (size_t)s];
    int32_t v2 = f->recv_at[(size_t)t * (size_t)f->P + (size_t)d];
    int32_t conf = (v1 >= 0) + (v2 >= 0);
    for (int32_t i = 0; i < np; i++) {
        int32_t l = links[i];
        if (l == 2 * s || l == 2 * d + 1)
            continue;
        if (c[l] - uses(f, v1, l, src, dst) - uses(f, v2, l, src, dst) >= f->cap[l / 2])
            conf++;
    }
    return conf;
}

static void eject(struct fit *f, int32_t v, int32_t t, int32_t *phase, const int32_t *src,
                  const int32_t *dst, int32_t *last, int32_t *queue, int64_t *nq,
                  int32_t *vlinks)
{
    int32_t vn = path_of(f, src[v], dst[v], vlinks);
    unplace(f, vlinks, vn, t, src[v], dst[v]);
    phase[v] = -1;
    last[v] = t;
    queue[(*nq)++] = v;
}

/* Kempe chain: message m = (s, d) goes into phase a after the a/b alternating path from d
   (d's message received in a, its sender's message sent in b, ...) swaps its phases; the
   machines stay conflict-free, the links are checked. path: scratch of 2P entries. */
static int kempe(struct fit *f, int32_t m, int32_t a, int32_t b, int32_t *phase,
                 const int32_t *src, const int32_t *dst, int32_t *path, int32_t *links,
                 int32_t *vlinks)
{
    size_t P = (size_t)f->P;
    int32_t len = 0, node = dst[m], col = a;
    for (;;) { /* receivers are reached in colour a, senders in colour b */
        int32_t v = col == a ? f->recv_at[(size_t)a * P + (size_t)node]
                             : f->send_at[(size_t)b * P + (size_t)node];
        if (v < 0 || len >= 2 * f->P)
            break;
        path[len++] = v;
        node = col == a ? src[v] : dst[v];
        col = col == a ? b : a;
    }
    for (int32_t i = 0; i < len; i++) {
        int32_t v = path[i], vn = path_of(f, src[v], dst[v], vlinks);
        unplace(f, vlinks, vn, phase[v], src[v], dst[v]);
    }
    int ok = 1;
    for (int32_t i = 0; i < len; i++) {
        int32_t v = path[i], vn = path_of(f, src[v], dst[v], vlinks);
        int32_t to = phase[v] == a ? b : a;
        ok &= overflowing(f, vlinks, vn, to) == 0;
        place(f, vlinks, vn, to, v, src[v], dst[v]);
        phase[v] = to;
    }
    int32_t np = path_of(f, src[m], dst[m], links);
    if (ok && overflowing(f, links, np, a) == 0) {
        place(f, links, np, a, m, src[m], dst[m]);
        phase[m] = a;
        return 1;
    }
    for (int32_t i = 0; i < len; i++) { /* undo */
        int32_t v = path[i], vn = path_of(f, src[v], dst[v], vlinks);
        unplace(f, vlinks, vn, phase[v], src[v], dst[v]);
    }
    for (int32_t i = 0; i < len; i++) {
        int32_t v = path[i], vn = path_of(f, src[v], dst[v], vlinks);
        phase[v] = phase[v] == a ? b : a;
        place(f, vlinks, vn, phase[v], v, src[v], dst[v]);
    }
    return 0;
}

/* Min-conflicts repair of the messages in queue[0..nq). Returns the number left. */
static int64_t repair(struct fit *f, int32_t *queue, int64_t nq, int32_t *phase,
                      const int32_t *src, const int32_t *dst, int32_t *last,
                      const int32_t *leaf_at, int64_t budget, int32_t *links, int32_t *vlinks,
                      int32_t *kpath)
{
    for (int64_t step = 0; nq > 0 && step < budget; step++) {
        int32_t m = queue[--nq], s = src[m], d = dst[m];
        int32_t np = path_of(f, s, d, links);
        int32_t best = -1, bestc = INT32_MAX;
        int64_t ties = 0;
        int32_t t0 = (int32_t)(next_random(f) % (uint64_t)f->T);
        for (int32_t i = 0; i < f->T; i++) {
            int32_t t = (t0 + i) % f->T;
            if (t == last[m])
                continue;
            int32_t c = conflicts(f, links, np, t, s, d, src, dst);
            if (c < bestc) {
                best = t;
                bestc = c;
                ties = 1;
                if (c == 0)
                    break;
            } else if (c == bestc && next_random(f) % (uint64_t)++ties == 0) {
                best = t;
            }
        }
        if (best < 0) /* T == 1 and the only phase is tabu */
            best = 0;
        if (bestc > 0) { /* a Kempe chain may make room without taking anything out */
            int placed = 0;
            for (int try = 0; try < 16 && !placed; try++) {
                int32_t a = (int32_t)(next_random(f) % (uint64_t)f->T);
                int32_t b = (int32_t)(next_random(f) % (uint64_t)f->T);
                if (a != b && f->send_at[(size_t)a * (size_t)f->P + (size_t)s] < 0 &&
                    f->recv_at[(size_t)b * (size_t)f->P + (size_t)d] < 0)
                    placed = kempe(f, m, a, b, phase, src, dst, kpath, links, vlinks);
            }
            if (placed)
                continue;
            np = path_of(f, s, d, links);
        }
        size_t at = (size_t)best * (size_t)f->P;
        if (f->send_at[at + (size_t)s] >= 0)
            eject(f, f->send_at[at + (size_t)s], best, phase, src, dst, last, queue, &nq, vlinks);
        if (f->recv_at[at + (size_t)d] >= 0)
            eject(f, f->recv_at[at + (size_t)d], best, phase, src, dst, last, queue, &nq, vlinks);
        for (int32_t i = 0; i < np; i++) {
            int32_t l = links[i];
            while (counts_at(f, best)[l] >= f->cap[l / 2]) {
                int32_t v = victim_on(f, l, best, src, dst, leaf_at);
                if (v < 0)
                    break; /* cannot happen: a full link holds a message */
                eject(f, v, best, phase, src, dst, last, queue, &nq, vlinks);
            }
        }
        place(f, links, np, best, m, s, d);
        phase[m] = best;
    }
    return nq;
}

/* Step 2 from scratch: every message by first fit; those that do not fit go to queue.
   Messages over tight links fill the phases from the first; the others have room to spare and
   start their search spread evenly over the phases. Returns the number queued. */
static int64_t fill(struct fit *f, const int32_t *src, const int32_t *dst, int32_t *phase,
                    int32_t *queue, int64_t nm, int64_t n_tight, int32_t *links)
{
    memset(f->cnt, 0, (size_t)f->T * 2 * (size_t)f->n * sizeof *f->cnt);
    memset(f->ptr, 0, 2 * (size_t)f->n * sizeof *f->ptr);
    int32_t *keep_send = f->send_at, *keep_recv = f->recv_at;
    f->send_at = f->recv_at = NULL; /* indexed afterwards */
    int64_t nq = 0;
    for (int64_t e = 0; e < nm; e++) {
        int32_t np = path_of(f, src[e], dst[e], links);
        int32_t from = e < n_tight ? 0 : (int32_t)((e - n_tight) * f->T / (nm - n_tight));
        int32_t ph = first_fit(f, links, np, from);
        phase[e] = ph;
        if (ph >= 0)
            place(f, links, np, ph, (int32_t)e, src[e], dst[e]);
        else
            queue[nq++] = (int32_t)e;
    }
    f->send_at = keep_send;
    f->recv_at = keep_recv;
    return nq;
}

/* Fisher-Yates on messages [lo, hi). */
static void shuffle(struct fit *f, int32_t *src, int32_t *dst, int64_t lo, int64_t hi)
{
    for (int64_t i = hi - 1; i > lo; i--) {
        int64_t j = lo + (int64_t)(next_random(f) % (uint64_t)(i - lo + 1));
        int32_t ts = src[i], td = dst[i];
        src[i] = src[j];
        dst[i] = dst[j];
        src[j] = ts;
        dst[j] = td;
    }
}

/* ---- the driver ------------------------------------------------------------------------ */

/* Stable counting sort of messages in[0..n) (NULL: 0..n-1) by key into out. */
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

/* Depth in the tree hung from node P, and DFS ranges of the leaves below every node. */
static int fit_tree(const job_analysis *a, struct fit *f, int32_t *leaf_at)
{
    int32_t n = f->n, P = f->P;
    int32_t *order = malloc((size_t)n * sizeof *order);
    int32_t *stack = malloc((size_t)n * sizeof *stack);
    int32_t *kid_off = calloc((size_t)n + 1, sizeof *kid_off);
    int32_t *kids = malloc((size_t)n * sizeof *kids);
    int32_t *fill = calloc((size_t)n, sizeof *fill);
    int rc = AAPC_JOB_ENOMEM;
    if (!order || !stack || !kid_off || !kids || !fill)
        goto done;
    (void)a;
    for (int32_t v = 0; v < n; v++)
        if (f->par[v] >= 0)
            kid_off[f->par[v] + 1]++;
    for (int32_t v = 0; v < n; v++)
        kid_off[v + 1] += kid_off[v];
    for (int32_t v = 0; v < n; v++)
        if (f->par[v] >= 0)
            kids[kid_off[f->par[v]] + fill[f->par[v]]++] = v;
    /* iterative DFS from P: pre-order gives depth and lo; leaves are numbered in visit order */
    int32_t top = 0, nl = 0;
    stack[top++] = P;
    f->depth[P] = 0;
    int32_t count = 0;
    while (top > 0) {
        int32_t v = stack[--top];
        order[count++] = v;
        f->lo[v] = nl;
        if (v < P) {
            leaf_at[nl] = v;
            f->leafpos[v] = nl++;
        }
        for (int32_t k = kid_off[v + 1] - 1; k >= kid_off[v]; k--) {
            int32_t w = kids[k];
            f->depth[w] = f->depth[v] + 1;
            stack[top++] = w;
        }
    }
    /* hi: lo + leaves below (a->below counts them in the same hanging) */
    for (int32_t v = 0; v < n; v++)
        f->hi[v] = f->lo[v] + a->below[v];
    rc = count == n && nl == P ? AAPC_JOB_OK : AAPC_JOB_EINVAL;
done:
    free(order);
    free(stack);
    free(kid_off);
    free(kids);
    free(fill);
    return rc;
}

int job_phases_capacity(const job_analysis *a, aapc_job_phases_t *out, int64_t repair_cells)
{
    const aapc_job_tree_t *t = &a->tree;
    int32_t P = t->n_leaves, n = t->n_nodes;
    int64_t nm = (int64_t)P * (P - 1);
    struct fit f;
    memset(&f, 0, sizeof f);
    f.n = n;
    f.P = P;
    f.T = (int32_t)a->lower_bound;
    f.par = t->parent;
    f.cap = t->cap;
    f.rng = 0x9E3779B97F4A7C15ull;
    struct rooted r;
    int rc = job_rooted_build(a, &r);
    if (rc != AAPC_JOB_OK) {
        snprintf(out->error, sizeof out->error, "out of memory for the job tree");
        return rc;
    }
    int32_t *pos = malloc((size_t)P * sizeof *pos);
    int32_t *osrc = malloc((size_t)nm * sizeof *osrc), *odst = malloc((size_t)nm * sizeof *odst);
    int32_t *src = malloc((size_t)nm * sizeof *src), *dst = malloc((size_t)nm * sizeof *dst);
    int32_t *phase = malloc((size_t)nm * sizeof *phase);
    int32_t *queue = malloc((size_t)nm * sizeof *queue);
    int32_t *links = malloc((size_t)2 * (size_t)n * sizeof *links);
    int32_t *vlinks = malloc((size_t)2 * (size_t)n * sizeof *vlinks);
    uint8_t *tight = calloc((size_t)n, 1);
    int32_t *leaf_at = malloc((size_t)P * sizeof *leaf_at);
    int32_t *last = NULL, *kpath = NULL, *orig = NULL;
    int32_t *tmp = NULL, *idx = NULL;
    int64_t *count = NULL;
    f.depth = malloc((size_t)n * sizeof *f.depth);
    f.lo = malloc((size_t)n * sizeof *f.lo);
    f.hi = malloc((size_t)n * sizeof *f.hi);
    f.leafpos = malloc((size_t)P * sizeof *f.leafpos);
    f.ptr = calloc((size_t)2 * (size_t)n, sizeof *f.ptr);
    f.cnt = calloc((size_t)f.T * 2 * (size_t)n, sizeof *f.cnt);
    rc = AAPC_JOB_ENOMEM;
    if (!pos || !osrc || !odst || !src || !dst || !phase || !queue || !links || !vlinks ||
        !tight || !leaf_at || !f.depth || !f.lo || !f.hi || !f.leafpos || !f.ptr || !f.cnt)
        goto nomem;
    rc = job_phases_two_level(a, phase, src, dst); /* exact where it applies */
    if (rc == AAPC_JOB_ENOMEM)
        goto nomem;
    if (rc == AAPC_JOB_OK)
        goto sort;
    if ((rc = fit_tree(a, &f, leaf_at)) != AAPC_JOB_OK ||
        (rc = job_interleave(&r, pos)) != AAPC_JOB_OK ||
        (rc = order_messages(&r, pos, osrc, odst)) != AAPC_JOB_OK)
        goto fail;
    /* step 1 (end): messages over a tight link first, stable */
    for (int32_t v = 0; v < n; v++) {
        int64_t side = a->below[v], load = side * (P - side);
        tight[v] = t->parent[v] >= 0 && load > 0 &&
                   (load + t->cap[v] - 1) / t->cap[v] == a->lower_bound;
    }
    int64_t k = 0, n_tight = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t e = 0; e < nm; e++) {
            int32_t np = path_of(&f, osrc[e], odst[e], links), hot = 0;
            for (int32_t i = 0; i < np && !hot; i++)
                hot = tight[links[i] / 2];
            if (hot == (pass == 0)) {
                src[k] = osrc[e];
                dst[k++] = odst[e];
            }
        }
        if (pass == 0)
            n_tight = k;
    }
    free(osrc);
    free(odst);
    osrc = odst = NULL;
    /* steps 2 and 3 */
    int64_t nq = fill(&f, src, dst, phase, queue, nm, n_tight, links);
    if (nq > 0 && (int64_t)P * f.T <= repair_cells) {
        size_t cells = (size_t)f.T * (size_t)P;
        f.send_at = malloc(cells * sizeof *f.send_at);
        f.recv_at = malloc(cells * sizeof *f.recv_at);
        last = malloc((size_t)nm * sizeof *last);
        kpath = malloc((size_t)2 * (size_t)P * sizeof *kpath);
        if (!f.send_at || !f.recv_at || !last || !kpath)
            goto nomem;
        /* small jobs can afford fresh starts (a shuffled order, first fit and repair again);
           the work of a repair is bounded: steps x phases x path <= about 4e7 */
        int64_t attempts = repair_cells / ((int64_t)P * f.T * 64);
        attempts = attempts < 1 ? 1 : (attempts > 4 ? 4 : attempts);
        int64_t budget = 40000000 / ((int64_t)f.T * 8);
        if (attempts > 1) {
            orig = malloc((size_t)nm * 2 * sizeof *orig);
            if (orig == NULL)
                goto nomem;
            memcpy(orig, src, (size_t)nm * sizeof *orig);
            memcpy(orig + nm, dst, (size_t)nm * sizeof *orig);
        }
        for (int64_t try = 0; nq > 0 && try <= attempts; try++) {
            if (try > 0 && try < attempts) {
                shuffle(&f, src, dst, 0, n_tight);
                shuffle(&f, src, dst, n_tight, nm);
                nq = fill(&f, src, dst, phase, queue, nm, n_tight, links);
            } else if (try == attempts && orig != NULL) { /* none succeeded: the first order */
                memcpy(src, orig, (size_t)nm * sizeof *orig);
                memcpy(dst, orig + nm, (size_t)nm * sizeof *orig);
                nq = fill(&f, src, dst, phase, queue, nm, n_tight, links);
            } else if (try == attempts) {
                break;
            }
            for (size_t i = 0; i < cells; i++)
                f.send_at[i] = f.recv_at[i] = -1;
            for (int64_t e = 0; e < nm; e++) {
                last[e] = -1;
                if (phase[e] >= 0) {
                    f.send_at[(size_t)phase[e] * (size_t)P + (size_t)src[e]] = (int32_t)e;
                    f.recv_at[(size_t)phase[e] * (size_t)P + (size_t)dst[e]] = (int32_t)e;
                }
            }
            nq = repair(&f, queue, nq, phase, src, dst, last, leaf_at, budget, links, vlinks,
                        kpath);
        }
    }
    while (nq > 0) { /* one more phase, and first fit for what is left */
        if ((rc = grow(&f)) != AAPC_JOB_OK)
            goto nomem;
        int64_t left = 0;
        for (int64_t i = 0; i < nq; i++) {
            int32_t e = queue[i];
            int32_t np = path_of(&f, src[e], dst[e], links);
            int32_t ph = first_fit(&f, links, np, 0);
            phase[e] = ph;
            if (ph >= 0)
                place(&f, links, np, ph, e, src[e], dst[e]);
            else
                queue[left++] = e;
        }
        nq = left;
        if (nq > 0 && f.send_at != NULL)
            nq = repair(&f, queue, nq, phase, src, dst, last, leaf_at,
                        40000000 / ((int64_t)f.T * 8), links, vlinks, kpath);
    }
sort: /* step 4 */
    tmp = malloc((size_t)nm * sizeof *tmp);
    idx = malloc((size_t)nm * sizeof *idx);
    count = malloc(((size_t)(f.T > P ? f.T : P) + 1) * sizeof *count);
    out->phase = malloc((size_t)nm * sizeof *out->phase);
    out->src = malloc((size_t)nm * sizeof *out->src);
    out->dst = malloc((size_t)nm * sizeof *out->dst);
    if (!tmp || !idx || !count || !out->phase || !out->src || !out->dst)
        goto nomem;
    counting_order(src, nm, P, NULL, tmp, count);
    counting_order(phase, nm, f.T, tmp, idx, count);
    for (int64_t e = 0; e < nm; e++) {
        out->phase[e] = phase[idx[e]];
        out->src[e] = src[idx[e]];
        out->dst[e] = dst[idx[e]];
    }
    out->n_ranks = P;
    out->n_phases = f.T;
    out->n_messages = nm;
    rc = AAPC_JOB_OK;
    goto fail; /* common cleanup */
nomem:
    rc = AAPC_JOB_ENOMEM;
    snprintf(out->error, sizeof out->error, "out of memory for the capacity phases of %d ranks",
             (int)P);
fail:
    if (rc == AAPC_JOB_EINVAL)
        snprintf(out->error, sizeof out->error, "internal: the message order is incomplete");
    job_rooted_free(&r);
    free(pos);
    free(osrc);
    free(odst);
    free(src);
    free(dst);
    free(phase);
    free(queue);
    free(links);
    free(vlinks);
    free(tight);
    free(leaf_at);
    free(last);
    free(kpath);
    free(orig);
    free(tmp);
    free(idx);
    free(count);
    free(f.depth);
    free(f.lo);
    free(f.hi);
    free(f.leafpos);
    free(f.ptr);
    free(f.cnt);
    free(f.send_at);
    free(f.recv_at);
    return rc;
}
