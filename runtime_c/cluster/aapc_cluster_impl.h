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
/* The exact construction of aapc_cluster_twolevel.c into phase/src/dst (P(P-1) each), or
   AAPC_JOB_EINVAL when the tree is not a uniform two-level tree in its regime. */
int job_phases_two_level(const job_analysis *a, int32_t *phase, int32_t *src, int32_t *dst);

#endif
