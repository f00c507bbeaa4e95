/*
 * plain_alltoall.c: an ordinary MPI program that knows nothing of aapcgen. Compiled together
 * with a generated directory and -DAAPC_INTERCEPT, its MPI_Alltoall calls run the generated
 * routine (the test checks that through AAPC_VARIANT's warning and the result).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = 1000;
    int *send = malloc(sizeof(int) * (size_t)count * (size_t)size);
    int *recv = malloc(sizeof(int) * (size_t)count * (size_t)size);
    for (int j = 0; j < size; j++) {
        for (int k = 0; k < count; k++) {
            send[j * count + k] = rank * 1000000 + j * 1000 + k;
        }
    }
    int bad = 0;
    for (int repeat = 0; repeat < 3; repeat++) {
        MPI_Alltoall(send, count, MPI_INT, recv, count, MPI_INT, MPI_COMM_WORLD);
        for (int i = 0; i < size; i++) {
            for (int k = 0; k < count; k++) {
                bad += recv[i * count + k] != i * 1000000 + rank * 1000 + k;
            }
        }
    }
    int total = 0;
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("plain_alltoall: %s (%d wrong elements)\n", total ? "WRONG" : "ok", total);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return total != 0;
}
