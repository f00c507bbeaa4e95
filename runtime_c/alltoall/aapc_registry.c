/*
 * aapc_registry.c: choose the variant that MPI_Alltoall runs (selection, kept apart from the
 * algorithms). The environment variable AAPC_VARIANT names a variant of aapc_variants[]; unset,
 * the generation-time default runs; a name that is none of them is reported with the closest
 * generated names. Looked up once per process; cost: none per call after that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_registry.h"

#include "aapc_comm.h" /* aapc_closest_names */

static aapc_alltoall_fn find(const char *name)
{
    for (int i = 0; i < aapc_nvariants; i++) {
        if (strcmp(aapc_variants[i].variant, name) == 0) {
            return aapc_variants[i].fn;
        }
    }
    return NULL;
}

/* AAPC_VARIANT names no variant: say so with the closest names (a typo), else all of them. The
   environment is the same on every rank (mpiexec and srun pass it on). */
static void say_unknown(const char *wanted, const char *default_variant)
{
    enum { MAX_LISTED = 64 };
    int rank = 0; /* once per job: MPI_COMM_WORLD's rank 0 says it (AAPC_WARN=all: every rank) */
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS && rank != 0 && !aapc_warn_every())
        return;
    const char *names[MAX_LISTED] = {NULL};
    int n = aapc_nvariants < MAX_LISTED ? aapc_nvariants : MAX_LISTED;
    char close[160], all[1024] = "";
    for (int i = 0; i < n; i++)
        names[i] = aapc_variants[i].variant;
    aapc_closest_names(wanted, names, n, close, sizeof close);
    for (int i = 0; i < n && !close[0]; i++) {
        size_t used = strlen(all);
        snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "", names[i]);
    }
    fprintf(stderr,
            "aapcgen: AAPC_VARIANT=%s is not a variant generated for %s (%s%s%s); using %s\n",
            wanted, aapc_topology_name, close[0] ? "did you mean " : "generated: ",
            close[0] ? close : all, close[0] ? "?" : "", default_variant);
}

aapc_alltoall_fn aapc_variant_lookup(const char *default_variant)
{
    static aapc_alltoall_fn chosen = NULL;
    if (chosen == NULL) {
        const char *wanted = getenv("AAPC_VARIANT");
        if (wanted != NULL && *wanted != '\0') {
            chosen = find(wanted);
            if (chosen == NULL)
                say_unknown(wanted, default_variant);
        }
        if (chosen == NULL) {
            chosen = find(default_variant);
        }
        if (chosen == NULL) {
            chosen = aapc_variants[0].fn;
        }
    }
    return chosen;
}
