/*
 * aapc_settings.c: the settings every rank of a communicator must share (aapc_settings.h).
 *
 * Algorithm: FNV-1a over "NAME=VALUE;" (or "NAME;" when unset) for each variable of the list;
 * the gather of common/aapc_cluster_comm.c carries each rank's hash beside its machine, and a
 * communicator's state records whether all were equal. aapc_setting() reads that record (an
 * attribute lookup). When they differ, rank 0 names the variables: one MPI_Allreduce(MAX) of
 * (hash, -hash) per variable shows which ones are not the same everywhere.
 * Cost: O(total length of the values) per hash; the gather's 8 more bytes per rank; nothing per
 * call beyond the lookup.
 */
#include "aapc_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_cluster_comm.h" /* aapc_cluster_comm_agreed */

const char *const aapc_settings_names[] = {
    "AAPC_VARIANT",   "AAPC_WAY",      "AAPC_WINDOW", "AAPC_AGREE", "AAPC_HIER_ROUND_BYTES",
    "AAPC_ALLTOALLV", "AAPC_SIBLINGS", "AAPC_LEADERS", "AAPC_BCAST", "AAPC_ALLGATHER",
    "AAPC_ALLREDUCE", "AAPC_REDUCE", "AAPC_BARRIER", "AAPC_DISABLE", "AAPC_COLL_MAX_BYTES",
    "AAPC_COLL_RING_MIN", "AAPC_COLL_PHASED_MIN", "AAPC_COLL_MIN_BCAST", "AAPC_COLL_MIN_ALLGATHER",
    "AAPC_COLL_MIN_ALLREDUCE", "AAPC_COLL_MIN_REDUCE", "AAPC_COLL_MIN_BARRIER", "AAPC_SCATTER",
    "AAPC_SCATTERV", "AAPC_COLL_MIN_SCATTER", "AAPC_COLL_MIN_SCATTERV", "AAPC_SHM_CHANNELS",
    "AAPC_COLL_CHAIN_CHUNK", "AAPC_COLL_CHAIN_MIN", "AAPC_INFLIGHT", "AAPC_TRACE",
    "AAPC_DUMP_SCHEDULE",
};
const int aapc_settings_count = (int)(sizeof aapc_settings_names / sizeof *aapc_settings_names);

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t add_one(uint64_t h, const char *name)
{
    const char *v = getenv(name);
    h = fnv(h, name);
    if (v != NULL) {
        h = fnv(h, "=");
        h = fnv(h, v);
    }
    return fnv(h, ";");
}

uint64_t aapc_setting_hash(const char *name)
{
    return add_one(14695981039346656037ull, name);
}

uint64_t aapc_settings_hash(void)
{
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < aapc_settings_count; i++)
        h = add_one(h, aapc_settings_names[i]);
    return h;
}

const char *aapc_setting(MPI_Comm comm, const char *name)
{
    return aapc_cluster_comm_agreed(comm) == 0 ? NULL : getenv(name);
}

int aapc_settings_warn_differ(MPI_Comm dup, const char *name)
{
    enum { MAXN = 16 };
    long long h[2 * MAXN];
    int n = aapc_settings_count < MAXN ? aapc_settings_count : MAXN, rank = 0;
    for (int i = 0; i < n; i++) {
        /* 63 bits, so that -h never overflows */
        h[i] = (long long)(aapc_setting_hash(aapc_settings_names[i]) >> 1);
        h[n + i] = -h[i];
    }
    int rc = PMPI_Allreduce(MPI_IN_PLACE, h, 2 * n, MPI_LONG_LONG, MPI_MAX, dup);
    if (rc != MPI_SUCCESS || PMPI_Comm_rank(dup, &rank) != MPI_SUCCESS || rank != 0)
        return rc;
    char why[512] = "";
    size_t used = 0;
    unsigned mask = 0;
    for (int i = 0; i < n; i++)
        if (h[i] != -h[n + i]) {
            mask |= 1u << i;
            if (used < sizeof why)
                used += (size_t)snprintf(why + used, sizeof why - used, "%s%s", used ? ", " : "",
                                         aapc_settings_names[i]);
        }
    /* each set of variables once per process (a job's communicators may differ in several) */
    static unsigned said[32];
    static int nsaid;
    const char *quiet = getenv("AAPC_QUIET");
    if (quiet != NULL && quiet[0] != '\0' && strcmp(quiet, "0") != 0)
        return MPI_SUCCESS;
    for (int i = 0; i < nsaid; i++)
        if (said[i] == mask)
            return MPI_SUCCESS;
    if (nsaid == (int)(sizeof said / sizeof *said))
        return MPI_SUCCESS; /* said enough */
    said[nsaid++] = mask;
    fprintf(stderr,
            "aapcgen: %s: %s differ between the ranks of a communicator; its calls run the "
            "built-in defaults on every rank (set AAPC_QUIET=1 to silence)\n",
            name ? name : "?", why[0] ? why : "settings");
    fflush(stderr);
    return MPI_SUCCESS;
}
