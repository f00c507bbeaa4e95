/*
 * mcast_timer.c: times one collective (multicast or the MPI library's) over a list of sizes, as
 * in seed 000 Figure 6: MPI_Barrier; start = MPI_Wtime(); ITER calls; elapsed / ITER. Reports
 * the average and the maximum over the ranks of the per-call time. Used by
 * `aapcgen bench-mcast`.
 *
 *   mcast_timer OP IMPL SIZES ITERS WARMUP
 *     OP    bcast | scatter | allgather | scatterv-static | scatterv-dynamic | scatterv-compiler
 *           (Scatterv: ranks 1, 2, .., 5 of the communicator get SIZE bytes, the others none:
 *           seed 000's one-to-five pattern)
 *     IMPL  mcast | native
 *     SIZES comma-separated bytes per rank (block size for scatter/allgather)
 * Output: one line per size: "OP IMPL SIZE AVG_SECONDS MAX_SECONDS CALLS".
 */
#include "aapc_mcast.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int one_call(const char *op, int mc, unsigned char *s, unsigned char *r, int n, int *cnt,
                    int *dsp, aapc_mcast_group_t g)
{
    if (strcmp(op, "bcast") == 0)
        return mc ? aapc_mcast_bcast(r, n, MPI_BYTE, 0, MPI_COMM_WORLD)
                  : PMPI_Bcast(r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (strcmp(op, "scatter") == 0)
        return mc ? aapc_mcast_scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD)
                  : PMPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (strcmp(op, "allgather") == 0)
        return mc ? aapc_mcast_allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD)
                  : PMPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    if (!mc)
        return PMPI_Scatterv(s, cnt, dsp, MPI_BYTE, r, cnt[rank], MPI_BYTE, 0, MPI_COMM_WORLD);
    if (strcmp(op, "scatterv-compiler") == 0)
        return aapc_scatterv_data_movement(s, cnt, dsp, MPI_BYTE, r, cnt[rank], MPI_BYTE, 0,
                                           MPI_COMM_WORLD, g);
    return aapc_mcast_scatterv(s, cnt, dsp, MPI_BYTE, r, cnt[rank], MPI_BYTE, 0, MPI_COMM_WORLD,
                               strcmp(op, "scatterv-dynamic") == 0 ? AAPC_MCAST_DYNAMIC
                                                                   : AAPC_MCAST_STATIC);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0)
            fprintf(stderr, "usage: mcast_timer OP mcast|native SIZES ITERS WARMUP\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *op = argv[1];
    int mc = strcmp(argv[2], "mcast") == 0, iters = atoi(argv[4]), warm = atoi(argv[5]);
    if (mc) {
        int enabled = 0;
        aapc_mcast_comm_attach(MPI_COMM_WORLD, &enabled);
        if (!enabled) {
            if (rank == 0)
                fprintf(stderr, "mcast_timer: multicast could not be set up\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    char *list = malloc(strlen(argv[3]) + 1);
    strcpy(list, argv[3]);
    for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
        int n = atoi(tok);
        size_t all = (size_t)n * (size_t)size + 1;
        unsigned char *s = malloc(all), *r = malloc(all);
        memset(s, rank + 1, all);
        memset(r, 0, all);
        int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
        for (int k = 0; k < size; k++) {
            cnt[k] = k >= 1 && k <= 5 ? n : 0;
            dsp[k] = k * n;
        }
        aapc_mcast_group_t g = AAPC_MCAST_GROUP_NULL;
        if (mc && strcmp(op, "scatterv-compiler") == 0)
            aapc_scatterv_open_group(s, cnt, dsp, MPI_BYTE, r, cnt[rank], MPI_BYTE, 0,
                                     MPI_COMM_WORLD, &g);
        for (int i = 0; i < warm; i++)
            one_call(op, mc, s, r, n, cnt, dsp, g);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            one_call(op, mc, s, r, n, cnt, dsp, g);
        double t = iters > 0 ? (MPI_Wtime() - t0) / iters : 0.0, sum, max;
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (g != AAPC_MCAST_GROUP_NULL)
            aapc_scatterv_close_group(&g);
        if (rank == 0) {
            printf("%s %s %d %.9f %.9f %d\n", op, argv[2], n, sum / size, max, iters + warm);
            fflush(stdout);
        }
        free(s);
        free(r);
        free(cnt);
        free(dsp);
    }
    free(list);
    MPI_Finalize();
    return 0;
}
