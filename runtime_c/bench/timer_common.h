/*
 * timer_common.h: what the benchmark timers share (alltoall_timer.c, alltoallv_timer.c):
 * the --only filter, the CPU busy sampling of /proc/stat and the timing of one candidate.
 */
#ifndef AAPC_TIMER_COMMON_H
#define AAPC_TIMER_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static inline int selected(const char *only, const char *name)
{
    if (only == NULL) {
        return 1;
    }
    size_t len = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) {
            return 1;
        }
    }
    return 0;
}

/* Busy and total jiffies of all CPUs (first line of /proc/stat); 0 when unavailable. */
static inline int cpu_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int ok = f != NULL && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                                 &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
    if (f != NULL) {
        fclose(f);
    }
    if (!ok) {
        return 0;
    }
    *total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
    *busy = *total - (double)(v[3] + v[4]); /* minus idle and iowait */
    return 1;
}

/* How one candidate is timed (seed 002 Figure 5). */
struct timer_opts {
    int iters, min_iters, warmup;
    double target; /* > 0: adapt the number of timed calls to about this many seconds */
};

/* Warm-up calls, then n x { call(arg); barrier } timed with MPI_Wtime (n = target / time of a
   warm-up call, clamped to [min_iters, iters], decided by rank 0); rank 0 prints
   "time <name> <bytes> <repeat> <seconds per call, max over ranks> <n> <cpu busy>". */
static inline void time_candidate(void (*call)(void *), void *arg, const struct timer_opts *o,
                                  const char *name, long long bytes, int repeat, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double wstart = MPI_Wtime();
    for (int w = 0; w < o->warmup; w++) {
        call(arg);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int n = o->iters;
    if (o->target > 0 && o->warmup > 0) { /* rank 0 decides, everyone follows */
        double per_call = (MPI_Wtime() - wstart) / o->warmup;
        n = per_call > 0 ? (int)(o->target / per_call) : o->iters;
        n = n < o->min_iters ? o->min_iters : (n > o->iters ? o->iters : n);
        MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    double busy0 = 0, total0 = 0, busy1 = 0, total1 = 0;
    int have_cpu = rank == 0 && cpu_jiffies(&busy0, &total0);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < n; it++) {
        call(arg);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - start) / n, worst = 0;
    have_cpu = have_cpu && cpu_jiffies(&busy1, &total1) && total1 > total0;
    MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double cpu = have_cpu ? (busy1 - busy0) / (total1 - total0) : -1.0;
        printf("time %s %lld %d %.9f %d %.3f\n", name, bytes, repeat, worst, n, cpu);
        fflush(stdout);
    }
}

#endif /* AAPC_TIMER_COMMON_H */
