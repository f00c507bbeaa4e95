/* Many-to-many (MPI_Alltoallv) schedulers on a switch tree, in C.
 *
 * The same three schedulers as aapcgen/alltoallv/schedule.py (greedy, all-to-all based, balanced),
 * producing identical schedules on identical inputs: the same pieces in the same phases, the
 * same floating-point decisions (balanced), the same cost and bound bit for bit. Level 1 of
 * compiled communication (counts gathered with MPI_Allgather, scheduled on every rank) and
 * Level 2 (the whole count matrix known locally) call aapc_vsched_run. Pure C11, no MPI, no
 * global state: deterministic and re-entrant.
 *
 * Model (docs/alltoallv.md): a message s -> d uses the directed edges of its tree path; edge id
 * 2*c is the edge from node c up to its parent, 2*c + 1 the edge down from the parent to c
 * (tree.path_edges). Two pieces of a phase conflict when they share a directed edge.
 */
#ifndef AAPC_VSCHED_H
#define AAPC_VSCHED_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aapc_vtree {
    int n_machines;            /* machines are nodes 0..n_machines-1, in rank order */
    int n_nodes;               /* then the switches: the node numbering of tree.hang(topo) */
    const int *parent;         /* n_nodes entries, -1 at the root (tree.hang's parent) */
    const double *up_bw;       /* bytes/s of the link from each node to its parent, 0 at root */
    const int *template_phase; /* n*n: phase of src*n+dst in the optimal AAPC schedule
                                  (phases.build_phases), -1 on the diagonal; NULL = unavailable
                                  (alltoall-based then returns an error; greedy then breaks
                                  size ties by (src, dst) only, unlike Python) */
} aapc_vtree;

enum { AAPC_VSCHED_GREEDY = 0, AAPC_VSCHED_ALLTOALL = 1, AAPC_VSCHED_BALANCED = 2 };

/* Error codes of aapc_vsched_run (0 = success). */
enum {
    AAPC_VSCHED_OK = 0,
    AAPC_VSCHED_EINVAL = 1,      /* bad tree, counts, scheduler, threshold or chunk */
    AAPC_VSCHED_ENOMEM = 2,      /* out of memory */
    AAPC_VSCHED_ENOTEMPLATE = 3, /* alltoall-based without tree->template_phase */
    AAPC_VSCHED_ERANGE = 4       /* too many machines (> 46340) or pieces to index */
};

/* Largest number of phases the balanced scheduler's default quantum allows beyond one per
 * message (vschedule.BALANCED_QUANTA). */
#define AAPC_VSCHED_BALANCED_QUANTA 4096

typedef struct aapc_vsched {
    int n_machines, n_phases;
    long long n_pieces;
    int *phase, *src, *dst;     /* pieces sorted by (phase, src, dst, offset) as Python's _assemble */
    long long *offset, *length; /* byte offset within the (src,dst) message, bytes */
    int small_phase;            /* -1 if none */
    double cost, bound;         /* seconds, as Python's VSchedule.cost/.bound */
    /* additions */
    long long *phase_start; /* n_phases + 1: pieces of phase p are [phase_start[p], phase_start[p+1]) */
    double *phase_time;     /* n_phases: seconds, as Python's VSchedule.phase_time */
    char error[160];        /* after a failure: one line naming the offending element */
} aapc_vsched;

/* counts: n*n byte counts (row src, column dst; the diagonal is ignored).
   threshold: small-message threshold (greedy/alltoall); chunk: balanced quantum in bytes, 0 = default.
   Returns 0, or a nonzero error code (bad arguments, out of memory); never aborts.
   On failure *out holds no memory (aapc_vsched_free is still safe) and out->error says why. */
int aapc_vsched_run(const aapc_vtree *tree, const long long *counts, int scheduler,
                    long long threshold, long long chunk, aapc_vsched *out);

/* Releases the arrays of a schedule filled by aapc_vsched_run (safe on a zeroed or failed one). */
void aapc_vsched_free(aapc_vsched *s);

/* A static string for an error code. */
const char *aapc_vsched_strerror(int code);

/* The lower bound alone: max over directed edges of bytes crossing it / its bandwidth (seconds),
 * as vschedule.lower_bound. Returns 0 or an error code (message in errbuf if not NULL). */
int aapc_vsched_bound(const aapc_vtree *tree, const long long *counts, double *bound,
                      char *errbuf, int errlen);

#ifdef __cplusplus
}
#endif

#endif
