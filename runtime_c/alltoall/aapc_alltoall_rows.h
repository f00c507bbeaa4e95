/*
 * aapc_alltoall_rows.h: one rank's executor rows, with their syncs, for a phase schedule
 * computed at run time (aapc_alltoall_rows.c).
 */
#ifndef AAPC_ALLTOALL_ROWS_H
#define AAPC_ALLTOALL_ROWS_H

#include "aapc_cluster.h"
#include "aapc_phased.h"
#include "aapc_vtables.h" /* AAPC_VSYNC_* */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aapc_rows {
    aapc_schedule_t sched; /* rows of rank `me` only; the other ranks' rows are empty */
    void *mem[24];
    long long n_syncs_in, n_syncs_out;
} aapc_rows_t;

/* Rank `me`'s rows of schedule ph on the job tree, with the syncs of `sync` (AAPC_VSYNC_*) for
   an executor window of `window` phases (1: the plain executor; barrier-all has no window).
   Returns 0, or -1 when out of memory (out is then freed). */
int aapc_rows_build(const aapc_job_phases_t *ph, const aapc_job_tree_t *tree, int sync,
                    int32_t window, int me, const char *name, aapc_rows_t *out);
void aapc_rows_free(aapc_rows_t *r);
/* The same rows from seed 002's phases streamed, none stored (the job's phases computed here:
   aapc_job_phases_each); for jobs far above what the stored schedule fits. Returns 0, -1 when
   out of memory, or 1 when the job's phases are not seed 002's (the capacity-aware ones) or it
   fails otherwise: then aapc_job_phases and aapc_rows_build serve it (and say why). */
int aapc_rows_build_seed(const aapc_cluster_t *c, const int32_t *rank_machine, int32_t P,
                         const aapc_job_tree_t *tree, int sync, int32_t window, int me,
                         const char *name, aapc_rows_t *out);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_ALLTOALL_ROWS_H */
