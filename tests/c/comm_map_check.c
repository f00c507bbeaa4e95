/*
 * comm_map_check.c: how a precomputed schedule without a host table maps the ranks of a
 * communicator to machines (common/aapc_comm.c). The schedule places MPI_COMM_WORLD rank m on
 * machine m, so:
 *   - a dup of MPI_COMM_WORLD runs it by identity;
 *   - a split with reversed keys runs it with machine m on the rank that world rank m has there;
 *   - a same-size sub-communicator of a larger job (the halves of WORLD, given a schedule of
 *     half WORLD's size) does not run it (the library's routine runs, with a warning).
 * Run with an even number of ranks. Prints "comm_map: ok" or "comm_map: WRONG".
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "aapc_comm.h"

static aapc_schedule_t schedule_of(const char *name, int n)
{
    aapc_schedule_t s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.nmachines = n;
    return s;
}

/* Machine m must run on the rank that world rank m has in comm; identity: no table at all. */
static int check_whole(const aapc_schedule_t *s, MPI_Comm comm, int identity, const char *what)
{
    aapc_comm_info_t info;
    int wrank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (aapc_comm_lookup(s, comm, &info) != MPI_SUCCESS || !info.usable) {
        fprintf(stderr, "%s: not usable\n", what);
        return 1;
    }
    bad += info.my_machine != wrank;
    bad += identity != (info.machine_rank == NULL);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int m = 0; m < s->nmachines; m++) {
        int r = aapc_comm_rank_of(&info, m), w = -1;
        MPI_Group_translate_ranks(g, 1, &r, wg, &w);
        bad += w != m;
    }
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    if (bad)
        fprintf(stderr, "%s: %d wrong entries\n", what, bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    aapc_schedule_t whole = schedule_of("comm_map_whole", size);
    aapc_schedule_t half = schedule_of("comm_map_half", size / 2);

    MPI_Comm dup, reversed, rotated, halves;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % size, &rotated);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halves);
    bad += check_whole(&whole, MPI_COMM_WORLD, 1, "MPI_COMM_WORLD");
    bad += check_whole(&whole, dup, 1, "dup");
    bad += check_whole(&whole, reversed, 0, "reversed split");
    bad += check_whole(&whole, rotated, 0, "rotated split");
    aapc_comm_info_t info;
    if (aapc_comm_lookup(&half, halves, &info) != MPI_SUCCESS || info.usable) {
        fprintf(stderr, "halves: a half of WORLD ran a schedule meant for WORLD\n");
        bad++;
    }
    int total = 0;
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("comm_map: %s\n", total ? "WRONG" : "ok");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&rotated);
    MPI_Comm_free(&halves);
    MPI_Finalize();
    return 0;
}
