/*
 * aapc_cluster_tree.c: the job tree of a communicator, its link loads, root and subtrees
 * (seed 002 section 4.1; the C counterpart of aapcgen/alltoall/job.py + tree.py analyze).
 *
 * Algorithm:
 *   - group the P ranks by cluster machine; a machine with R > 1 ranks becomes an inner node
 *     with its ranks as leaves (aapc_cluster.h); nodes and edges are numbered as there;
 *   - hang the tree from the cluster's first switch (iterative depth-first walk) and count the
 *     leaves below every node;
 *   - the load of an edge is |leaves on one side| x |leaves on the other|; the first edge in
 *     scan order with the largest load is the bottleneck; from its larger side (equal sides:
 *     the side holding rank 0) walk away from it while exactly one other branch holds leaves:
 *     the node where that stops is the root;
 *   - the root's branches that hold leaves are its subtrees, largest first, ties by smallest
 *     rank, members in rank order.
 * Cost: O(P + S + M) time and memory for P ranks, S switches and M machines of the cluster;
 * no communication (every rank computes the same result from the same gathered machines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_impl.h"

static void *xcalloc(size_t count, size_t size)
{
    return calloc(count ? count : 1, size);
}

void aapc_job_tree_free(aapc_job_tree_t *t)
{
    free(t->parent);
    free(t->up_bw);
    free(t->machine_of_node);
    free(t->cap);
    memset(t, 0, sizeof *t);
}

void job_analysis_free(job_analysis *a)
{
    aapc_job_tree_free(&a->tree);
    free(a->edge_a);
    free(a->edge_b);
    free(a->adj_off);
    free(a->adj);
    free(a->below);
    free(a->sub_size);
    free(a->members);
    memset(a, 0, sizeof *a);
}

static int check_cluster(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         char *err, int errlen)
{
    if (c == NULL || c->n_machines < 1 || c->n_switches < 1 || c->n_links < 0 ||
        c->machine_switch == NULL || c->machine_bw == NULL ||
        (c->n_links > 0 && (c->link_a == NULL || c->link_b == NULL || c->link_bw == NULL))) {
        snprintf(err, (size_t)errlen, "cluster: malformed tables");
        return AAPC_JOB_EINVAL;
    }
    if (c->n_links != c->n_switches - 1) {
        snprintf(err, (size_t)errlen, "cluster: %d switch links for %d switches is not a tree",
                 (int)c->n_links, (int)c->n_switches);
        return AAPC_JOB_EINVAL;
    }
    for (int32_t i = 0; i < c->n_links; i++) {
        if (c->link_a[i] < 0 || c->link_a[i] >= c->n_switches || c->link_b[i] < 0 ||
            c->link_b[i] >= c->n_switches || c->link_a[i] == c->link_b[i]) {
            snprintf(err, (size_t)errlen, "cluster: switch link %d joins bad switches", (int)i);
            return AAPC_JOB_EINVAL;
        }
    }
    for (int32_t m = 0; m < c->n_machines; m++) {
        if (c->machine_switch[m] < 0 || c->machine_switch[m] >= c->n_switches) {
            snprintf(err, (size_t)errlen, "cluster: machine %d has a bad switch", (int)m);
            return AAPC_JOB_EINVAL;
        }
    }
    if (P < 2) {
        snprintf(err, (size_t)errlen, "a communicator of %d rank(s) needs no schedule", (int)P);
        return AAPC_JOB_EINVAL;
    }
    if (P > AAPC_JOB_MAX_RANKS) {
        snprintf(err, (size_t)errlen, "%d ranks: the run-time scheduler takes at most %d",
                 (int)P, AAPC_JOB_MAX_RANKS);
        return AAPC_JOB_ERANGE;
    }
    for (int32_t r = 0; r < P; r++) {
        if (rank_machine[r] < 0 || rank_machine[r] >= c->n_machines) {
            snprintf(err, (size_t)errlen, "rank %d: machine %d is not a machine of the cluster",
                     (int)r, (int)rank_machine[r]);
            return AAPC_JOB_EINVAL;
        }
    }
    return AAPC_JOB_OK;
}

/* Nodes, edges (scan order) and the attachment of each leaf. */
static int build_edges(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                       job_analysis *a, double **edge_bw)
{
    int32_t S = c->n_switches, M = c->n_machines;
    int32_t *ranks_on = xcalloc((size_t)M, sizeof *ranks_on);
    int32_t *node_of_machine = xcalloc((size_t)M, sizeof *node_of_machine);
    if (!ranks_on || !node_of_machine) {
        free(ranks_on);
        free(node_of_machine);
        return AAPC_JOB_ENOMEM;
    }
    for (int32_t r = 0; r < P; r++)
        ranks_on[rank_machine[r]]++;
    int32_t K = 0; /* machines with several ranks, in the order of their lowest rank */
    for (int32_t r = 0; r < P; r++) {
        int32_t m = rank_machine[r];
        if (ranks_on[m] > 1 && node_of_machine[m] == 0)
            node_of_machine[m] = P + S + K++;
    }
    int32_t n_nodes = P + S + K, E = c->n_links + K + P;
    aapc_job_tree_t *t = &a->tree;
    t->n_leaves = P;
    t->n_nodes = n_nodes;
    t->parent = xcalloc((size_t)n_nodes, sizeof *t->parent);
    t->up_bw = xcalloc((size_t)n_nodes, sizeof *t->up_bw);
    t->machine_of_node = xcalloc((size_t)n_nodes, sizeof *t->machine_of_node);
    a->edge_a = xcalloc((size_t)E, sizeof *a->edge_a);
    a->edge_b = xcalloc((size_t)E, sizeof *a->edge_b);
    *edge_bw = xcalloc((size_t)E, sizeof **edge_bw);
    if (!t->parent || !t->up_bw || !t->machine_of_node || !a->edge_a || !a->edge_b ||
        !*edge_bw) {
        free(ranks_on);
        free(node_of_machine);
        return AAPC_JOB_ENOMEM;
    }
    for (int32_t v = 0; v < n_nodes; v++)
        t->machine_of_node[v] = -1;
    int32_t e = 0;
    for (int32_t i = 0; i < c->n_links; i++, e++) {
        a->edge_a[e] = P + c->link_a[i];
        a->edge_b[e] = P + c->link_b[i];
        (*edge_bw)[e] = c->link_bw[i];
    }
    for (int32_t r = 0; r < P; r++) { /* machine nodes, in order of their lowest rank */
        int32_t m = rank_machine[r], v = node_of_machine[m];
        if (v != 0 && t->machine_of_node[v] < 0) {
            t->machine_of_node[v] = m;
            a->edge_a[e] = P + c->machine_switch[m];
            a->edge_b[e] = v;
            (*edge_bw)[e++] = c->machine_bw[m];
        }
    }
    for (int32_t r = 0; r < P; r++, e++) {
        int32_t m = rank_machine[r];
        t->machine_of_node[r] = m;
        a->edge_a[e] = r;
        a->edge_b[e] = ranks_on[m] > 1 ? node_of_machine[m] : P + c->machine_switch[m];
        /* memory links of a machine with several ranks: never a bottleneck of the model */
        (*edge_bw)[e] = ranks_on[m] > 1 ? c->machine_bw[m] * 1e6 : c->machine_bw[m];
    }
    a->n_edges = E;
    free(ranks_on);
    free(node_of_machine);
    return AAPC_JOB_OK;
}

/* CSR adjacency (neighbours in edge scan order), then hang from node P: parent, below. */
static int hang(job_analysis *a, const double *edge_bw)
{
    aapc_job_tree_t *t = &a->tree;
    int32_t n = t->n_nodes, E = a->n_edges, P = t->n_leaves;
    a->adj_off = xcalloc((size_t)n + 1, sizeof *a->adj_off);
    a->adj = xcalloc((size_t)2 * (size_t)E, sizeof *a->adj);
    a->below = xcalloc((size_t)n, sizeof *a->below);
    int32_t *fill = xcalloc((size_t)n, sizeof *fill);
    int32_t *order = xcalloc((size_t)n, sizeof *order);
    int32_t *stack = xcalloc((size_t)n, sizeof *stack);
    int32_t *upedge = xcalloc((size_t)n, sizeof *upedge);
    if (!a->adj_off || !a->adj || !a->below || !fill || !order || !stack || !upedge) {
        free(fill);
        free(order);
        free(stack);
        free(upedge);
        return AAPC_JOB_ENOMEM;
    }
    for (int32_t e = 0; e < E; e++) {
        a->adj_off[a->edge_a[e] + 1]++;
        a->adj_off[a->edge_b[e] + 1]++;
    }
    for (int32_t v = 0; v < n; v++)
        a->adj_off[v + 1] += a->adj_off[v];
    for (int32_t e = 0; e < E; e++) {
        a->adj[a->adj_off[a->edge_a[e]] + fill[a->edge_a[e]]++] = e;
        a->adj[a->adj_off[a->edge_b[e]] + fill[a->edge_b[e]]++] = e;
    }
    for (int32_t v = 0; v < n; v++)
        t->parent[v] = -2; /* unseen */
    int32_t top = 0, count = 0;
    stack[top++] = P;
    t->parent[P] = -1;
    t->up_bw[P] = 0;
    while (top > 0) {
        int32_t v = stack[--top];
        order[count++] = v;
        for (int32_t k = a->adj_off[v]; k < a->adj_off[v + 1]; k++) {
            int32_t e = a->adj[k], w = a->edge_a[e] == v ? a->edge_b[e] : a->edge_a[e];
            if (t->parent[w] == -2) {
                t->parent[w] = v;
                t->up_bw[w] = edge_bw[e];
                upedge[w] = e;
                stack[top++] = w;
            }
        }
    }
    int rc = count == n ? AAPC_JOB_OK : AAPC_JOB_EINVAL; /* a forest: not a tree */
    for (int32_t i = count - 1; i >= 0; i--) {
        int32_t v = order[i];
        if (v < P)
            a->below[v] += 1;
        if (t->parent[v] >= 0)
            a->below[t->parent[v]] += a->below[v];
    }
    free(fill);
    free(order);
    free(stack);
    free(upedge);
    return rc;
}

/* Leaves reached from u through its neighbour w. */
static int32_t beyond(const job_analysis *a, int32_t u, int32_t w)
{
    return a->tree.parent[w] == u ? a->below[w] : a->tree.n_leaves - a->below[u];
}

static int32_t other_end(const job_analysis *a, int32_t e, int32_t v)
{
    return a->edge_a[e] == v ? a->edge_b[e] : a->edge_a[e];
}

static void find_root(job_analysis *a)
{
    int32_t P = a->tree.n_leaves;
    int64_t top = -1;
    int32_t start = 0;
    for (int32_t e = 0; e < a->n_edges; e++) {
        int64_t side_a = beyond(a, a->edge_b[e], a->edge_a[e]);
        int64_t load = side_a * (P - side_a);
        if (load > top) {
            top = load;
            start = e;
        }
    }
    a->load = top;
    a->bottleneck_a = a->edge_a[start];
    a->bottleneck_b = a->edge_b[start];
    if (P == 2) { /* aapcgen/alltoall/tree.py: the node rank 0 hangs from (edge of leaf 0) */
        a->root = a->edge_b[a->n_edges - P];
        return;
    }
    int32_t ea = a->edge_a[start], eb = a->edge_b[start];
    int32_t side_a = beyond(a, eb, ea), side_b = beyond(a, ea, eb);
    int32_t u, v;
    if (side_a > side_b) {
        u = ea;
        v = eb;
    } else if (side_b > side_a) {
        u = eb;
        v = ea;
    } else { /* equal sides: u is the side holding rank 0 */
        int32_t lower = a->tree.parent[ea] == eb ? ea : eb;
        int32_t upper = lower == ea ? eb : ea;
        int holds0 = 0;
        for (int32_t x = 0; x >= 0; x = a->tree.parent[x]) {
            if (x == lower) {
                holds0 = 1;
                break;
            }
        }
        u = holds0 ? lower : upper;
        v = holds0 ? upper : lower;
    }
    for (;;) {
        int32_t branches = 0, next = -1;
        for (int32_t k = a->adj_off[u]; k < a->adj_off[u + 1]; k++) {
            int32_t w = other_end(a, a->adj[k], u);
            if (w != v && beyond(a, u, w) > 0) {
                branches++;
                next = w;
            }
        }
        if (branches != 1) {
            a->root = u;
            return;
        }
        v = u;
        u = next;
    }
}

/* Subtrees of the root: a walk from the root labels every node with its branch. */
static int root_subtrees(job_analysis *a)
{
    int32_t n = a->tree.n_nodes, P = a->tree.n_leaves, root = a->root;
    int32_t deg = a->adj_off[root + 1] - a->adj_off[root];
    int32_t *branch = xcalloc((size_t)n, sizeof *branch);
    int32_t *stack = xcalloc((size_t)n, sizeof *stack);
    int32_t *size = xcalloc((size_t)deg, sizeof *size);
    int32_t *first = xcalloc((size_t)deg, sizeof *first);
    int32_t *rank_of = xcalloc((size_t)deg, sizeof *rank_of); /* branch -> sorted position */
    int32_t *sorted = xcalloc((size_t)deg, sizeof *sorted);
    a->sub_size = xcalloc((size_t)deg, sizeof *a->sub_size);
    a->members = xcalloc((size_t)P, sizeof *a->members);
    int rc = AAPC_JOB_ENOMEM;
    if (!branch || !stack || !size || !first || !rank_of || !sorted || !a->sub_size ||
        !a->members)
        goto done;
    for (int32_t v = 0; v < n; v++)
        branch[v] = -1;
    int32_t top = 0;
    for (int32_t k = a->adj_off[root]; k < a->adj_off[root + 1]; k++) {
        int32_t w = other_end(a, a->adj[k], root);
        branch[w] = k - a->adj_off[root];
        stack[top++] = w;
    }
    branch[root] = deg; /* never a member */
    while (top > 0) {
        int32_t v = stack[--top];
        for (int32_t k = a->adj_off[v]; k < a->adj_off[v + 1]; k++) {
            int32_t w = other_end(a, a->adj[k], v);
            if (branch[w] == -1) {
                branch[w] = branch[v];
                stack[top++] = w;
            }
        }
    }
    for (int32_t b = 0; b < deg; b++)
        first[b] = P;
    for (int32_t r = 0; r < P; r++) {
        int32_t b = branch[r];
        if (size[b]++ == 0)
            first[b] = r;
    }
    int32_t ns = 0;
    for (int32_t b = 0; b < deg; b++) /* insertion sort: deg is small */
        if (size[b] > 0) {
            int32_t i = ns++;
            while (i > 0 && (size[sorted[i - 1]] < size[b] ||
                             (size[sorted[i - 1]] == size[b] && first[sorted[i - 1]] > first[b]))) {
                sorted[i] = sorted[i - 1];
                i--;
            }
            sorted[i] = b;
        }
    int32_t off = 0;
    for (int32_t i = 0; i < ns; i++) {
        rank_of[sorted[i]] = off; /* reuse: the first member slot of branch sorted[i] */
        a->sub_size[i] = size[sorted[i]];
        off += size[sorted[i]];
    }
    for (int32_t r = 0; r < P; r++)
        a->members[rank_of[branch[r]]++] = r;
    a->n_subtrees = ns;
    rc = ns >= 2 ? AAPC_JOB_OK : AAPC_JOB_EINVAL;
done:
    free(branch);
    free(stack);
    free(size);
    free(first);
    free(rank_of);
    free(sorted);
    return rc;
}

int job_analyse(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                job_analysis *a, char *err, int errlen)
{
    double *edge_bw = NULL;
    memset(a, 0, sizeof *a);
    int rc = check_cluster(c, rank_machine, P, err, errlen);
    if (rc == AAPC_JOB_OK)
        rc = build_edges(c, rank_machine, P, a, &edge_bw);
    if (rc == AAPC_JOB_OK) {
        rc = hang(a, edge_bw);
        if (rc == AAPC_JOB_EINVAL)
            snprintf(err, (size_t)errlen, "cluster: the switch links do not connect every switch");
    }
    free(edge_bw);
    if (rc == AAPC_JOB_OK) {
        find_root(a);
        rc = root_subtrees(a);
        if (rc == AAPC_JOB_EINVAL)
            snprintf(err, (size_t)errlen, "root %d has fewer than two subtrees", (int)a->root);
    }
    if (rc == AAPC_JOB_OK)
        rc = job_capacities(a, c, rank_machine);
    if (rc == AAPC_JOB_ENOMEM)
        snprintf(err, (size_t)errlen, "out of memory for the job tree of %d ranks", (int)P);
    if (rc != AAPC_JOB_OK)
        job_analysis_free(a);
    return rc;
}

int aapc_job_tree(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                  aapc_job_tree_t *t, char *err, int errlen)
{
    job_analysis a;
    int rc = job_analyse(c, rank_machine, P, &a, err, errlen);
    memset(t, 0, sizeof *t);
    if (rc != AAPC_JOB_OK)
        return rc;
    *t = a.tree;
    memset(&a.tree, 0, sizeof a.tree);
    job_analysis_free(&a);
    return AAPC_JOB_OK;
}
