/*
 * msg_overheads.c: what one small message costs the CPU of the rank that sends or receives it,
 * measured on a real MPI, to give SimGrid's per-message overheads (smpi/os, smpi/ois, smpi/or:
 * a time the simulated rank is busy per message) values from this machine rather than SMPI's
 * default of 0.
 *
 *   .venv/bin/mpicc -std=c11 -O2 tuning/msg_overheads.c -o msg_overheads
 *   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp UCX_NET_DEVICES=eth0 .venv/bin/mpiexec -n 2 ./msg_overheads [BYTES] [COUNT]
 *
 * (NOLOCAL and UCX_TLS=tcp: the two ranks talk through TCP, as ranks on two machines do; without
 * UCX_TLS, UCX's own shared memory carries them even under NOLOCAL. UCX_NET_DEVICES: the host's
 * network interface, not the loopback, which UCX's tcp transport refuses.)
 * Rank 0 times COUNT blocking sends (os) and then the posting of COUNT MPI_Isend calls (ois);
 * rank 1 starts receiving only after all of the messages have arrived (it sleeps first), so its
 * time per MPI_Recv is the receive overhead alone, not a wait for the wire (or). Each figure is
 * the best of 5 rounds, in microseconds per message. Prints
 *
 *   msg_overheads: BYTES bytes os_us X ois_us Y or_us Z
 *
 * and the SimGrid settings those values give (seconds, piecewise from size 0).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bytes = argc > 1 ? atoi(argv[1]) : 64, count = argc > 2 ? atoi(argv[2]) : 200;
    if (size != 2 || bytes < 0 || bytes > (1 << 20) || count < 1 || count > 100000) {
        if (rank == 0)
            fprintf(stderr, "msg_overheads: run 2 ranks; BYTES 0..1048576, COUNT 1..100000\n");
        MPI_Finalize();
        return 1;
    }
    char *buf = calloc((size_t)bytes + 1, 1);
    MPI_Request *q = malloc(sizeof *q * (size_t)count);
    if (buf == NULL || q == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    double best[3] = {1e30, 1e30, 1e30}; /* os, ois, or: seconds per message */
    for (int round = 0; round < 5; round++) {
        for (int kind = 0; kind < 2; kind++) { /* 0: blocking sends, 1: MPI_Isend */
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                for (int i = 0; i < count; i++) {
                    if (kind == 0)
                        MPI_Send(buf, bytes, MPI_BYTE, 1, kind, MPI_COMM_WORLD);
                    else
                        MPI_Isend(buf, bytes, MPI_BYTE, 1, kind, MPI_COMM_WORLD, &q[i]);
                }
                double t = (MPI_Wtime() - t0) / count;
                if (t < best[kind])
                    best[kind] = t;
                if (kind == 1)
                    MPI_Waitall(count, q, MPI_STATUSES_IGNORE);
            } else {
                nap(0.2); /* every message arrives (eagerly) before the first receive */
                double t0 = MPI_Wtime();
                for (int i = 0; i < count; i++)
                    MPI_Recv(buf, bytes, MPI_BYTE, 0, kind, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t = (MPI_Wtime() - t0) / count;
                if (t < best[2])
                    best[2] = t;
            }
        }
    }
    if (rank == 0) {
        double os = best[0], ois = best[1], orecv = 0;
        MPI_Recv(&orecv, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("msg_overheads: %d bytes os_us %.2f ois_us %.2f or_us %.2f\n", bytes, 1e6 * os,
               1e6 * ois, 1e6 * orecv);
        printf("--simgrid-cfg smpi/os:0:%.3g:0 --simgrid-cfg smpi/ois:0:%.3g:0 "
               "--simgrid-cfg smpi/or:0:%.3g:0\n",
               os, ois, orecv);
    } else {
        MPI_Send(&best[2], 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
    }
    free(buf);
    free(q);
    MPI_Finalize();
    return 0;
}
