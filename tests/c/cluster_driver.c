/* cluster_driver: runs the run-time scheduler (runtime_c/cluster) on a cluster and rank
 * placement read from stdin, prints the phases; tests/test_cluster_c.py compares them with
 * Python's and runs it under ASan/UBSan.
 *
 * stdin: S M L P, then M machine switches, then L pairs (link_a link_b), then P rank machines.
 * stdout: "phases L n_messages" then one "phase src dst" line per message; or "error CODE MSG".
 *
 * Benchmark (tuning/bench_cluster_c.py): --repeat R [--sync S] times R first-call schedulings
 * (the phases; with -DAAPC_WITH_VTABLES and S = 1 sender-all, 2 receiver-all, 3 barrier-all,
 * also the job tree and rank 0's executor rows with their syncs, as aapc_alltoall_cluster.c
 * builds them on every rank) and prints "seconds_per_call MIN MEDIAN" and "maxrss_kib N" instead of the
 * phases.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "aapc_cluster.h"
#ifdef AAPC_WITH_VTABLES
#include "aapc_alltoall_rows.h"
#include "aapc_vtables.h"

/* --rows SYNC [--window W] [--seed 1]: every rank's rows (aapc_alltoall_rows.c) with globally
   numbered entries, in the format of vsched_driver --vtables, and the messages as "p PHASE SRC
   DST". --seed 1: the rows of the streamed build (aapc_rows_build_seed) where it takes the job,
   and a first line "b seed" (else "b stored"). */
static int print_rows(const aapc_cluster_t *c, const int32_t *rm, int P, int sync, int window,
                      int seed)
{
    aapc_job_phases_t ph;
    aapc_job_tree_t tree;
    char err[160];
    if (aapc_job_phases(c, rm, P, &ph) != 0 || aapc_job_tree(c, rm, P, &tree, err, 160) != 0)
        return 1;
    int streamed = 0;
    for (long long k = 0; k < ph.n_messages; k++)
        printf("p %d %d %d\n", (int)ph.phase[k], (int)ph.src[k], (int)ph.dst[k]);
    int bs = 0, br = 0;
    for (int me = 0; me < P; me++) {
        aapc_rows_t r;
        int rc = seed ? aapc_rows_build_seed(c, rm, P, &tree, sync, window, me, "driver", &r) : 1;
        if (rc < 0 || (rc > 0 && aapc_rows_build(&ph, &tree, sync, window, me, "driver", &r) != 0))
            return 1;
        streamed += rc == 0;
        const aapc_schedule_t *s = &r.sched;
        int ns = s->send_off[P], nr = s->recv_off[P], be = sync == AAPC_VSYNC_SENDER ? bs : br;
        for (int e = 0; e < ns; e++)
            printf("s %d %d %d\n", me, bs + e, s->send_phase[e]);
        for (int e = 0; e < nr; e++)
            printf("r %d %d %d\n", me, br + e, s->recv_phase[e]);
        for (int j = 0; s->syncin_off && j < s->syncin_off[P]; j++)
            printf("i %d %d %d\n", me, j, s->syncin_peer[j]);
        int nev = sync == AAPC_VSYNC_SENDER ? ns : nr;
        for (int e = 0; s->fire_off && e < nev; e++)
            for (int k = s->fire_off[e]; k < s->fire_off[e + 1]; k++)
                printf("f %d %d\n", be + e, s->fire_peer[k]);
        for (int e = 0; s->wait_off && e < ns; e++)
            for (int k = s->wait_off[e]; k < s->wait_off[e + 1]; k++)
                printf("w %d %d\n", bs + e, s->wait_idx[k]);
        bs += ns;
        br += nr;
        aapc_rows_free(&r);
    }
    if (seed)
        printf("b %s\n", streamed == P ? "seed" : streamed == 0 ? "stored" : "mixed");
    aapc_job_tree_free(&tree);
    aapc_job_phases_free(&ph);
    return 0;
}
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One first-call scheduling: the phases; or (sync > 0) what one rank (rank 0) builds for its
   executor, as aapc_alltoall_cluster.c: the job tree, then its rows with their syncs from seed
   002's phases streamed, or (the capacity-aware phases) from the phases computed whole. */
static int schedule_once(const aapc_cluster_t *c, const int32_t *rm, int P, int sync)
{
    aapc_job_phases_t ph;
    memset(&ph, 0, sizeof ph);
#ifdef AAPC_WITH_VTABLES
    if (sync > 0) {
        aapc_job_tree_t tree;
        aapc_rows_t rows;
        char err[160];
        if (aapc_job_tree(c, rm, P, &tree, err, (int)sizeof err) != 0)
            return -1;
        int rc = aapc_rows_build_seed(c, rm, P, &tree, sync, 1, 0, "bench", &rows);
        if (rc > 0)
            rc = aapc_job_phases(c, rm, P, &ph) != 0 ? -1
                 : aapc_rows_build(&ph, &tree, sync, 1, 0, "bench", &rows) != 0 ? -1
                                                                                 : 0;
        if (rc == 0)
            aapc_rows_free(&rows);
        aapc_job_tree_free(&tree);
        aapc_job_phases_free(&ph);
        return rc;
    }
#else
    (void)sync;
#endif
    if (aapc_job_phases(c, rm, P, &ph) != 0)
        return -1;
    aapc_job_phases_free(&ph);
    return 0;
}

/* --repeat R: time R first-call schedulings; their minimum and median, and the peak RSS. */
static int bench(const aapc_cluster_t *c, const int32_t *rm, int P, int repeat, int sync)
{
    double *sec = malloc((size_t)repeat * sizeof *sec);
    if (sec == NULL)
        return 2;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        if (schedule_once(c, rm, P, sync) != 0) {
            free(sec);
            return 1;
        }
        sec[r] = now() - t0;
    }
    qsort(sec, (size_t)repeat, sizeof *sec, cmp_double);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("seconds_per_call %.6f %.6f\nmaxrss_kib %ld\n", sec[0], sec[repeat / 2], ru.ru_maxrss);
    free(sec);
    return 0;
}

/* --first-call R: the per-call selection's first call on a communicator, per rank, for a job far
   above what the per-rank schedule takes: its shape (every rank), the members' tree order of
   the log-round way (every rank), and, on a machine's leader, the machine-level phases with the
   leader's rows (the leaders' way; -DAAPC_WITH_VTABLES). Prints "shape MIN MEDIAN", "order MIN
   MEDIAN", "leader MIN MEDIAN" (seconds; -1 without the rows) and "maxrss_kib N". */
static int first_call(const aapc_cluster_t *c, const int32_t *rm, int P, int repeat)
{
    double *t[3];
    int32_t *pos = malloc(sizeof *pos * (size_t)c->n_machines), *lm = malloc(sizeof *lm * (size_t)P);
    int *rank_at = malloc(sizeof *rank_at * (size_t)P), *seen = calloc((size_t)c->n_machines, sizeof *seen);
    for (int k = 0; k < 3; k++)
        t[k] = calloc((size_t)repeat, sizeof **t);
    if (!pos || !lm || !rank_at || !seen || !t[0] || !t[1] || !t[2])
        return 2;
    int n = 0, streamed = 0;
    for (int r = 0; r < P; r++) /* the machines in the order of their lowest rank (the leaders) */
        if (!seen[rm[r]]++)
            lm[n++] = rm[r];
    for (int it = 0; it < repeat; it++) {
        aapc_job_shape_t shape;
        double t0 = now();
        if (aapc_job_shape(c, rm, P, &shape) != 0)
            return 1;
        double t1 = now();
        if (aapc_cluster_machine_order(c, pos) != 0)
            return 1;
        int *count = calloc((size_t)c->n_machines + 1, sizeof *count); /* the counting sort of */
        if (count == NULL) /* aapc_alltoall_cluster.c tree_order: ranks by their machine's place */
            return 2;
        for (int r = 0; r < P; r++)
            count[pos[rm[r]] + 1]++;
        for (int m = 0; m < c->n_machines; m++)
            count[m + 1] += count[m];
        for (int r = 0; r < P; r++)
            rank_at[count[pos[rm[r]]]++] = r;
        free(count);
        double t2 = now();
        t[0][it] = t1 - t0;
        t[1][it] = t2 - t1;
        t[2][it] = -1;
#ifdef AAPC_WITH_VTABLES
        aapc_job_phases_t ph;
        aapc_job_tree_t tree;
        aapc_rows_t rows;
        char err[160];
        memset(&ph, 0, sizeof ph); /* as aapc_alltoall_cluster.c: streamed, else stored */
        if (aapc_job_tree(c, lm, n, &tree, err, 160) != 0)
            return 1;
        int rc = aapc_rows_build_seed(c, lm, n, &tree, AAPC_VSYNC_RECEIVER, 1, 0, "driver", &rows);
        if (rc < 0 || (rc > 0 && (aapc_job_phases(c, lm, n, &ph) != 0 ||
                                  aapc_rows_build(&ph, &tree, AAPC_VSYNC_RECEIVER, 1, 0, "driver",
                                                  &rows) != 0)))
            return 1;
        streamed += rc == 0;
        aapc_job_phases_free(&ph);
        aapc_job_tree_free(&tree);
        aapc_rows_free(&rows);
        t[2][it] = now() - t2;
#endif
    }
    printf("leader_build %s\n", streamed == repeat ? "streamed" : streamed ? "mixed" : "stored");
    const char *names[3] = {"shape", "order", "leader"};
    for (int k = 0; k < 3; k++) {
        qsort(t[k], (size_t)repeat, sizeof *t[k], cmp_double);
        printf("%s %.6f %.6f\n", names[k], t[k][0], t[k][repeat / 2]);
        free(t[k]);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("maxrss_kib %ld\n", ru.ru_maxrss);
    free(pos);
    free(lm);
    free(rank_at);
    free(seen);
    return 0;
}

/* The default: the phases, one "phase src dst" line per message, or "error CODE MSG". */
static int print_phases(const aapc_cluster_t *c, const int32_t *rm, int P)
{
    aapc_job_phases_t ph;
    int rc = aapc_job_phases(c, rm, P, &ph);
    if (rc != 0) {
        printf("error %d %s\n", rc, ph.error);
        return 0;
    }
    printf("phases %d %lld\n", (int)ph.n_phases, (long long)ph.n_messages);
    for (long long e = 0; e < ph.n_messages; e++)
        printf("%d %d %d\n", (int)ph.phase[e], (int)ph.src[e], (int)ph.dst[e]);
    aapc_job_phases_free(&ph);
    return 0;
}

#ifndef AAPC_WITH_VTABLES
static int print_rows(const aapc_cluster_t *c, const int32_t *rm, int P, int sync, int window,
                      int seed)
{
    (void)c, (void)rm, (void)P, (void)sync, (void)window, (void)seed;
    fprintf(stderr, "cluster_driver: --rows needs a build with -DAAPC_WITH_VTABLES\n");
    return 2;
}
#endif

static int read_ints(int32_t *a, int n)
{
    for (int i = 0; i < n; i++)
        if (scanf("%d", &a[i]) != 1)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    int S, M, L, P, repeat = 0, sync = 0, rows = 0, window = 1, first = 0, seed = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sync"))
            sync = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows"))
            rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--window"))
            window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--first-call"))
            first = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = atoi(argv[i + 1]);
    }
    if (scanf("%d %d %d %d", &S, &M, &L, &P) != 4 || S < 1 || M < 1 || L < 0 || P < 0)
        return 2;
    int32_t *msw = calloc((size_t)M, sizeof *msw), *la = calloc((size_t)L + 1, sizeof *la);
    int32_t *lb = calloc((size_t)L + 1, sizeof *lb), *rm = calloc((size_t)P + 1, sizeof *rm);
    double *mbw = calloc((size_t)M, sizeof *mbw), *lbw = calloc((size_t)L + 1, sizeof *lbw);
    if (!msw || !la || !lb || !rm || !mbw || !lbw || read_ints(msw, M))
        return 2;
    for (int i = 0; i < L; i++)
        if (scanf("%d %d", &la[i], &lb[i]) != 2)
            return 2;
    if (read_ints(rm, P))
        return 2;
    /* optional: the M machine then L link speeds (bytes/s); else 100 Mbit/s everywhere */
    int speeds = scanf("%lf", &mbw[0]) == 1;
    for (int i = speeds; i < M; i++)
        if (!speeds || scanf("%lf", &mbw[i]) != 1)
            mbw[i] = 12.5e6;
    for (int i = 0; i < L; i++)
        if (!speeds || scanf("%lf", &lbw[i]) != 1)
            lbw[i] = 12.5e6;
    aapc_cluster_t c = {"driver", M, S, L, NULL, NULL, msw, mbw, NULL, la, lb, lbw, 0, NULL, 0};
    int rc = first > 0  ? first_call(&c, rm, P, first)
             : rows > 0 ? print_rows(&c, rm, P, rows, window, seed)
             : repeat > 0 ? bench(&c, rm, P, repeat, sync)
                          : print_phases(&c, rm, P);
    free(msw);
    free(la);
    free(lb);
    free(rm);
    free(mbw);
    free(lbw);
    return rc;
}
