/*
 * shm_bench.c: time the shared-memory collectives of runtime_c/shm against the MPI library's
 * own (PMPI_*) in one mpiexec job, interleaved repeat by repeat so both see the same machine.
 *
 * Usage: mpiexec -n P shm_bench [--sizes 8,4096,...] [--colls barrier,bcast,...]
 *                               [--repeats R] [--budget-us T]
 * Sizes: Bcast message bytes; Allgather bytes per rank; Alltoall bytes sent per rank (block
 * n/p); Reduce/Allreduce bytes per rank (doubles, MPI_SUM). Each repeat runs `iters` calls
 * (chosen per implementation so one timing takes about --budget-us, at least 3) after a
 * shared-memory barrier and keeps the slowest rank's mean; the figure is the median over
 * repeats. The two implementations alternate which runs first in a repeat, so neither always
 * inherits the scheduler and cache state the other leaves (oversubscribed runs are sensitive
 * to it). Rank 0 prints one line per (collective, size):
 *   RESULT coll bytes ranks native_us shm_us
 */
#include "aapc_shm.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { BARRIER, BCAST, ALLGATHER, ALLTOALL, REDUCE, ALLREDUCE, NCOLL } coll_t;
static const char *names[NCOLL] = {"barrier", "bcast", "allgather", "alltoall", "reduce",
                                   "allreduce"};

static char *sbuf, *rbuf;
static int p, me;

static void call(coll_t c, int shm, long n, int iter)
{
    int root = iter % p;
    switch (c) {
    case BARRIER:
        shm ? aapc_shm_barrier(MPI_COMM_WORLD) : PMPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        shm ? aapc_shm_bcast(rbuf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD)
            : PMPI_Bcast(rbuf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        shm ? aapc_shm_allgather(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD)
            : PMPI_Allgather(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLTOALL: {
        int b = (int)(n / p);
        shm ? aapc_shm_alltoall(sbuf, b, MPI_BYTE, rbuf, b, MPI_BYTE, MPI_COMM_WORLD)
            : PMPI_Alltoall(sbuf, b, MPI_BYTE, rbuf, b, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
    case REDUCE:
        shm ? aapc_shm_reduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD)
            : PMPI_Reduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        shm ? aapc_shm_allreduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
            : PMPI_Allreduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    default:
        break;
    }
}

static double timed(coll_t c, int shm, long n, int iters)
{
    /* start together: the shared-memory barrier releases all ranks within a cache-line
       transfer, while an oversubscribed library barrier can release them milliseconds apart,
       which would be charged to whichever implementation is timed next */
    aapc_shm_barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        call(c, shm, n, i);
    }
    double t = (MPI_Wtime() - t0) / iters, tmax = 0;
    PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long sizes[32];
    int nsizes = 0, repeats = 7;
    int want[NCOLL];
    double budget = 20000e-6;
    for (int c = 0; c < NCOLL; c++) {
        want[c] = 1;
    }
    const char *size_list = "8,64,512,4096,32768,262144,1048576,4194304";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            size_list = argv[++i];
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--budget-us") == 0 && i + 1 < argc) {
            budget = atof(argv[++i]) * 1e-6;
        } else if (strcmp(argv[i], "--colls") == 0 && i + 1 < argc) {
            char list[256];
            snprintf(list, sizeof list, "%s", argv[++i]);
            for (int c = 0; c < NCOLL; c++) {
                want[c] = 0;
            }
            for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
                for (int c = 0; c < NCOLL; c++) {
                    want[c] |= strcmp(tok, names[c]) == 0;
                }
            }
        }
    }
    for (const char *s = size_list; *s && nsizes < 32;) {
        sizes[nsizes++] = atol(s);
        const char *comma = strchr(s, ',');
        if (comma == NULL) {
            break;
        }
        s = comma + 1;
    }
    long maxn = 0;
    for (int i = 0; i < nsizes; i++) {
        maxn = sizes[i] > maxn ? sizes[i] : maxn;
    }
    sbuf = calloc((size_t)maxn * p + 64, 1);
    rbuf = calloc((size_t)maxn * p + 64, 1);
    double *tn = malloc(sizeof(double) * (size_t)repeats);
    double *ts = malloc(sizeof(double) * (size_t)repeats);
    for (int c = 0; c < NCOLL; c++) {
        if (!want[c]) {
            continue;
        }
        for (int si = 0; si < nsizes; si++) {
            long n = c == BARRIER ? 0 : sizes[si];
            if (c == BARRIER && si > 0) {
                break;
            }
            /* warm up (creates the window) and calibrate the iteration count */
            call(c, 1, n, 0);
            call(c, 0, n, 0);
            int iters[2];
            for (int shm = 0; shm < 2; shm++) {
                double one = timed(c, shm, n, 3);
                long k = (long)(budget / (one > 1e-7 ? one : 1e-7));
                iters[shm] = k < 3 ? 3 : k > 20000 ? 20000 : (int)k;
            }
            PMPI_Bcast(iters, 2, MPI_INT, 0, MPI_COMM_WORLD);
            for (int r = 0; r < repeats; r++) { /* which goes first alternates */
                if (r % 2 == 0) {
                    tn[r] = timed(c, 0, n, iters[0]);
                    ts[r] = timed(c, 1, n, iters[1]);
                } else {
                    ts[r] = timed(c, 1, n, iters[1]);
                    tn[r] = timed(c, 0, n, iters[0]);
                }
            }
            qsort(tn, (size_t)repeats, sizeof(double), cmp_double);
            qsort(ts, (size_t)repeats, sizeof(double), cmp_double);
            if (me == 0) {
                printf("RESULT %s %ld %d %.3f %.3f\n", names[c], n, p, tn[repeats / 2] * 1e6,
                       ts[repeats / 2] * 1e6);
                fflush(stdout);
            }
        }
    }
    free(tn);
    free(ts);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
