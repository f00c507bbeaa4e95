/*
 * aapc_vregistry.c: choose the routine that MPI_Alltoallv runs. The environment variable
 * AAPC_ALLTOALLV names an entry of the generated table; unset, the generation-time default
 * runs. Looked up once per process; cost: none per call after that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vregistry.h"

static aapc_alltoallv_fn find(const aapc_vvariant_t *table, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(table[i].variant, name) == 0)
            return table[i].fn;
    return NULL;
}

aapc_alltoallv_fn aapc_vvariant_lookup(const aapc_vvariant_t *table, int n,
                                       const char *default_variant, aapc_alltoallv_fn *chosen)
{
    if (*chosen == NULL) {
        const char *wanted = getenv("AAPC_ALLTOALLV");
        if (wanted != NULL && *wanted != '\0') {
            *chosen = find(table, n, wanted);
            if (*chosen == NULL)
                fprintf(stderr, "aapcgen: AAPC_ALLTOALLV=%s is not a generated routine; using %s\n",
                        wanted, default_variant);
        }
        if (*chosen == NULL)
            *chosen = find(table, n, default_variant);
        if (*chosen == NULL)
            *chosen = table[0].fn;
    }
    return *chosen;
}
