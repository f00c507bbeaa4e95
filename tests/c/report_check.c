/*
 * report_check.c: an MPI program with a known count of all-to-all calls, for the report of
 * what ran (AAPC_REPORT, runtime_c/common/aapc_report.c). Compiled with a generated directory
 * and -DAAPC_INTERCEPT; tests/test_site.py reads the report and compares it with these counts:
 *   - MPI_Alltoall on MPI_COMM_WORLD: WORLD_CALLS calls of BLOCK ints per rank pair;
 *   - MPI_Alltoall on each half of MPI_COMM_WORLD (MPI_Comm_split by rank < size / 2):
 *     HALF_CALLS calls each;
 *   - MPI_Alltoall on MPI_COMM_SELF: SELF_CALLS calls (a 1-rank communicator);
 *   - MPI_Alltoallv on MPI_COMM_WORLD: V_CALLS calls, rank r sending r + 1 ints to each rank;
 *   - one MPI_Alltoall of 0 ints on MPI_COMM_WORLD.
 * Every result is checked; prints "report_check: ok" on rank 0 (or "WRONG").
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { BLOCK = 256, WORLD_CALLS = 5, HALF_CALLS = 3, SELF_CALLS = 2, V_CALLS = 4 };

/* Calls of BLOCK ints on comm; the number of wrong elements. */
static int exchange(MPI_Comm comm, int calls, int count)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *send = malloc(sizeof(int) * (size_t)(count ? count : 1) * (size_t)size);
    int *recv = malloc(sizeof(int) * (size_t)(count ? count : 1) * (size_t)size);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < count; k++)
            send[j * count + k] = rank * 1000000 + j * 1000 + k;
    for (int c = 0; c < calls; c++) {
        MPI_Alltoall(send, count, MPI_INT, recv, count, MPI_INT, comm);
        for (int i = 0; i < size; i++)
            for (int k = 0; k < count; k++)
                bad += recv[i * count + k] != i * 1000000 + rank * 1000 + k;
    }
    free(send);
    free(recv);
    return bad;
}

/* MPI_Alltoallv: rank r sends r + 1 ints to every rank. */
static int exchange_v(MPI_Comm comm, int calls)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *scount = malloc(sizeof(int) * (size_t)size), *sdispl = malloc(sizeof(int) * (size_t)size);
    int *rcount = malloc(sizeof(int) * (size_t)size), *rdispl = malloc(sizeof(int) * (size_t)size);
    int stotal = 0, rtotal = 0;
    for (int j = 0; j < size; j++) {
        scount[j] = rank + 1;
        sdispl[j] = stotal;
        stotal += scount[j];
        rcount[j] = j + 1;
        rdispl[j] = rtotal;
        rtotal += rcount[j];
    }
    int *send = malloc(sizeof(int) * (size_t)stotal), *recv = malloc(sizeof(int) * (size_t)rtotal);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < scount[j]; k++)
            send[sdispl[j] + k] = rank * 1000 + j * 10 + k;
    for (int c = 0; c < calls; c++) {
        MPI_Alltoallv(send, scount, sdispl, MPI_INT, recv, rcount, rdispl, MPI_INT, comm);
        for (int i = 0; i < size; i++)
            for (int k = 0; k < rcount[i]; k++)
                bad += recv[rdispl[i] + k] != i * 1000 + rank * 10 + k;
    }
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    free(send);
    free(recv);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0, total = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bad += exchange(MPI_COMM_WORLD, WORLD_CALLS, BLOCK);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    bad += exchange(half, HALF_CALLS, BLOCK);
    MPI_Comm_free(&half);
    bad += exchange(MPI_COMM_SELF, SELF_CALLS, BLOCK);
    bad += exchange_v(MPI_COMM_WORLD, V_CALLS);
    bad += exchange(MPI_COMM_WORLD, 1, 0);
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("report_check: %s (%d wrong elements)\n", total ? "WRONG" : "ok", total);
    MPI_Finalize();
    return total != 0;
}
