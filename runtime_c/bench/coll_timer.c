/*
 * coll_timer.c: time one collective other than the all-to-all (MPI_Bcast, MPI_Allgather,
 * MPI_Allreduce, MPI_Reduce, MPI_Barrier, MPI_Scatter, MPI_Scatterv) over a list of sizes, in
 * one MPI job, as the program calls it: through MPI_<Op>, so that compiled with -DAAPC_INTERCEPT
 * and a generated directory (aapcgen generate) the call goes wherever the library sends it
 * (AAPC_<OP>=native|hier|auto), and without it to the MPI library. Used by
 * tuning/bench_coll.py.
 *
 *   coll_timer OP SIZES ITERS WARMUP LABEL [SLOW_SECONDS]
 *     OP      bcast | allgather | allreduce | reduce | barrier | scatter | scatterv (root 0)
 *     SIZES   comma-separated bytes: the message for bcast (MPI_BYTE), the block of every rank
 *             for allgather (MPI_BYTE), the vector for allreduce and reduce (MPI_DOUBLE with
 *             MPI_SUM, bytes / 8 elements, at least 1), the block every rank receives for
 *             scatter and scatterv (MPI_BYTE, out of the root's buffer of nranks blocks;
 *             scatterv: every count the size, displacements q x size); ignored for barrier
 *             (give one size, 0)
 *     ITERS   timed calls: one count for every size, or one per size (comma-separated)
 *     WARMUP  untimed calls before them, the same way
 *     LABEL   the candidate's name in the output
 *     SLOW_SECONDS  a size whose checked call took longer (the slowest rank) is not timed
 *             again: its line gives that call (CALLS 1), and the larger sizes are skipped
 *             ("skip LABEL BYTES" lines): a slow algorithm does not hold the benchmark up
 *
 * Per size: the checked call (below) timed as one call of the loop, WARMUP calls, a barrier,
 * then ITERS x { call; PMPI_Barrier } timed with MPI_Wtime (alltoall_timer.c's method, seed 002
 * Figure 5: the barrier keeps a root that returns early, bcast's, or late, reduce's, from
 * overlapping its calls); the time per call is the slowest rank's elapsed / ITERS and includes
 * one barrier of the MPI library's (with COLL_TIMER_SYNC=mpi in the environment, the program's
 * MPI_Barrier: the library's own where it serves barriers). For barrier the loop is
 * ITERS x { call } alone. Every
 * synchronisation and reduction of the harness itself goes to the MPI library (PMPI_*), so only
 * the timed calls change from one candidate to the next. Rank 0 prints one line per size in
 * the timers' protocol (timer_common.h, aapcgen/measure/timer.py):
 *   "time LABEL BYTES 0 SECONDS_PER_CALL CALLS CPU_BUSY TCP_RETRANS TCP_TIMEOUTS RUNQ_WAIT"
 * (bytes as given; for allreduce and reduce 8 x the elements), preceded, except for barrier, by
 * the same line of "barrier-baseline" with bytes 0: the library's barrier alone, timed the same
 * way (what every other line includes once), and "done" at the end. With COLL_TIMER_FALLBACKS=1
 * in the environment (an MPICH algorithm forced with MPIR_CVAR_COLLECTIVE_FALLBACK=print), a
 * size at which MPICH said its forced algorithm "cannot be applied" (and ran its own choice)
 * also gets "fallback LABEL BYTES TIMES" (the times it said so, over all ranks).
 *
 * Checks: before the timed calls one call's result is compared on every rank with what it must
 * be (bcast: the root's pattern; allgather: every rank's block; allreduce and reduce: the closed
 * form of the sum of small integers, exact in any order; barrier: no rank leaves it before the
 * last one, held back 200 ms, has entered; scatter and scatterv: the root's pattern for that
 * rank), and the buffers once more after the timed calls. A wrong element anywhere: rank 0 says
 * what and where on stderr and the job exits with status 3 (MPI_Abort), so a wrong routine is
 * never timed silently; a call that returns an error: status 4, with MPI's words for it.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* nanosleep; readlink in timer_common.h */
#endif
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* dup, dup2 */

#include "timer_common.h" /* cpu_jiffies, tcp_counters, runq_wait_ns */

enum op { OP_BCAST, OP_ALLGATHER, OP_ALLREDUCE, OP_REDUCE, OP_BARRIER, OP_SCATTER, OP_SCATTERV };
static const char *const OP_NAMES[] = {"bcast",   "allgather", "allreduce", "reduce",
                                       "barrier", "scatter",   "scatterv"};
static const char *const MPI_NAMES[] = {"MPI_Bcast",   "MPI_Allgather", "MPI_Allreduce",
                                        "MPI_Reduce",  "MPI_Barrier",   "MPI_Scatter",
                                        "MPI_Scatterv"};
#define N_OPS ((int)(sizeof OP_NAMES / sizeof OP_NAMES[0]))

/* The last rank enters the checked barrier this much later, and every other rank must have
   waited in it at least half as long: room for a rank that left the barrier before it late (16
   busy ranks on 2 cores wait for a CPU for tens of milliseconds). */
#define BARRIER_HOLD_S 0.200
#define BARRIER_MIN_S (BARRIER_HOLD_S / 2)

static int rank, nranks;

/* The barrier after every timed call: the MPI library's (PMPI_Barrier), or with
   COLL_TIMER_SYNC=mpi the program's MPI_Barrier (the library's own where it serves barriers:
   on one oversubscribed machine MPICH's takes milliseconds and would hide every small call). */
static int (*sync_barrier)(MPI_Comm) = PMPI_Barrier;

/* COLL_TIMER_FALLBACKS=1 (an MPI library's algorithm forced: MPIR_CVAR_<OP>_INTRA_ALGORITHM with
   MPIR_CVAR_COLLECTIVE_FALLBACK=print): while a size runs, this process's stderr goes to a
   temporary file, and the lines in which MPICH says the forced algorithm "cannot be applied"
   (it then ran its own choice) are counted per size; the file is copied to stderr after. */
#define FALLBACK_WORDS "cannot be applied"
static FILE *captured;
static int saved_stderr = -1;

static void capture_begin(void)
{
    const char *on = getenv("COLL_TIMER_FALLBACKS");
    if (on == NULL || strcmp(on, "1") != 0 || captured != NULL)
        return;
    fflush(stderr);
    captured = tmpfile();
    saved_stderr = captured != NULL ? dup(2) : -1;
    if (saved_stderr < 0 || dup2(fileno(captured), 2) < 0) {
        if (captured != NULL)
            fclose(captured);
        if (saved_stderr >= 0)
            close(saved_stderr);
        captured = NULL;
        saved_stderr = -1;
    }
}

/* stderr back, what went to the file copied to it; the fallbacks said meanwhile. */
static long long capture_end(void)
{
    if (captured == NULL)
        return 0;
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    long long said = 0;
    char line[1024];
    rewind(captured);
    while (fgets(line, sizeof line, captured) != NULL) {
        said += strstr(line, FALLBACK_WORDS) != NULL;
        fputs(line, stderr);
    }
    fclose(captured);
    captured = NULL;
    return said;
}

struct bufs {
    enum op op;
    long long bytes; /* as given */
    int count;       /* elements passed to MPI: bytes (MPI_BYTE) or doubles */
    unsigned char *sb, *rb; /* scatter and scatterv: sb the root's only (NULL elsewhere) */
    double *sd, *rd;
    int *counts, *displs; /* scatterv's: count each rank, displacements q x count */
};

/* MPI_Abort, a moment after what this rank said on stderr has had time to reach mpiexec (an
   abort tears the job down with the lines still in flight). */
static void abort_job(int status)
{
    struct timespec moment = {0, 200000000L};
    nanosleep(&moment, NULL);
    MPI_Abort(MPI_COMM_WORLD, status);
}

static void die(const char *what)
{
    fprintf(stderr, "coll_timer: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

/* Byte k of rank r's data at check round `salt`: depends on all three, never the poison 0xA5
   everywhere. */
static unsigned char pattern(int r, size_t k, unsigned salt)
{
    return (unsigned char)((k * 131u + (size_t)r * 29u + salt * 17u + 1u) % 251u);
}

/* Element i of rank r's vector: a small integer, so the sum is exact whatever the order. */
static double element(int r, size_t i)
{
    return (double)((r + 1) * (int)(i % 7 + 1));
}

static void one_call(struct bufs *b)
{
    int rc = MPI_SUCCESS;
    switch (b->op) {
    case OP_BCAST:
        rc = MPI_Bcast(b->rb, b->count, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case OP_ALLGATHER:
        rc = MPI_Allgather(b->sb, b->count, MPI_BYTE, b->rb, b->count, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case OP_ALLREDUCE:
        rc = MPI_Allreduce(b->sd, b->rd, b->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case OP_REDUCE:
        rc = MPI_Reduce(b->sd, b->rd, b->count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case OP_BARRIER:
        rc = MPI_Barrier(MPI_COMM_WORLD);
        break;
    case OP_SCATTER:
        rc = MPI_Scatter(b->sb, b->count, MPI_BYTE, b->rb, b->count, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case OP_SCATTERV:
        rc = MPI_Scatterv(b->sb, b->counts, b->displs, MPI_BYTE, b->rb, b->count, MPI_BYTE, 0,
                          MPI_COMM_WORLD);
        break;
    }
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, text, &len);
        capture_end();
        fprintf(stderr, "coll_timer: rank %d: %s returned an error: %s\n", rank,
                MPI_NAMES[b->op], text);
        fflush(stderr);
        abort_job(4);
    }
}

/* The inputs of a checked call, and the receive buffers poisoned. */
static void prepare(struct bufs *b, unsigned salt)
{
    size_t n = (size_t)b->count;
    if (b->op == OP_BCAST) {
        for (size_t k = 0; k < n; k++)
            b->rb[k] = rank == 0 ? pattern(0, k, salt) : 0xA5;
    } else if (b->op == OP_ALLGATHER) {
        for (size_t k = 0; k < n; k++)
            b->sb[k] = pattern(rank, k, salt);
        memset(b->rb, 0xA5, n * (size_t)nranks);
    } else if (b->op == OP_ALLREDUCE || b->op == OP_REDUCE) {
        for (size_t i = 0; i < n; i++) {
            b->sd[i] = element(rank, i) + (double)salt;
            b->rd[i] = -1.0;
        }
    } else if (b->op == OP_SCATTER || b->op == OP_SCATTERV) { /* block q: rank q's pattern */
        if (rank == 0)
            for (int q = 0; q < nranks; q++)
                for (size_t k = 0; k < n; k++)
                    b->sb[(size_t)q * n + k] = pattern(q, k, salt);
        memset(b->rb, 0xA5, n);
    }
}

/* Wrong elements of this rank's result (prepared with `salt`); the first at *where. */
static long long wrong_elements(const struct bufs *b, unsigned salt, long long *where)
{
    long long wrong = 0;
    size_t n = (size_t)b->count;
    *where = -1;
    if (b->op == OP_BCAST) {
        for (size_t k = 0; k < n; k++)
            if (b->rb[k] != pattern(0, k, salt) && wrong++ == 0)
                *where = (long long)k;
    } else if (b->op == OP_ALLGATHER) {
        for (int r = 0; r < nranks; r++)
            for (size_t k = 0; k < n; k++)
                if (b->rb[(size_t)r * n + k] != pattern(r, k, salt) && wrong++ == 0)
                    *where = (long long)((size_t)r * n + k);
    } else if (b->op == OP_SCATTER || b->op == OP_SCATTERV) {
        for (size_t k = 0; k < n; k++)
            if (b->rb[k] != pattern(rank, k, salt) && wrong++ == 0)
                *where = (long long)k;
    } else if (b->op == OP_ALLREDUCE || (b->op == OP_REDUCE && rank == 0)) {
        /* sum over r of (r + 1)(i mod 7 + 1) + salt = P(P+1)/2 (i mod 7 + 1) + P salt */
        double tri = (double)nranks * (double)(nranks + 1) / 2.0;
        for (size_t i = 0; i < n; i++) {
            double want = tri * (double)(i % 7 + 1) + (double)nranks * (double)salt;
            if (b->rd[i] != want && wrong++ == 0)
                *where = (long long)i;
        }
    }
    return wrong;
}

/* The checked barrier: the last rank enters BARRIER_HOLD_S late; 1 on a rank that left sooner
   than BARRIER_MIN_S after entering (a barrier that does not wait). */
static long long barrier_too_early(struct bufs *b, long long *said)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    if (rank == nranks - 1 && nranks > 1) {
        struct timespec hold = {0, (long)(BARRIER_HOLD_S * 1e9)};
        nanosleep(&hold, NULL);
    }
    capture_begin();
    double t0 = MPI_Wtime();
    one_call(b);
    double waited = MPI_Wtime() - t0;
    *said += capture_end();
    return rank != nranks - 1 && nranks > 1 && waited < BARRIER_MIN_S;
}

/* Every rank's verdict on the result; rank 0 names the first rank wrong and the job ends with
   status 3 when any is. `when`: "first call" or "after the timed calls". */
static void verdict(const struct bufs *b, const char *label, const char *when, long long wrong,
                    long long where)
{
    long long mine[2] = {wrong, wrong > 0 ? rank : nranks}, all[2] = {0, 0};
    PMPI_Allreduce(&mine[0], &all[0], 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine[1], &all[1], 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    long long first = -1;
    if (all[0] > 0) { /* where the first wrong rank went wrong, for rank 0's message */
        long long w = rank == all[1] ? where : -1;
        PMPI_Allreduce(&w, &first, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    }
    if (all[0] == 0)
        return;
    if (rank == 0) {
        if (b->op == OP_BARRIER)
            fprintf(stderr,
                    "coll_timer: %s: WRONG RESULT (%s): MPI_Barrier let %lld rank(s) out before "
                    "the last one entered (first: rank %lld)\n",
                    label, when, all[0], all[1]);
        else
            fprintf(stderr,
                    "coll_timer: %s: WRONG RESULT (%s) of %s at %lld bytes: %lld wrong "
                    "element(s), the first on rank %lld at element %lld\n",
                    label, when, MPI_NAMES[b->op], b->bytes, all[0], all[1], first);
        fflush(stderr);
    }
    PMPI_Barrier(MPI_COMM_WORLD); /* nobody aborts before rank 0 has said it */
    abort_job(3);
}

/* Whether this rank reads its network namespace's TCP counters: the lowest rank of each
   (timer_common.h's tcp_reporter, with the library's own Allgather: the harness must not go
   through the routine being timed). */
static int namespace_reporter(void)
{
    long long ns = -1;
    char link[64] = {0};
    ssize_t len = readlink("/proc/self/ns/net", link, sizeof link - 1);
    if (len > 0 && sscanf(link, "net:[%lld]", &ns) != 1)
        ns = -1;
    long long *all = xmalloc((size_t)nranks * sizeof *all);
    PMPI_Allgather(&ns, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    int reporter = 1;
    for (int r = 0; r < rank && reporter && ns >= 0; r++)
        if (all[r] == ns)
            reporter = 0;
    free(all);
    return reporter;
}

struct timing {
    double worst;  /* seconds per call of the slowest rank (every rank has it) */
    double cpu;    /* share of the host's CPUs busy (rank 0's reading); -1: unknown */
    double tcp[2]; /* TCP segments retransmitted and timeouts per call, all namespaces; -1 */
    double waited; /* the largest share of the time a rank waited for a CPU; -1: unknown */
    int iters;
    long long said; /* this rank's fallbacks of a forced algorithm (capture_end) */
};

/* Time `iters` calls of one size after `warmup` untimed ones (loop: { call; barrier }, or
   { call } for the barrier itself, or { barrier } alone for the baseline). Collective. */
static struct timing measure(struct bufs *b, int iters, int warmup, int reporter, int baseline)
{
    int sync = b->op != OP_BARRIER || baseline;
    if (!baseline) /* the calls', not the harness's reductions after them */
        capture_begin();
    for (int w = 0; w < warmup; w++) {
        if (!baseline)
            one_call(b);
        if (sync)
            sync_barrier(MPI_COMM_WORLD);
    }
    double busy0 = 0, total0 = 0, busy1 = 0, total1 = 0;
    int have_cpu = rank == 0 && cpu_jiffies(&busy0, &total0);
    long long tcp0[2] = {0, 0}, tcp1[2] = {0, 0};
    int have_tcp = reporter ? tcp_counters(&tcp0[0], &tcp0[1]) : 1;
    PMPI_Barrier(MPI_COMM_WORLD);
    long long q0 = runq_wait_ns();
    double start = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (!baseline)
            one_call(b);
        if (sync)
            sync_barrier(MPI_COMM_WORLD);
    }
    double elapsed = MPI_Wtime() - start;
    long long q1 = runq_wait_ns();
    struct timing t = {0.0, -1.0, {-1.0, -1.0}, -1.0, iters, capture_end()};
    double mine = iters > 0 ? elapsed / iters : 0.0;
    double waited =
        q0 >= 0 && q1 >= q0 && elapsed > 0 ? (double)(q1 - q0) / 1e9 / elapsed : -1.0;
    have_cpu = have_cpu && cpu_jiffies(&busy1, &total1) && total1 > total0;
    have_tcp = have_tcp && (!reporter || tcp_counters(&tcp1[0], &tcp1[1]));
    long long delta[3] = {reporter ? tcp1[0] - tcp0[0] : 0, reporter ? tcp1[1] - tcp0[1] : 0,
                          have_tcp ? 0 : 1};
    long long sums[3] = {0, 0, 0};
    PMPI_Allreduce(&mine, &t.worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Reduce(&waited, &t.waited, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(delta, sums, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double calls = iters > 0 ? (double)iters : 1.0;
        t.cpu = have_cpu ? (busy1 - busy0) / (total1 - total0) : -1.0;
        t.tcp[0] = sums[2] == 0 ? (double)sums[0] / calls : -1.0;
        t.tcp[1] = sums[2] == 0 ? (double)sums[1] / calls : -1.0;
    }
    return t;
}

/* Rank 0: the line of one size in the timers' protocol. */
static void print_timing(const char *label, long long bytes, const struct timing *t)
{
    if (rank != 0)
        return;
    printf("time %s %lld 0 %.9f %d %.3f %.2f %.3f %.3f\n", label, bytes, t->worst, t->iters,
           t->cpu, t->tcp[0], t->tcp[1], t->waited);
    fflush(stdout);
}

/* The bytes a size's line shows: as given, or 8 x the doubles of a reduction. */
static long long shown_bytes(const struct bufs *b)
{
    return b->op == OP_REDUCE || b->op == OP_ALLREDUCE ? 8LL * b->count : b->bytes;
}

/* The comma-separated list `text` as non-negative integers (at most `max` of them); their
   number, or -1 on anything else. */
static int parse_list(const char *text, long long *out, int max)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        char *end = NULL;
        if (*p < '0' || *p > '9' || n == max)
            return -1;
        out[n++] = strtoll(p, &end, 10);
        if (*end == '\0')
            return n;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

#define MAX_SIZES 64
#define BASELINE_ITERS 50 /* barriers timed for the baseline line */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *sync = getenv("COLL_TIMER_SYNC");
    if (sync != NULL && strcmp(sync, "mpi") == 0)
        sync_barrier = MPI_Barrier;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* one_call says which call */
    if (argc != 6 && argc != 7) {
        if (rank == 0)
            fprintf(stderr, "usage: coll_timer bcast|allgather|allreduce|reduce|barrier|scatter|"
                            "scatterv SIZES ITERS WARMUP LABEL [SLOW_SECONDS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int opi = 0;
    while (opi < N_OPS && strcmp(argv[1], OP_NAMES[opi]) != 0)
        opi++;
    long long sizes[MAX_SIZES], iters[MAX_SIZES], warm[MAX_SIZES];
    int nsizes = parse_list(argv[2], sizes, MAX_SIZES);
    int niters = parse_list(argv[3], iters, MAX_SIZES);
    int nwarm = parse_list(argv[4], warm, MAX_SIZES);
    const char *label = argv[5];
    double slow = argc == 7 ? atof(argv[6]) : 0.0;
    if (opi == N_OPS || nsizes < 1 || (niters != 1 && niters != nsizes) ||
        (nwarm != 1 && nwarm != nsizes)) {
        if (rank == 0)
            fprintf(stderr,
                    "coll_timer: OP is one of bcast, allgather, allreduce, reduce, barrier, "
                    "scatter, scatterv; SIZES a list of bytes (at most %d); ITERS and WARMUP one "
                    "count or one per size\n",
                    MAX_SIZES);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    enum op op = (enum op)opi;
    for (int s = 0; s < nsizes; s++) {
        long long it = iters[niters == 1 ? 0 : s], w = warm[nwarm == 1 ? 0 : s];
        if (sizes[s] > INT32_MAX || it > INT32_MAX || w > INT32_MAX) {
            if (rank == 0)
                fprintf(stderr, "coll_timer: a size or count above %d\n", INT32_MAX);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (op != OP_BARRIER && sizes[s] < 1) {
            if (rank == 0)
                fprintf(stderr, "coll_timer: %s needs sizes of at least 1 byte\n", argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (op == OP_SCATTERV && sizes[s] * (nranks - 1) > INT32_MAX) { /* int displacements */
            if (rank == 0)
                fprintf(stderr, "coll_timer: scatterv: %lld x %d ranks above %d\n", sizes[s],
                        nranks, INT32_MAX);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int reporter = namespace_reporter();
    if (op != OP_BARRIER) { /* the library's barrier alone, which every time below includes */
        struct bufs none = {op, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
        struct timing t = measure(&none, BASELINE_ITERS, 3, reporter, 1);
        print_timing("barrier-baseline", 0, &t);
    }
    int skipping = 0;
    for (int s = 0; s < nsizes; s++) {
        if (skipping) {
            if (rank == 0)
                printf("skip %s %lld\n", label,
                       op == OP_REDUCE || op == OP_ALLREDUCE
                           ? 8LL * (sizes[s] / 8 > 0 ? sizes[s] / 8 : 1)
                           : sizes[s]);
            continue;
        }
        struct bufs b = {op, sizes[s], 0, NULL, NULL, NULL, NULL, NULL, NULL};
        size_t n = 0;
        if (op == OP_BCAST) {
            b.count = (int)sizes[s];
            n = (size_t)b.count;
            b.rb = xmalloc(n);
        } else if (op == OP_ALLGATHER) {
            b.count = (int)sizes[s];
            n = (size_t)b.count;
            b.sb = xmalloc(n);
            b.rb = xmalloc(n * (size_t)nranks);
        } else if (op == OP_ALLREDUCE || op == OP_REDUCE) {
            b.count = sizes[s] / 8 > 0 ? (int)(sizes[s] / 8) : 1;
            n = (size_t)b.count;
            b.sd = xmalloc(n * sizeof(double));
            b.rd = xmalloc(n * sizeof(double));
        } else if (op == OP_SCATTER || op == OP_SCATTERV) {
            b.count = (int)sizes[s];
            n = (size_t)b.count;
            b.sb = rank == 0 ? xmalloc(n * (size_t)nranks) : NULL; /* significant at the root */
            b.rb = xmalloc(n);
            if (op == OP_SCATTERV) {
                b.counts = xmalloc((size_t)nranks * sizeof *b.counts);
                b.displs = xmalloc((size_t)nranks * sizeof *b.displs);
                for (int q = 0; q < nranks; q++) {
                    b.counts[q] = b.count;
                    b.displs[q] = q * b.count;
                }
            }
        } else {
            b.bytes = 0;
        }
        long long where = -1, wrong = 0;
        unsigned salt = (unsigned)s + 1;
        struct timing first = {0.0, -1.0, {-1.0, -1.0}, -1.0, 1, 0};
        long long said = 0, said_all = 0;
        if (op == OP_BARRIER) {
            wrong = barrier_too_early(&b, &said);
        } else { /* the checked call, timed as one call of the loop below */
            prepare(&b, salt);
            first = measure(&b, 1, 0, reporter, 0);
            said += first.said;
            wrong = wrong_elements(&b, salt, &where);
        }
        verdict(&b, label, "first call", wrong, where);
        if (slow > 0 && first.worst > slow) { /* too slow to time again, or at larger sizes */
            print_timing(label, shown_bytes(&b), &first);
            skipping = 1;
        } else {
            struct timing t = measure(&b, (int)iters[niters == 1 ? 0 : s],
                                      (int)warm[nwarm == 1 ? 0 : s], reporter, 0);
            said += t.said;
            print_timing(label, shown_bytes(&b), &t);
        }
        PMPI_Reduce(&said, &said_all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && said_all > 0) {
            printf("fallback %s %lld %lld\n", label, shown_bytes(&b), said_all);
            fflush(stdout);
        }
        if (op != OP_BARRIER) { /* the timed calls had the same inputs: the same result */
            wrong = wrong_elements(&b, salt, &where);
            verdict(&b, label, "after the timed calls", wrong, where);
        } else {
            verdict(&b, label, "after the timed calls", barrier_too_early(&b, &said), -1);
        }
        free(b.sb);
        free(b.rb);
        free(b.sd);
        free(b.rd);
        free(b.counts);
        free(b.displs);
    }
    if (rank == 0) {
        printf("done\n");
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
