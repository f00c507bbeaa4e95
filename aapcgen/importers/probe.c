/* aapcgen discover: the MPI probe job (one rank per machine).
 *
 * Rank 0 reads experiments from stdin, one per line, and prints one result line per
 * experiment; all ranks take part. An experiment is a set of concurrent flows, flow 0 the probe:
 *
 *   X <bytes> <reps> <flows> <src0> <dst0> <src1> <dst1> ...
 *      -> R <start[0][0]> <end[0][0]> .. <start[0][flows-1]> <end[0][flows-1]> <start[1][0]> ..
 *         (reps x flows pairs, seconds on rank 0's clock)
 *   Q  -> quit
 *
 * Every rank's clock is set against rank 0's by ping-pong (the exchange with the shortest round
 * trip of ten: offset = remote time - mid-point), at the start and every 30 s, so that the
 * starts of different flows can be compared: a repetition whose flows did not start together
 * (one receiver was not scheduled in time) shows it.
 *
 * One repetition: a barrier; the receiver of each flow posts its receive, starts its clock and
 * sends the sender an empty "go"; the sender then sends one message of <bytes>; the receiver
 * records the time until it arrived. No data can be on its way before the receiver's clock
 * runs. Every repetition is reported (the caller takes the best: a first one slowed by
 * connection set-up costs nothing).
 * Cost per repetition: the barrier plus the slowest flow, about bytes / bandwidth.
 *
 * Ranks with no flow in an experiment do not take part in its repetitions (their barriers are
 * on a communicator of the flows' ranks, MPI_Comm_create_group) and wait for the next command
 * and in the reduction with nonblocking collectives, asleep between tests: on an emulated
 * cluster every rank shares a few cores, and bystanders spinning in blocking collectives took
 * the CPU from the ranks moving the flows.
 */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FLOWS 64
#define MAX_LINE 4096
#define SYNC_ROUNDS 10
#define SYNC_EVERY 30.0 /* seconds */
static void lazy_wait(MPI_Request *req)
{
    int done = 0;
    for (int tries = 0;; tries++) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (tries >= 64) {
            struct timespec nap = {0, 100000L};
            nanosleep(&nap, NULL);
        }
    }
}

/* offset of this rank's MPI_Wtime against rank 0's (0 on rank 0) */
static double clock_offset(int rank, int size)
{
    double offset = 0.0, mine;
    for (int r = 1; r < size; r++) {
        if (rank == 0) {
            double best_rtt = 1e30, best = 0.0;
            for (int i = 0; i < SYNC_ROUNDS; i++) {
                double t0 = MPI_Wtime(), remote;
                MPI_Send(&t0, 1, MPI_DOUBLE, r, 77, MPI_COMM_WORLD);
                MPI_Recv(&remote, 1, MPI_DOUBLE, r, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    best = remote - (t0 + t1) / 2;
                }
            }
            MPI_Send(&best, 1, MPI_DOUBLE, r, 79, MPI_COMM_WORLD);
        } else if (rank == r) {
            for (int i = 0; i < SYNC_ROUNDS; i++) {
                double t0;
                MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                mine = MPI_Wtime();
                MPI_Send(&mine, 1, MPI_DOUBLE, 0, 78, MPI_COMM_WORLD);
            }
            MPI_Recv(&offset, 1, MPI_DOUBLE, 0, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return offset;
}

static int read_command(long *cmd, int max)
{
    char line[MAX_LINE];
    if (!fgets(line, sizeof line, stdin))
        return -1;
    if (line[0] == 'Q')
        return -1;
    if (line[0] != 'X')
        return 0;
    int n = 0;
    char *p = line + 1, *end;
    while (n < max) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        cmd[n++] = v;
        p = end;
    }
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setvbuf(stdout, NULL, _IOLBF, 0);

    long cmd[3 + 2 * MAX_FLOWS];
    char *send_buf = NULL, *recv_buf = NULL;
    long capacity = 0;
    double offset = clock_offset(rank, size), synced = MPI_Wtime();
    for (;;) {
        int n = 0, resync = 0;
        if (rank == 0) {
            n = read_command(cmd, 3 + 2 * MAX_FLOWS);
            while (n == 0)
                n = read_command(cmd, 3 + 2 * MAX_FLOWS);
            resync = MPI_Wtime() - synced > SYNC_EVERY;
        }
        int header[2] = {n, resync};
        MPI_Request req;
        MPI_Ibcast(header, 2, MPI_INT, 0, MPI_COMM_WORLD, &req);
        lazy_wait(&req);
        n = header[0];
        if (n < 0)
            break;
        if (header[1]) {
            offset = clock_offset(rank, size);
            synced = MPI_Wtime();
        }
        MPI_Ibcast(cmd, n, MPI_LONG, 0, MPI_COMM_WORLD, &req);
        lazy_wait(&req);
        long bytes = cmd[0], reps = cmd[1], flows = cmd[2];
        int bad = n < 3 || bytes <= 0 || reps <= 0 || flows <= 0 || flows > MAX_FLOWS ||
                  n != 3 + 2 * flows;
        for (int f = 0; !bad && f < flows; f++)
            bad = cmd[3 + 2 * f] < 0 || cmd[3 + 2 * f] >= size || cmd[4 + 2 * f] < 0 ||
                  cmd[4 + 2 * f] >= size || cmd[3 + 2 * f] == cmd[4 + 2 * f];
        if (bad) {
            if (rank == 0)
                printf("E bad experiment\n");
            continue;
        }
        int mine = 0;
        for (int f = 0; f < flows; f++)
            mine += (cmd[3 + 2 * f] == rank) + (cmd[4 + 2 * f] == rank);
        if (bytes * mine > capacity) {
            free(send_buf);
            free(recv_buf);
            capacity = bytes * mine;
            send_buf = malloc(capacity);
            recv_buf = malloc(capacity);
            if (!send_buf || !recv_buf)
                MPI_Abort(MPI_COMM_WORLD, 2);
            memset(send_buf, rank & 0xff, capacity);
        }
        /* start and end of every flow (on rank 0's clock); filled by its receiver */
        double *times = calloc(2 * reps * flows, sizeof(double));
        double *all = calloc(2 * reps * flows, sizeof(double));
        MPI_Request wait[2 * MAX_FLOWS], sends[MAX_FLOWS], gos[MAX_FLOWS];
        int flow_of[2 * MAX_FLOWS];
        /* the repetitions' barriers are among the flows' ranks only: the others wait in the
         * reduction below, asleep between tests */
        MPI_Comm movers = MPI_COMM_NULL;
        if (mine > 0) {
            int members[2 * MAX_FLOWS], k = 0;
            for (int i = 0; i < 2 * flows; i++) {
                int m = (int)cmd[3 + i], seen = 0;
                for (int j = 0; j < k; j++)
                    seen |= members[j] == m;
                if (!seen)
                    members[k++] = m;
            }
            MPI_Group world, group;
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            MPI_Group_incl(world, k, members, &group);
            MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &movers);
            MPI_Group_free(&group);
            MPI_Group_free(&world);
        }
        for (long r = 0; mine > 0 && r < reps; r++) {
            int nrecv = 0, nwait = 0, nsend = 0, ngo = 0, slot = 0;
            MPI_Barrier(movers);
            /* receivers: post the data receive, start the clock, then let the sender go (no
             * byte can be on its way before the clock runs, whatever the barrier's skew or
             * the MPI's eager protocol) */
            for (int f = 0; f < flows; f++)
                if (cmd[4 + 2 * f] == rank) {
                    flow_of[nwait] = f;
                    MPI_Irecv(recv_buf + bytes * slot++, (int)bytes, MPI_BYTE,
                              (int)cmd[3 + 2 * f], f, MPI_COMM_WORLD, &wait[nwait++]);
                }
            nrecv = nwait;
            for (int f = 0; f < flows; f++)
                if (cmd[3 + 2 * f] == rank) {
                    flow_of[nwait] = f;
                    MPI_Irecv(NULL, 0, MPI_BYTE, (int)cmd[4 + 2 * f], MAX_FLOWS + f,
                              MPI_COMM_WORLD, &wait[nwait++]);
                }
            double start = MPI_Wtime();
            for (int f = 0; f < flows; f++)
                if (cmd[4 + 2 * f] == rank)
                    times[2 * (r * flows + f)] = start - offset;
            for (int f = 0; f < flows; f++)
                if (cmd[4 + 2 * f] == rank)
                    MPI_Isend(NULL, 0, MPI_BYTE, (int)cmd[3 + 2 * f], MAX_FLOWS + f,
                              MPI_COMM_WORLD, &gos[ngo++]);
            for (int done = 0; done < nwait; done++) {
                int index;
                MPI_Waitany(nwait, wait, &index, MPI_STATUS_IGNORE);
                int f = flow_of[index];
                if (index < nrecv)
                    times[2 * (r * flows + f) + 1] = MPI_Wtime() - offset;
                else /* the receiver is ready: send */
                    MPI_Isend(send_buf, (int)bytes, MPI_BYTE, (int)cmd[4 + 2 * f], f,
                              MPI_COMM_WORLD, &sends[nsend++]);
            }
            MPI_Waitall(nsend, sends, MPI_STATUSES_IGNORE);
            MPI_Waitall(ngo, gos, MPI_STATUSES_IGNORE);
        }
        /* each value is set by one rank (the flow's receiver), zero elsewhere; times can be
         * negative on rank 0's clock, so sum instead of max */
        if (movers != MPI_COMM_NULL)
            MPI_Comm_free(&movers);
        MPI_Ireduce(times, all, (int)(2 * reps * flows), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD,
                    &req);
        lazy_wait(&req);
        if (rank == 0) {
            printf("R");
            for (long i = 0; i < 2 * reps * flows; i++)
                printf(" %.6f", all[i]);
            printf("\n");
        }
        free(times);
        free(all);
    }
    free(send_buf);
    free(recv_buf);
    MPI_Finalize();
    return 0;
}
