/*
 * aapc_cluster_digits.c: the digits of the log-round exchange that follows the switch tree
 * (alltoall/aapc_alltoall_treedigits.c): one digit per level of the job's machines' tree, its
 * radix the level's fan-out, so that the exchange runs inside every lowest switch first, then
 * between the subtrees of each switch above, one level at a time.
 *
 * Algorithm: hang the cluster's switch tree from its first switch (breadth-first, as
 * aapc_cluster_shape.c) and fold it bottom-up over the job's machines only. A machine is a leaf
 * (no digit). A switch's own job machines fold first, as if they hung from a switch of their
 * own below it (no link between the two), into the switch's first child; its other children
 * are its child switches that hold any job machine. With its children:
 *   - none: the switch is empty and drops out;
 *   - one: the switch is that child (a chain folds: the child's link above is the slower of its
 *     own and the switch's);
 *   - k >= 2: every child must have the same digits (the same radices, bottom-up), else the
 *     tree is not uniform and there are no digits; the switch adds a digit of radix k whose
 *     links are the children's links to it (the slowest of them counts).
 * So two switches of 4 machines linked directly have digits (4, 2), a chain of three such
 * switches none (the first switch is the top: a switch with 4 machines below one of 4 + 4).
 * In the tree's depth-first order (aapc_cluster_order.c: a switch's machines, then its child
 * switches in link order) the machines of a uniform tree are then numbered in mixed radix: the
 * machines below a switch of digit l are a run of radix[0] x ... x radix[l] places, and the
 * child subtrees of that switch are its runs of radix[0] x ... x radix[l-1].
 * Capacities, as aapc_cluster_shape.c counts them: cap[l] = floor(bw / bref) (at least 1) of
 * the slowest link of digit l, bref the slowest machine link of the job. A phase of digit l
 * (every member sends to the member d places further in that digit) puts unit[j] =
 * radix[0] x ... x radix[j-1] messages on every link of digit j <= l, each way; groups[l] =
 * max over j <= l of ceil(unit[j] / cap[j]) splits it into that many contention-free
 * sub-phases (members by their lower digits, taken modulo groups[l]).
 * Cost: O(S (S + L) + M) time, O(S L) memory for S switches, M machines, L <= AAPC_MAX_DIGITS
 * levels (the breadth-first walk scans the links once per switch, as aapc_cluster_shape.c);
 * no communication. Run once per communicator (in its shape).
 */
#include <math.h> /* INFINITY */
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

/* The folded shape below a node: its digits bottom-up and the slowest link of each digit. */
struct folded {
    int32_t kids;  /* non-empty children seen (switches) */
    int32_t bad;   /* not uniform below */
    int32_t nlev;
    int32_t radix[AAPC_MAX_DIGITS];
    double lbw[AAPC_MAX_DIGITS]; /* the slowest link of each digit */
    double top;                  /* the slowest link from a child up to this switch */
    double up;                   /* after the fold: the link above this node (chains folded) */
};

/* Add a child (a machine: nlev 0; or a folded switch) to its switch's accumulator. */
static void add_child(struct folded *acc, const struct folded *kid)
{
    if (kid->bad) {
        acc->bad = 1;
        return;
    }
    if (acc->kids == 0) {
        acc->nlev = kid->nlev;
        memcpy(acc->radix, kid->radix, sizeof acc->radix);
        memcpy(acc->lbw, kid->lbw, sizeof acc->lbw);
        acc->top = kid->up;
    } else {
        if (kid->nlev != acc->nlev ||
            memcmp(kid->radix, acc->radix, sizeof *acc->radix * (size_t)acc->nlev) != 0)
            acc->bad = 1;
        for (int32_t j = 0; j < acc->nlev && !acc->bad; j++)
            acc->lbw[j] = kid->lbw[j] < acc->lbw[j] ? kid->lbw[j] : acc->lbw[j];
        acc->top = kid->up < acc->top ? kid->up : acc->top;
    }
    acc->kids++;
}

/* Close a switch whose children were all added; uplink_bw: its link above (INFINITY at the top
   and above a switch's own machines). */
static void close_switch(struct folded *f, double uplink_bw)
{
    if (f->bad || f->kids == 0)
        return;
    if (f->kids == 1) { /* a chain: the child's shape, under the slower of the two links */
        f->up = uplink_bw < f->top ? uplink_bw : f->top;
        return;
    }
    if (f->nlev == AAPC_MAX_DIGITS) {
        f->bad = 1;
        return;
    }
    f->radix[f->nlev] = f->kids;
    f->lbw[f->nlev] = f->top;
    f->nlev++;
    f->up = uplink_bw;
}

void aapc_digits_groups(aapc_digits_t *d)
{
    int64_t unit = 1, g = 1;
    for (int32_t l = 0; l < d->levels; l++) {
        int64_t cap = d->cap[l] > 0 ? d->cap[l] : 1, need = (unit + cap - 1) / cap;
        g = need > g ? need : g;
        d->groups[l] = (int32_t)g;
        unit *= d->radix[l];
    }
}

int32_t aapc_digits_add(const aapc_digits_t *d, int32_t x, int32_t s, int sign)
{
    int32_t out = 0, unit = 1;
    for (int32_t l = 0; l < d->levels; l++) {
        int32_t f = d->radix[l], a = x / unit % f, b = s / unit % f;
        out += (sign > 0 ? (a + b) % f : (a - b + f) % f) * unit;
        unit *= f;
    }
    return out;
}

void aapc_digits_of_ranks(const aapc_digits_t *machines, int32_t per_machine, int equal,
                          aapc_digits_t *out)
{
    memset(out, 0, sizeof *out);
    if (machines->levels < 1 || per_machine < 1 || !equal)
        return;
    if (per_machine == 1) {
        *out = *machines;
        return;
    }
    if (machines->levels == AAPC_MAX_DIGITS)
        return;
    out->levels = machines->levels + 1;
    out->radix[0] = per_machine;
    out->cap[0] = AAPC_DIGITS_MEMORY_CAP;
    for (int32_t l = 0; l < machines->levels; l++) {
        out->radix[l + 1] = machines->radix[l];
        out->cap[l + 1] = machines->cap[l];
    }
    aapc_digits_groups(out);
}

int aapc_cluster_digits(const aapc_cluster_t *c, const int32_t *machines, int32_t n,
                        aapc_digits_t *out)
{
    int32_t S = c->n_switches, M = c->n_machines;
    memset(out, 0, sizeof *out);
    if (S < 1 || c->n_links != S - 1 || n < 0)
        return AAPC_JOB_EINVAL;
    char *on = calloc((size_t)(M ? M : 1), 1);
    struct folded *f = calloc((size_t)S, sizeof *f), *own = calloc((size_t)S, sizeof *own);
    int32_t *order = malloc(sizeof *order * (size_t)S), *up = malloc(sizeof *up * (size_t)S);
    int32_t *uplink = malloc(sizeof *uplink * (size_t)S);
    int rc = AAPC_JOB_ENOMEM;
    if (on == NULL || f == NULL || own == NULL || order == NULL || up == NULL || uplink == NULL)
        goto done;
    rc = AAPC_JOB_EINVAL;
    double bref = c->reference_bw;
    for (int32_t k = 0; k < n; k++) {
        int32_t m = machines[k];
        if (m < 0 || m >= M || c->machine_switch[m] < 0 || c->machine_switch[m] >= S)
            goto done;
        on[m] = 1;
    }
    if (aapc_cluster_hang(c, order, up, uplink) != S)
        goto done; /* not a tree */
    int32_t N = 0;
    for (int32_t m = 0; m < M; m++) {
        if (!on[m])
            continue;
        N++;
        if (c->reference_bw <= 0 && (bref <= 0 || c->machine_bw[m] < bref))
            bref = c->machine_bw[m];
        struct folded leaf = {.up = c->machine_bw[m]};
        add_child(&own[c->machine_switch[m]], &leaf);
    }
    for (int32_t k = S - 1; k >= 0; k--) { /* children before their parents */
        int32_t s = order[k];
        close_switch(&own[s], INFINITY); /* the switch's own machines: its first child */
        if (own[s].kids > 0)
            add_child(&f[s], &own[s]);
        close_switch(&f[s], k > 0 ? c->link_bw[uplink[s]] : INFINITY);
        if (k > 0 && (f[s].kids > 0 || f[s].bad))
            add_child(&f[up[s]], &f[s]);
    }
    rc = AAPC_JOB_OK;
    if (N < 2 || f[0].bad || f[0].nlev < 1 || !(bref > 0))
        goto done; /* no digits: fewer than two machines, or not uniform */
    out->levels = f[0].nlev;
    for (int32_t l = 0; l < out->levels; l++) {
        double ratio = f[0].lbw[l] / bref * (1 + 1e-9);
        out->radix[l] = f[0].radix[l];
        out->cap[l] = ratio < 1 ? 1 : ratio > 65535 ? 65535 : (int32_t)ratio;
    }
    aapc_digits_groups(out);
done:
    free(on);
    free(f);
    free(own);
    free(order);
    free(up);
    free(uplink);
    return rc;
}
