/*
 * aapc_cluster_machine.c: which machine of the cluster a rank runs on.
 *
 * Algorithm: AAPC_MACHINE=<machine name> (containers, emulated clusters, tests) names the
 * machine directly; otherwise the rank's host name (MPI_Get_processor_name) is compared with
 * every machine's host (its name when it has none): first the full names, then the short forms
 * (up to the first '.'), which must then match exactly one machine: "n3" and
 * "n3.cluster.org" name the same machine (aapcgen/core/hostlist.py matches the same way).
 * Cost: O(M L) for M machines and names of L characters, once per process; no communication.
 */
#include <string.h>

#include "aapc_cluster.h"

static size_t short_len(const char *s)
{
    const char *dot = strchr(s, '.');
    return dot ? (size_t)(dot - s) : strlen(s);
}

static const char *key_of(const aapc_cluster_t *c, int32_t m)
{
    const char *host = c->machine_host ? c->machine_host[m] : NULL;
    return host ? host : c->machine_name[m];
}

int32_t aapc_cluster_machine_named(const aapc_cluster_t *c, const char *name)
{
    for (int32_t m = 0; name != NULL && m < c->n_machines; m++)
        if (c->machine_name[m] != NULL && strcmp(c->machine_name[m], name) == 0)
            return m;
    return -1;
}

int32_t aapc_cluster_machine_of_host(const aapc_cluster_t *c, const char *host)
{
    if (host == NULL || c->machine_name == NULL)
        return -1;
    for (int32_t m = 0; m < c->n_machines; m++)
        if (key_of(c, m) != NULL && strcmp(key_of(c, m), host) == 0)
            return m;
    size_t n = short_len(host);
    int32_t found = -1;
    for (int32_t m = 0; m < c->n_machines; m++) {
        const char *k = key_of(c, m);
        if (k != NULL && short_len(k) == n && strncmp(k, host, n) == 0) {
            if (found >= 0)
                return -1; /* two machines share the short name: only the full one matches */
            found = m;
        }
    }
    return found;
}
