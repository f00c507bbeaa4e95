/*
 * mcast_dropin.c: the PMPI drop-in (runtime_c/mcast compiled with -DAAPC_INTERCEPT_MCAST).
 * Calls plain MPI_Bcast / MPI_Scatter / MPI_Scatterv / MPI_Allgather, which the drop-in routes
 * to multicast or to the library, and compares each result with PMPI_* byte for byte. It
 * observes what each intercepted call did (library_calls.h counts the calls it hands to the
 * library's PMPI_* on MPI_COMM_WORLD): a call that handed nothing to the library on any rank
 * ran multicast. Prints how many calls of each kind did, so a test can check the selection
 * (AAPC_MCAST=1 forces it, AAPC_MCAST=0 disables it).
 */
#include "library_calls.h" /* first: it sets _GNU_SOURCE */

#include "aapc_mcast.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After an intercepted call: 1 when no rank handed it to the library (it ran multicast). */
static int multicast_ran(void)
{
    long mine = library_unwatch(), all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all == 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, fail = 0, chosen[4] = {0, 0, 0, 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const int sizes[] = {1, 1000, 20000, 100000};
    for (int k = 0; k < 4; k++) {
        int n = sizes[k], root = k % size;
        unsigned char *a = malloc((size_t)n * (size_t)size), *b = malloc((size_t)n * (size_t)size);
        unsigned char *s = malloc((size_t)n * (size_t)size);
        for (int i = 0; i < n * size; i++)
            s[i] = (unsigned char)(i * 7 + k + rank * (root == rank ? 0 : 1));
        /* Bcast */
        memcpy(a, s, (size_t)n);
        memcpy(b, s, (size_t)n);
        library_watch(MPI_COMM_WORLD);
        MPI_Bcast(a, n, MPI_BYTE, root, MPI_COMM_WORLD);
        chosen[0] += multicast_ran();
        PMPI_Bcast(b, n, MPI_BYTE, root, MPI_COMM_WORLD);
        fail += memcmp(a, b, (size_t)n) != 0;
        /* Scatter */
        memset(a, 1, (size_t)n);
        memset(b, 1, (size_t)n);
        library_watch(MPI_COMM_WORLD);
        MPI_Scatter(s, n, MPI_BYTE, a, n, MPI_BYTE, root, MPI_COMM_WORLD);
        chosen[1] += multicast_ran();
        PMPI_Scatter(s, n, MPI_BYTE, b, n, MPI_BYTE, root, MPI_COMM_WORLD);
        fail += memcmp(a, b, (size_t)n) != 0;
        /* Scatterv: rank r gets r % 3 * n / 3 bytes */
        int *c = malloc(sizeof(int) * (size_t)size), *d = malloc(sizeof(int) * (size_t)size);
        for (int r = 0; r < size; r++) {
            c[r] = r % 3 * (n / 3);
            d[r] = r * n;
        }
        memset(a, 2, (size_t)n);
        memset(b, 2, (size_t)n);
        library_watch(MPI_COMM_WORLD);
        MPI_Scatterv(s, c, d, MPI_BYTE, a, c[rank], MPI_BYTE, root, MPI_COMM_WORLD);
        chosen[2] += multicast_ran();
        PMPI_Scatterv(s, c, d, MPI_BYTE, b, c[rank], MPI_BYTE, root, MPI_COMM_WORLD);
        fail += memcmp(a, b, (size_t)n) != 0;
        free(c);
        free(d);
        /* Allgather */
        memset(a, 3, (size_t)n * (size_t)size);
        memset(b, 3, (size_t)n * (size_t)size);
        library_watch(MPI_COMM_WORLD);
        MPI_Allgather(s, n, MPI_BYTE, a, n, MPI_BYTE, MPI_COMM_WORLD);
        chosen[3] += multicast_ran();
        PMPI_Allgather(s, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD);
        fail += memcmp(a, b, (size_t)n * (size_t)size) != 0;
        free(a);
        free(b);
        free(s);
    }
    int total;
    MPI_Allreduce(&fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mcast_dropin: %d failures; multicast ran bcast=%d scatter=%d scatterv=%d "
               "allgather=%d of 4\n",
               total, chosen[0], chosen[1], chosen[2], chosen[3]);
    MPI_Finalize();
    return total != 0;
}
