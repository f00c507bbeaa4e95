/*
 * threads.c: an MPI_THREAD_MULTIPLE program whose threads call MPI_Alltoall and MPI_Alltoallv
 * at the same time, each on a communicator of its own (legal: MPI orders collectives per
 * communicator only). A routine with process-wide state that is not locked (lazily created
 * attribute keys, a probe communicator, a schedule cache shared by all communicators) aborts,
 * corrupts data or hangs here; AAPC_TEST_DELAY_KEYS_US widens the window of every lazy
 * creation to expose such races (common/aapc_lock.h).
 *
 *   threads [T] [ITER]   T threads (default 4), ITER rounds each (default 6)
 *
 * Thread t duplicates its own communicator from one made for it by the main thread (the
 * duplicates are made concurrently, so every first call on them runs concurrently), then per
 * round: MPI_Alltoall of 8 B to 16 KiB blocks (the size changes per round and thread),
 * MPI_IN_PLACE MPI_Alltoall, MPI_Alltoallv with counts that change per round (so level 1
 * schedules anew), each validated against the values the thread computes itself.
 * Output: "threads: N passed, M failed" from rank 0 (one test per thread and round); exit
 * status 0 only if M is 0.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, p, iters = 6;

struct job {
    int t;
    MPI_Comm parent;
    int good, bad;
};

static int value(int from, int to, int k, int salt)
{
    return from * 1000003 + to * 1009 + k * 7 + salt;
}

static int one_round(MPI_Comm comm, int t, int it)
{
    int ok = 1, c = 2 << ((t + it) % 12); /* 2 .. 4096 ints */
    int *s = malloc(sizeof(int) * (size_t)c * (size_t)p);
    int *r = malloc(sizeof(int) * (size_t)c * (size_t)p);
    int salt = t * 100 + it;
    for (int j = 0; j < p; j++)
        for (int k = 0; k < c; k++)
            s[j * c + k] = value(rank, j, k, salt);
    ok &= MPI_Alltoall(s, c, MPI_INT, r, c, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int k = 0; k < c; k++)
            ok &= r[j * c + k] == value(j, rank, k, salt);
    for (int j = 0; j < p; j++)
        for (int k = 0; k < c; k++)
            r[j * c + k] = value(rank, j, k, salt + 1);
    ok &= MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, c, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int k = 0; k < c; k++)
            ok &= r[j * c + k] == value(j, rank, k, salt + 1);
    /* Alltoallv: (i + j + it + t) % 4 * c / 4 ints from i to j */
    int sc[64], sd[64], rc[64], rd[64], so = 0, ro = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = (rank + j + it + t) % 4 * c / 4;
        rc[j] = (j + rank + it + t) % 4 * c / 4;
        sd[j] = so;
        rd[j] = ro;
        so += sc[j];
        ro += rc[j];
        for (int k = 0; k < sc[j]; k++)
            s[sd[j] + k] = value(rank, j, k, salt + 2);
    }
    for (int i = 0; i < ro; i++)
        r[i] = -1;
    ok &= MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm) == MPI_SUCCESS;
    for (int j = 0; j < p; j++)
        for (int k = 0; k < rc[j]; k++)
            ok &= r[rd[j] + k] == value(j, rank, k, salt + 2);
    free(s);
    free(r);
    return ok;
}

static void *worker(void *arg)
{
    struct job *jb = arg;
    MPI_Comm comm;
    MPI_Comm_dup(jb->parent, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int it = 0; it < iters; it++) {
        int ok = one_round(comm, jb->t, it), all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
        if (!ok)
            fprintf(stderr, "threads: thread %d round %d wrong on rank %d\n", jb->t, it, rank);
        if (all)
            jb->good++;
        else
            jb->bad++;
    }
    MPI_Comm_free(&comm);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, nt = argc > 1 ? atoi(argv[1]) : 4;
    iters = argc > 2 ? atoi(argv[2]) : iters;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (provided < MPI_THREAD_MULTIPLE || nt < 1 || nt > 16 || p > 64) {
        if (rank == 0)
            printf("threads: cannot run (provided %d, %d threads, %d ranks)\n", provided, nt, p);
        MPI_Finalize();
        return 2;
    }
    struct job jobs[16];
    pthread_t th[16];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (struct job){t, MPI_COMM_NULL, 0, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].parent);
    }
    for (int t = 0; t < nt; t++)
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    int good = 0, bad = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(th[t], NULL);
        good += jobs[t].good;
        bad += jobs[t].bad;
        MPI_Comm_free(&jobs[t].parent);
    }
    if (rank == 0)
        printf("threads: %d passed, %d failed\n", good, bad);
    MPI_Finalize();
    return bad ? 1 : 0;
}
