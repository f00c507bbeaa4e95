/*
 * bench_overlap.c: how much of an MPI_Ialltoall overlaps with computation.
 *
 * Per block size (bytes per pair), medians over REPEATS rounds, the slowest rank's time:
 *   call:      MPI_Ialltoall + MPI_Wait alone;
 *   compute:   the computation alone, C = the call's median (so "computation equal to the
 *              call's time");
 *   tested:    MPI_Ialltoall, then C of computation in slices of S microseconds with an
 *              MPI_Test after each slice, then MPI_Wait;
 *   untested:  MPI_Ialltoall, C of computation, then MPI_Wait.
 * and the ratios tested / call and untested / call (1.0: the exchange is entirely hidden; 2.0:
 * nothing overlaps). The computation is a sleep (nanosleep): on a cluster every rank computes on
 * its own core, which a sleep models on a machine whose ranks share two cores (a busy loop would
 * take the other ranks' CPU and measure starvation instead); like computation, a sleep makes no
 * MPI progress.
 * Usage: bench_overlap BYTES REPEATS SLICE_US; run it with AAPC_WAY=phases and
 * AAPC_WAY=library to compare (docs/nonblocking.md, "Overlap"; docs/measurements/nonblocking.md).
 */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double slowest_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double m = t[n / 2], worst = 0;
    MPI_Allreduce(&m, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static void compute(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long bytes = argc > 1 ? atol(argv[1]) : 65536;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    double slice = (argc > 3 ? atof(argv[3]) : 500.0) * 1e-6;
    if (bytes < 1 || bytes > (1L << 26) || reps < 1 || slice <= 0) {
        if (me == 0)
            fprintf(stderr, "bench_overlap: usage: bench_overlap BYTES (1..64M) REPEATS (>= 1) "
                            "SLICE_US (> 0)\n");
        MPI_Finalize();
        return 2;
    }
    char *s = malloc((size_t)p * (size_t)bytes), *r = malloc((size_t)p * (size_t)bytes);
    double *t = malloc((size_t)reps * sizeof *t);
    memset(s, me, (size_t)p * (size_t)bytes);
    MPI_Request req;
    MPI_Alltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD); /* gathers */
    double med[4] = {0, 0, 0, 0};
    for (int kind = 0; kind < 4; kind++) {
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (kind == 1) {
                compute(med[0]);
            } else {
                MPI_Ialltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD,
                              &req);
                if (kind == 2) {
                    int flag = 0;
                    for (double done = 0; done < med[0]; done += slice) {
                        compute(med[0] - done < slice ? med[0] - done : slice);
                        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                    }
                } else if (kind == 3) {
                    compute(med[0]);
                }
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            t[i] = MPI_Wtime() - t0;
        }
        med[kind] = slowest_median(t, reps);
    }
    if (me == 0) {
        const char *way = getenv("AAPC_WAY");
        printf("%-8s %9s %10s %10s %10s %10s %8s %8s\n", "way", "bytes", "call_ms", "compute_ms",
               "tested_ms", "untested_ms", "tested", "untested");
        printf("%-8s %9ld %10.2f %10.2f %10.2f %10.2f %7.2fx %7.2fx\n", way ? way : "auto", bytes,
               med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3, med[2] / med[0],
               med[3] / med[0]);
    }
    free(s);
    free(r);
    free(t);
    MPI_Finalize();
    return 0;
}
