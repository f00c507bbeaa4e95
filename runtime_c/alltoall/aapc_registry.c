/*
 * aapc_registry.c: choose the variant that MPI_Alltoall runs (selection, kept apart from the
 * algorithms). The environment variable AAPC_VARIANT names a variant of aapc_variants[]; unset,
 * the generation-time default runs; a name that is none of them is reported with the closest
 * generated names. A setting every rank of a communicator shares (common/aapc_settings.h):
 * where its ranks differ, every rank runs the default. Resolved once per name; cost per call:
 * one attribute lookup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_registry.h"
#include "aapc_cluster_comm.h" /* aapc_cluster_comm_agreed */
#include "aapc_settings.h"

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

/* The variant named `wanted` (NULL or empty: default_variant), resolved once per name. */
static aapc_alltoall_fn resolve(const char *wanted, const char *default_variant)
{
    static const char *env_name = NULL, *default_name = NULL;
    static aapc_alltoall_fn env_fn = NULL, default_fn = NULL;
    if (wanted != NULL && *wanted != '\0') {
        if (env_name != wanted) { /* a new name: looked up (and an unknown one said) once */
            env_fn = find(wanted);
            env_name = wanted;
            if (env_fn == NULL)
                say_unknown(wanted, default_variant);
        }
        if (env_fn != NULL)
            return env_fn;
    }
    if (default_fn == NULL || default_name != default_variant) {
        default_fn = find(default_variant);
        default_name = default_variant;
        if (default_fn == NULL)
            default_fn = aapc_variants[0].fn;
    }
    return default_fn;
}

/* getenv("AAPC_VARIANT"), read once per process: a call reads no environment. */
static const char *variant_env(void)
{
    static int read = 0; /* threads that race read and store the same value */
    static const char *value = NULL;
    if (!__atomic_load_n(&read, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&value, getenv("AAPC_VARIANT"), __ATOMIC_RELAXED);
        __atomic_store_n(&read, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&value, __ATOMIC_RELAXED);
}

aapc_alltoall_fn aapc_variant_lookup(const char *default_variant)
{
    return resolve(variant_env(), default_variant);
}

aapc_alltoall_fn aapc_variant_for(MPI_Comm comm, const char *default_variant)
{
    const char *v = variant_env();
    if (v == NULL || *v == '\0') /* unset: the default whatever the other ranks have */
        return resolve(NULL, default_variant);
    return resolve(aapc_cluster_comm_agreed(comm) == 0 ? NULL : v, default_variant);
}
