/*
 * handoff_timer.c: what a collective the library hands to the MPI library costs on top of the
 * MPI library's own time. Calls each collective back to back on tiny arguments (where the
 * preloaded library's selection gives the call to the MPI library) and prints the time per call;
 * tuning/bench_handoff.py runs it alone and with libaapc.so preloaded, alternately, and prints
 * the difference. No barrier between calls: the collectives of two ranks synchronise by
 * themselves, and a barrier would be most of a call of a few hundred nanoseconds.
 *
 *   handoff_timer ITERS [OPS]
 *     ITERS  calls per collective (after ITERS / 10 untimed ones)
 *     OPS    comma-separated subset of: alltoall, alltoallv, ialltoall, allgather, allreduce,
 *            bcast, reduce, barrier, scatter (default all)
 * Output, rank 0: "handoff OP NS" per collective, NS the slowest rank's time per call in
 * nanoseconds; a wrong result stops the run (exit 1).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 64

enum op { ALLTOALL, ALLTOALLV, IALLTOALL, ALLGATHER, ALLREDUCE, BCAST, REDUCE, BARRIER, SCATTER, NOPS };
static const char *const names[NOPS] = {"alltoall", "alltoallv", "ialltoall", "allgather",
                                        "allreduce", "bcast",     "reduce",    "barrier",
                                        "scatter"};

static int p, me;
static long long sbuf[MAXP], rbuf[MAXP];
static int counts[MAXP], displs[MAXP];

static void one(enum op op)
{
    MPI_Request req;
    double x = me + 1, y = 0;
    switch (op) {
    case ALLTOALL:
        MPI_Alltoall(sbuf, 1, MPI_LONG_LONG, rbuf, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        break;
    case ALLTOALLV:
        MPI_Alltoallv(sbuf, counts, displs, MPI_LONG_LONG, rbuf, counts, displs, MPI_LONG_LONG,
                      MPI_COMM_WORLD);
        break;
    case IALLTOALL:
        MPI_Ialltoall(sbuf, 1, MPI_LONG_LONG, rbuf, 1, MPI_LONG_LONG, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, 1, MPI_LONG_LONG, rbuf, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (y != p * (p + 1) / 2.0) {
            fprintf(stderr, "handoff_timer: allreduce gave %g\n", y);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        break;
    case BCAST:
        MPI_Bcast(sbuf, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(sbuf, 1, MPI_LONG_LONG, rbuf, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        break;
    case NOPS:
        break;
    }
}

/* The all-to-alls' result: rank q's block for me is q * 1000 + me. */
static int exact(enum op op)
{
    for (int q = 0; q < p && (op == ALLTOALL || op == ALLTOALLV || op == IALLTOALL); q++)
        if (rbuf[q] != q * 1000LL + me)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    long iters = argc > 1 ? atol(argv[1]) : 0;
    const char *ops = argc > 2 ? argv[2] : NULL;
    if (iters < 1 || p > MAXP) {
        if (me == 0)
            fprintf(stderr, "usage: handoff_timer ITERS [OPS] (at most %d ranks)\n", MAXP);
        MPI_Finalize();
        return 2;
    }
    for (int q = 0; q < p; q++) {
        sbuf[q] = me * 1000LL + q;
        counts[q] = 1;
        displs[q] = q;
    }
    for (int o = 0; o < NOPS; o++) {
        if (ops != NULL && strstr(ops, names[o]) == NULL)
            continue;
        memset(rbuf, 0, sizeof rbuf);
        one((enum op)o);
        if (!exact((enum op)o)) {
            fprintf(stderr, "handoff_timer: %s gave a wrong block on rank %d\n", names[o], me);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (long i = 0; i < iters / 10; i++)
            one((enum op)o);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            one((enum op)o);
        double t = (MPI_Wtime() - t0) / (double)iters, slowest = 0;
        MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("handoff %s %.1f\n", names[o], slowest * 1e9);
    }
    MPI_Finalize();
    return 0;
}
