/* aapcgen discover: the MPI probe job (one rank per machine).
 *
 * Rank 0 reads experiments from stdin, one per line, and prints one result line per
 * experiment; all ranks take part. An experiment is a set of concurrent flows, flow 0 the probe:
 *
 *   X <bytes> <reps> <flows> <src0> <dst0> <src1> <dst1> ...
 *      -> R <t[0][0]> .. <t[0][flows-1]> <t[1][0]> ...   (seconds, reps x flows)
 *   Q  -> quit
 *
 * One repetition: MPI_Barrier; the receiver of each flow posts its receive, starts its clock and
 * sends the sender an empty "go"; the sender then sends one message of <bytes>; the receiver
 * records the time until it arrived. No data can be on its way before the receiver's clock
 * runs. The first repetition warms the connections up and is not reported.
 * Cost per repetition: the barrier plus the slowest flow, about bytes / bandwidth.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FLOWS 64
#define MAX_LINE 4096

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
    for (;;) {
        int n = 0;
        if (rank == 0) {
            n = read_command(cmd, 3 + 2 * MAX_FLOWS);
            while (n == 0)
                n = read_command(cmd, 3 + 2 * MAX_FLOWS);
        }
        MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (n < 0)
            break;
        MPI_Bcast(cmd, n, MPI_LONG, 0, MPI_COMM_WORLD);
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
        double *times = calloc((reps + 1) * flows, sizeof(double));
        double *all = calloc((reps + 1) * flows, sizeof(double));
        MPI_Request wait[2 * MAX_FLOWS], sends[MAX_FLOWS], gos[MAX_FLOWS];
        int flow_of[2 * MAX_FLOWS];
        for (long r = 0; r <= reps; r++) {
            int nrecv = 0, nwait = 0, nsend = 0, ngo = 0, slot = 0;
            MPI_Barrier(MPI_COMM_WORLD);
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
                    MPI_Isend(NULL, 0, MPI_BYTE, (int)cmd[3 + 2 * f], MAX_FLOWS + f,
                              MPI_COMM_WORLD, &gos[ngo++]);
            for (int done = 0; done < nwait; done++) {
                int index;
                MPI_Waitany(nwait, wait, &index, MPI_STATUS_IGNORE);
                int f = flow_of[index];
                if (index < nrecv)
                    times[r * flows + f] = MPI_Wtime() - start;
                else /* the receiver is ready: send */
                    MPI_Isend(send_buf, (int)bytes, MPI_BYTE, (int)cmd[4 + 2 * f], f,
                              MPI_COMM_WORLD, &sends[nsend++]);
            }
            MPI_Waitall(nsend, sends, MPI_STATUSES_IGNORE);
            MPI_Waitall(ngo, gos, MPI_STATUSES_IGNORE);
        }
        MPI_Reduce(times, all, (int)((reps + 1) * flows), MPI_DOUBLE, MPI_MAX, 0,
                   MPI_COMM_WORLD);
        if (rank == 0) {
            printf("R");
            for (long i = flows; i < (reps + 1) * flows; i++)
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
