/*
 * warn_once.c: the fallback warnings: one per communicator (from its rank 0) and cause.
 * Compiled with a directory generated with --alltoallv PATTERN under -DAAPC_INTERCEPT:
 *   1. MPI_Alltoall on a half of MPI_COMM_WORLD: the communicator does not match the schedule;
 *   2. MPI_Alltoallv (level 3) on MPI_COMM_WORLD with counts that differ from the pattern,
 *      twice (the second call warns no more).
 * Both calls must still give the library's results. Prints "warn_once: ok" or "warn_once: WRONG".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hsize;
    MPI_Comm_size(half, &hsize);
    int *s = malloc(sizeof(int) * (size_t)size * 4), *r = malloc(sizeof(int) * (size_t)size * 4);
    for (int i = 0; i < size * 4; i++)
        s[i] = rank * 1000 + i;
    MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, half);
    for (int i = 0; i < hsize; i++) {
        int src = 2 * i + rank % 2; /* world rank of half rank i */
        bad += r[i] != src * 1000 + rank / 2;
    }
    int counts[64], displs[64];
    for (int i = 0; i < size; i++) { /* 3 ints to everybody: not the compiled pattern */
        counts[i] = 3;
        displs[i] = 3 * i;
    }
    MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 3; k++)
            bad += r[3 * i + k] != i * 1000 + 3 * rank + k;
    int total = 0;
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("warn_once: %s\n", total ? "WRONG" : "ok");
    free(s);
    free(r);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
