/*
 * aapc_vtables.c: executor tables for an Alltoallv schedule computed at run time (levels 1, 2).
 *
 * Algorithm: the C counterpart of aapcgen/codegen/render.py rank_tables for a piece schedule.
 *   - send (receive) entries: the pieces stably counting-sorted by source (destination); the
 *     schedule is sorted by phase, so each machine's entries are in phase order;
 *   - sender-all / receiver-all: for every directed tree edge, its pieces in phase order; each
 *     consecutive pair (u, v) in different phases whose firing machine (src(u) for sender-based,
 *     dst(u) for receiver-based) differs from src(v) gives a sync message "fire after u's
 *     send/receive completes, wait for it before v's send starts" (seed 002 section 5). Pairs
 *     are de-duplicated; the exact transitive reduction of the offline generator is not run
 *     (its cost is not worth paying per call), only the pairs implied by a machine's own
 *     program order are dropped;
 *   - a machine with several entries in one phase (the small-message phase) fires after the
 *     last and waits before the first of them (conservative).
 * Cost: O(P d + S log S) time and O(P d) memory for P pieces, tree depth d and S <= P d sync
 * pairs; no communication.
 */
#include "aapc_vtables.h"

#include <stdlib.h>
#include <string.h>

static void *take(aapc_vtables_t *t, size_t count, size_t size)
{
    for (size_t i = 0; i < sizeof t->mem / sizeof t->mem[0]; i++) {
        if (t->mem[i] == NULL) {
            t->mem[i] = calloc(count ? count : 1, size);
            return t->mem[i];
        }
    }
    return NULL;
}

void aapc_vtables_free(aapc_vtables_t *t)
{
    for (size_t i = 0; i < sizeof t->mem / sizeof t->mem[0]; i++) {
        free(t->mem[i]);
        t->mem[i] = NULL;
    }
}

/* Entries: pieces stably sorted by owner (src or dst). */
static int entries(aapc_vtables_t *t, const aapc_vsched *vs, const int *owner, const int *peer,
                   int32_t **off, int32_t **phase, int32_t **peer_out, int64_t **pos,
                   int64_t **len, int32_t **entry_of)
{
    int n = vs->n_machines;
    long long np = vs->n_pieces;
    *off = take(t, (size_t)n + 1, sizeof **off);
    *phase = take(t, (size_t)np, sizeof **phase);
    *peer_out = take(t, (size_t)np, sizeof **peer_out);
    *pos = take(t, (size_t)np, sizeof **pos);
    *len = take(t, (size_t)np, sizeof **len);
    *entry_of = take(t, (size_t)np, sizeof **entry_of);
    if (!*off || !*phase || !*peer_out || !*pos || !*len || !*entry_of)
        return -1;
    for (long long k = 0; k < np; k++)
        (*off)[owner[k] + 1]++;
    for (int m = 0; m < n; m++)
        (*off)[m + 1] += (*off)[m];
    int32_t *next = malloc(sizeof *next * (size_t)(n ? n : 1));
    if (next == NULL)
        return -1;
    memcpy(next, *off, sizeof *next * (size_t)n);
    for (long long k = 0; k < np; k++) {
        int32_t e = next[owner[k]]++;
        (*phase)[e] = vs->phase[k];
        (*peer_out)[e] = peer[k];
        (*pos)[e] = vs->offset[k];
        (*len)[e] = vs->length[k];
        (*entry_of)[k] = e;
    }
    free(next);
    return 0;
}

/* first/last entry of the run of equal (owner, phase) holding each entry (first may be NULL) */
static void runs(const int32_t *off, const int32_t *phase, int n, int32_t *first, int32_t *last)
{
    for (int m = 0; m < n; m++) {
        for (int32_t e = off[m]; e < off[m + 1];) {
            int32_t f = e;
            while (e < off[m + 1] && phase[e] == phase[f])
                e++;
            for (int32_t x = f; x < e; x++) {
                if (first != NULL)
                    first[x] = f;
                last[x] = e - 1;
            }
        }
    }
}

struct vsync {
    int64_t event, to, target, frm, post;
};

static int by_fire(const void *a, const void *b)
{
    const struct vsync *x = a, *y = b;
    if (x->event != y->event)
        return x->event < y->event ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    return (x->target > y->target) - (x->target < y->target);
}

static int by_post(const void *a, const void *b)
{
    const struct vsync *x = a, *y = b;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    if (x->frm != y->frm)
        return x->frm < y->frm ? -1 : 1;
    return by_fire(a, b);
}

static int by_wait(const void *a, const void *b)
{
    const struct vsync *x = a, *y = b;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    return (x->post > y->post) - (x->post < y->post);
}

/* Directed edges of the path src -> dst: 2*node (up from node), 2*node+1 (down into node). */
static int path(const aapc_vtree *tree, const int *depth, int a, int b, int *out)
{
    int k = 0;
    while (depth[a] > depth[b]) {
        out[k++] = 2 * a;
        a = tree->parent[a];
    }
    while (depth[b] > depth[a]) {
        out[k++] = 2 * b + 1;
        b = tree->parent[b];
    }
    while (a != b) {
        out[k++] = 2 * a;
        out[k++] = 2 * b + 1;
        a = tree->parent[a];
        b = tree->parent[b];
    }
    return k;
}

static int node_depths(const aapc_vtree *tree, int *depth)
{
    for (int v = 0; v < tree->n_nodes; v++)
        depth[v] = -1;
    for (int v = 0; v < tree->n_nodes; v++) {
        int d = 0, u = v;
        while (u >= 0 && depth[u] < 0 && d <= tree->n_nodes) {
            u = tree->parent[u];
            d++;
        }
        if (d > tree->n_nodes)
            return -1; /* a cycle: not a tree */
        int base = u >= 0 ? depth[u] : -1;
        for (u = v; u >= 0 && depth[u] < 0; u = tree->parent[u])
            depth[u] = base + d--;
    }
    return 0;
}

/* Sync pairs from the per-edge chains, de-duplicated on (event, to, target). */
static long long chain_syncs(const aapc_vsched *vs, const aapc_vtree *tree, int sync,
                             const int32_t *send_of, const int32_t *recv_of,
                             const int32_t *sfirst, const int32_t *slast,
                             const int32_t *rlast, struct vsync **out)
{
    long long np = vs->n_pieces, n_uses = 0, n = 0;
    int n_edges = 2 * tree->n_nodes;
    int *depth = malloc(sizeof *depth * (size_t)tree->n_nodes);
    int *buf = malloc(sizeof *buf * (size_t)(n_edges + 2));
    long long *cnt = calloc((size_t)n_edges + 1, sizeof *cnt);
    long long *uses = NULL;
    char *cut = NULL;
    *out = NULL;
    if (!depth || !buf || !cnt || node_depths(tree, depth) != 0)
        goto fail;
    for (long long k = 0; k < np; k++) {
        int len = path(tree, depth, vs->src[k], vs->dst[k], buf);
        for (int i = 0; i < len; i++)
            cnt[buf[i] + 1]++;
        n_uses += len;
    }
    for (int e = 0; e < n_edges; e++)
        cnt[e + 1] += cnt[e];
    uses = malloc(sizeof *uses * (size_t)(n_uses ? n_uses : 1));
    *out = malloc(sizeof **out * (size_t)(n_uses ? n_uses : 1));
    if (!uses || !*out)
        goto fail;
    for (long long k = 0; k < np; k++) { /* pieces in phase order: each edge's list too */
        int len = path(tree, depth, vs->src[k], vs->dst[k], buf);
        for (int i = 0; i < len; i++)
            uses[cnt[buf[i]]++] = k;
    }
    cut = calloc((size_t)n_uses + 1, 1);
    if (!cut)
        goto fail;
    for (int e = 0; e < n_edges; e++) /* cnt[e] is now the end of edge e's list */
        cut[cnt[e]] = 1;
    for (long long i = 0; i + 1 < n_uses; i++) {
        long long u = uses[i], v = uses[i + 1];
        int fires_at = sync == AAPC_VSYNC_SENDER ? vs->src[u] : vs->dst[u];
        if (cut[i + 1] || vs->phase[u] >= vs->phase[v] || fires_at == vs->src[v])
            continue;
        struct vsync s;
        s.frm = fires_at;
        s.event = sync == AAPC_VSYNC_SENDER ? slast[send_of[u]] : rlast[recv_of[u]];
        s.to = vs->src[v];
        s.target = sfirst[send_of[v]];
        s.post = 0;
        (*out)[n++] = s;
    }
    free(depth);
    free(buf);
    free(cnt);
    free(uses);
    free(cut);
    return n;
fail:
    free(depth);
    free(buf);
    free(cnt);
    free(uses);
    free(cut);
    free(*out);
    *out = NULL;
    return -1;
}

int aapc_vtables_build(const aapc_vsched *vs, const aapc_vtree *tree, int sync,
                       const char *name, const char *const *hosts, aapc_vtables_t *t)
{
    int n = vs->n_machines;
    long long np = vs->n_pieces;
    int32_t *send_of, *recv_of;
    aapc_schedule_t *s = &t->sched;
    int32_t *send_off, *send_phase, *send_peer, *recv_off, *recv_phase, *recv_peer;
    int64_t *send_pos, *send_len, *recv_pos, *recv_len;

    memset(t, 0, sizeof *t);
    if (entries(t, vs, vs->src, vs->dst, &send_off, &send_phase, &send_peer, &send_pos,
                &send_len, &send_of) != 0 ||
        entries(t, vs, vs->dst, vs->src, &recv_off, &recv_phase, &recv_peer, &recv_pos,
                &recv_len, &recv_of) != 0)
        goto fail;
    s->name = name;
    s->nmachines = n;
    s->nphases = vs->n_phases;
    s->sync_kind = sync == AAPC_VSYNC_SENDER     ? AAPC_SYNC_SENDER
                   : sync == AAPC_VSYNC_RECEIVER ? AAPC_SYNC_RECEIVER
                                                 : AAPC_SYNC_NONE;
    s->barrier_every = sync == AAPC_VSYNC_BARRIER ? 1 : 0;
    s->send_off = send_off;
    s->send_phase = send_phase;
    s->send_peer = send_peer;
    s->recv_off = recv_off;
    s->recv_phase = recv_phase;
    s->recv_peer = recv_peer;
    s->send_pos = send_pos;
    s->send_len = send_len;
    s->recv_pos = recv_pos;
    s->recv_len = recv_len;
    s->hosts = hosts;
    if (sync != AAPC_VSYNC_SENDER && sync != AAPC_VSYNC_RECEIVER)
        return 0;

    int32_t *sfirst = take(t, (size_t)np, sizeof *sfirst), *slast = take(t, (size_t)np, sizeof *slast);
    int32_t *rlast = malloc(sizeof *rlast * (size_t)(np ? np : 1));
    struct vsync *syncs = NULL;
    long long ns = -1;
    if (sfirst && slast && rlast) {
        runs(send_off, send_phase, n, sfirst, slast);
        runs(recv_off, recv_phase, n, NULL, rlast);
        ns = chain_syncs(vs, tree, sync, send_of, recv_of, sfirst, slast, rlast, &syncs);
    }
    free(rlast);
    if (ns < 0)
        goto fail;
    qsort(syncs, (size_t)ns, sizeof *syncs, by_fire);
    long long u = 0; /* unique (event, to, target) */
    for (long long i = 0; i < ns; i++)
        if (u == 0 || by_fire(&syncs[u - 1], &syncs[i]) != 0)
            syncs[u++] = syncs[i];
    ns = u;
    t->n_syncs = ns;
    int32_t *fire_off = take(t, (size_t)np + 1, sizeof *fire_off);
    int32_t *fire_peer = take(t, (size_t)ns, sizeof *fire_peer);
    int32_t *syncin_off = take(t, (size_t)n + 1, sizeof *syncin_off);
    int32_t *syncin_peer = take(t, (size_t)ns, sizeof *syncin_peer);
    int32_t *wait_off = take(t, (size_t)np + 1, sizeof *wait_off);
    int32_t *wait_idx = take(t, (size_t)ns, sizeof *wait_idx);
    if (!fire_off || !fire_peer || !syncin_off || !syncin_peer || !wait_off || !wait_idx) {
        free(syncs);
        goto fail;
    }
    for (long long i = 0; i < ns; i++) { /* fire order: (event, to, target) */
        fire_off[syncs[i].event + 1]++;
        fire_peer[i] = (int32_t)syncs[i].to;
    }
    qsort(syncs, (size_t)ns, sizeof *syncs, by_post);
    for (long long i = 0; i < ns; i++)
        syncin_off[syncs[i].to + 1]++;
    for (int m = 0; m < n; m++)
        syncin_off[m + 1] += syncin_off[m];
    for (long long i = 0; i < ns; i++) {
        syncin_peer[i] = (int32_t)syncs[i].frm;
        syncs[i].post = i - syncin_off[syncs[i].to];
    }
    qsort(syncs, (size_t)ns, sizeof *syncs, by_wait);
    for (long long i = 0; i < ns; i++) {
        wait_off[syncs[i].target + 1]++;
        wait_idx[i] = (int32_t)syncs[i].post;
    }
    for (long long e = 0; e < np; e++) {
        fire_off[e + 1] += fire_off[e];
        wait_off[e + 1] += wait_off[e];
    }
    free(syncs);
    s->syncin_off = syncin_off;
    s->syncin_peer = syncin_peer;
    s->wait_off = wait_off;
    s->wait_idx = wait_idx;
    s->fire_off = fire_off;
    s->fire_peer = fire_peer;
    return 0;
fail:
    aapc_vtables_free(t);
    return -1;
}
