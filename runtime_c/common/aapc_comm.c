/*
 * aapc_comm.c: per-communicator cache and rank -> machine mapping of the phase executor, and the
 * fallback warnings of every routine.
 *
 * Algorithm: on the first call of a schedule on a communicator, check that the communicator is
 * an intra-communicator of more than one rank, PMPI_Comm_dup it (once per communicator) and map
 * ranks to machines:
 *   - generated schedules carry a placement (common/aapc_cluster_comm.c): the machine of every
 *     rank, by AAPC_MACHINE or host name, gathered once per communicator and shared with the
 *     run-time routines. The schedule runs only on a placement it can confirm: every rank on a
 *     machine of the cluster, each machine once; or every rank on one host outside the cluster
 *     (a workstation, where no switch link is crossed), in MPI_COMM_WORLD rank order. Otherwise
 *     the library's routine runs and the warning names the cause (the unknown host, the
 *     mistyped AAPC_MACHINE, the size, a machine with two ranks);
 *   - without a placement: the identity of MPI_COMM_WORLD ranks when the schedule has no host
 *     table; otherwise every rank allgathers MPI_Get_processor_name and, in rank order, takes
 *     the first unused machine whose host name is equal (machines sorted by (host, index) once,
 *     then one binary search per rank).
 * The result, including "does not match" and its cause, is cached as an attribute on the user's
 * communicator (keyval created lazily, MPI_COMM_NULL_COPY_FN so user dups do not inherit it, a
 * delete callback that frees the dup and the cache). All ranks see the same gathered data, so
 * all reach the same decision and either all run the schedule or all fall back.
 * Warnings (aapc_warn_fallback): once per job and cause. Every rank of the communicator notes
 * the cause and rank 0 prints it unless noted before (a cause first met by disjoint groups of
 * ranks at once can print once per group).
 *
 * Cost (p ranks, H = MPI_MAX_PROCESSOR_NAME): first call with a placement: one MPI_Comm_dup
 * plus the placement's MPI_Allgather of two ints per rank (lg(p) alpha + 8 p beta); with a host
 * table: one MPI_Comm_dup plus one allgather, about lg(p) alpha + p H beta, and O(p log p) local
 * work; with neither only the dup. Later calls: one attribute lookup and a walk over the
 * (usually one) schedules used on that communicator, no communication.
 *
 * Threads: the keyval is created under a lock (common/aapc_lock.h); everything else is per
 * communicator, and MPI forbids concurrent collectives on one communicator. A sessions
 * program (no MPI_COMM_WORLD) gets the host-name mapping, or a fallback without a host table.
 */
#include "aapc_comm.h"

#include "aapc_lock.h"
#include "aapc_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How one schedule runs on one communicator. */
struct aapc_comm_map {
    const aapc_schedule_t *sched;
    int usable;
    int my_machine;
    int *machine_rank;  /* NULL: identity */
    char why[256];      /* not usable: the cause */
    struct aapc_comm_map *next;
};

/* A routine's own state on the communicator (aapc_comm_slot). */
struct aapc_comm_slot {
    const void *key;
    void *data;
    void (*free_fn)(void *);
    struct aapc_comm_slot *next;
};

struct aapc_comm_cache {
    MPI_Comm dup;       /* MPI_COMM_NULL until a schedule matches the communicator's size */
    struct aapc_comm_map *maps;
    void *scratch;
    size_t scratch_size;
    struct aapc_comm_slot *slots;
};

static int aapc_keyval = MPI_KEYVAL_INVALID;
static aapc_mutex_t aapc_comm_lock = AAPC_MUTEX_INIT; /* the keyval, the printed warnings */

static int aapc_flag(const char *var, const char *on)
{
    const char *v = getenv(var);
    if (on != NULL)
        return v != NULL && strcmp(v, on) == 0;
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

int aapc_warn_every(void)
{
    static int every = -1;
    if (every < 0)
        every = aapc_flag("AAPC_WARN", "all");
    return every;
}

/* FNV-1a of the warning's cause: the key a job prints once (whichever routine meets it). */
static uint64_t aapc_text_hash(const char *text)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = text ? text : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static void (*aapc_listener)(const char *why) = NULL;

void aapc_warn_set_listener(void (*listener)(const char *why))
{
    aapc_listener = listener;
}

void aapc_warn_fallback(MPI_Comm comm, const char *name, const char *why, const char *routine)
{
    enum { KEEP = 256 };
    static uint64_t noted[KEEP];
    static int n_noted = 0;
    int rank = 0, size = 2;
    if (aapc_listener != NULL)
        aapc_listener(why);
    if (comm != MPI_COMM_NULL && (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
                                  PMPI_Comm_size(comm, &size) != MPI_SUCCESS))
        return;
    if (size == 1 || aapc_flag("AAPC_QUIET", NULL))
        return;
    if (!aapc_warn_every()) {
        uint64_t h = aapc_text_hash(why);
        int seen = 0, too_many = 0;
        aapc_lock(&aapc_comm_lock); /* threads: the list of noted causes */
        for (int i = 0; i < n_noted && i < KEEP; i++)
            seen |= noted[i] == h;
        if (!seen) {
            if (n_noted < KEEP)
                noted[n_noted] = h;
            n_noted++;
            too_many = n_noted > KEEP;
        }
        int first_over = !seen && n_noted == KEEP + 1;
        aapc_unlock(&aapc_comm_lock);
        if (seen || rank != 0)
            return;
        if (first_over) /* a job that keeps meeting new causes: say so, once */
            fprintf(stderr, "aapcgen: %s: more fallbacks to the MPI library's routines; not "
                            "listing them\n", name ? name : "?");
        if (too_many)
            return;
    }
    fprintf(stderr,
            "aapcgen: %s: %s; using the MPI library's %s "
            "(set AAPC_QUIET=1 to silence)\n",
            name ? name : "?", why, routine);
    fflush(stderr);
}

/* Levenshtein distance of a and b, at most `cap` + 1 (long names are cut at 63 characters). */
static int aapc_edit_distance(const char *a, const char *b, int cap)
{
    enum { MAXLEN = 63 };
    int la = (int)strlen(a), lb = (int)strlen(b);
    la = la > MAXLEN ? MAXLEN : la;
    lb = lb > MAXLEN ? MAXLEN : lb;
    if (la - lb > cap || lb - la > cap)
        return cap + 1;
    int row[MAXLEN + 1];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb] > cap ? cap + 1 : row[lb];
}

void aapc_closest_names(const char *word, const char *const *names, int n, char *out,
                        size_t outlen)
{
    int best[2] = {-1, -1}, dist[2] = {0, 0};
    int len = (int)strlen(word), cap = len < 6 ? 2 : len / 3;
    out[0] = '\0';
    for (int i = 0; names != NULL && i < n; i++) {
        if (names[i] == NULL)
            continue;
        int d = aapc_edit_distance(word, names[i], cap);
        if (d > cap)
            continue;
        if (best[0] < 0 || d < dist[0]) {
            best[1] = best[0];
            dist[1] = dist[0];
            best[0] = i;
            dist[0] = d;
        } else if (best[1] < 0 || d < dist[1]) {
            best[1] = i;
            dist[1] = d;
        }
    }
    if (best[0] >= 0 && best[1] >= 0)
        snprintf(out, outlen, "'%s' or '%s'", names[best[0]], names[best[1]]);
    else if (best[0] >= 0)
        snprintf(out, outlen, "'%s'", names[best[0]]);
}

int aapc_dump_wanted(void)
{
    const char *dir = getenv("AAPC_DUMP_SCHEDULE");
    return dir != NULL && dir[0] != '\0';
}

FILE *aapc_dump_open(const char *kind, int *serial)
{
    if (!aapc_dump_wanted())
        return NULL;
    const char *dir = getenv("AAPC_DUMP_SCHEDULE");
    char path[4096];
    snprintf(path, sizeof path, "%s/aapc-%s-%ld-%d.json", dir, kind, (long)getpid(), (*serial)++);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fprintf(stderr, "aapcgen: AAPC_DUMP_SCHEDULE: cannot write %s\n", path);
    return f;
}

void aapc_dump_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The routine a schedule stands for: piece tables make it an MPI_Alltoallv schedule. */
static const char *aapc_routine(const aapc_schedule_t *s)
{
    return s->send_pos != NULL ? "MPI_Alltoallv" : "MPI_Alltoall";
}

/* The schedule does not run on this communicator: keep the cause and say it (once per job). */
static void aapc_refuse(const aapc_schedule_t *s, MPI_Comm comm, struct aapc_comm_map *map,
                        const char *why)
{
    size_t k = strlen(why);
    k = k < sizeof map->why ? k : sizeof map->why - 1; /* a longer cause is cut for the report */
    memcpy(map->why, why, k);
    map->why[k] = '\0';
    aapc_warn_fallback(comm, s->name, why, aapc_routine(s));
}

static int aapc_cache_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    struct aapc_comm_cache *c = attr;
    (void)comm;
    (void)keyval;
    (void)extra;
    int rc = MPI_SUCCESS;
    if (c == NULL)
        return MPI_SUCCESS;
    if (c->dup != MPI_COMM_NULL)
        rc = PMPI_Comm_free(&c->dup);
    while (c->maps) {
        struct aapc_comm_map *next = c->maps->next;
        free(c->maps->machine_rank);
        free(c->maps);
        c->maps = next;
    }
    while (c->slots) {
        struct aapc_comm_slot *next = c->slots->next;
        if (c->slots->data != NULL && c->slots->free_fn != NULL)
            c->slots->free_fn(c->slots->data);
        free(c->slots);
        c->slots = next;
    }
    free(c->scratch);
    free(c);
    return rc;
}

/* ---- host name mapping ---------------------------------------------------------------- */

/* A machine and its host name: sorting these needs no context (C11 qsort has none). */
struct aapc_host_entry {
    const char *host;
    int machine;
};

static int aapc_cmp_machine(const void *a, const void *b)
{
    const struct aapc_host_entry *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c != 0 ? c : (x->machine > y->machine) - (x->machine < y->machine);
}

/* First position in sorted[0..n) whose host is >= name. */
static int aapc_lower_bound(const struct aapc_host_entry *sorted, int n, const char *name)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid].host, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Fill map->machine_rank / my_machine from the gathered names (p names of `stride` bytes).
   Returns 1 on success, 0 (with *bad_rank set) when a rank finds no unused machine. */
static int aapc_map_hosts(const aapc_schedule_t *s, const char *names, int stride, int myrank,
                          struct aapc_comm_map *map, int *bad_rank, int *nomem)
{
    int n = s->nmachines;
    struct aapc_host_entry *sorted = malloc((size_t)n * sizeof *sorted);
    int *cursor = malloc((size_t)n * sizeof *cursor);
    map->machine_rank = malloc((size_t)n * sizeof *map->machine_rank);
    if (!sorted || !cursor || !map->machine_rank) {
        free(sorted);
        free(cursor);
        *nomem = 1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        sorted[i].host = s->hosts[i];
        sorted[i].machine = i;
        cursor[i] = i; /* next unused position of the group starting at i */
    }
    qsort(sorted, (size_t)n, sizeof *sorted, aapc_cmp_machine);

    int ok = 1;
    for (int r = 0; r < n; r++) {
        const char *name = names + (size_t)r * (size_t)stride;
        int g = aapc_lower_bound(sorted, n, name);
        int pos = g < n ? cursor[g] : n;
        if (pos >= n || strcmp(sorted[pos].host, name) != 0) {
            *bad_rank = r;
            ok = 0;
            break;
        }
        cursor[g] = pos + 1;
        map->machine_rank[sorted[pos].machine] = r;
        if (r == myrank)
            map->my_machine = sorted[pos].machine;
    }
    free(sorted);
    free(cursor);
    return ok;
}

/* ---- cache ------------------------------------------------------------------------------ */

static int aapc_get_cache(MPI_Comm comm, struct aapc_comm_cache **out)
{
    int rc, flag = 0;
    void *attr = NULL;
    if ((rc = aapc_keyval_once(&aapc_comm_lock, &aapc_keyval, aapc_cache_delete)) != MPI_SUCCESS)
        return rc;
    rc = PMPI_Comm_get_attr(comm, aapc_keyval, &attr, &flag);
    if (rc != MPI_SUCCESS)
        return rc;
    if (flag) {
        *out = attr;
        return MPI_SUCCESS;
    }
    struct aapc_comm_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return MPI_ERR_NO_MEM;
    c->dup = MPI_COMM_NULL;
    rc = PMPI_Comm_set_attr(comm, aapc_keyval, c);
    if (rc != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

/* A schedule without a host table places MPI_COMM_WORLD rank m on machine m. A communicator
   of the same size runs it when it holds exactly MPI_COMM_WORLD's ranks, in any order (a dup, a
   split with reversed keys): machine m is the rank of world rank m there. Local: the group
   translation needs no communication and gives the same answer on every rank. */
static int aapc_map_world(const aapc_schedule_t *s, MPI_Comm comm, int rank,
                          struct aapc_comm_map *map)
{
    int rc, wsize = 0, n = s->nmachines;
    char why[160];
    if (!aapc_world_model()) { /* an MPI-4 sessions program: no MPI_COMM_WORLD to place by */
        aapc_refuse(s, comm, map,
                    "the program has no MPI_COMM_WORLD (MPI sessions) and the schedule has no "
                    "host table to place the ranks");
        return MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_size(MPI_COMM_WORLD, &wsize)) != MPI_SUCCESS)
        return rc;
    if (wsize != n) {
        snprintf(why, sizeof why,
                 "the communicator is %d of MPI_COMM_WORLD's %d ranks and the schedule has no "
                 "host table to place them",
                 n, wsize);
        aapc_refuse(s, comm, map, why);
        return MPI_SUCCESS;
    }
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int *ranks = malloc(sizeof *ranks * (size_t)n), *world = malloc(sizeof *world * (size_t)n);
    int *machine_rank = malloc(sizeof *machine_rank * (size_t)n);
    if (ranks == NULL || world == NULL || machine_rank == NULL) {
        free(ranks);
        free(world);
        free(machine_rank);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    if ((rc = PMPI_Comm_group(comm, &g)) == MPI_SUCCESS &&
        (rc = PMPI_Comm_group(MPI_COMM_WORLD, &wg)) == MPI_SUCCESS)
        rc = PMPI_Group_translate_ranks(g, n, ranks, wg, world);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    int identity = 1;
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++) {
        machine_rank[world[i]] = i; /* same size: every world rank appears once */
        identity &= world[i] == i;
    }
    map->usable = rc == MPI_SUCCESS;
    map->my_machine = rc == MPI_SUCCESS ? world[rank] : -1;
    if (rc == MPI_SUCCESS && !identity)
        map->machine_rank = machine_rank;
    else
        free(machine_rank);
    free(ranks);
    free(world);
    return rc;
}

/* With a placement (generated schedules): where every rank runs, as the run-time routines see
   it (collective on first use: common/aapc_cluster_comm.c). The schedule runs when every rank is
   on a machine of the cluster, one rank per machine, every machine once; or, every rank being
   on one host outside the cluster (a workstation: no switch link is crossed), in rank order
   (MPI_COMM_WORLD's, or the communicator's own for the leaders of hier/: `identity`).
   Otherwise the cause is named: the unknown host or mistyped AAPC_MACHINE first, then the
   size, then a machine running two ranks. */
static int aapc_build_placed(const aapc_schedule_t *s, MPI_Comm comm, struct aapc_comm_cache *c,
                             struct aapc_comm_map *map, int size, int rank, int identity)
{
    aapc_placed_t pl;
    char why[512];
    int n = s->nmachines;
    int rc = s->placement->place(s->placement->cluster, comm, s->name, aapc_routine(s), &pl);
    if (rc != MPI_SUCCESS)
        return rc;
    if (pl.rank_machine == NULL) {
        aapc_refuse(s, comm, map, "the communicator is an inter-communicator");
        return MPI_SUCCESS;
    }
    if (!pl.all_known && !pl.one_host) {
        aapc_refuse(s, comm, map, pl.why);
        return MPI_SUCCESS;
    }
    if (size != n) {
        snprintf(why, sizeof why,
                 "communicator has %d ranks; the precomputed schedule needs one on each of "
                 "the topology's %d machines%s",
                 size, n, pl.one_host ? "" : " (AAPC_VARIANT=auto schedules any communicator)");
        aapc_refuse(s, comm, map, why);
        return MPI_SUCCESS;
    }
    if (c->dup == MPI_COMM_NULL && (rc = PMPI_Comm_dup(comm, &c->dup)) != MPI_SUCCESS) {
        c->dup = MPI_COMM_NULL;
        return rc;
    }
    if (pl.one_host)
        snprintf(map->why, sizeof map->why, "precomputed, in rank order: all ranks on one host");
    if (pl.one_host && !identity)
        return aapc_map_world(s, comm, rank, map);
    if (pl.one_host) {
        map->usable = 1;
        map->my_machine = rank;
        return MPI_SUCCESS;
    }
    int *machine_rank = malloc(sizeof *machine_rank * (size_t)n);
    if (machine_rank == NULL)
        return MPI_ERR_NO_MEM;
    for (int m = 0; m < n; m++)
        machine_rank[m] = -1;
    for (int r = 0; r < size; r++) {
        int32_t m = pl.rank_machine[r];
        if (m < 0 || m >= n) { /* not this schedule's machines (cannot happen: the same cluster) */
            snprintf(why, sizeof why, "rank %d runs on machine %d, not one of the schedule's %d",
                     r, (int)m, n);
            free(machine_rank);
            aapc_refuse(s, comm, map, why);
            return MPI_SUCCESS;
        }
        if (machine_rank[m] >= 0) {
            snprintf(why, sizeof why,
                     "ranks %d and %d both run on machine %s; the precomputed schedule has one "
                     "rank per machine (AAPC_VARIANT=auto takes several)",
                     machine_rank[m], r, pl.machine_name ? pl.machine_name[m] : "?");
            free(machine_rank);
            aapc_refuse(s, comm, map, why);
            return MPI_SUCCESS;
        }
        machine_rank[m] = r;
    }
    map->usable = 1;
    map->my_machine = pl.rank_machine[rank];
    map->machine_rank = machine_rank;
    return MPI_SUCCESS;
}

/* Collective over comm: decide whether (and how) s runs on comm. */
static int aapc_build_map(const aapc_schedule_t *s, MPI_Comm comm, struct aapc_comm_cache *c,
                          struct aapc_comm_map *map)
{
    int rc, inter = 0, size = 0, rank = 0;
    char why[MPI_MAX_PROCESSOR_NAME + 160];

    map->usable = 0;
    map->my_machine = -1;
    map->machine_rank = NULL;
    if ((rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS)
        return rc;
    if (inter) {
        aapc_refuse(s, comm, map, "the communicator is an inter-communicator");
        return MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    if (size == 1) { /* nothing to schedule: no warning */
        snprintf(map->why, sizeof map->why, "a communicator of 1 rank (the library's local copy)");
        return MPI_SUCCESS;
    }
    if (s->placement != NULL)
        return aapc_build_placed(s, comm, c, map, size, rank, 0);
    if (size != s->nmachines) {
        snprintf(why, sizeof why, "communicator has %d ranks, the topology %d machines", size,
                 (int)s->nmachines);
        aapc_refuse(s, comm, map, why);
        return MPI_SUCCESS;
    }
    if (c->dup == MPI_COMM_NULL && (rc = PMPI_Comm_dup(comm, &c->dup)) != MPI_SUCCESS) {
        c->dup = MPI_COMM_NULL;
        return rc;
    }
    if (s->hosts == NULL)
        return aapc_map_world(s, comm, rank, map);

    /* Host table: everybody gathers every name, so everybody computes the same mapping. */
    const int stride = MPI_MAX_PROCESSOR_NAME + 1;
    char *names = calloc((size_t)size + 1, (size_t)stride);
    if (names == NULL)
        return MPI_ERR_NO_MEM;
    char *mine = names + (size_t)size * (size_t)stride; /* extra slot: my own name */
    int len = 0;
    if ((rc = PMPI_Get_processor_name(mine, &len)) == MPI_SUCCESS)
        rc = PMPI_Allgather(mine, stride, MPI_CHAR, names, stride, MPI_CHAR, c->dup);
    if (rc != MPI_SUCCESS) {
        free(names);
        return rc;
    }
    for (int i = 0; i < size; i++)
        names[(size_t)i * (size_t)stride + (size_t)stride - 1] = '\0';
    int bad_rank = -1, nomem = 0;
    for (int i = 0; i < s->nmachines; i++) {
        if (s->hosts[i] == NULL) { /* malformed table: treat as no match */
            snprintf(why, sizeof why, "machine %d has no host name in the table", i);
            aapc_refuse(s, comm, map, why);
            free(names);
            return MPI_SUCCESS;
        }
    }
    if (aapc_map_hosts(s, names, stride, rank, map, &bad_rank, &nomem)) {
        map->usable = 1;
    } else if (nomem) {
        rc = MPI_ERR_NO_MEM;
    } else {
        const char *host = names + (size_t)bad_rank * (size_t)stride;
        int listed = 0;
        for (int i = 0; i < s->nmachines && !listed; i++)
            listed = strcmp(s->hosts[i], host) == 0;
        if (listed)
            snprintf(why, sizeof why,
                     "rank %d runs on host '%s', which already runs another rank (the "
                     "schedule has one rank per machine)",
                     bad_rank, host);
        else
            snprintf(why, sizeof why, "rank %d runs on host '%s', which is not in the topology",
                     bad_rank, host);
        aapc_refuse(s, comm, map, why);
    }
    if (!map->usable) {
        free(map->machine_rank);
        map->machine_rank = NULL;
        map->my_machine = -1;
    }
    free(names);
    return rc;
}

/* Rank m of comm runs machine m (the caller placed them): no host names, no WORLD check. */
static int aapc_build_identity(const aapc_schedule_t *s, MPI_Comm comm, struct aapc_comm_cache *c,
                               struct aapc_comm_map *map)
{
    int rc, size = 0, rank = 0;
    map->usable = 0;
    map->my_machine = -1;
    map->machine_rank = NULL;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    if (s->placement != NULL && size > 1)
        return aapc_build_placed(s, comm, c, map, size, rank, 1);
    if (size != s->nmachines) {
        char why[160];
        snprintf(why, sizeof why, "communicator has %d ranks, the topology %d machines", size,
                 (int)s->nmachines);
        aapc_refuse(s, comm, map, why);
        return MPI_SUCCESS;
    }
    if (c->dup == MPI_COMM_NULL && (rc = PMPI_Comm_dup(comm, &c->dup)) != MPI_SUCCESS) {
        c->dup = MPI_COMM_NULL;
        return rc;
    }
    map->usable = 1;
    map->my_machine = rank;
    return MPI_SUCCESS;
}

static int aapc_lookup(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info,
                       int identity);

int aapc_comm_lookup(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info)
{
    return aapc_lookup(s, comm, info, 0);
}

int aapc_comm_lookup_identity(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info)
{
    return aapc_lookup(s, comm, info, s != NULL && (s->hosts == NULL || s->placement != NULL));
}

static int aapc_lookup(const aapc_schedule_t *s, MPI_Comm comm, aapc_comm_info_t *info,
                       int identity)
{
    struct aapc_comm_cache *c = NULL;
    int rc;

    info->usable = 0;
    info->dup = MPI_COMM_NULL;
    info->my_machine = -1;
    info->machine_rank = NULL;
    info->cache = NULL;
    info->machine_block = NULL;
    info->nblocks = 0;
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    if ((rc = aapc_get_cache(comm, &c)) != MPI_SUCCESS)
        return rc;

    struct aapc_comm_map *map = c->maps;
    while (map != NULL && map->sched != s)
        map = map->next;
    if (map == NULL) {
        map = calloc(1, sizeof *map);
        if (map == NULL)
            return MPI_ERR_NO_MEM;
        map->sched = s;
        rc = identity ? aapc_build_identity(s, comm, c, map) : aapc_build_map(s, comm, c, map);
        if (rc != MPI_SUCCESS) { /* not cached: a later call tries again */
            free(map->machine_rank);
            free(map);
            return rc;
        }
        map->next = c->maps;
        c->maps = map;
    }
    info->cache = c;
    if (map->usable) {
        info->usable = 1;
        info->dup = c->dup;
        info->my_machine = map->my_machine;
        info->machine_rank = map->machine_rank;
    }
    return MPI_SUCCESS;
}

const char *aapc_comm_why(const aapc_schedule_t *s, const aapc_comm_info_t *info)
{
    const struct aapc_comm_map *map = info->cache != NULL ? info->cache->maps : NULL;
    while (map != NULL && map->sched != s)
        map = map->next;
    return map != NULL ? map->why : "";
}

void *aapc_comm_scratch(aapc_comm_info_t *info, size_t bytes)
{
    struct aapc_comm_cache *c = info->cache;
    if (c == NULL)
        return NULL;
    if (bytes == 0)
        bytes = 1;
    if (c->scratch_size < bytes) {
        void *p = calloc(1, bytes);
        if (p == NULL)
            return NULL;
        free(c->scratch);
        c->scratch = p;
        c->scratch_size = bytes;
    }
    return c->scratch;
}

void **aapc_comm_slot(aapc_comm_info_t *info, const void *key, void (*free_fn)(void *))
{
    struct aapc_comm_cache *c = info->cache;
    if (c == NULL)
        return NULL;
    struct aapc_comm_slot *sl = c->slots;
    while (sl != NULL && sl->key != key)
        sl = sl->next;
    if (sl == NULL && (sl = calloc(1, sizeof *sl)) != NULL) {
        sl->key = key;
        sl->free_fn = free_fn;
        sl->next = c->slots;
        c->slots = sl;
    }
    return sl != NULL ? &sl->data : NULL;
}
