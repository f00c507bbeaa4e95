/*
 * aapc_vregistry.c: choose the routine that MPI_Alltoallv runs. The environment variable
 * AAPC_ALLTOALLV names an entry of the generated table; unset, the generation-time default
 * runs. A setting every rank of a communicator shares (common/aapc_settings.h): where its ranks
 * differ, every rank runs the default. Cost per call: one attribute lookup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_vregistry.h"

#include "aapc_settings.h"

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
    if (*chosen == NULL)
        *chosen = aapc_vvariant_resolve(table, n, getenv("AAPC_ALLTOALLV"), default_variant);
    return *chosen;
}

aapc_alltoallv_fn aapc_vvariant_resolve(const aapc_vvariant_t *table, int n, const char *wanted,
                                        const char *default_variant)
{
    aapc_alltoallv_fn fn = NULL;
    if (wanted != NULL && *wanted != '\0') {
        fn = find(table, n, wanted);
        if (fn == NULL) {
            static const char *said = NULL;
            if (said != wanted)
                fprintf(stderr, "aapcgen: AAPC_ALLTOALLV=%s is not a generated routine; using %s\n",
                        wanted, default_variant);
            said = wanted;
        }
    }
    if (fn == NULL)
        fn = find(table, n, default_variant);
    return fn != NULL ? fn : table[0].fn;
}

aapc_alltoallv_fn aapc_vvariant_for(const aapc_vvariant_t *table, int n, MPI_Comm comm,
                                    const char *default_variant)
{
    static const aapc_vvariant_t *t_env = NULL, *t_def = NULL;
    static const char *w_env = NULL;
    static aapc_alltoallv_fn f_env = NULL, f_def = NULL;
    const char *wanted = aapc_setting(comm, "AAPC_ALLTOALLV");
    if (wanted != NULL && *wanted != '\0') {
        if (f_env == NULL || w_env != wanted || t_env != table) {
            f_env = aapc_vvariant_resolve(table, n, wanted, default_variant);
            w_env = wanted;
            t_env = table;
        }
        return f_env;
    }
    if (f_def == NULL || t_def != table) {
        f_def = aapc_vvariant_resolve(table, n, NULL, default_variant);
        t_def = table;
    }
    return f_def;
}
