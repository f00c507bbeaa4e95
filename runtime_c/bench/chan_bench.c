/*
 * chan_bench.c: seed 003's lock-free channels (runtime_c/shm/aapc_shm_channel.c) checked and
 * timed against the MPI library's point-to-point on one machine.
 *
 *   chan_bench --check
 *       every rank of MPI_COMM_WORLD (one machine): rank 0 sends every other rank messages of
 *       0, 1, 7, 8127, 8128, 8129, 20000 and 100000 bytes and a strided datatype (every other
 *       int), each rank checks and answers with its own pattern, which rank 0 checks; a
 *       message between two ranks neither of which is rank 0 (the library's path); a message
 *       longer than the receive (MPI_ERR_TRUNCATE, the channel still in step afterwards).
 *       Prints "chan_bench: channels on" (or off: the library's sends, AAPC_SHM_CHANNELS) and
 *       "chan_bench: N passed, M failed"; exit status 1 on a failure.
 *   chan_bench SIZES ITERS
 *       star rounds: rank 0 sends every other rank SIZES bytes, each answers with as many,
 *       ITERS rounds through the channels then through PMPI_Send/PMPI_Recv (alternating which
 *       goes first per size), after one untimed round each; rank 0 prints per size
 *       "round BYTES CHANNEL_US LIBRARY_US" (the slowest rank's mean time per round).
 * Every rank must run on one machine (the channels need a shared window; elsewhere the
 * channel calls are the library's own point-to-point and the two columns time the same).
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aapc_shm.h"

static int rank, size, passed, failed;

static unsigned char pattern(int who, int salt, size_t i)
{
    return (unsigned char)(who * 31 + salt * 7 + (int)(i % 251));
}

static void verdict(int ok, const char *what, int a)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        all ? passed++ : failed++;
    if (!ok)
        fprintf(stderr, "chan_bench: rank %d: %s %d wrong\n", rank, what, a);
}

/* Rank 0 to every other rank and back, n bytes each way. */
static void check_bytes(int n)
{
    unsigned char *buf = malloc((size_t)n + 1);
    int ok = 1;
    for (int peer = 1; peer < size; peer++) {
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                buf[i] = pattern(peer, n, (size_t)i);
            ok &= aapc_shm_chan_send(buf, n, MPI_BYTE, peer, MPI_COMM_WORLD) == MPI_SUCCESS;
            memset(buf, 0, (size_t)n + 1);
            ok &= aapc_shm_chan_recv(buf, n, MPI_BYTE, peer, MPI_COMM_WORLD) == MPI_SUCCESS;
            for (int i = 0; i < n && ok; i++)
                ok = buf[i] == pattern(peer + 1000, n, (size_t)i);
        } else if (rank == peer) {
            buf[n] = 0x5a;
            ok &= aapc_shm_chan_recv(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
            for (int i = 0; i < n && ok; i++)
                ok = buf[i] == pattern(peer, n, (size_t)i);
            ok &= buf[n] == 0x5a; /* nothing written past the message */
            for (int i = 0; i < n; i++)
                buf[i] = pattern(peer + 1000, n, (size_t)i);
            ok &= aapc_shm_chan_send(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
        }
    }
    verdict(ok, "bytes", n);
    free(buf);
}

/* Every other int of 3 x 40 (a vector type), the gaps of the receive buffer untouched. */
static void check_strided(void)
{
    MPI_Datatype every_other;
    MPI_Type_vector(40, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int buf[3 * 79], ok = 1;
    for (int peer = 1; peer < size; peer++) {
        for (int i = 0; i < 3 * 79; i++)
            buf[i] = rank == 0 ? i * 3 + peer : -1;
        if (rank == 0) {
            ok &= aapc_shm_chan_send(buf, 3, every_other, peer, MPI_COMM_WORLD) == MPI_SUCCESS;
        } else if (rank == peer) {
            ok &= aapc_shm_chan_recv(buf, 3, every_other, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
            for (int k = 0; k < 3; k++)
                for (int i = 0; i < 79 && ok; i++)
                    ok = buf[79 * k + i] == (i < 79 && i % 2 == 0 && i / 2 < 40
                                                 ? (79 * k + i) * 3 + peer
                                                 : -1);
        }
    }
    verdict(ok, "strided", 3);
    MPI_Type_free(&every_other);
}

/* Between ranks 1 and 2 (no channel: the library's send), and a message longer than the
   receive: MPI_ERR_TRUNCATE, then the next message arrives intact. */
static void check_edges(void)
{
    int ok = 1, v[10], w[10];
    for (int i = 0; i < 10; i++)
        v[i] = 100 + i, w[i] = -1;
    if (size > 2 && rank == 1)
        ok &= aapc_shm_chan_send(v, 10, MPI_INT, 2, MPI_COMM_WORLD) == MPI_SUCCESS;
    if (size > 2 && rank == 2) {
        ok &= aapc_shm_chan_recv(w, 10, MPI_INT, 1, MPI_COMM_WORLD) == MPI_SUCCESS;
        ok &= w[0] == 100 && w[9] == 109;
    }
    verdict(ok, "between non-leaders", 10);
    ok = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {
        ok &= aapc_shm_chan_send(v, 10, MPI_INT, 1, MPI_COMM_WORLD) == MPI_SUCCESS;
        ok &= aapc_shm_chan_send(v + 5, 5, MPI_INT, 1, MPI_COMM_WORLD) == MPI_SUCCESS;
    } else if (rank == 1) {
        int rc = aapc_shm_chan_recv(w, 5, MPI_INT, 0, MPI_COMM_WORLD), cls = rc;
        MPI_Error_class(rc, &cls);
        ok &= cls == MPI_ERR_TRUNCATE;
        ok &= aapc_shm_chan_recv(w, 5, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
        ok &= w[0] == 105 && w[4] == 109;
    }
    verdict(ok, "truncation, then in step", 5);
}

static double rounds(int n, int iters, int channel, unsigned char *buf)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int peer = 1; peer < size; peer++)
                channel ? aapc_shm_chan_send(buf, n, MPI_BYTE, peer, MPI_COMM_WORLD)
                        : PMPI_Send(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            for (int peer = 1; peer < size; peer++)
                channel ? aapc_shm_chan_recv(buf, n, MPI_BYTE, peer, MPI_COMM_WORLD)
                        : PMPI_Recv(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (channel) {
            aapc_shm_chan_recv(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            aapc_shm_chan_send(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        } else {
            PMPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            PMPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    double mine = (MPI_Wtime() - t0) / iters, worst = 0;
    PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static int bench(const char *sizes, int iters)
{
    char *list = strdup(sizes);
    int k = 0;
    for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ","), k++) {
        int n = atoi(tok);
        unsigned char *buf = calloc((size_t)n + 1, 1);
        double t[2];
        for (int j = 0; j < 2; j++) { /* alternate which goes first */
            int channel = (j + k) % 2;
            rounds(n, 1, channel, buf);
            t[channel] = rounds(n, iters, channel, buf);
        }
            if (rank == 0)
            printf("round %d %.3f %.3f\n", n, t[1] * 1e6, t[0] * 1e6);
        free(buf);
    }
    free(list);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = aapc_shm_channels_open(MPI_COMM_WORLD), bad = rc != MPI_SUCCESS;
    if (argc == 2 && strcmp(argv[1], "--check") == 0) {
        const int sizes[] = {0, 1, 7, 8127, 8128, 8129, 20000, 100000};
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            check_bytes(sizes[i]);
        check_strided();
        check_edges();
        if (rank == 0)
            printf("chan_bench: channels %s\nchan_bench: %d passed, %d failed\n",
                   aapc_shm_channels_on(MPI_COMM_WORLD) ? "on" : "off (the library's sends)",
                   passed, failed);
        bad |= failed != 0;
        PMPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (argc == 3) {
        bench(argv[1], atoi(argv[2]));
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: chan_bench --check | chan_bench SIZES ITERS\n");
        bad = 2;
    }
    MPI_Finalize();
    return bad;
}
