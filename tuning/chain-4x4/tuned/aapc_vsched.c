/* Entry point of the Alltoallv schedulers: argument checks and scheduler selection.
 *
 * aapc_vsched_run builds the messages and their tree paths (aapc_vsched_paths.c), runs the
 * chosen scheduler (aapc_vsched_greedy.c: greedy and all-to-all based; aapc_vsched_balanced.c)
 * and assembles the sorted pieces with phase times, cost and bound. The selection is the
 * caller's: no heuristic here. Cost: that of the chosen scheduler (local computation only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vsched_impl.h"

const char *aapc_vsched_strerror(int code)
{
    switch (code) {
    case AAPC_VSCHED_OK:
        return "success";
    case AAPC_VSCHED_EINVAL:
        return "invalid argument";
    case AAPC_VSCHED_ENOMEM:
        return "out of memory";
    case AAPC_VSCHED_ENOTEMPLATE:
        return "all-to-all based scheduling needs the tree's template phases";
    case AAPC_VSCHED_ERANGE:
        return "too large";
    default:
        return "unknown error";
    }
}

void aapc_vsched_free(aapc_vsched *s)
{
    if (!s)
        return;
    free(s->phase);
    free(s->src);
    free(s->dst);
    free(s->offset);
    free(s->length);
    free(s->phase_start);
    free(s->phase_time);
    s->phase = s->src = s->dst = NULL;
    s->offset = s->length = s->phase_start = NULL;
    s->phase_time = NULL;
    s->n_phases = 0;
    s->n_pieces = 0;
}

static int fail(aapc_vsched *out, int rc, const char *what)
{
    aapc_vsched_free(out);
    if (what && what != out->error)
        snprintf(out->error, sizeof out->error, "%s", what);
    else if (!what)
        snprintf(out->error, sizeof out->error, "%s", aapc_vsched_strerror(rc));
    return rc;
}

int aapc_vsched_bound(const aapc_vtree *tree, const long long *counts, double *bound,
                      char *errbuf, int errlen)
{
    char err[160] = "";
    vs_msgs m;
    int rc = vs_messages(tree, counts, &m, err, (int)sizeof err);
    if (rc == AAPC_VSCHED_OK) {
        *bound = vs_bound(&m);
        if (*bound < 0) {
            rc = AAPC_VSCHED_ENOMEM;
            snprintf(err, sizeof err, "out of memory");
        }
        vs_messages_free(&m);
    }
    if (rc != AAPC_VSCHED_OK && errbuf && errlen > 0)
        snprintf(errbuf, (size_t)errlen, "%s", err);
    return rc;
}

int aapc_vsched_run(const aapc_vtree *tree, const long long *counts, int scheduler,
                    long long threshold, long long chunk, aapc_vsched *out)
{
    if (!out)
        return AAPC_VSCHED_EINVAL;
    memset(out, 0, sizeof *out);
    out->small_phase = -1;
    if (scheduler != AAPC_VSCHED_GREEDY && scheduler != AAPC_VSCHED_ALLTOALL &&
        scheduler != AAPC_VSCHED_BALANCED) {
        snprintf(out->error, sizeof out->error, "scheduler %d is not 0 (greedy), 1 (alltoall) "
                 "or 2 (balanced)", scheduler);
        return fail(out, AAPC_VSCHED_EINVAL, out->error);
    }
    if (threshold < 0 || chunk < 0) {
        snprintf(out->error, sizeof out->error, "%s = %lld is negative",
                 threshold < 0 ? "threshold" : "chunk", threshold < 0 ? threshold : chunk);
        return fail(out, AAPC_VSCHED_EINVAL, out->error);
    }
    if (scheduler == AAPC_VSCHED_ALLTOALL && tree && !tree->template_phase)
        return fail(out, AAPC_VSCHED_ENOTEMPLATE, NULL);
    vs_msgs m;
    int rc = vs_messages(tree, counts, &m, out->error, (int)sizeof out->error);
    if (rc != AAPC_VSCHED_OK)
        return fail(out, rc, out->error);
    vs_pieces pc = {0};
    int n_phases = 0, small = -1;
    if (scheduler == AAPC_VSCHED_BALANCED) {
        rc = vs_balanced(&m, chunk, &pc, &n_phases);
    } else {
        int *phase_of = malloc((size_t)(m.k ? m.k : 1) * sizeof *phase_of);
        long long *start = NULL;
        rc = phase_of ? vs_phased(&m, threshold, scheduler == AAPC_VSCHED_ALLTOALL, phase_of,
                                  &n_phases, &small)
                      : AAPC_VSCHED_ENOMEM;
        if (rc == AAPC_VSCHED_OK) { /* counting sort by phase; message order inside a phase */
            start = calloc((size_t)n_phases + 1, sizeof *start);
            pc.cap = pc.n = m.k;
            pc.phase = malloc((size_t)(m.k ? m.k : 1) * sizeof *pc.phase);
            pc.msg = malloc((size_t)(m.k ? m.k : 1) * sizeof *pc.msg);
            pc.off = calloc((size_t)(m.k ? m.k : 1), sizeof *pc.off);
            pc.len = malloc((size_t)(m.k ? m.k : 1) * sizeof *pc.len);
            if (!start || !pc.phase || !pc.msg || !pc.off || !pc.len) {
                rc = AAPC_VSCHED_ENOMEM;
            } else {
                for (int x = 0; x < m.k; x++)
                    start[phase_of[x] + 1]++;
                for (int p = 0; p < n_phases; p++)
                    start[p + 1] += start[p];
                for (int x = 0; x < m.k; x++) {
                    long long i = start[phase_of[x]]++;
                    pc.phase[i] = phase_of[x];
                    pc.msg[i] = x;
                    pc.len[i] = m.count[x];
                }
            }
        }
        free(start);
        free(phase_of);
    }
    if (rc == AAPC_VSCHED_OK)
        rc = vs_assemble(&m, &pc, n_phases, small, out);
    vs_pieces_free(&pc);
    vs_messages_free(&m);
    if (rc != AAPC_VSCHED_OK)
        return fail(out, rc, NULL);
    out->small_phase = small;
    return AAPC_VSCHED_OK;
}
