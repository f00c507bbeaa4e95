/*
 * aapc_cluster_twolevel.c: exact capacity-aware phases for a uniform two-level tree whose
 * phases must (almost) all be full permutations: k leaf switches of n ranks each under one root,
 * every uplink of capacity c, and a lower bound LB of P - 1 or P phases (P = kn) set by the
 * ranks and the uplinks together (docs/scheduling.md "Capacities"; the regime of Prisacari et
 * al., ICS 2013). The general scheduler (aapc_cluster_capacity.c) may miss LB by a phase there.
 *
 * Algorithm. A rank is (leaf a, position p), a in Z_k, p in Z_n. A phase moves every position p
 * to position pi(p) and every leaf a by an offset d(p): (a, p) -> (a + d(p), pi(p)) for all a,
 * a permutation of the ranks. Leaf a sends #{p : d(p) != 0} messages up its uplink and receives
 * as many: at most c when at least z = n - c positions have offset 0.
 *   1. Positions: the n - 1 shifts p -> p + r (r != 0), and k - 1 copies of each of the n
 *      reflections p -> s - p. The pair of positions (p, q), p != q, appears k times (in shift
 *      q - p and in the k - 1 copies of reflection p + q), the pair (p, p) k - 1 times (the
 *      fixed points of reflection 2p): P - 1 = n - 1 + n (k - 1) phases.
 *   2. Offsets: every appearance of (p, q) needs a different offset, and one of them the offset
 *      0 (the message stays in its leaf). Which appearance gets 0 is a b-matching of the
 *      n (n - 1) pairs to the phases, each phase wanting z of them: greedy least-loaded first,
 *      then augmenting paths (a phase short of z takes a pair from a phase that can spare
 *      one, along an alternating path), first to z - 1 everywhere, then to z. The appearance
 *      j (0: the shift, 1..k-1: the reflection copies) then gets offset (j - j0) mod k, and the
 *      fixed points of reflection copy j the offset j.
 *   3. LB = P: the phases still short of z (at most c of them, one short each) each move the
 *      messages of one external position, distinct positions and targets, into one more phase.
 * The schedule is checked (ranks and uplinks) before it is returned; anything that does not
 * fit returns AAPC_JOB_EINVAL and the general scheduler runs instead.
 * Cost: O(n^2 k) for the b-matching (each augmenting path O(n^2 k)) on top of the P (P - 1)
 * messages; no communication, deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

/* Leaves beyond v seen from its neighbour u (the tree hangs from node P). */
static int32_t beyond(const job_analysis *a, int32_t u, int32_t v)
{
    return a->tree.parent[v] == u ? a->below[v] : a->tree.n_leaves - a->below[u];
}

/* The uniform two-level shape: every rank hangs from a leaf switch, every leaf switch holds n
   ranks and reaches the others only through one common core switch, every leaf-core link has
   the same capacity c. leaf_of/pos_of: each rank's leaf and its position there (rank order). */
static int shape(const job_analysis *a, int32_t *k, int32_t *n, int32_t *c, int32_t *leaf_of,
                 int32_t *pos_of)
{
    const aapc_job_tree_t *t = &a->tree;
    int32_t P = t->n_leaves, nn = t->n_nodes, core = -1;
    int32_t *slot = malloc((size_t)nn * sizeof *slot), *fill = calloc((size_t)nn, sizeof *fill);
    int ok = slot != NULL && fill != NULL;
    int32_t leaves = 0, size = -1, cap = -1;
    for (int32_t v = 0; ok && v < nn; v++)
        slot[v] = -1;
    for (int32_t r = 0; ok && r < P; r++) {
        int32_t sw = t->parent[r];
        if (sw < P || t->machine_of_node[sw] >= 0) {
            ok = 0; /* a rank at the top, or on a machine with several ranks */
            break;
        }
        if (slot[sw] < 0) {
            /* its one neighbour with ranks beyond that is not a rank: the core */
            int32_t up = -1, count = 0, link_cap = 0;
            for (int32_t x = a->adj_off[sw]; x < a->adj_off[sw + 1]; x++) {
                int32_t e = a->adj[x], w = a->edge_a[e] == sw ? a->edge_b[e] : a->edge_a[e];
                if (w >= P && beyond(a, sw, w) > 0) {
                    up = w;
                    count++;
                    link_cap = t->parent[sw] == w ? t->cap[sw] : t->cap[w];
                }
            }
            if (count != 1 || (core >= 0 && up != core) || (cap >= 0 && link_cap != cap)) {
                ok = 0;
                break;
            }
            core = up;
            cap = link_cap;
            slot[sw] = leaves++;
        }
        leaf_of[r] = slot[sw];
        pos_of[r] = fill[sw]++;
    }
    for (int32_t v = 0; ok && v < nn; v++) {
        if (slot[v] < 0)
            continue;
        if (size >= 0 && fill[v] != size)
            ok = 0;
        size = fill[v];
    }
    /* the core holds no rank itself (every rank's switch is a leaf switch, not the core) */
    if (ok && core >= 0 && slot[core] >= 0)
        ok = 0;
    free(slot);
    free(fill);
    if (!ok || leaves < 2 || size < 2)
        return 0;
    *k = leaves;
    *n = size;
    *c = cap;
    return 1;
}

struct bmatch {
    int32_t n, k, T;
    int32_t *at;    /* pair p * n + q -> phase holding its offset 0 */
    int32_t *count; /* zeros per phase */
    int32_t *seen;  /* BFS marks (phases) */
    int32_t *from_pair, *from_phase, *queue;
};

/* The k phases where pair (p, q) appears: the shift, then the reflection copies. */
static int32_t appearance(const struct bmatch *b, int32_t p, int32_t q, int32_t j)
{
    int32_t n = b->n;
    if (j == 0)
        return ((q - p + n) % n) - 1;
    return n - 1 + ((p + q) % n) * (b->k - 1) + (j - 1);
}

/* One augmenting path from phase t (short of `want`) to a phase with more than `want`
   zeros: every pair on the path moves one phase along. */
static int augment(struct bmatch *b, int32_t t, int32_t want, int32_t stamp)
{
    int32_t n = b->n, head = 0, tail = 0;
    b->queue[tail++] = t;
    b->seen[t] = stamp;
    while (head < tail) {
        int32_t u = b->queue[head++];
        /* pairs that could move into u: those appearing in u, currently elsewhere */
        for (int32_t p = 0; p < n; p++)
            for (int32_t j = 0; j < b->k; j++) {
                int32_t q;
                if (u < n - 1) { /* shift r = u + 1 */
                    if (j != 0)
                        continue;
                    q = (p + u + 1) % n;
                } else {
                    int32_t s = (u - (n - 1)) / (b->k - 1), jj = (u - (n - 1)) % (b->k - 1) + 1;
                    if (j != jj)
                        continue;
                    q = ((s - p) % n + n) % n;
                    if (q == p)
                        continue;
                }
                int32_t v = b->at[p * n + q];
                if (v == u || b->seen[v] == stamp)
                    continue;
                b->seen[v] = stamp;
                b->from_pair[v] = p * n + q;
                b->from_phase[v] = u;
                if (b->count[v] > want) { /* v can spare the pair: shift along the path */
                    b->count[v]--;
                    for (int32_t w = v; w != t;) {
                        int32_t pair = b->from_pair[w], to = b->from_phase[w];
                        b->at[pair] = to;
                        w = to;
                    }
                    b->count[t]++;
                    return 1;
                }
                b->queue[tail++] = v;
            }
    }
    return 0;
}

/* Every rank sends and receives at most once per phase, every uplink carries at most c each
   way, and every ordered pair appears once (the construction guarantees it; checked anyway). */
static int check(const int32_t *phase, const int32_t *src, const int32_t *dst, int64_t nm,
                 int32_t T, int32_t P, const int32_t *leaf_of, int32_t c, int32_t k)
{
    size_t cells = (size_t)T * (size_t)P;
    uint8_t *s = calloc(cells, 1), *r = calloc(cells, 1), *pair = calloc((size_t)P * P, 1);
    int32_t *up = calloc((size_t)T * (size_t)k, sizeof *up);
    int32_t *down = calloc((size_t)T * (size_t)k, sizeof *down);
    int ok = s && r && pair && up && down;
    for (int64_t e = 0; ok && e < nm; e++) {
        int32_t t = phase[e], a = src[e], b = dst[e];
        size_t i = (size_t)t * (size_t)P;
        ok = t >= 0 && t < T && a != b && !s[i + (size_t)a] && !r[i + (size_t)b] &&
             !pair[(size_t)a * (size_t)P + (size_t)b];
        if (!ok)
            break;
        s[i + (size_t)a] = r[i + (size_t)b] = pair[(size_t)a * (size_t)P + (size_t)b] = 1;
        if (leaf_of[a] != leaf_of[b])
            ok = ++up[(size_t)t * (size_t)k + (size_t)leaf_of[a]] <= c &&
                 ++down[(size_t)t * (size_t)k + (size_t)leaf_of[b]] <= c;
    }
    free(s);
    free(r);
    free(pair);
    free(up);
    free(down);
    return ok;
}

int job_phases_two_level(const job_analysis *a, int32_t *phase, int32_t *src, int32_t *dst)
{
    const aapc_job_tree_t *t = &a->tree;
    int32_t P = t->n_leaves, k, n, c;
    int64_t LB = a->lower_bound;
    int32_t *leaf_of = malloc((size_t)P * sizeof *leaf_of);
    int32_t *pos_of = malloc((size_t)P * sizeof *pos_of);
    int32_t *rank_at = malloc((size_t)P * sizeof *rank_at);
    struct bmatch b;
    memset(&b, 0, sizeof b);
    int rc = AAPC_JOB_EINVAL;
    if (!leaf_of || !pos_of || !rank_at || !shape(a, &k, &n, &c, leaf_of, pos_of) ||
        (LB != P - 1 && LB != P))
        goto done;
    for (int32_t r = 0; r < P; r++)
        rank_at[leaf_of[r] * n + pos_of[r]] = r;
    int32_t T = P - 1, z = n - c > 0 ? n - c : 0;
    b.n = n;
    b.k = k;
    b.T = T;
    b.at = malloc((size_t)n * (size_t)n * sizeof *b.at);
    b.count = calloc((size_t)T, sizeof *b.count);
    b.seen = calloc((size_t)T, sizeof *b.seen);
    b.from_pair = malloc((size_t)T * sizeof *b.from_pair);
    b.from_phase = malloc((size_t)T * sizeof *b.from_phase);
    b.queue = malloc((size_t)T * sizeof *b.queue);
    int64_t nm = (int64_t)P * (P - 1);
    if (!b.at || !b.count || !b.seen || !b.from_pair || !b.from_phase || !b.queue) {
        rc = AAPC_JOB_ENOMEM;
        goto done;
    }
    /* step 2: greedy, least-loaded appearance first */
    for (int32_t p = 0; p < n; p++)
        for (int32_t q = 0; q < n; q++) {
            if (p == q)
                continue;
            int32_t best = appearance(&b, p, q, 0);
            for (int32_t j = 1; j < k; j++) {
                int32_t ph = appearance(&b, p, q, j);
                if (b.count[ph] < b.count[best])
                    best = ph;
            }
            b.at[p * n + q] = best;
            b.count[best]++;
        }
    int32_t stamp = 0;
    for (int32_t want = z > 0 ? z - 1 : 0; want <= z; want++)
        for (int32_t ph = 0; ph < T; ph++)
            while (b.count[ph] < want && augment(&b, ph, want, ++stamp))
                ;
    int32_t short_phases = 0;
    for (int32_t ph = 0; ph < T; ph++) {
        if (b.count[ph] < z - 1)
            goto done; /* the zeros cannot be spread: the general scheduler runs */
        short_phases += b.count[ph] < z;
    }
    if ((LB == P - 1 && short_phases > 0) || short_phases > c || short_phases > n)
        goto done;
    /* the phases, then step 3 */
    int32_t *pi = malloc((size_t)n * sizeof *pi), *off = malloc((size_t)n * sizeof *off);
    uint8_t *taken_p = calloc((size_t)n, 1), *taken_q = calloc((size_t)n, 1);
    if (!pi || !off || !taken_p || !taken_q) {
        free(pi);
        free(off);
        free(taken_p);
        free(taken_q);
        rc = AAPC_JOB_ENOMEM;
        goto done;
    }
    int64_t e = 0;
    int ok = 1;
    for (int32_t ph = 0; ph < T && ok; ph++) {
        for (int32_t p = 0; p < n; p++) {
            int32_t q, j;
            if (ph < n - 1) {
                q = (p + ph + 1) % n;
                j = 0;
            } else {
                int32_t s = (ph - (n - 1)) / (k - 1);
                j = (ph - (n - 1)) % (k - 1) + 1;
                q = ((s - p) % n + n) % n;
            }
            pi[p] = q;
            if (p == q) {
                off[p] = j;
            } else {
                int32_t j0 = 0;
                while (appearance(&b, p, q, j0) != b.at[p * n + q])
                    j0++;
                off[p] = ((j - j0) % k + k) % k;
            }
        }
        int32_t moved = -1;
        if (b.count[ph] < z) { /* step 3: an external position no other phase moved yet */
            for (int32_t p = 0; p < n && moved < 0; p++)
                if (off[p] != 0 && !taken_p[p] && !taken_q[pi[p]])
                    moved = p;
            if (moved < 0) {
                ok = 0;
                break;
            }
            taken_p[moved] = taken_q[pi[moved]] = 1;
        }
        for (int32_t p = 0; p < n; p++)
            for (int32_t l = 0; l < k; l++) {
                phase[e] = p == moved ? T : ph;
                src[e] = rank_at[l * n + p];
                dst[e] = rank_at[((l + off[p]) % k) * n + pi[p]];
                e++;
            }
    }
    free(pi);
    free(off);
    free(taken_p);
    free(taken_q);
    if (!ok || e != nm)
        goto done;
    rc = check(phase, src, dst, nm, (int32_t)LB, P, leaf_of, c, k) ? AAPC_JOB_OK : AAPC_JOB_EINVAL;
done:
    free(leaf_of);
    free(pos_of);
    free(rank_at);
    free(b.at);
    free(b.count);
    free(b.seen);
    free(b.from_pair);
    free(b.from_phase);
    free(b.queue);
    return rc;
}
