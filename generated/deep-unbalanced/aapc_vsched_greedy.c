/* Greedy and all-to-all based Alltoallv scheduling on a switch tree (CC-MPI, seed 000 §4.2).
 *
 * Algorithm (aapcgen/alltoallv/schedule.py _phased, identical results):
 *   order the k messages largest first, ties by template phase, then (src, dst);
 *   repeat, phase p = 0, 1, ...:
 *     - if the largest unscheduled message is below the threshold, all unscheduled messages
 *       form one final (small, possibly contended) phase;
 *     - all-to-all based only: seed the phase with every unscheduled message of the largest
 *       one's template phase (the optimal contention-free AAPC phases; they never conflict);
 *     - add every unscheduled message, in order, whose directed path edges are all still free.
 * Greedy is computed as first fit (each message, in order, into the first phase where none of
 * the earlier messages shares an edge; the same result as the phase-by-phase scan): per directed
 * edge a bitset of the phases using it, a message ORs the bitsets of its path edges.
 * All-to-all based keeps the phase-by-phase scan (the seeds of a phase depend on what the earlier
 * phases took): free edges are stamps (stamp[e] == p means used in phase p), never cleared; the
 * scan walks a bitset of the unscheduled positions of the order, minus the position bitsets of
 * the switch edges already used in the phase (64 blocked messages per word), and stops as soon as
 * every source (or destination) that still has a message has used its own machine link in this
 * phase: no later message can fit, so the result is that of scanning to the end.
 *
 * Cost: O(k log k) to sort k messages. Greedy: O(k x D x P/64) for paths of D edges and P
 * phases. All-to-all based: per phase O(k/64 x switch edges used + messages tried x D).
 * Local computation only (no messages: alpha = beta = 0); the schedule it builds costs
 * sum over phases of (alpha + largest piece x beta).
 */
#include <stdlib.h>
#include <string.h>

#include "aapc_vsched_impl.h"

typedef unsigned long long word;

static int lowest_zero(word v) /* v has a zero bit */
{
    v = ~v;
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(v);
#else
    int b = 0;
    while (!(v & 1)) {
        v >>= 1;
        b++;
    }
    return b;
#endif
}

/* idx[0..k) = the messages largest first, ties by smaller template phase, then smaller index:
 * LSD radix sort (stable) of the identity permutation, first by template phase (counting sort),
 * then by (largest count - count), one byte per pass. O(k x bytes of the largest count). */
static int size_sort(const long long *count, const int *tmpl, int *idx, int k)
{
    int *tmp = malloc((size_t)(k ? k : 1) * sizeof *tmp);
    if (!tmp)
        return AAPC_VSCHED_ENOMEM;
    int *a = idx, *b = tmp;
    long long maxc = 0;
    for (int x = 0; x < k; x++) {
        a[x] = x;
        if (count[x] > maxc)
            maxc = count[x];
    }
    if (tmpl) {
        int top = 0;
        for (int x = 0; x < k; x++)
            if (tmpl[x] > top)
                top = tmpl[x];
        int *cnt = calloc((size_t)top + 2, sizeof *cnt);
        if (!cnt) {
            free(tmp);
            return AAPC_VSCHED_ENOMEM;
        }
        for (int x = 0; x < k; x++)
            cnt[tmpl[x] + 1]++;
        for (int t = 0; t <= top; t++)
            cnt[t + 1] += cnt[t];
        for (int i = 0; i < k; i++)
            b[cnt[tmpl[a[i]]]++] = a[i];
        free(cnt);
        int *t = a;
        a = b;
        b = t;
    }
    for (int shift = 0; shift < 64 && (maxc >> shift) > 0; shift += 8) {
        int cnt[257] = {0};
        for (int i = 0; i < k; i++)
            cnt[((unsigned long long)(maxc - count[a[i]]) >> shift & 255) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (int i = 0; i < k; i++)
            b[cnt[(unsigned long long)(maxc - count[a[i]]) >> shift & 255]++] = a[i];
        int *t = a;
        a = b;
        b = t;
    }
    if (a != idx)
        memcpy(idx, a, (size_t)k * sizeof *idx);
    free(tmp);
    return AAPC_VSCHED_OK;
}

typedef struct {
    const vs_msgs *m;
    int *stamp;               /* per directed edge: phase that uses it */
    int *left_src, *left_dst; /* unscheduled messages per source / destination */
    int active_src, active_dst;
    int used_src, used_dst; /* sources / destinations that send / receive in this phase */
    char *placed;
    int *phase_of;
    int live;
    const int *cls_of; /* class of each message */
    int *cls_alive;    /* unscheduled messages per class */
    int by_class;      /* classes by switch pair (else one class that is never blocked) */
} phased_state;

static int fits(const phased_state *st, int x, int p)
{
    const vs_msgs *m = st->m;
    for (long long i = m->estart[x]; i < m->estart[x + 1]; i++)
        if (st->stamp[m->edge[i]] == p)
            return 0;
    return 1;
}

static void place(phased_state *st, int x, int p)
{
    const vs_msgs *m = st->m;
    int s = m->src[x], d = m->dst[x];
    st->used_src += st->stamp[2 * s] != p;
    st->used_dst += st->stamp[2 * d + 1] != p;
    for (long long i = m->estart[x]; i < m->estart[x + 1]; i++)
        st->stamp[m->edge[i]] = p;
    st->placed[x] = 1;
    st->phase_of[x] = p;
    st->live--;
    st->cls_alive[st->cls_of[x]]--;
    if (--st->left_src[s] == 0)
        st->active_src--;
    if (--st->left_dst[d] == 0)
        st->active_dst--;
}

/* Greedy without seeding is first fit: processing the messages in size order, each goes to the
 * first phase none of whose earlier (in that order) messages shares an edge with it, which is
 * exactly where the phase-by-phase scan puts it. Per directed edge, a bitset of the phases using
 * it and the lowest phase still free; a message ORs the bitsets of its edges from the largest of
 * those lowest free phases. Messages below the threshold only go to the phases the large ones
 * opened; those that fit nowhere form the small phase. */
typedef struct {
    word *bits; /* n_edges rows of nw words */
    int nw;
    int *first_free;
} phase_bits;

static int bits_grow(phase_bits *b, int n_edges)
{
    int nw = b->nw ? 2 * b->nw : 4;
    word *bits = calloc((size_t)n_edges * (size_t)nw, sizeof *bits);
    if (!bits)
        return AAPC_VSCHED_ENOMEM;
    for (int e = 0; e < n_edges && b->bits; e++)
        memcpy(bits + (size_t)e * nw, b->bits + (size_t)e * b->nw, (size_t)b->nw * sizeof *bits);
    free(b->bits);
    b->bits = bits;
    b->nw = nw;
    return AAPC_VSCHED_OK;
}

/* first phase where every edge of x is free (always < 64 * nw: the last word has a free bit) */
static int first_fit(const vs_msgs *m, const phase_bits *b, int x)
{
    const int *e = m->edge + m->estart[x];
    int len = (int)(m->estart[x + 1] - m->estart[x]), start = 0;
    for (int i = 0; i < len; i++)
        if (b->first_free[e[i]] > start)
            start = b->first_free[e[i]];
    for (int w = start / 64; w < b->nw; w++) {
        word v = w == start / 64 ? (((word)1 << (start % 64)) - 1) : 0;
        for (int i = 0; i < len; i++)
            v |= b->bits[(size_t)e[i] * b->nw + w];
        if (~v)
            return 64 * w + lowest_zero(v);
    }
    return 64 * b->nw;
}

static void occupy(const vs_msgs *m, phase_bits *b, int x, int q)
{
    for (long long i = m->estart[x]; i < m->estart[x + 1]; i++) {
        int e = m->edge[i];
        word *row = b->bits + (size_t)e * b->nw;
        row[q / 64] |= (word)1 << (q % 64);
        int f = b->first_free[e];
        while (f < 64 * b->nw && (row[f / 64] >> (f % 64)) & 1)
            f++;
        b->first_free[e] = f;
    }
}

static int greedy_first_fit(const vs_msgs *m, const int *order, long long threshold,
                            int *phase_of, int *n_phases, int *small_phase)
{
    phase_bits b = {NULL, 0, calloc((size_t)m->n_edges, sizeof(int))};
    if (!b.first_free || bits_grow(&b, m->n_edges) != AAPC_VSCHED_OK) {
        free(b.first_free);
        return AAPC_VSCHED_ENOMEM;
    }
    int np = 0, i = 0, k = m->k;
    for (; i < k && m->count[order[i]] >= threshold; i++) {
        int x = order[i], q = first_fit(m, &b, x);
        occupy(m, &b, x, q);
        phase_of[x] = q;
        if (q == np)
            np++;
        if (np >= 64 * b.nw - 1 && bits_grow(&b, m->n_edges) != AAPC_VSCHED_OK) {
            free(b.bits);
            free(b.first_free);
            return AAPC_VSCHED_ENOMEM;
        }
    }
    int large = np;
    for (; i < k; i++) { /* below the threshold: only into the phases already open */
        int x = order[i], q = first_fit(m, &b, x);
        if (q < large) {
            occupy(m, &b, x, q);
            phase_of[x] = q;
        } else {
            phase_of[x] = large;
            *small_phase = large;
            np = large + 1;
        }
    }
    *n_phases = np;
    free(b.bits);
    free(b.first_free);
    return AAPC_VSCHED_OK;
}

/* the switch edges of x (its class's) are all free in phase p */
static int fits_class(const phased_state *st, int x, int p)
{
    const vs_msgs *m = st->m;
    if (!st->by_class)
        return 1;
    for (long long i = m->estart[x + 1] - 1; i >= m->estart[x] && m->edge[i] >= 2 * m->n; i--)
        if (st->stamp[m->edge[i]] == p)
            return 0;
    return 1;
}

/* binary min-heap of classes keyed by pos[cmsg[cur[c]]] (distinct positions) */
static void heap_push(int *h, int *hn, int c, const int *cmsg, const int *cur, const int *pos)
{
    int i = (*hn)++, key = pos[cmsg[cur[c]]];
    while (i > 0) {
        int up = (i - 1) / 2;
        if (pos[cmsg[cur[h[up]]]] <= key)
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = c;
}

static int heap_pop(int *h, int *hn, const int *cmsg, const int *cur, const int *pos)
{
    int top = h[0], n = --(*hn);
    if (n == 0)
        return top;
    int x = h[n], key = pos[cmsg[cur[x]]], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && pos[cmsg[cur[h[c + 1]]]] < pos[cmsg[cur[h[c]]]])
            c++;
        if (pos[cmsg[cur[h[c]]]] >= key)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
    return top;
}

int vs_phased(const vs_msgs *m, long long threshold, int seeded, int *phase_of, int *n_phases,
              int *small_phase)
{
    int k = m->k, n = m->n;
    *n_phases = 0;
    *small_phase = -1;
    if (k == 0)
        return AAPC_VSCHED_OK;
    if (seeded && !m->tmpl)
        return AAPC_VSCHED_ENOTEMPLATE;
    int rc = AAPC_VSCHED_ENOMEM;
    phased_state st = {0};
    st.m = m;
    st.phase_of = phase_of;
    st.live = k;
    int *order = malloc((size_t)k * sizeof *order);
    int *bucket = NULL, *bstart = NULL, *pos = NULL, *cls_of = NULL, *cls_id = NULL;
    int *cstart = NULL, *cmsg = NULL, *chead = NULL, *cend = NULL, *cur = NULL, *live_cls = NULL;
    int *heap = NULL;
    st.stamp = malloc((size_t)m->n_edges * sizeof *st.stamp);
    st.left_src = calloc((size_t)n, sizeof *st.left_src);
    st.left_dst = calloc((size_t)n, sizeof *st.left_dst);
    st.placed = calloc((size_t)k, 1);
    if (!order || !st.stamp || !st.left_src || !st.left_dst || !st.placed)
        goto done;
    for (int e = 0; e < m->n_edges; e++)
        st.stamp[e] = -1;
    for (int x = 0; x < k; x++) {
        st.active_src += st.left_src[m->src[x]]++ == 0;
        st.active_dst += st.left_dst[m->dst[x]]++ == 0;
    }
    if (size_sort(m->count, m->tmpl, order, k) != AAPC_VSCHED_OK)
        goto done;
    if (!seeded) {
        rc = greedy_first_fit(m, order, threshold, phase_of, n_phases, small_phase);
        goto done;
    }
    { /* messages grouped by template phase (counting sort) */
        int top = 0;
        for (int x = 0; x < k; x++)
            if (m->tmpl[x] > top)
                top = m->tmpl[x];
        bucket = malloc((size_t)k * sizeof *bucket);
        bstart = calloc((size_t)top + 2, sizeof *bstart);
        if (!bucket || !bstart)
            goto done;
        for (int x = 0; x < k; x++)
            bstart[m->tmpl[x] + 1]++;
        for (int t = 0; t <= top; t++)
            bstart[t + 1] += bstart[t];
        for (int x = 0; x < k; x++)
            bucket[bstart[m->tmpl[x]]++] = x;
        for (int t = top; t > 0; t--)
            bstart[t] = bstart[t - 1];
        bstart[0] = 0;
    }
    /* Classes: messages with the same switch edges (same pair of machine switches; every
     * message within one switch in class 0, which no switch edge can block). Placing a message
     * uses all of its class's switch edges, so a class blocked in a phase stays blocked. Each
     * class lists its messages in order; the scan merges the unblocked classes by position. */
    pos = malloc((size_t)k * sizeof *pos);
    cls_of = malloc((size_t)k * sizeof *cls_of);
    cls_id = malloc((size_t)m->n_nodes * sizeof *cls_id);
    if (!pos || !cls_of || !cls_id)
        goto done;
    int n_sw = 0;
    for (int v = 0; v < m->n_nodes; v++)
        cls_id[v] = -1;
    for (int x = 0; x < k; x++) {
        int sa = m->sw_of[m->src[x]], sb = m->sw_of[m->dst[x]];
        if (cls_id[sa] < 0)
            cls_id[sa] = n_sw++;
        if (cls_id[sb] < 0)
            cls_id[sb] = n_sw++;
    }
    /* beyond 2^22 classes (over 2048 switches with machines): one class, no class blocking */
    st.by_class = (long long)n_sw * n_sw + 1 <= (1LL << 22);
    int ncls = st.by_class ? n_sw * n_sw + 1 : 1;
    for (int x = 0; x < k; x++) {
        int sa = cls_id[m->sw_of[m->src[x]]], sb = cls_id[m->sw_of[m->dst[x]]];
        cls_of[x] = sa == sb || !st.by_class ? 0 : 1 + sa * n_sw + sb;
    }
    cstart = calloc((size_t)ncls + 1, sizeof *cstart);
    st.cls_alive = calloc((size_t)ncls, sizeof *st.cls_alive);
    cmsg = malloc((size_t)k * sizeof *cmsg);
    chead = malloc((size_t)ncls * sizeof *chead);
    cend = malloc((size_t)ncls * sizeof *cend);
    cur = malloc((size_t)ncls * sizeof *cur);
    live_cls = malloc((size_t)ncls * sizeof *live_cls);
    heap = malloc((size_t)ncls * sizeof *heap);
    if (!cstart || !st.cls_alive || !cmsg || !chead || !cend || !cur || !live_cls || !heap)
        goto done;
    st.cls_of = cls_of;
    for (int x = 0; x < k; x++)
        cstart[cls_of[x] + 1]++;
    for (int c = 0; c < ncls; c++) {
        st.cls_alive[c] = cstart[c + 1];
        cstart[c + 1] += cstart[c];
    }
    for (int c = 0; c < ncls; c++)
        chead[c] = cend[c] = cstart[c];
    for (int i = 0; i < k; i++) { /* in order: each class list ascending by position */
        int x = order[i];
        pos[x] = i;
        cmsg[cend[cls_of[x]]++] = x;
    }
    int n_live_cls = 0;
    for (int c = 0; c < ncls; c++)
        if (st.cls_alive[c] > 0)
            live_cls[n_live_cls++] = c;
    int head = 0, p = 0;
    while (st.live > 0) {
        while (st.placed[order[head]])
            head++;
        int x0 = order[head];
        if (m->count[x0] < threshold) { /* the small-message phase */
            for (int i = head; i < k; i++)
                if (!st.placed[order[i]])
                    phase_of[order[i]] = p;
            st.live = 0;
            *small_phase = p;
            p++;
            break;
        }
        int act_s = st.active_src, act_d = st.active_dst;
        st.used_src = st.used_dst = 0;
        int t = m->tmpl[x0];
        for (int i = bstart[t]; i < bstart[t + 1]; i++)
            if (!st.placed[bucket[i]])
                place(&st, bucket[i], p);
        /* heap of the unblocked classes, keyed by the position of their next message */
        int hn = 0, o = 0;
        for (int j = 0; j < n_live_cls; j++) {
            int c = live_cls[j];
            if (st.cls_alive[c] == 0)
                continue;
            live_cls[o++] = c;
            while (st.placed[cmsg[chead[c]]])
                chead[c]++;
            if (cend[c] - chead[c] > 2 * st.cls_alive[c] + 16) { /* drop scheduled entries */
                int w = chead[c];
                for (int i = chead[c]; i < cend[c]; i++)
                    if (!st.placed[cmsg[i]])
                        cmsg[w++] = cmsg[i];
                cend[c] = w;
            }
            if (!fits_class(&st, cmsg[chead[c]], p))
                continue;
            cur[c] = chead[c];
            heap_push(heap, &hn, c, cmsg, cur, pos);
        }
        n_live_cls = o;
        while (hn > 0 && st.used_src < act_s && st.used_dst < act_d) {
            int c = heap_pop(heap, &hn, cmsg, cur, pos);
            int x = cmsg[cur[c]];
            if (!fits_class(&st, x, p))
                continue; /* a switch edge of the class got used: all of it is blocked */
            if (fits(&st, x, p))
                place(&st, x, p);
            int i = cur[c] + 1;
            while (i < cend[c] && st.placed[cmsg[i]])
                i++;
            if (i < cend[c]) {
                cur[c] = i;
                heap_push(heap, &hn, c, cmsg, cur, pos);
            }
        }
        p++;
    }
    *n_phases = p;
    rc = AAPC_VSCHED_OK;
done:
    free(order);
    free(bucket);
    free(bstart);
    free(pos);
    free(cls_of);
    free(cls_id);
    free(cstart);
    free(st.cls_alive);
    free(cmsg);
    free(chead);
    free(cend);
    free(cur);
    free(live_cls);
    free(heap);
    free(st.stamp);
    free(st.left_src);
    free(st.left_dst);
    free(st.placed);
    return rc;
}
