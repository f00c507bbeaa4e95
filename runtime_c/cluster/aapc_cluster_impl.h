/* Internal to runtime_c/cluster/: the analysed job tree shared by the tree and phase files. */
#ifndef AAPC_CLUSTER_IMPL_H
#define AAPC_CLUSTER_IMPL_H

#include "aapc_cluster.h"

/* The job tree with its edges in scan order and the root of seed 002 section 4.1. */
typedef struct job_analysis {
    aapc_job_tree_t tree;
    int32_t n_edges;
    int32_t *edge_a, *edge_b; /* scan order (see aapc_cluster.h) */
    int32_t *adj_off, *adj;   /* CSR adjacency, edges in scan order */
    int32_t *below;           /* leaves below each node, hung from node P */
    int32_t root, bottleneck_a, bottleneck_b;
    int64_t load;             /* the largest link load: the number of phases */
    /* subtrees of the root, largest first, ties by smallest rank; members in rank order */
    int32_t n_subtrees;
    int32_t *sub_size;    /* n_subtrees */
    int32_t *members;     /* P: the subtrees' members one after another */
    /* capacities (aapc_cluster_capacity.c): tree.cap, the slowest machine link, and
       LB = max(P - 1, max over links of ceil(load / cap)) */
    double bref;
    int64_t lower_bound;
} job_analysis;

int job_analyse(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                job_analysis *a, char *err, int errlen);
void job_analysis_free(job_analysis *a);

/* tree.cap, bref and lower_bound of an analysed tree (aapc_cluster_capacity.c). */
int job_capacities(job_analysis *a, const aapc_cluster_t *c, const int32_t *rank_machine);
/* Capacity-aware phases reaching or near lower_bound; repair (step 3) runs when P x phases
   <= repair_cells. Returns 0 or an AAPC_JOB_* code (out->error says why). */
int job_phases_capacity(const job_analysis *a, aapc_job_phases_t *out, int64_t repair_cells);
/* The tree hung from a->root (seed 002's root), children in breadth-first order
   (aapc_cluster_capacity.c). */
struct rooted {
    int32_t n, P;
    int32_t *par;     /* parent when hung from the root, -1 at the root */
    int32_t *kid_off; /* CSR children */
    int32_t *kids;
    int32_t *size; /* leaves below (rooted) */
    int32_t *bfs;  /* nodes, root first */
};
int job_rooted_build(const job_analysis *a, struct rooted *r);
void job_rooted_free(struct rooted *r);
/* pos[leaf]: the leaf's place in the interleaved order of the rooted tree, in which every
   subtree lists its leaves spread evenly over its children's (a run of consecutive leaves
   loads every link below evenly); a subtree's own order is this order restricted to it. */
int job_interleave(const struct rooted *r, int32_t *pos);

/* The exact construction of aapc_cluster_twolevel.c into phase/src/dst (P(P-1) each), or
   AAPC_JOB_EINVAL when the tree is not a uniform two-level tree in its regime. */
int job_phases_two_level(const job_analysis *a, int32_t *phase, int32_t *src, int32_t *dst);

/* The exact phases of aapc_cluster_groups.c (k alike groups under the root whose links set the
   bound) streamed to emit in (phase, src) order; *n_phases: their number (the lower bound).
   AAPC_JOB_EINVAL, nothing emitted, when the tree is not of that kind. */
int job_phases_groups(const job_analysis *a, aapc_job_emit_fn emit, void *ctx, int32_t *n_phases);
/* 1 when job_phases_groups applies (its plan alone, nothing emitted), else 0. */
int job_phases_groups_fit(const job_analysis *a);

/* The switch tree hung from switch 0, breadth-first (aapc_cluster_order.c): order[] the
   switches from the top, up[s] the parent (-1 at the top), uplink[s] the link to it; returns the
   switches reached (S for a tree). O(S (S + L)). Each array holds n_switches entries. */
int32_t aapc_cluster_hang(const aapc_cluster_t *c, int32_t *order, int32_t *up, int32_t *uplink);

#endif
