/*
 * aapc_registry.c: choose the variant that MPI_Alltoall runs (selection, kept apart from the
 * algorithms). The environment variable AAPC_VARIANT names a variant of aapc_variants[]; unset,
 * the generation-time default runs. Looked up once per process; cost: none per call after that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_registry.h"

static aapc_alltoall_fn find(const char *name)
{
    for (int i = 0; i < aapc_nvariants; i++) {
        if (strcmp(aapc_variants[i].variant, name) == 0) {
            return aapc_variants[i].fn;
        }
    }
    return NULL;
}

aapc_alltoall_fn aapc_variant_lookup(const char *default_variant)
{
    static aapc_alltoall_fn chosen = NULL;
    if (chosen == NULL) {
        const char *wanted = getenv("AAPC_VARIANT");
        if (wanted != NULL && *wanted != '\0') {
            chosen = find(wanted);
            if (chosen == NULL) {
                fprintf(stderr, "aapcgen: AAPC_VARIANT=%s is not a variant generated for %s; using %s\n",
                        wanted, aapc_topology_name, default_variant);
            }
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
