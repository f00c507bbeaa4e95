/* Internal interface shared by the files of runtime_c/vsched (not installed for callers). */
#ifndef AAPC_VSCHED_IMPL_H
#define AAPC_VSCHED_IMPL_H

#include <float.h>
#include <stddef.h>

#include "aapc_vsched.h"

/* Bit-identical results with numpy need IEEE double arithmetic without excess precision. */
#if !defined(FLT_EVAL_METHOD) || (FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != -1)
#error "aapc_vsched needs FLT_EVAL_METHOD 0 (SSE2/AArch64 doubles, no x87 excess precision)"
#endif

#define AAPC_VSCHED_MAX_MACHINES 46340 /* n*n messages must fit an int */

/* The messages of a pattern: the non-zero off-diagonal counts in row-major order (numpy's
 * np.nonzero order), each with its tree path as ascending directed edge ids. */
typedef struct vs_msgs {
    int n, n_nodes, n_edges;
    int k;           /* number of messages */
    int *src, *dst;  /* k */
    long long *count; /* k */
    double *rate;    /* k: bytes/s of the slowest link of the path */
    int *tmpl;       /* k: template phase, or NULL when the tree has none */
    long long *estart; /* k + 1: edges of message m are edge[estart[m] .. estart[m+1]) */
    int *edge;       /* ascending per message */
    double *edge_bw; /* n_edges: bytes/s of each directed edge (both directions of a link) */
    int *sw_of;      /* n: the switch (parent node) of each machine */
} vs_msgs;

/* Pieces in (phase, message) order, as the schedulers produce them. */
typedef struct vs_pieces {
    long long n, cap;
    int *phase, *msg;
    long long *off, *len;
} vs_pieces;

/* paths: tree checks, messages and paths, bound, assembling the result */
int vs_messages(const aapc_vtree *tree, const long long *counts, vs_msgs *m, char *err,
                int errlen);
void vs_messages_free(vs_msgs *m);
double vs_bound(const vs_msgs *m);
int vs_pieces_push(vs_pieces *p, int phase, int msg, long long off, long long len);
void vs_pieces_free(vs_pieces *p);
int vs_assemble(const vs_msgs *m, const vs_pieces *pieces, int n_phases, int small_phase,
                aapc_vsched *out);
double vs_pairwise_sum(const double *a, long long n);

/* greedy and all-to-all based: phase_of[m] for every message, phases and small phase */
int vs_phased(const vs_msgs *m, long long threshold, int seeded, int *phase_of, int *n_phases,
              int *small_phase);

/* balanced: pieces in (phase, message) order */
int vs_balanced(const vs_msgs *m, long long chunk, vs_pieces *out, int *n_phases);

#endif
