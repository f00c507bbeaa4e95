/*
 * bench_nbc.c: what a non-blocking or persistent all-to-all of the library costs beside the
 * blocking one, per call, at one block size: MPI_Alltoall; MPI_Ialltoall + MPI_Wait;
 * MPI_Start + MPI_Wait of one MPI_Alltoall_init request; the same three for MPI_Alltoallv with
 * every count the block size; and the time of MPI_Alltoall_init itself on a settled
 * communicator. Medians over the repeats, the slowest
 * rank's time per call. Build it with the generated sources (docs/nonblocking.md):
 *   mpicc -O2 -DAAPC_INTERCEPT -I GEN tuning/bench_nbc.c GEN/ *.c -o bench_nbc
 *   mpiexec -n 2 -env AAPC_WAY phases ./bench_nbc 1024 2000
 * Prints one table row per way: "way  usec/call".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The slowest rank's median of reps timings of what(kind). */
static double median(double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double m = t[reps / 2], worst = 0;
    MPI_Allreduce(&m, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int bytes = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 1000;
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (bytes < 0 || reps < 1) {
        if (me == 0)
            fprintf(stderr, "bench_nbc: usage: bench_nbc BYTES REPEATS (BYTES >= 0, REPEATS >= 1)\n");
        MPI_Finalize();
        return 2;
    }
    char *s = calloc((size_t)p, (size_t)bytes + 1), *r = calloc((size_t)p, (size_t)bytes + 1);
    int *counts = malloc(sizeof *counts * (size_t)p), *displs = malloc(sizeof *displs * (size_t)p);
    double *t = malloc((size_t)reps * sizeof *t);
    for (int j = 0; j < p; j++) {
        counts[j] = bytes;
        displs[j] = j * bytes;
    }
    MPI_Request req;
    MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD); /* settles WORLD */
    MPI_Alltoallv(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    const char *way[6] = {"MPI_Alltoall", "MPI_Ialltoall + MPI_Wait",
                          "MPI_Start + MPI_Wait (persistent)", "MPI_Alltoallv",
                          "MPI_Ialltoallv + MPI_Wait", "MPI_Start + MPI_Wait (persistent v)"};
    for (int k = 0; k < 6; k++) {
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
        if (k == 2)
            MPI_Alltoall_init(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req);
        if (k == 5)
            MPI_Alltoallv_init(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#else
        if (k == 2 || k == 5)
            continue;
#endif
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (k == 0) {
                MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD);
            } else if (k == 1) {
                MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else if (k == 3) {
                MPI_Alltoallv(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE,
                              MPI_COMM_WORLD);
            } else if (k == 4) {
                MPI_Ialltoallv(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE,
                               MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            t[i] = MPI_Wtime() - t0;
        }
        double m = median(t, reps);
        if (me == 0)
            printf("%-36s %10.2f\n", way[k], m * 1e6);
        if (k == 2 || k == 5)
            MPI_Request_free(&req);
    }
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
    for (int i = 0; i < reps; i++) { /* MPI_Alltoall_init itself, on a settled communicator */
        double t0 = MPI_Wtime();
        MPI_Alltoall_init(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req);
        t[i] = MPI_Wtime() - t0;
        MPI_Request_free(&req);
    }
    double m = median(t, reps);
    if (me == 0)
        printf("%-36s %10.2f\n", "MPI_Alltoall_init (scheduled)", m * 1e6);
#endif
    free(s);
    free(r);
    free(t);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
