/*
 * bench_typed_block.c: MPI_Alltoall of large blocks described by a non-contiguous datatype on
 * one side (a column of every other double, as in a transpose) and contiguous doubles on the
 * other, between ranks of one machine.
 *
 * Per block size (MiB per pair) and direction ("vector->contig": the send type is the vector;
 * "contig->vector": the receive type is), REPEATS calls, each timed on the slowest rank after a
 * barrier; prints the median and the fastest, and whether every received double was checked
 * right. Run it once as is (the MPI library) and once with the library preloaded to compare
 * (docs/measurements/typed-blocks.md). Sizes are read from argv: bench_typed_block REPEATS MIB...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One direction at n doubles per block: the median and fastest seconds; *bad counts the wrong
   doubles received. */
static void run(int vec_send, long n, int repeats, double *median, double *best, long *bad)
{
    int r, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Datatype col, colr;
    MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &col);
    MPI_Type_create_resized(col, 0, (MPI_Aint)n * 16, &colr);
    MPI_Type_commit(&colr);
    size_t wide = (size_t)P * (size_t)n * 2, tight = (size_t)P * (size_t)n;
    double *s = malloc((vec_send ? wide : tight) * sizeof(double));
    double *d = malloc((vec_send ? tight : wide) * sizeof(double));
    double *times = malloc((size_t)repeats * sizeof(double));
    if (s == NULL || d == NULL || times == NULL) {
        fprintf(stderr, "bench_typed_block: out of memory at %ld doubles per block\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < (vec_send ? wide : tight); i++)
        s[i] = (double)(i + (size_t)r * wide);
    for (int it = 0; it < repeats; it++) {
        for (size_t i = 0; i < (vec_send ? tight : wide); i++)
            d[i] = -1.0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (vec_send)
            MPI_Alltoall(s, 1, colr, d, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
        else
            MPI_Alltoall(s, (int)n, MPI_DOUBLE, d, 1, colr, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        MPI_Allreduce(&t, &times[it], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    long wrong = 0;
    for (int j = 0; j < P; j++) /* block j came from rank j: its block r, element k */
        for (long k = 0; k < n; k++) {
            double want = vec_send ? (double)((size_t)j * wide + (size_t)r * (size_t)n * 2 + 2 * (size_t)k)
                                   : (double)((size_t)j * wide + (size_t)r * (size_t)n + (size_t)k);
            double got = vec_send ? d[(size_t)j * (size_t)n + (size_t)k] : d[((size_t)j * (size_t)n + (size_t)k) * 2];
            wrong += got != want;
        }
    MPI_Allreduce(&wrong, bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    qsort(times, (size_t)repeats, sizeof(double), cmp);
    *median = times[repeats / 2];
    *best = times[0];
    free(times);
    free(s);
    free(d);
    MPI_Type_free(&colr);
    MPI_Type_free(&col);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int repeats = argc > 1 ? atoi(argv[1]) : 0;
    if (argc < 3 || repeats < 1) {
        if (r == 0)
            fprintf(stderr, "usage: bench_typed_block REPEATS MIB [MIB...]\n");
        MPI_Finalize();
        return 2;
    }
    if (r == 0)
        printf("%d ranks, %d calls per row\n| MiB per block | direction | median ms | fastest ms "
               "| wrong doubles |\n|---|---|---|---|---|\n", P, repeats);
    for (int a = 2; a < argc; a++) {
        long n = atol(argv[a]) * (1L << 17); /* doubles per block */
        for (int vec_send = 1; vec_send >= 0; vec_send--) {
            double median = 0, best = 0;
            long bad = 0;
            run(vec_send, n, repeats, &median, &best, &bad);
            if (r == 0)
                printf("| %s | %s | %.1f | %.1f | %ld |\n", argv[a],
                       vec_send ? "vector->contig" : "contig->vector", median * 1e3, best * 1e3, bad);
        }
    }
    MPI_Finalize();
    return 0;
}
