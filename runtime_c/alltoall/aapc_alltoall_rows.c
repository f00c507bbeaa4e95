/*
 * aapc_alltoall_rows.c: the executor rows of ONE rank for a phase schedule computed at run time,
 * with its pair-wise synchronisation (sender-all or receiver-all, seed 002 section 5).
 *
 * Algorithm: every message's tree path (up-edges from the source to the lowest common
 * ancestor, down-edges to the destination) is listed once per directed edge, messages in phase
 * order (two counting passes over the phase-sorted messages: each edge's list comes out sorted
 * by phase, then source; at most the link's capacity per phase). A link of capacity c has c
 * lanes (the k-th message of a phase on it is in lane k); a sync joins two consecutive
 * messages u, v of one lane of one edge: it fires when u's send (sender-all) or receive
 * (receiver-all) completes on its machine, and v's source waits for it before starting v,
 * unless the two are the same machine (its own program order already orders them). This rank
 * keeps only its own syncs: the ones it fires (the next message after each of its events, by
 * binary search in the edge's list) and the ones it waits for (the message before each of its
 * sends); duplicates are removed. The same syncs as runtime_c/alltoallv/aapc_vtables.c builds for
 * every rank (tests/test_cluster_c.py compares them), without that file's global sorts.
 * With a window of w phases (AAPC_WINDOW, aapc_alltoall_cluster.c) a sync joins each message to
 * the one w places later in its lane instead (lane_walk), the Python planner's pairs before its
 * redundancy removal (tests/test_vtables_contract.py).
 * Cost: O(P^2 d) time for P ranks and tree depth d (plus O(P d w c) lane steps for a window w
 * on links of capacity c), 4 P^2 d bytes for the edge lists (the largest allocation) plus
 * O(P d) for this rank's rows; no communication.
 * Where the job's phases are seed 002's (one message per link and phase), aapc_rows_build_seed
 * (at the end of this file) gives the same rows without storing the phases or the edge lists:
 * O(P^2 d) time, O(n_nodes w + P d) memory (tests/test_vtables_contract.py compares the two).
 */
#include "aapc_alltoall_rows.h"

#include <stdlib.h>
#include <string.h>

static void *take(aapc_rows_t *r, size_t count, size_t size)
{
    for (size_t i = 0; i < sizeof r->mem / sizeof r->mem[0]; i++)
        if (r->mem[i] == NULL)
            return r->mem[i] = calloc(count ? count : 1, size);
    return NULL;
}

void aapc_rows_free(aapc_rows_t *r)
{
    for (size_t i = 0; i < sizeof r->mem / sizeof r->mem[0]; i++) {
        free(r->mem[i]);
        r->mem[i] = NULL;
    }
}

/* Directed edges of s -> d: 2c for the up-edge of node c, 2c + 1 for its down-edge. */
static int path(const int32_t *parent, const int32_t *depth, int32_t a, int32_t b, int32_t *buf)
{
    int n = 0;
    while (depth[a] > depth[b]) {
        buf[n++] = 2 * a;
        a = parent[a];
    }
    while (depth[b] > depth[a]) {
        buf[n++] = 2 * b + 1;
        b = parent[b];
    }
    while (a != b) {
        buf[n++] = 2 * a;
        a = parent[a];
        buf[n++] = 2 * b + 1;
        b = parent[b];
    }
    return n;
}

/* A sync seen from this rank: (peer machine, trigger phase, target phase). */
struct ysync {
    int32_t peer, trigger, target;
};

static int by_trigger_peer_target(const void *x, const void *y)
{
    const struct ysync *a = x, *b = y;
    if (a->trigger != b->trigger)
        return (a->trigger > b->trigger) - (a->trigger < b->trigger);
    if (a->peer != b->peer)
        return (a->peer > b->peer) - (a->peer < b->peer);
    return (a->target > b->target) - (a->target < b->target);
}

static int by_peer_trigger_target(const void *x, const void *y)
{
    const struct ysync *a = x, *b = y;
    if (a->peer != b->peer)
        return (a->peer > b->peer) - (a->peer < b->peer);
    if (a->trigger != b->trigger)
        return (a->trigger > b->trigger) - (a->trigger < b->trigger);
    return (a->target > b->target) - (a->target < b->target);
}

/* Sort by `cmp` and drop duplicates; returns the new count. */
static int64_t sort_unique(struct ysync *y, int64_t n, int (*cmp)(const void *, const void *))
{
    qsort(y, (size_t)n, sizeof *y, cmp);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (k == 0 || cmp(&y[k - 1], &y[i]) != 0)
            y[k++] = y[i];
    return k;
}

/* Position of the message of `phase` in an edge's phase-sorted list. */
static int64_t find(const int32_t *list, int64_t n, const int32_t *phase_of, int32_t phase)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (phase_of[list[mid]] < phase)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Lanes: a link that carries c > 1 messages in a phase (capacities, cluster/aapc_cluster.h)
   has c lanes; the messages of one phase on it take lanes 0, 1, ... in their list order (by
   source, as aapcgen/alltoall/sync.py), and each lane is a chain of its own. With one message
   per link and phase every lane is lane 0 and the chain is the edge's list. */

/* Position of message k in an edge's list; *start: the first message of its phase. */
static int64_t locate(const int32_t *list, int64_t n, const int32_t *phase_of, int32_t k,
                      int64_t *start)
{
    int64_t i = *start = find(list, n, phase_of, phase_of[k]);
    while (list[i] != k)
        i++;
    return i;
}

/* The next message of the lane after the group of phase starting at `start`, or -1. */
static int64_t lane_next(const int32_t *list, int64_t n, const int32_t *phase_of, int64_t start,
                         int64_t lane)
{
    int64_t i = start;
    int32_t p = phase_of[list[i]];
    while (i < n && phase_of[list[i]] == p)
        i++;
    while (i < n) {
        int64_t first = i;
        p = phase_of[list[i]];
        while (i < n && phase_of[list[i]] == p)
            i++;
        if (i - first > lane)
            return first + lane;
    }
    return -1;
}

/* The message of the lane before the group of phase starting at `start`, or -1. */
static int64_t lane_prev(const int32_t *list, const int32_t *phase_of, int64_t start, int64_t lane)
{
    int64_t i = start;
    while (i > 0) {
        int64_t end = i;
        int32_t p = phase_of[list[i - 1]];
        while (i > 0 && phase_of[list[i - 1]] == p)
            i--;
        if (end - i > lane)
            return i + lane;
    }
    return -1;
}

/* The message `steps` places after (steps > 0) or before (steps < 0) message `at` in its lane,
   whose phase group starts at `start`; -1 when the lane ends first. */
static int64_t lane_walk(const int32_t *list, int64_t n, const int32_t *phase_of, int64_t start,
                         int64_t lane, int32_t steps)
{
    int64_t at = start + lane;
    for (int32_t i = 0; i < (steps < 0 ? -steps : steps) && at >= 0; i++)
        at = steps > 0 ? lane_next(list, n, phase_of, at - lane, lane)
                       : lane_prev(list, phase_of, at - lane, lane);
    return at;
}

/* The entry of a row (phases strictly increasing) in `phase`. */
static int32_t entry_of(const int32_t *phases, int32_t n, int32_t phase)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (phases[mid] < phase)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Every node's depth (the top 0); returns the largest. */
static int32_t depths(const int32_t *parent, int32_t nn, int32_t *depth)
{
    int32_t max_depth = 0;
    for (int32_t v = 0; v < nn; v++)
        depth[v] = -1;
    for (int32_t v = 0; v < nn; v++) { /* walk up to a known node, then back down */
        int32_t u = v, d = 0;
        while (u >= 0 && depth[u] < 0) {
            u = parent[u];
            d++;
        }
        int32_t base = u < 0 ? -1 : depth[u];
        for (u = v; u >= 0 && depth[u] < 0; u = parent[u])
            depth[u] = base + d--;
        max_depth = depth[v] > max_depth ? depth[v] : max_depth;
    }
    return max_depth;
}

/* This rank's rows, to fill (the schedule's are read-only). */
struct own_rows {
    int32_t *send_phase, *send_peer, *recv_phase, *recv_peer;
};

/* The schedule's header and this rank's rows of ns sends and nr receives (*o to fill); only
   rank me's rows are non-empty. Returns 0, or -1 when out of memory. */
static int setup_rows(aapc_rows_t *out, const char *name, int32_t P, int32_t nphases, int sync,
                      int32_t window, int me, int32_t ns, int32_t nr, struct own_rows *o)
{
    aapc_schedule_t *s = &out->sched;
    s->name = name;
    s->nmachines = P;
    s->nphases = nphases;
    s->sync_kind = sync == AAPC_VSYNC_SENDER     ? AAPC_SYNC_SENDER
                   : sync == AAPC_VSYNC_RECEIVER ? AAPC_SYNC_RECEIVER
                                                 : AAPC_SYNC_NONE;
    s->barrier_every = sync == AAPC_VSYNC_BARRIER ? 1 : 0;
    s->window = window > 1 && sync != AAPC_VSYNC_BARRIER ? window : 1;
    int32_t *send_off = take(out, (size_t)P + 1, sizeof *send_off);
    int32_t *recv_off = take(out, (size_t)P + 1, sizeof *recv_off);
    s->send_phase = o->send_phase = take(out, (size_t)ns, sizeof *o->send_phase);
    s->send_peer = o->send_peer = take(out, (size_t)ns, sizeof *o->send_peer);
    s->recv_phase = o->recv_phase = take(out, (size_t)nr, sizeof *o->recv_phase);
    s->recv_peer = o->recv_peer = take(out, (size_t)nr, sizeof *o->recv_peer);
    if (!send_off || !recv_off || !o->send_phase || !o->send_peer || !o->recv_phase ||
        !o->recv_peer)
        return -1;
    for (int32_t m = me + 1; m <= P; m++) {
        send_off[m] = ns;
        recv_off[m] = nr;
    }
    s->send_off = send_off;
    s->recv_off = recv_off;
    return 0;
}

/* The syncs this rank fires (fo) and waits for (in), deduplicated, as the executor's lists of
   s (whose rows are set); frees fo and in. Returns 0, or -1 when out of memory. */
static int finish_syncs(aapc_rows_t *out, struct ysync *fo, int64_t nfo, struct ysync *in,
                        int64_t nin, int32_t ns, int32_t nr, int me)
{
    aapc_schedule_t *s = &out->sched;
    int32_t P = s->nmachines;
    int receiver = s->sync_kind == AAPC_SYNC_RECEIVER;
    int32_t nev = receiver ? nr : ns;
    const int32_t *send_phase = s->send_phase, *recv_phase = s->recv_phase;
    nfo = sort_unique(fo, nfo, by_trigger_peer_target); /* the firing order */
    nin = sort_unique(in, nin, by_peer_trigger_target); /* the posting order */

    /* fire lists per event entry; postings in (source, trigger, target) order; waits */
    int32_t *fire_off = take(out, (size_t)nev + 1, sizeof *fire_off);
    int32_t *fire_peer = take(out, (size_t)nfo, sizeof *fire_peer);
    int32_t *syncin_off = take(out, (size_t)P + 1, sizeof *syncin_off);
    int32_t *syncin_peer = take(out, (size_t)nin, sizeof *syncin_peer);
    int32_t *wait_off = take(out, (size_t)ns + 1, sizeof *wait_off);
    int32_t *wait_idx = take(out, (size_t)nin, sizeof *wait_idx);
    if (!fire_off || !fire_peer || !syncin_off || !syncin_peer || !wait_off || !wait_idx) {
        free(fo);
        free(in);
        return -1;
    }
    const int32_t *ev_phase = receiver ? recv_phase : send_phase;
    for (int64_t i = 0; i < nfo; i++) {
        fire_off[entry_of(ev_phase, nev, fo[i].trigger) + 1]++;
        fire_peer[i] = fo[i].peer; /* fo is in (trigger, peer, target) order: entry order */
    }
    for (int32_t e = 0; e < nev; e++)
        fire_off[e + 1] += fire_off[e];
    for (int32_t m = me + 1; m <= P; m++)
        syncin_off[m] = (int32_t)nin;
    for (int64_t j = 0; j < nin; j++)
        syncin_peer[j] = in[j].peer;
    for (int64_t j = 0; j < nin; j++) /* count waits per send entry (by target phase) */
        wait_off[entry_of(send_phase, ns, in[j].target) + 1]++;
    for (int32_t e = 0; e < ns; e++)
        wait_off[e + 1] += wait_off[e];
    int32_t *wfill = calloc((size_t)ns + 1, sizeof *wfill);
    if (!wfill) {
        free(fo);
        free(in);
        return -1;
    }
    for (int64_t j = 0; j < nin; j++) { /* posting order within each send entry's list */
        int32_t e = entry_of(send_phase, ns, in[j].target);
        wait_idx[wait_off[e] + wfill[e]++] = (int32_t)j;
    }
    free(wfill);
    free(fo);
    free(in);
    s->fire_off = fire_off;
    s->fire_peer = fire_peer;
    s->syncin_off = syncin_off;
    s->syncin_peer = syncin_peer;
    s->wait_off = wait_off;
    s->wait_idx = wait_idx;
    out->n_syncs_in = nin;
    out->n_syncs_out = nfo;
    return 0;
}

int aapc_rows_build(const aapc_job_phases_t *ph, const aapc_job_tree_t *tree, int sync,
                    int32_t window, int me, const char *name, aapc_rows_t *out)
{
    memset(out, 0, sizeof *out);
    int32_t P = ph->n_ranks, nn = tree->n_nodes;
    int64_t M = ph->n_messages;
    const int32_t *parent = tree->parent;
    aapc_schedule_t *s = &out->sched;
    int32_t *depth = take(out, (size_t)nn, sizeof *depth);
    int32_t *buf = take(out, (size_t)2 * (size_t)nn + 2, sizeof *buf);
    if (!depth || !buf)
        goto nomem;
    int32_t max_depth = depths(parent, nn, depth);

    /* this rank's sends and receives, in phase order (the messages are sorted by phase) */
    int32_t ns = 0, nr = 0;
    for (int64_t k = 0; k < M; k++) {
        ns += ph->src[k] == me;
        nr += ph->dst[k] == me;
    }
    int64_t *mine_s = take(out, (size_t)ns, sizeof *mine_s);
    int64_t *mine_r = take(out, (size_t)nr, sizeof *mine_r);
    struct own_rows o;
    if (!mine_s || !mine_r ||
        setup_rows(out, name, P, ph->n_phases, sync, window, me, ns, nr, &o) != 0)
        goto nomem;
    ns = nr = 0;
    for (int64_t k = 0; k < M; k++) {
        if (ph->src[k] == me)
            mine_s[ns++] = k;
        if (ph->dst[k] == me)
            mine_r[nr++] = k;
    }
    int32_t w = s->window;
    for (int32_t e = 0; e < ns; e++) {
        o.send_phase[e] = ph->phase[mine_s[e]];
        o.send_peer[e] = ph->dst[mine_s[e]];
    }
    for (int32_t e = 0; e < nr; e++) {
        o.recv_phase[e] = ph->phase[mine_r[e]];
        o.recv_peer[e] = ph->src[mine_r[e]];
    }
    if (s->sync_kind == AAPC_SYNC_NONE)
        return 0;

    /* every directed edge's messages in phase order */
    int64_t *eoff = take(out, (size_t)2 * (size_t)nn + 1, sizeof *eoff);
    if (!eoff)
        goto nomem;
    for (int64_t k = 0; k < M; k++) {
        int len = path(parent, depth, ph->src[k], ph->dst[k], buf);
        for (int i = 0; i < len; i++)
            eoff[buf[i] + 1]++;
    }
    for (int32_t e = 0; e < 2 * nn; e++)
        eoff[e + 1] += eoff[e];
    int32_t *list = malloc((size_t)(eoff[2 * nn] ? eoff[2 * nn] : 1) * sizeof *list);
    int64_t *fill = calloc((size_t)2 * (size_t)nn, sizeof *fill);
    if (!list || !fill) {
        free(list);
        free(fill);
        goto nomem;
    }
    for (int64_t k = 0; k < M; k++) {
        int len = path(parent, depth, ph->src[k], ph->dst[k], buf);
        for (int i = 0; i < len; i++)
            list[eoff[buf[i]] + fill[buf[i]]++] = (int32_t)k;
    }
    free(fill);

    /* syncs this rank fires (after its events) and waits for (before its sends) */
    int receiver = s->sync_kind == AAPC_SYNC_RECEIVER;
    const int64_t *events = receiver ? mine_r : mine_s;
    int32_t nev = receiver ? nr : ns;
    size_t per_message = 2 * (size_t)max_depth; /* at most one sync per edge of a path */
    struct ysync *fo = malloc(((size_t)nev * per_message + 1) * sizeof *fo);
    struct ysync *in = malloc(((size_t)ns * per_message + 1) * sizeof *in);
    if (!fo || !in) {
        free(list);
        free(fo);
        free(in);
        goto nomem;
    }
    int64_t nfo = 0, nin = 0;
    for (int32_t i = 0; i < nev; i++) {
        int64_t u = events[i];
        int len = path(parent, depth, ph->src[u], ph->dst[u], buf);
        for (int j = 0; j < len; j++) {
            const int32_t *l = list + eoff[buf[j]];
            int64_t n = eoff[buf[j] + 1] - eoff[buf[j]];
            int64_t start, lane = locate(l, n, ph->phase, (int32_t)u, &start) - start;
            int64_t next = lane_walk(l, n, ph->phase, start, lane, w);
            if (next >= 0 && ph->src[l[next]] != me)
                fo[nfo++] = (struct ysync){ph->src[l[next]], ph->phase[u], ph->phase[l[next]]};
        }
    }
    for (int32_t i = 0; i < ns; i++) {
        int64_t v = mine_s[i];
        int len = path(parent, depth, ph->src[v], ph->dst[v], buf);
        for (int j = 0; j < len; j++) {
            const int32_t *l = list + eoff[buf[j]];
            int64_t n = eoff[buf[j] + 1] - eoff[buf[j]];
            int64_t start, lane = locate(l, n, ph->phase, (int32_t)v, &start) - start;
            int64_t prev = lane_walk(l, n, ph->phase, start, lane, -w);
            if (prev < 0)
                continue;
            int64_t u = l[prev];
            int32_t fires = receiver ? ph->dst[u] : ph->src[u];
            if (fires != me)
                in[nin++] = (struct ysync){fires, ph->phase[u], ph->phase[v]};
        }
    }
    free(list);
    if (finish_syncs(out, fo, nfo, in, nin, ns, nr, me) == 0)
        return 0;
nomem:
    aapc_rows_free(out);
    return -1;
}

/*
 * The streamed build (aapc_rows_build_seed): the job's messages pass once each, in phase order
 * and by source inside a phase (cluster/aapc_cluster_phases.c aapc_job_phases_each: seed 002's
 * phases, or the capacity-aware ones of cluster/aapc_cluster_groups.c), and are not kept. A
 * directed edge of capacity c has c lanes (the k-th message of a phase on it in lane k, as the
 * stored build counts them), and each lane keeps only its last w messages, so when a message
 * passes, the message w places before it in its lane is at hand: if this rank sends the
 * passing one, it waits for that one's event; if that one is this rank's event, it fires to
 * the passing one's source. These are the pairs the stored build finds by searching each
 * edge's list (more messages in a phase than a link's lanes fall back).
 * Cost: O(P^2 d) time, O(lanes w + P d) memory, against the stored build's 12 P^2 bytes of
 * messages, 4 P^2 d of edge lists and their sorts.
 */
struct stream {
    struct own_rows o;
    const int32_t *depth, *anc; /* anc: node v's ancestor at depth k at v * (D + 1) + k */
    int32_t D;                  /* the largest depth */
    int me, receiver, sync_none, contended, lanes; /* lanes: a link carries several */
    int32_t w, ns, nr, cap; /* cap: the rows' length, P - 1 */
    int32_t *edge;          /* per directed edge: its lane 0 (stream_sync) */
    int32_t *lanes_of;      /* per directed edge, with lanes: the link's capacity */
    int32_t *first;         /* per directed edge, with lanes: its lane 1 in ring */
    int32_t *ring;          /* the lanes beyond lane 0 */
    struct ysync *fo, *in;
    int64_t nfo, nin;
};

/* A lane's ring of its last w messages (phase, event), phase -1: none yet: with w = 1 that
   message alone, 2 ints; else the ring's next slot, one unused, then the w messages. */
#define RING(w) ((w) == 1 ? 2 : 2 + 2 * (w))

/* Message (phase, src -> dst, event ev) on directed edge e; w: t->w, L: t->lanes (literals in
   the common cases, so the ring's and the lanes' arithmetic folds away). Without lanes (every
   link of capacity 1) an edge is its one lane's ring; with lanes, two ints (the phase of its
   last message, how many of that phase it has carried: the next one's lane) and lane 0's ring,
   the other lanes' rings in t->ring from t->first[e]. */
static inline void stream_sync(struct stream *t, int32_t e, int32_t phase, int32_t src,
                               int32_t ev, int32_t w, int L)
{
    int32_t *st;
    if (!L) {
        st = t->edge + (size_t)e * (size_t)RING(w);
        if (st[w == 1 ? 0 : 2 + 2 * (st[0] == 0 ? w - 1 : st[0] - 1)] == phase) {
            t->contended = 1; /* two messages of a phase on a link of one lane */
            return;
        }
    } else {
        int32_t *h = t->edge + (size_t)e * (size_t)(2 + RING(w));
        st = h + 2;
        if (h[0] != phase) {
            h[0] = phase;
            h[1] = 1;
        } else if (h[1] >= t->lanes_of[e]) {
            t->contended = 1; /* more messages of a phase on a link than it carries */
            return;
        } else {
            st = t->ring + (size_t)(t->first[e] + h[1]++ - 1) * (size_t)RING(w);
        }
    }
    int32_t slot = w == 1 ? 0 : st[0];
    int32_t *x = w == 1 ? st : st + 2 + 2 * slot; /* the message w places before this one */
    if (x[0] >= 0) {
        if (src == t->me && x[1] != t->me)
            t->in[t->nin++] = (struct ysync){x[1], x[0], phase};
        if (x[1] == t->me && src != t->me)
            t->fo[t->nfo++] = (struct ysync){src, x[0], phase};
    }
    x[0] = phase;
    x[1] = ev;
    if (w > 1)
        st[0] = slot + 1 == w ? 0 : slot + 1;
}

/* The edges of src -> dst: the up-edges of src's ancestors below the lowest common one, then
   the down-edges of dst's (edge 2v up from node v, 2v + 1 down to it). */
static inline void stream_message(struct stream *t, int32_t phase, int32_t src, int32_t dst,
                                  int32_t w, int L)
{
    if (src == t->me && t->ns < t->cap) {
        t->o.send_phase[t->ns] = phase;
        t->o.send_peer[t->ns++] = dst;
    }
    if (dst == t->me && t->nr < t->cap) {
        t->o.recv_phase[t->nr] = phase;
        t->o.recv_peer[t->nr++] = src;
    }
    if (t->sync_none || t->contended)
        return;
    int32_t ds = t->depth[src], dd = t->depth[dst], low = ds < dd ? ds : dd, l = 0;
    const int32_t *as = t->anc + (size_t)src * (size_t)(t->D + 1);
    const int32_t *ad = t->anc + (size_t)dst * (size_t)(t->D + 1);
    while (l < low && as[l + 1] == ad[l + 1])
        l++;
    int32_t ev = t->receiver ? dst : src;
    for (int32_t k = ds; k > l; k--)
        stream_sync(t, 2 * as[k], phase, src, ev, w, L);
    for (int32_t k = dd; k > l; k--)
        stream_sync(t, 2 * ad[k] + 1, phase, src, ev, w, L);
}

/* The emit callbacks: window t->w or 1, lanes or not. */
#define STREAM_EMIT(name, W, L)                                                                \
    static void name(void *ctx, int32_t phase, int32_t n, const int32_t *src,                  \
                     const int32_t *dst)                                                       \
    {                                                                                          \
        struct stream *t = ctx;                                                                \
        for (int32_t i = 0; i < n; i++)                                                        \
            stream_message(t, phase, src[i], dst[i], W, L);                                    \
    }
STREAM_EMIT(stream_emit, t->w, 0)
STREAM_EMIT(stream_emit1, 1, 0)
STREAM_EMIT(stream_emit_lanes, t->w, 1)
STREAM_EMIT(stream_emit_lanes1, 1, 1)

/* Every node's ancestor at each depth up to its own (itself): anc[v * (D + 1) + k]. */
static void ancestors(const int32_t *parent, const int32_t *depth, int32_t nn, int32_t D,
                      int32_t *anc)
{
    for (int32_t v = 0; v < nn; v++)
        for (int32_t u = v; u >= 0; u = parent[u])
            anc[(size_t)v * (size_t)(D + 1) + (size_t)depth[u]] = u;
}

int aapc_rows_build_seed(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         const aapc_job_tree_t *tree, int sync, int32_t window, int me,
                         const char *name, aapc_rows_t *out)
{
    memset(out, 0, sizeof *out);
    int32_t nn = tree->n_nodes;
    struct stream t;
    memset(&t, 0, sizeof t);
    int32_t *depth = take(out, (size_t)nn, sizeof *depth);
    if (!depth || setup_rows(out, name, P, 0, sync, window, me, P - 1, P - 1, &t.o))
        goto nomem;
    t.D = depths(tree->parent, nn, depth);
    size_t per_message = 2 * (size_t)t.D + 1, edges = 2 * (size_t)nn;
    aapc_schedule_t *s = &out->sched;
    int32_t *anc = malloc((size_t)nn * (size_t)(t.D + 1) * sizeof *anc);
    if (anc == NULL)
        goto nomem;
    ancestors(tree->parent, depth, nn, t.D, anc);
    t.depth = depth;
    t.anc = anc;
    t.me = me;
    t.cap = P - 1;
    t.receiver = s->sync_kind == AAPC_SYNC_RECEIVER;
    t.sync_none = s->sync_kind == AAPC_SYNC_NONE;
    t.w = s->window;
    size_t n_lanes = 0;
    if (!t.sync_none) {
        for (size_t e = 0; tree->cap != NULL && e < edges; e++)
            t.lanes |= tree->cap[e / 2] > 1;
        size_t ring = (size_t)RING(t.w), es = (t.lanes ? 2 : 0) + ring;
        t.edge = malloc(edges * es * sizeof *t.edge);
        if (t.lanes) {
            t.lanes_of = malloc(edges * sizeof *t.lanes_of);
            t.first = malloc(edges * sizeof *t.first);
        }
        for (size_t e = 0; t.edge && (!t.lanes || (t.lanes_of && t.first)) && e < edges; e++) {
            int32_t *h = t.edge + e * es;
            for (size_t i = 0; i < es; i++) /* no messages, ring slot 0 */
                h[i] = t.w > 1 && i >= es - ring && i < es - ring + 2 ? 0 : -1;
            if (t.lanes) {
                t.lanes_of[e] = tree->cap[e / 2] > 1 ? tree->cap[e / 2] : 1;
                t.first[e] = (int32_t)n_lanes;
                n_lanes += (size_t)t.lanes_of[e] - 1;
            }
        }
        t.ring = malloc((n_lanes ? n_lanes : 1) * ring * sizeof *t.ring);
        for (size_t i = 0; t.ring && i < n_lanes * ring; i++)
            t.ring[i] = t.w > 1 && i % ring < 2 ? 0 : -1; /* ring slot 0, no messages */
        t.fo = malloc((size_t)P * per_message * sizeof *t.fo);
        t.in = malloc((size_t)P * per_message * sizeof *t.in);
    }
    aapc_job_phases_t info;
    int rc = AAPC_JOB_ENOMEM;
    int fit = t.edge && (!t.lanes || (t.lanes_of && t.first)) && t.ring && t.fo && t.in;
    if (t.sync_none || fit)
        rc = aapc_job_phases_each(c, rank_machine, P,
                                  t.lanes ? (t.w == 1 ? stream_emit_lanes1 : stream_emit_lanes)
                                          : (t.w == 1 ? stream_emit1 : stream_emit),
                                  &t, &info);
    free(t.edge);
    free(t.lanes_of);
    free(t.first);
    free(t.ring);
    free(anc);
    if (rc != AAPC_JOB_OK || t.contended || t.ns != P - 1 || t.nr != P - 1) {
        free(t.fo);
        free(t.in);
        aapc_rows_free(out);
        return rc == AAPC_JOB_ENOMEM ? -1 : 1;
    }
    s->nphases = info.n_phases;
    if (t.sync_none || finish_syncs(out, t.fo, t.nfo, t.in, t.nin, t.ns, t.nr, me) == 0)
        return 0;
nomem:
    aapc_rows_free(out);
    return -1;
}
