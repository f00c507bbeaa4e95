/* Test and benchmark driver for runtime_c/vsched (the Alltoallv schedulers in C).
 *
 * Usage: vsched_driver [--repeat R] [--summary] [FILE]   (FILE defaults to stdin)
 *
 * Input: whitespace-separated text, as written by tests/test_vsched_c.py:
 *   aapc-vsched 1
 *   n_machines n_nodes
 *   parent[0..n_nodes-1]
 *   up_bw[0..n_nodes-1]          (doubles; hex floats such as 0x1.7d784p+23 are exact)
 *   has_template                 (0 or 1)
 *   template_phase[n*n]          (only if has_template)
 *   scheduler threshold chunk    (0 greedy, 1 alltoall, 2 balanced)
 *   counts[n*n]                  (row src, column dst)
 *
 * Output (stdout), doubles as C99 hex floats (%a, exact):
 *   n_phases N / n_pieces P / small_phase S / cost X / bound X
 *   then unless --summary: "t P X" per phase (phase time) and "p PHASE SRC DST OFFSET LENGTH"
 *   per piece, in the schedule's order.
 * With --repeat R the schedule is computed R times and "seconds_per_call MIN MEDIAN" (wall
 * clock, CLOCK_MONOTONIC) and "cpu_seconds_per_call MIN MEDIAN" (CLOCK_PROCESS_CPUTIME_ID)
 * are printed too. On an error: one line on stderr, exit status 1.
 *
 * Compiled with -DAAPC_WITH_VTABLES (and mpicc: the executor's header includes mpi.h; no MPI
 * call is made), --vtables SYNC (1 sender-all, 2 receiver-all) also builds the executor tables
 * of runtime_c/alltoallv/aapc_vtables.c and prints them raw, for tests/test_vtables_contract.py:
 *   "s M E PHASE" per send entry, "r M E PHASE" per receive entry (E: global entry index),
 *   "f E PEER" per sync fired after event entry E, "i M J PEER" per sync receive machine M
 *   posts (J: posting index), "w E J" per sync receive send entry E waits for.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aapc_vsched.h"
#ifdef AAPC_WITH_VTABLES
#include "aapc_vtables.h"

static int fail_input(const char *what);

static int print_vtables(const aapc_vsched *vs, const aapc_vtree *tree, int sync)
{
    aapc_vtables_t t;
    if (aapc_vtables_build(vs, tree, sync, "driver", NULL, &t) != 0)
        return fail_input("aapc_vtables_build: out of memory");
    const aapc_schedule_t *s = &t.sched;
    for (int m = 0; m < s->nmachines; m++) {
        for (int e = s->send_off[m]; e < s->send_off[m + 1]; e++)
            printf("s %d %d %d\n", m, e, s->send_phase[e]);
        for (int e = s->recv_off[m]; e < s->recv_off[m + 1]; e++)
            printf("r %d %d %d\n", m, e, s->recv_phase[e]);
        for (int j = s->syncin_off[m]; j < s->syncin_off[m + 1]; j++)
            printf("i %d %d %d\n", m, j - s->syncin_off[m], s->syncin_peer[j]);
    }
    int events = sync == AAPC_VSYNC_SENDER ? s->send_off[s->nmachines] : s->recv_off[s->nmachines];
    for (int e = 0; s->fire_off != NULL && e < events; e++)
        for (int k = s->fire_off[e]; k < s->fire_off[e + 1]; k++)
            printf("f %d %d\n", e, s->fire_peer[k]);
    for (int e = 0; s->wait_off != NULL && e < s->send_off[s->nmachines]; e++)
        for (int k = s->wait_off[e]; k < s->wait_off[e + 1]; k++)
            printf("w %d %d\n", e, s->wait_idx[k]);
    aapc_vtables_free(&t);
    return 0;
}
#endif

static int fail_input(const char *what)
{
    fprintf(stderr, "vsched_driver: bad input: %s\n", what);
    return 1;
}

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int repeat = 0, summary = 0, vtables = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--summary"))
            summary = 1;
        else if (!strcmp(argv[i], "--vtables") && i + 1 < argc)
            vtables = atoi(argv[++i]);
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vsched_driver: unknown option %s\n", argv[i]);
            return 2;
        } else
            path = argv[i];
    }
    FILE *f = path && strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "vsched_driver: %s: cannot open\n", path);
        return 1;
    }
    int version = 0, n = 0, nn = 0, has_t = 0, scheduler = 0;
    long long threshold = 0, chunk = 0;
    if (fscanf(f, "aapc-vsched %d", &version) != 1 || version != 1)
        return fail_input("missing header 'aapc-vsched 1'");
    if (fscanf(f, "%d %d", &n, &nn) != 2 || n < 1 || nn < 1 || n > 46340 || nn > (1 << 26))
        return fail_input("n_machines n_nodes");
    size_t nsq = (size_t)n * (size_t)n;
    int *parent = malloc((size_t)nn * sizeof *parent);
    double *up_bw = malloc((size_t)nn * sizeof *up_bw);
    long long *counts = malloc(nsq * sizeof *counts);
    int *tmpl = NULL;
    if (!parent || !up_bw || !counts)
        return fail_input("out of memory");
    for (int i = 0; i < nn; i++)
        if (fscanf(f, "%d", &parent[i]) != 1)
            return fail_input("parent");
    for (int i = 0; i < nn; i++)
        if (fscanf(f, "%lf", &up_bw[i]) != 1)
            return fail_input("up_bw");
    if (fscanf(f, "%d", &has_t) != 1)
        return fail_input("has_template");
    if (has_t) {
        tmpl = malloc(nsq * sizeof *tmpl);
        if (!tmpl)
            return fail_input("out of memory");
        for (size_t i = 0; i < nsq; i++)
            if (fscanf(f, "%d", &tmpl[i]) != 1)
                return fail_input("template_phase");
    }
    if (fscanf(f, "%d %lld %lld", &scheduler, &threshold, &chunk) != 3)
        return fail_input("scheduler threshold chunk");
    for (size_t i = 0; i < nsq; i++)
        if (fscanf(f, "%lld", &counts[i]) != 1)
            return fail_input("counts");
    if (f != stdin)
        fclose(f);

    aapc_vtree tree = {n, nn, parent, up_bw, tmpl};
    aapc_vsched s;
    int rc = aapc_vsched_run(&tree, counts, scheduler, threshold, chunk, &s);
    if (rc != 0) {
        fprintf(stderr, "vsched_driver: error %d (%s): %s\n", rc, aapc_vsched_strerror(rc),
                s.error);
        return 1;
    }
    printf("n_phases %d\nn_pieces %lld\nsmall_phase %d\ncost %a\nbound %a\n", s.n_phases,
           s.n_pieces, s.small_phase, s.cost, s.bound);
    if (repeat > 0) {
        double *t = malloc((size_t)repeat * sizeof *t), *c = malloc((size_t)repeat * sizeof *c);
        if (!t || !c)
            return fail_input("out of memory");
        for (int r = 0; r < repeat; r++) {
            aapc_vsched again;
            double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
            rc = aapc_vsched_run(&tree, counts, scheduler, threshold, chunk, &again);
            t[r] = now(CLOCK_MONOTONIC) - t0;
            c[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (rc != 0 || again.n_pieces != s.n_pieces || again.cost != s.cost) {
                fprintf(stderr, "vsched_driver: repeated call %d differs (rc %d)\n", r, rc);
                return 1;
            }
            aapc_vsched_free(&again);
        }
        qsort(t, (size_t)repeat, sizeof *t, cmp_double);
        qsort(c, (size_t)repeat, sizeof *c, cmp_double);
        printf("seconds_per_call %.9f %.9f\n", t[0], t[repeat / 2]);
        printf("cpu_seconds_per_call %.9f %.9f\n", c[0], c[repeat / 2]);
        free(t);
        free(c);
    }
    if (!summary) {
        for (int p = 0; p < s.n_phases; p++)
            printf("t %d %a\n", p, s.phase_time[p]);
        for (long long i = 0; i < s.n_pieces; i++)
            printf("p %d %d %d %lld %lld\n", s.phase[i], s.src[i], s.dst[i], s.offset[i],
                   s.length[i]);
    }
#ifdef AAPC_WITH_VTABLES
    if (vtables && print_vtables(&s, &tree, vtables))
        return 1;
#else
    if (vtables)
        return fail_input("--vtables needs a build with -DAAPC_WITH_VTABLES");
#endif
    aapc_vsched_free(&s);
    free(parent);
    free(up_bw);
    free(counts);
    free(tmpl);
    return 0;
}
