/*
 * alltoallv_timer.c: time MPI_Alltoallv candidates side by side in one job (seed 002 Figure 5
 * measurement applied to a byte-count pattern).
 *
 * The pattern file holds N, then N x N byte counts (row = source rank). Candidates: "native"
 * (PMPI_Alltoallv, whatever algorithm the MPI library's environment selects), every entry of
 * aapc_vvariants[] except its "native" (level3-*, level1-*) and every entry of aapc_vlevel2s[]
 * (level2-*, given the pattern). For each repeat the candidates run in turn (interleaved):
 * warm-up calls, a barrier, then `iters` x { alltoallv; barrier } timed with MPI_Wtime. Rank 0
 * prints one line per (repeat, candidate): "time <candidate> <total bytes> <repeat> <seconds per
 * call> <iters> <cpu busy> <tcp retrans> <tcp timeouts>" (as alltoall_timer.c), then "done".
 *
 * The candidate order is a strided permutation chosen by --seed K plus the repeat number, the
 * same on every rank, so that each candidate's successor changes from one repeat to the next
 * (a rotation would keep every candidate's neighbours: the one after MPICH native would always
 * pay for the TCP state native leaves behind), and --settle S idles S seconds before each
 * candidate
 * (TCP state left by a lossy candidate, e.g. backed-off retransmission timers, otherwise
 * penalises whoever comes next; after an idle period Linux restarts every connection's
 * congestion window from the same initial state).
 *
 * usage: alltoallv_timer --pattern FILE [--iters N] [--min-iters N] [--target-seconds T]
 *                        [--warmup N] [--repeats R] [--only a,b] [--seed K] [--settle S]
 *                        [--timing loop|osu]   (timer_common.h time_candidate)
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep here, readlink in timer_common.h */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aapc_vregistry.h"

static int native(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb,
                  const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
    return PMPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
}

static const long long *g_bytes;
static aapc_alltoallv_level2_fn g_level2[64];
#define LEVEL2(k)                                                                              \
    static int level2_##k(const void *sb, const int sc[], const int sd[], MPI_Datatype st,     \
                          void *rb, const int rc[], const int rd[], MPI_Datatype rt,           \
                          MPI_Comm comm)                                                       \
    {                                                                                          \
        return g_level2[k](g_bytes, sb, sc, sd, st, rb, rc, rd, rt, comm);                     \
    }
LEVEL2(0)
LEVEL2(1)
LEVEL2(2)
LEVEL2(3)
static const aapc_alltoallv_fn level2_fns[4] = {level2_0, level2_1, level2_2, level2_3};

#include "timer_common.h"

static long long *read_pattern(const char *path, int n)
{
    FILE *f = fopen(path, "r");
    int m = 0;
    if (f == NULL || fscanf(f, "%d", &m) != 1 || m != n) {
        if (f != NULL)
            fclose(f);
        return NULL;
    }
    long long *p = malloc(sizeof *p * (size_t)n * (size_t)n);
    for (long long i = 0; p != NULL && i < (long long)n * n; i++) {
        if (fscanf(f, "%lld", &p[i]) != 1 || p[i] < 0 || p[i] > 2147483647LL) {
            free(p);
            p = NULL;
        }
    }
    fclose(f);
    return p;
}

struct call_args {
    aapc_alltoallv_fn fn;
    const char *sb;
    const int *sc, *sd;
    char *rb;
    const int *rc, *rd;
};

static void call_one(void *p)
{
    struct call_args *a = p;
    a->fn(a->sb, a->sc, a->sd, MPI_BYTE, a->rb, a->rc, a->rd, MPI_BYTE, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = NULL, *only = NULL;
    int iters = 20, min_iters = 3, warmup = 2, repeats = 5, seed = 0, timing = 0;
    double target = 0.0, settle = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pattern") == 0) path = argv[i + 1];
        else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min-iters") == 0) min_iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--target-seconds") == 0) target = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--repeats") == 0) repeats = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0) seed = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--timing") == 0) timing = timing_of(argv[i + 1]);
        else if (strcmp(argv[i], "--settle") == 0) settle = atof(argv[i + 1]);
    }
    long long *pattern = path ? read_pattern(path, size) : NULL;
    if (pattern == NULL) {
        if (rank == 0)
            fprintf(stderr, "alltoallv_timer: --pattern FILE with %d x %d byte counts needed\n",
                    size, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g_bytes = pattern;
    if (timing < 0) {
        if (rank == 0) fprintf(stderr, "%s: --timing takes loop or osu\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const struct timer_opts opts = {iters, min_iters, warmup, target, timing};
    int nl2 = aapc_nvlevel2s < 4 ? aapc_nvlevel2s : 4;
    int ncand = 1 + aapc_nvvariants + nl2;
    aapc_alltoallv_fn *fns = malloc(sizeof(*fns) * (size_t)ncand);
    const char **names = malloc(sizeof(*names) * (size_t)ncand);
    int nc = 0;
    fns[nc] = native;
    names[nc++] = "native";
    for (int v = 0; v < aapc_nvvariants; v++) {
        if (strcmp(aapc_vvariants[v].variant, "native") == 0)
            continue;
        fns[nc] = aapc_vvariants[v].fn;
        names[nc++] = aapc_vvariants[v].variant;
    }
    for (int k = 0; k < nl2; k++) {
        g_level2[k] = aapc_vlevel2s[k].fn;
        fns[nc] = level2_fns[k];
        names[nc++] = aapc_vlevel2s[k].variant;
    }
    int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
    int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
    long long stot = 0, rtot = 0, total = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = (int)pattern[(long long)rank * size + j];
        rc[j] = (int)pattern[(long long)j * size + rank];
        sd[j] = (int)stot;
        rd[j] = (int)rtot;
        stot += sc[j];
        rtot += rc[j];
    }
    for (long long i = 0; i < (long long)size * size; i++)
        if (i / size != i % size)
            total += pattern[i];
    char *sb = malloc(stot ? (size_t)stot : 1), *rb = malloc(rtot ? (size_t)rtot : 1);
    for (long long k = 0; k < stot; k++) sb[k] = (char)(k * 7 + rank);
    int *order = malloc(sizeof(int) * (size_t)nc);
    for (int r = 0; r < repeats; r++) {
        strided_order(order, nc, (unsigned)seed + (unsigned)r);
        for (int k = 0; k < nc; k++) {
            int c = order[k];
            if (!selected(only, names[c])) continue;
            if (settle > 0) { /* idle links: queues drain, TCP restarts from the same state */
                struct timespec ts = {(time_t)settle, (long)((settle - (double)(time_t)settle) * 1e9)};
                MPI_Barrier(MPI_COMM_WORLD);
                nanosleep(&ts, NULL);
            }
            struct call_args args = {fns[c], sb, sc, sd, rb, rc, rd};
            time_candidate(call_one, &args, &opts, names[c], total, r, rank);
        }
    }
    if (rank == 0) printf("done\n");
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(order);
    free(fns);
    free(names);
    free(pattern);
    MPI_Finalize();
    return 0;
}
