/*
 * aapc_coll_select.c: the choice, per call, between the MPI library's MPI_Bcast,
 * MPI_Allgather, MPI_Allreduce, MPI_Reduce, MPI_Barrier, MPI_Scatter, MPI_Scatterv and the
 * leader-based ones of this directory; the generated entry points call the *_entry functions.
 *
 * Settings (agreed by every rank of a communicator: common/aapc_settings.h):
 *   AAPC_BCAST, AAPC_ALLGATHER, AAPC_ALLREDUCE, AAPC_REDUCE, AAPC_BARRIER, AAPC_SCATTER,
 *   AAPC_SCATTERV
 *       native: the MPI library's routine; hier: the leader-based one wherever its arguments
 *       allow, the leaders' step the library's collective; ring (Bcast, Allgather,
 *       Allreduce): the leaders in a ring over the tree; phased (Allgather): the leaders in
 *       the tree's phases; mcast (Bcast, Allgather, Scatter): the leaders over IP multicast;
 *       chain (Bcast, Reduce): the leaders in a pipelined chain over the tree; lanes
 *       (Allreduce): every local rank a ring over the tree on a slice (aapc_coll_lanes.c;
 *       machines of different sizes: the leaders' ring); auto (unset): the rule below.
 *   AAPC_DISABLE=bcast,allreduce,...  the named entries are the MPI library's (as native).
 *   AAPC_COLL_MIN_<COLL>, AAPC_COLL_RING_MIN, AAPC_COLL_PHASED_MIN, AAPC_COLL_CHAIN_MIN,
 *       AAPC_COLL_SINGLE_RING_MIN, AAPC_COLL_MAX_BYTES: the rule's sizes (rule() below; each
 *       rank's own only where the ranks' settings agree, else the defaults);
 *       AAPC_COLL_CHAIN_CHUNK: the chain's chunk.
 * An unknown value is said once per process and counts as auto.
 *
 * The rule (auto), the same on every rank: it reads only what MPI requires to agree (the
 * communicator, byte counts, datatype and operation of reductions) and the gathered layout.
 *   - a communicator on one machine whose ranks share memory: ours (the shared-memory
 *     collectives; docs/multicore.md: faster than MPICH's in every measured cell), but the
 *     library's Scatter and Scatterv (ours has no shared-memory step: it would be the
 *     library's on-machine scatter);
 *   - several machines, one rank on each: nothing to aggregate, but the leaders' ways over the
 *     tree gain: Allgather from AAPC_COLL_SINGLE_RING_MIN bytes, Bcast, Reduce and Allreduce
 *     from their sizes below; Barrier, Scatter and Scatterv the library's (single_ours());
 *   - several machines, some running several ranks: ours from the size where it was measured
 *     to gain (rule()), up to AAPC_COLL_MAX_BYTES, the library's outside.
 * Arguments ours cannot take, or that are the user's mistake, go to the library, which serves
 * or raises them as it would without us: a null or inter-communicator, a negative count, an
 * invalid, uncommitted or null datatype, an invalid root or operation, a null buffer with data,
 * a predefined operation on a datatype it is not defined for (the operations' classes of MPI
 * 4.1 section 6.9.2, on predefined datatypes only), a non-commutative operation on ranks not
 * placed in blocks, zero bytes, more than INT_MAX elements in one of our steps, buffers the
 * library refuses as aliased (common/aapc_alias.h; MPICH's rule, on the ranks it checks).
 * Cost of a call handed to the library: two attribute lookups, a few MPI queries and
 * comparisons; no allocation, no environment read (40-190 ns measured: docs/performance.md).
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_alias.h"
#include "aapc_args.h"
#include "aapc_coll.h"
#include "aapc_lock.h"
#include "aapc_mpi.h"
#include "aapc_report.h"
#include "aapc_settings.h"
#include "aapc_shm.h" /* aapc_shm_windows_unsafe */

enum coll { BCAST, ALLGATHER, ALLREDUCE, REDUCE, BARRIER, SCATTER, SCATTERV, NCOLL };
static const char *const setting_of[NCOLL] = {"AAPC_BCAST",   "AAPC_ALLGATHER", "AAPC_ALLREDUCE",
                                              "AAPC_REDUCE",  "AAPC_BARRIER",   "AAPC_SCATTER",
                                              "AAPC_SCATTERV"};
static const char *const entry_of[NCOLL] = {"bcast",   "allgather", "allreduce", "reduce",
                                            "barrier", "scatter",   "scatterv"};
static const char *const routine_of[NCOLL] = {"MPI_Bcast",   "MPI_Allgather", "MPI_Allreduce",
                                              "MPI_Reduce",  "MPI_Barrier",   "MPI_Scatter",
                                              "MPI_Scatterv"};
/* The collectives whose leaders' step can be a ring, and those without a shared-segment step
   (ours is one message per machine, then the library's on-machine scatter). */
static int has_ring(int c)
{
    return c == BCAST || c == ALLGATHER || c == ALLREDUCE;
}

static int is_scatter(int c)
{
    return c == SCATTER || c == SCATTERV;
}
/* LIBRARY: the MPI library's routine; ours with the leaders' step the library's (HIER), a ring
   (RING), the tree's phases (PHASED), IP multicast (MCAST), a pipelined chain (CHAIN, Bcast
   and Reduce) or a ring per local rank (LANES, Allreduce); AUTO: the rule decides. */
enum way { LIBRARY, HIER, RING, PHASED, MCAST, CHAIN, LANES, AUTO };

/* The length of the name at p in a comma-separated list. */
static size_t item_len(const char *p)
{
    const char *end = strchr(p, ',');
    return end != NULL ? (size_t)(end - p) : strlen(p);
}

/* The collective named by the len bytes at p, NCOLL for none. */
static enum coll entry_named(const char *p, size_t len)
{
    int c = 0;
    while (c < NCOLL && !(strlen(entry_of[c]) == len && strncmp(p, entry_of[c], len) == 0))
        c++;
    return (enum coll)c;
}

/* The ways the environment forces, parsed once per process (unknown names said then). */
static void parse_settings(enum way way[NCOLL])
{
    const char *off = getenv("AAPC_DISABLE");
    for (int c = 0; c < NCOLL; c++) {
        const char *v = getenv(setting_of[c]);
        if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0) {
            way[c] = AUTO;
        } else if (strcmp(v, "native") == 0) {
            way[c] = LIBRARY;
        } else if (strcmp(v, "hier") == 0) {
            way[c] = HIER;
        } else if (strcmp(v, "ring") == 0 && has_ring(c)) {
            way[c] = RING;
        } else if (strcmp(v, "phased") == 0 && c == ALLGATHER) {
            way[c] = PHASED;
        } else if (strcmp(v, "chain") == 0 && (c == BCAST || c == REDUCE)) {
            way[c] = CHAIN;
        } else if (strcmp(v, "lanes") == 0 && c == ALLREDUCE) {
            way[c] = LANES;
        } else if (strcmp(v, "mcast") == 0 && (c == BCAST || c == ALLGATHER || c == SCATTER)) {
            way[c] = MCAST;
        } else {
            fprintf(stderr, "aapcgen: %s=%s is not one of native, hier%s%s%s%s%s, auto; using auto\n",
                    setting_of[c], v, has_ring(c) ? ", ring" : "",
                    c == ALLGATHER ? ", phased" : "", c == BCAST || c == REDUCE ? ", chain" : "",
                    c == ALLREDUCE ? ", lanes" : "",
                    c == BCAST || c == ALLGATHER || c == SCATTER ? ", mcast" : "");
            way[c] = AUTO;
        }
    }
    for (const char *p = off; p != NULL && *p != '\0'; p += item_len(p) + (p[item_len(p)] != 0)) {
        size_t len = item_len(p);
        enum coll c = entry_named(p, len);
        if (c < NCOLL)
            way[c] = LIBRARY;
        else if (len > 0)
            fprintf(stderr,
                    "aapcgen: AAPC_DISABLE names '%.*s', not one of bcast, allgather, allreduce, "
                    "reduce, barrier, scatter, scatterv; ignoring that name\n",
                    (int)len, p);
    }
}

/* The way the settings force for collective c on comm (AUTO: none; also when the ranks of
   comm have different settings: common/aapc_settings.h, said when they were gathered). */
static enum way forced(const aapc_coll_layout_t *l, enum coll c)
{
    static aapc_mutex_t lock = AAPC_MUTEX_INIT;
    static atomic_int parsed = 0;
    static enum way way[NCOLL];
    if (!atomic_load_explicit(&parsed, memory_order_acquire)) { /* once per process */
        aapc_lock(&lock);
        if (!atomic_load_explicit(&parsed, memory_order_relaxed))
            parse_settings(way);
        atomic_store_explicit(&parsed, 1, memory_order_release);
        aapc_unlock(&lock);
    }
    return l->agreed == 0 ? AUTO : way[c];
}

/* A size setting read once: its value, or dflt when unset or not a number >= 0 (said once), or
   when the ranks of the communicator do not all have the same settings (`agreed` 0: each rank's
   own value could make its own choice, and the ranks wait for each other in different calls). */
static long long size_setting(const char *name, long long *cache, long long dflt, int agreed)
{
    if (*cache < 0) { /* once per process and setting */
        const char *v = getenv(name);
        char *end = NULL;
        long long got = v != NULL && v[0] >= '0' && v[0] <= '9' ? strtoll(v, &end, 10) : -1;
        if (v != NULL && v[0] != '\0' && (got < 0 || *end != '\0'))
            fprintf(stderr, "aapcgen: %s=%s is not a number of bytes; using the default\n", name,
                    v);
        *cache = got >= 0 && end != NULL && *end == '\0' ? got : dflt;
    }
    return agreed ? *cache : dflt;
}

/* The bytes of the pipelined chain's chunks on comm (AAPC_COLL_CHAIN_CHUNK, default 4 KB: on
   the emulated 4+4 tree at 100 Mbit/s, Bcast of 64 KB in 5.9 ms with 4 KB chunks, 7.6 ms with
   16 KB; from 128 KB the same; docs/measurements/collectives.md). */
static long long chain_chunk(const aapc_coll_layout_t *l)
{
    static long long chunk = -1;
    long long c = size_setting("AAPC_COLL_CHAIN_CHUNK", &chunk, 4096, l->agreed != 0);
    return c > 0 ? c : 4096;
}

/* Every machine of the layout runs the same number of ranks. */
static int equal_machines(const aapc_coll_layout_t *l)
{
    return (long long)l->n * l->r_max == l->size;
}

/* Across machines, the least bytes from which auto runs ours, per collective (AAPC_COLL_MIN_*
   overrides each): measured on the emulated 4+4 tree, 2 ranks per machine, 100 Mbit/s, against
   MPICH's default and forced algorithms (docs/measurements/collectives.md). Bcast and Reduce
   with the leaders' pipelined chain: 1.56-2.74x the best MPICH algorithm from 16 KB, a tie at
   4 KB, slower below (chain from 8 KB); Allreduce gains from 64 KB (the ring: 1.1-2x MPICH's
   default), loses up to 0.7x below; Allgather gains or ties at every size (1.0-12x); Barrier
   did not gain (0.8x): the library's.
   Scatter ties at 4 KB per block and gains from 16 KB (1.26-1.52x the best MPICH algorithm,
   the root's link the bound at 1 MB); Scatterv's counts are the root's alone, so its rule is
   the communicator's shape (ties or gains at every measured size). */
#define NEVER ((long long)1 << 50)
static const long long min_default[NCOLL] = {8192, 0, 65536, 8192, NEVER, 4096, 0};
static const char *const min_setting[NCOLL] = {
    "AAPC_COLL_MIN_BCAST",  "AAPC_COLL_MIN_ALLGATHER", "AAPC_COLL_MIN_ALLREDUCE",
    "AAPC_COLL_MIN_REDUCE", "AAPC_COLL_MIN_BARRIER",   "AAPC_COLL_MIN_SCATTER",
    "AAPC_COLL_MIN_SCATTERV"};
static const char *const below[NCOLL] = {
    "below AAPC_COLL_MIN_BCAST",   "below AAPC_COLL_MIN_ALLGATHER", "below AAPC_COLL_MIN_ALLREDUCE",
    "below AAPC_COLL_MIN_REDUCE",  "below AAPC_COLL_MIN_BARRIER",   "below AAPC_COLL_MIN_SCATTER",
    "below AAPC_COLL_MIN_SCATTERV"};

/* One rank on every machine: nothing to aggregate, but the leaders' ways over the tree still
   gain where MPICH's default crosses the trunks many times at once: Allgather as a ring from
   AAPC_COLL_SINGLE_RING_MIN bytes (all P blocks; default 16 KB), Bcast and Reduce as a
   pipelined chain and Allreduce as a ring from their AAPC_COLL_MIN_* sizes (8, 8 and 64 KB, as
   with several ranks per machine); Barrier, Scatter and Scatterv the library's (ours would be
   its linear exchange). Measured against MPICH ch3:sock at 100 Mbit/s
   (docs/measurements/collectives.md, "One rank per machine"): Allgather on chain-4x4 (16
   ranks) 3.53 ms at 1 KB per rank against MPICH's default 5.81, 5.56 against 41.4 at 4 KB,
   21.0 against 262 at 16 KB, 1.9x slower at 256 B; on 4+4 (8 ranks) 1.8x faster from 1 KB per
   rank (8 KB), 1.3x slower at 256 B; at 64 KB MPICH's default is its ring (a tie). On chain-4x4
   the chain Bcast 1.8-2.7x MPICH's best from 32 KB (14x its default at 256 KB), the chain
   Reduce 1.7-3.5x, the ring Allreduce 2.4-2.9x from 256 KB. */
static int single_ours(enum coll c, long long bytes, int agreed)
{
    static long long ring_min = -1;
    if (c == ALLGATHER)
        return bytes >= size_setting("AAPC_COLL_SINGLE_RING_MIN", &ring_min, 16384, agreed);
    return c == BCAST || c == REDUCE || c == ALLREDUCE;
}

/* The library's or ours for a call of `bytes` (Allgather: all P blocks; Scatter: one rank's
   block; Scatterv: 0, its counts are the root's alone) whose arguments ours
   can take, before the machine's segment is known; *why: the library's, why (for the
   report). On one machine: ours (the shared-memory collectives, faster than MPICH's in every
   cell measured: docs/multicore.md). Across machines: ours from min_default bytes, with the
   leaders' step a pipelined chain (Reduce; Bcast from AAPC_COLL_CHAIN_MIN bytes), a ring from
   AAPC_COLL_RING_MIN bytes (Bcast, Allgather; Allreduce: a ring per local rank, lanes, where
   the machines run as many ranks each, measured faster than the leaders' ring from 64 KB to
   4 MB: docs/measurements/collectives.md), the tree's phases for Allgather from
   AAPC_COLL_PHASED_MIN bytes per machine (never by default: slower than the ring in every
   measured cell). */
static enum way rule(enum coll c, const aapc_coll_layout_t *l, long long bytes, int agreed,
                     const char **why)
{
    static long long ring_min = -1, phased_min = -1, chain_min = -1, most = -1;
    static long long least[NCOLL] = {-1, -1, -1, -1, -1, -1, -1};
    if (l->n < 2 && is_scatter(c)) {
        *why = "one machine"; /* the library's own on-machine scatter: ours would be it */
        return LIBRARY;
    }
    if (l->n < 2)
        return HIER;
    *why = l->r_max < 2 && !single_ours(c, bytes, agreed) ? "one rank per machine"
           : bytes > size_setting("AAPC_COLL_MAX_BYTES", &most, NEVER, agreed)
               ? "above AAPC_COLL_MAX_BYTES"
           : bytes < size_setting(min_setting[c], &least[c], min_default[c], agreed) ? below[c]
                                                                                     : NULL;
    if (*why != NULL)
        return LIBRARY;
    if (l->r_max < 2 && c == ALLGATHER) /* a ring over the tree */
        return RING;
    if (c == REDUCE) /* commutative operations; the entry hands the others to the library */
        return CHAIN;
    if (!has_ring(c))
        return HIER;
    if (c == ALLGATHER && equal_machines(l) &&
        bytes / l->n >= size_setting("AAPC_COLL_PHASED_MIN", &phased_min, NEVER, agreed))
        return PHASED;
    if (c == BCAST && bytes >= size_setting("AAPC_COLL_CHAIN_MIN", &chain_min, 8192, agreed))
        return CHAIN;
    if (bytes < size_setting("AAPC_COLL_RING_MIN", &ring_min, 32768, agreed))
        return HIER;
    return c == ALLREDUCE ? LANES : RING; /* Allreduce: lanes where every machine runs as many
                                             ranks (the entry takes the ring elsewhere) */
}

/* Ours when the settings or the rule say so and the layout exists: *l set; *why says why the
   library's otherwise (NULL: ours). Collective over comm on its first use, and on its first
   call that runs ours (aapc_coll_layout_connect: every rank makes the same choice). */
static int choose(enum coll c, const aapc_cluster_t *cluster, const char *name, MPI_Comm comm,
                  long long bytes, aapc_coll_layout_t **l, enum way *way, const char **why)
{
    *way = LIBRARY;
    *l = NULL;
    int rc = aapc_coll_layout(cluster, comm, name, routine_of[c], l);
    if (rc != MPI_SUCCESS || *l == NULL) {
        int size = 0;
        *why = PMPI_Comm_size(comm, &size) == MPI_SUCCESS && size == 1 ? "a communicator of 1 rank"
                                                                      : "machines not known";
        return rc;
    }
    enum way f = forced(*l, c);
    *why = f == LIBRARY ? "AAPC_DISABLE or native" : NULL;
    if (aapc_shm_windows_unsafe()) { /* ours would make shared windows */
        *why = "Open MPI under MPI_THREAD_MULTIPLE";
        return MPI_SUCCESS;
    }
    *way = f == AUTO ? rule(c, *l, bytes, (*l)->agreed != 0, why) : f;
    if ((*way == PHASED || (*way == MCAST && c == ALLGATHER)) && !equal_machines(*l))
        *way = RING; /* forced: the parts differ, the leaders' ring Allgatherv */
    int threads = MPI_THREAD_SINGLE;
    if (*way == MCAST &&
        (PMPI_Query_thread(&threads) != MPI_SUCCESS || threads == MPI_THREAD_MULTIPLE))
        *way = RING; /* multicast keeps per-process state: one thread at a time */
    if (*way == LIBRARY || (rc = aapc_coll_layout_connect(*l)) != MPI_SUCCESS)
        return rc;
    if ((*l)->n == 1 && !(*l)->shared && f == AUTO) { /* the library's own on-node path then */
        *way = LIBRARY;
        *why = "the machine's ranks share no memory";
    }
    return MPI_SUCCESS;
}

/* ---- what ours can take ---------------------------------------------------------------- */

static int valid_comm(MPI_Comm comm)
{
    int inter = 1;
    return comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter;
}

/* count elements of t: their bytes, -1 when the library must judge the description. */
static long long bytes_of(MPI_Comm comm, int count, MPI_Datatype t)
{
    int64_t size = 0;
    if (count < 0 || t == MPI_DATATYPE_NULL || aapc_type_size(t, &size) != MPI_SUCCESS ||
        size < 0 || !aapc_args_committed(comm, t))
        return -1;
    return (long long)count * size;
}

static int valid_root(MPI_Comm comm, int root)
{
    int size = 0;
    return PMPI_Comm_size(comm, &size) == MPI_SUCCESS && root >= 0 && root < size;
}

/* The class of a predefined datatype for the predefined operations (MPI 4.1 section 6.9.2;
   the C and Fortran names): 'i' integer, 'f' floating point, 'c' complex, 'b' byte,
   'l' logical, 'p' a MINLOC/MAXLOC pair; 0 for anything else (derived datatypes included:
   the library's then). */
static char type_class(MPI_Datatype t)
{
    static const MPI_Datatype ints[] = {
        MPI_INT,         MPI_UNSIGNED,           MPI_LONG,     MPI_UNSIGNED_LONG,
        MPI_LONG_LONG,   MPI_UNSIGNED_LONG_LONG, MPI_SHORT,    MPI_UNSIGNED_SHORT,
        MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR,      MPI_INT8_T,   MPI_INT16_T,
        MPI_INT32_T,     MPI_INT64_T,            MPI_UINT8_T,  MPI_UINT16_T,
        MPI_UINT32_T,    MPI_UINT64_T,           MPI_INTEGER};
    static const MPI_Datatype floats[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL,
                                          MPI_DOUBLE_PRECISION};
    static const MPI_Datatype pairs[] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
                                         MPI_2INT,      MPI_SHORT_INT,  MPI_LONG_DOUBLE_INT,
                                         MPI_2INTEGER,  MPI_2REAL,      MPI_2DOUBLE_PRECISION};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (t == ints[i])
            return 'i';
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++)
        if (t == floats[i])
            return 'f';
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if (t == pairs[i])
            return 'p';
    if (t == MPI_C_FLOAT_COMPLEX || t == MPI_C_DOUBLE_COMPLEX || t == MPI_COMPLEX ||
        t == MPI_DOUBLE_COMPLEX)
        return 'c';
    if (t == MPI_BYTE)
        return 'b';
    if (t == MPI_C_BOOL || t == MPI_LOGICAL)
        return 'l';
    return 0;
}

/* op on t is one ours combines as the library would: a user-defined operation (commutative, or
   the ranks in blocks), or a predefined one defined for t. */
static int reducible(MPI_Op op, MPI_Datatype t, const aapc_coll_layout_t *l)
{
    char k = type_class(t);
#ifdef OPEN_MPI
    int initialized = 0; /* Open MPI 5's MPI_Reduce_local crashes in an MPI sessions program
                            (no MPI_Init): the shared-memory reduction uses it */
    if (PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized)
        return 0;
#endif
    if (op == MPI_OP_NULL)
        return 0;
    if (op == MPI_MAX || op == MPI_MIN)
        return k == 'i' || k == 'f';
    if (op == MPI_SUM || op == MPI_PROD)
        return k == 'i' || k == 'f' || k == 'c';
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return k == 'i' || k == 'l';
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return k == 'i' || k == 'b';
    if (op == MPI_MAXLOC || op == MPI_MINLOC)
        return k == 'p';
    if (op == MPI_REPLACE || op == MPI_NO_OP)
        return 0;
    int commutative = 0;
    return PMPI_Op_commutative(op, &commutative) == MPI_SUCCESS && (commutative || l->blocks);
}

/* The leaders' step of a way of ours. */
static enum aapc_coll_step step_of(enum way way)
{
    return way == RING     ? AAPC_STEP_RING
           : way == LANES  ? AAPC_STEP_LANES
           : way == PHASED ? AAPC_STEP_PHASED
           : way == MCAST  ? AAPC_STEP_MCAST
           : way == CHAIN  ? AAPC_STEP_CHAIN
                           : AAPC_STEP_LIBRARY;
}

/* ---- the entries ------------------------------------------------------------------------ */

/* The end of an entry's call. An error of ours (the layout's first use, a step of the
   algorithm, on private communicators that return it) goes through comm's error handler, as
   the library's own would, and ends the job if the handler returns (the other ranks may be
   waiting for this one); the library's routine raised its own. The report counts the call. */
static int done(double t0, enum coll c, enum way way, const char *why,
                const aapc_coll_layout_t *l, int ours, int rc, long long bytes, MPI_Comm comm)
{
    if (rc != MPI_SUCCESS && ours)
        rc = aapc_args_raise_alone(comm, rc);
    if (!aapc_report_on())
        return rc;
    char what[96];
    if (way == LIBRARY)
        snprintf(what, sizeof what, "library: %s", why != NULL ? why : "arguments for the library");
    else if (is_scatter(c))
        snprintf(what, sizeof what, "%s",
                 l->n == 1       ? "one machine: the library's Scatterv on it"
                 : way == MCAST ? "leader-based, one multicast to the leaders"
                                : "leader-based, one message per machine");
    else
        snprintf(what, sizeof what, "%s%s", l->n == 1   ? "shared memory"
                                            : l->shared ? "leader-based, shared segment"
                                                        : "leader-based",
                 l->n == 1           ? ""
                 : way == PHASED     ? ", phases among the leaders"
                 : way == RING       ? ", ring among the leaders"
                 : way == CHAIN      ? ", pipelined chain among the leaders"
                 : way == LANES      ? ", lanes: a ring per local rank"
                 : way == MCAST      ? ", multicast among the leaders"
                                     : "");
    return aapc_report_own(t0, routine_of[c], what, bytes < 0 ? 0 : bytes, comm, rc);
}

/* A rank whose send and receive blocks differ (an error MPI_Allgather and MPI_Scatter leave to
   the transfers, so the ranks choose as if they matched): MPI_ERR_TRUNCATE with what it says,
   raised by done() on this rank alone. */
static int mismatch(const char *routine, const char *a, long long abytes, const char *b,
                    long long bbytes)
{
    char what[200];
    snprintf(what, sizeof what, "aapcgen %s: %s is %lld bytes, %s %lld bytes", routine, a,
             abytes, b, bbytes);
    return aapc_args_error_code(MPI_ERR_TRUNCATE, what);
}

/* Buffers the MPI library refuses as aliased (common/aapc_alias.h): where the ranks' choice is
   the library's, the library judges the call; where it is ours, this rank raises
   MPI_ERR_BUFFER through comm's error handler and moves nothing, as the library would (the
   choice came first, so the layout's first use, a collective, happened on every rank; a root
   refused alone leaves the others in the call, which its next call meets). Returns the code
   raised, MPI_SUCCESS when the call goes on. */
static int refuse_aliased(int aliased, const char *routine, MPI_Comm comm, enum way *way,
                          const char **why)
{
    if (!aliased || *way == LIBRARY)
        return MPI_SUCCESS;
    char what[160];
    snprintf(what, sizeof what, "aapcgen %s: sendbuf and recvbuf are aliased (pass MPI_IN_PLACE)",
             routine);
    *way = LIBRARY;
    *why = "aliased buffers, MPI_ERR_BUFFER raised";
    return aapc_args_raise_code(comm, aapc_args_error_code(MPI_ERR_BUFFER, what));
}

int aapc_coll_bcast_entry(const aapc_cluster_t *cluster, const char *name, void *buf, int count,
                          MPI_Datatype type, int root, MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    long long bytes = valid_comm(comm) ? bytes_of(comm, count, type) : -1;
    int rc = MPI_SUCCESS;
    if (bytes > 0 && valid_root(comm, root) && buf != NULL)
        rc = choose(BCAST, cluster, name, comm, bytes, &l, &way, &why);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_bcast(l, step_of(way), buf, count, type, root,
                                              chain_chunk(l))
                            : PMPI_Bcast(buf, count, type, root, comm);
    return done(t0, BCAST, way, why, l, ours, rc, bytes, comm);
}

int aapc_coll_allgather_entry(const aapc_cluster_t *cluster, const char *name,
                              const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int size = 0, rank = 0, rc = MPI_SUCCESS;
    long long block = valid_comm(comm) ? bytes_of(comm, recvcount, recvtype) : -1;
    int ok = block > 0 && recvbuf != NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
             (long long)size * recvcount <= INT_MAX && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS;
    long long sent = sendbuf == MPI_IN_PLACE ? block : bytes_of(comm, sendcount, sendtype);
    ok = ok && sent >= 0 && (sendbuf == MPI_IN_PLACE || sendbuf != NULL || sent == 0);
    if (ok)
        rc = choose(ALLGATHER, cluster, name, comm, block * size, &l, &way, &why);
    if (rc == MPI_SUCCESS &&
        (rc = refuse_aliased(aapc_alias_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                  recvcount, recvtype, rank),
                             "MPI_Allgather", comm, &way, &why)) != MPI_SUCCESS)
        return done(t0, ALLGATHER, way, why, l, 0, rc, block, comm);
    if (rc == MPI_SUCCESS && way != LIBRARY && sent != block) /* the others run ours: alone */
        rc = mismatch("MPI_Allgather", "sendcount x sendtype", sent, "recvcount x recvtype", block);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_allgather(l, step_of(way), sendbuf, sendcount, sendtype,
                                                  recvbuf, recvcount, recvtype)
                         : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm);
    return done(t0, ALLGATHER, way, why, l, ours, rc, block, comm);
}

int aapc_coll_allreduce_entry(const aapc_cluster_t *cluster, const char *name,
                              const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int rc = MPI_SUCCESS;
    long long bytes = valid_comm(comm) ? bytes_of(comm, count, type) : -1;
    int commutative = 0;
    if (bytes > 0 && sendbuf != NULL && recvbuf != NULL &&
        (rc = choose(ALLREDUCE, cluster, name, comm, bytes, &l, &way, &why)) == MPI_SUCCESS &&
        way != LIBRARY && !reducible(op, type, l))
        way = LIBRARY, why = "the operation and datatype";
    if (rc == MPI_SUCCESS &&
        (rc = refuse_aliased(aapc_alias_reduce(sendbuf, recvbuf, count, 1), "MPI_Allreduce", comm,
                             &way, &why)) != MPI_SUCCESS)
        return done(t0, ALLREDUCE, way, why, l, 0, rc, bytes, comm);
    if ((way == RING || way == LANES) &&
        (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS || !commutative))
        way = HIER; /* the rings combine in ring order */
    if (way == LANES && l->lanes == MPI_COMM_NULL)
        way = RING; /* machines of different sizes: no lanes, the leaders' ring */
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY
                 ? aapc_coll_allreduce(l, step_of(way), sendbuf, recvbuf, count, type, op)
                         : PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    return done(t0, ALLREDUCE, way, why, l, ours, rc, bytes, comm);
}

int aapc_coll_reduce_entry(const aapc_cluster_t *cluster, const char *name, const void *sendbuf,
                           void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                           MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int rc = MPI_SUCCESS, rank = -1;
    long long bytes = valid_comm(comm) ? bytes_of(comm, count, type) : -1;
    /* the receive buffer matters at the root only, MPI_IN_PLACE only there */
    int ok = bytes > 0 && valid_root(comm, root) && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
             sendbuf != NULL && (rank == root ? recvbuf != NULL : sendbuf != MPI_IN_PLACE);
    if (ok && (rc = choose(REDUCE, cluster, name, comm, bytes, &l, &way, &why)) == MPI_SUCCESS &&
        way != LIBRARY && !reducible(op, type, l))
        way = LIBRARY, why = "the operation and datatype";
    int commutative = 0;
    if (way == CHAIN && (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS || !commutative)) {
        /* the chain combines in its own order: forced, the library's step among the leaders;
           auto, the library's Reduce (ours with its step measured 0.71-1.14x) */
        if (forced(l, REDUCE) == AUTO)
            way = LIBRARY, why = "a non-commutative operation";
        else
            way = HIER;
    }
    if (rc == MPI_SUCCESS &&
        (rc = refuse_aliased(aapc_alias_reduce(sendbuf, recvbuf, count, rank == root),
                             "MPI_Reduce", comm, &way, &why)) != MPI_SUCCESS)
        return done(t0, REDUCE, way, why, l, 0, rc, bytes, comm);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_reduce(l, step_of(way), sendbuf, recvbuf, count, type, op,
                                               root, chain_chunk(l))
                            : PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    return done(t0, REDUCE, way, why, l, ours, rc, bytes, comm);
}

int aapc_coll_barrier_entry(const aapc_cluster_t *cluster, const char *name, MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int rc = MPI_SUCCESS;
    if (valid_comm(comm))
        rc = choose(BARRIER, cluster, name, comm, 0, &l, &way, &why);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_barrier(l) : PMPI_Barrier(comm);
    return done(t0, BARRIER, way, why, l, ours, rc, 0, comm);
}

/* An intra-communicator, a valid root, and this rank's place in comm (size, rank). */
static int rooted(MPI_Comm comm, int root, int *size, int *rank)
{
    return valid_comm(comm) && valid_root(comm, root) &&
           PMPI_Comm_size(comm, size) == MPI_SUCCESS && PMPI_Comm_rank(comm, rank) == MPI_SUCCESS;
}

/* Scatter: every block b bytes on every rank (the root's send blocks, the others' receive
   blocks: MPI requires them equal), all P blocks within INT_MAX bytes. */
int aapc_coll_scatter_entry(const aapc_cluster_t *cluster, const char *name, const void *sendbuf,
                            int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int size = 0, rank = -1, rc = MPI_SUCCESS, ok = rooted(comm, root, &size, &rank);
    long long block = !ok ? -1
                      : rank == root ? bytes_of(comm, sendcount, sendtype)
                                     : bytes_of(comm, recvcount, recvtype);
    long long own = rank == root && recvbuf != MPI_IN_PLACE ? bytes_of(comm, recvcount, recvtype)
                                                            : block; /* the root's own block */
    ok = ok && block > 0 && block * size <= INT_MAX && own >= 0 &&
         (rank == root ? sendbuf != NULL && (recvbuf != NULL || own == 0)
                       : recvbuf != NULL && recvbuf != MPI_IN_PLACE);
    if (ok)
        rc = choose(SCATTER, cluster, name, comm, block, &l, &way, &why); /* per rank: the
                                        root's N - 1 sends cost latency, not a tree's log P */
    if (rc == MPI_SUCCESS &&
        (rc = refuse_aliased(aapc_alias_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                recvtype, rank, rank == root),
                             "MPI_Scatter", comm, &way, &why)) != MPI_SUCCESS)
        return done(t0, SCATTER, way, why, l, 0, rc, block, comm);
    if (rc == MPI_SUCCESS && way != LIBRARY && own != block) /* the others run ours: alone */
        rc = mismatch("MPI_Scatter", "sendcount x sendtype", block, "recvcount x recvtype", own);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_scatter(l, step_of(way), sendbuf, sendcount, sendtype,
                                                recvbuf, recvcount, recvtype, root, block)
                            : PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, root, comm);
    return done(t0, SCATTER, way, why, l, ours, rc, block, comm);
}

/* Scatterv: the counts are the root's alone, so the choice reads the communicator's shape and
   the settings only (a size rule could not agree); every count and displacement must be one
   ours can describe (non-negative counts, the root's blocks as one indexed datatype). */
int aapc_coll_scatterv_entry(const aapc_cluster_t *cluster, const char *name,
                             const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    double t0 = aapc_report_begin();
    aapc_coll_layout_t *l = NULL;
    enum way way = LIBRARY;
    const char *why = "arguments for the library";
    int size = 0, rank = -1, rc = MPI_SUCCESS, ok = rooted(comm, root, &size, &rank);
    long long mine = ok && !(rank == root && recvbuf == MPI_IN_PLACE)
                         ? bytes_of(comm, recvcount, recvtype)
                         : 0;
    ok = ok && mine >= 0 && (mine == 0 || (recvbuf != NULL && recvbuf != MPI_IN_PLACE));
    if (ok && rank == root) {
        ok = sendcounts != NULL && displs != NULL && bytes_of(comm, 0, sendtype) == 0;
        for (int q = 0; ok && q < size; q++)
            ok = sendcounts[q] >= 0 && (sendcounts[q] == 0 || sendbuf != NULL);
    }
    if (ok)
        rc = choose(SCATTERV, cluster, name, comm, 0, &l, &way, &why);
    if (ok && rc == MPI_SUCCESS && rank == root &&
        (rc = refuse_aliased(aapc_alias_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                                 recvcount, recvtype, rank, 1),
                             "MPI_Scatterv", comm, &way, &why)) != MPI_SUCCESS)
        return done(t0, SCATTERV, way, why, l, 0, rc, mine, comm);
    int ours = rc != MPI_SUCCESS || way != LIBRARY;
    if (rc == MPI_SUCCESS)
        rc = way != LIBRARY ? aapc_coll_scatterv(l, sendbuf, sendcounts, displs, sendtype,
                                                 recvbuf, recvcount, recvtype, root, mine)
                            : PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                            recvcount, recvtype, root, comm);
    return done(t0, SCATTERV, way, why, l, ours, rc, mine, comm);
}
