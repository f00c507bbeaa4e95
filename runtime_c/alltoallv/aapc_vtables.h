/*
 * aapc_vtables.h: executor tables (aapc_schedule_t) built at run time from an Alltoallv
 * schedule, for levels 1 and 2 (level 3 gets the same tables from the Python generator).
 * Pure C11, no MPI calls.
 */
#ifndef AAPC_VTABLES_H
#define AAPC_VTABLES_H

#include "aapc_phased.h"
#include "aapc_vsched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The run-time synchronisations (seed 002 Table 5 subset). */
enum aapc_vsync {
    AAPC_VSYNC_NONE = 0,     /* no-sync */
    AAPC_VSYNC_SENDER = 1,   /* sender-all */
    AAPC_VSYNC_RECEIVER = 2, /* receiver-all */
    AAPC_VSYNC_BARRIER = 3   /* barrier-all */
};

/* Owner of the arrays behind one built aapc_schedule_t. */
typedef struct aapc_vtables {
    aapc_schedule_t sched;
    void *mem[32];
    long long n_syncs; /* sync messages of the whole schedule */
} aapc_vtables_t;

/* Build the executor tables of schedule vs (pieces sorted by phase, src, dst, offset as
   aapc_vsched_run returns them) with synchronisation `sync` on `tree`. hosts may be NULL.
   Returns 0, or -1 when out of memory (t is then freed). */
int aapc_vtables_build(const aapc_vsched *vs, const aapc_vtree *tree, int sync,
                       const char *name, const char *const *hosts, aapc_vtables_t *t);
void aapc_vtables_free(aapc_vtables_t *t);

#ifdef __cplusplus
}
#endif
#endif /* AAPC_VTABLES_H */
