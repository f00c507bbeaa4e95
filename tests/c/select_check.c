/*
 * select_check.c: the per-call selection of the default MPI_Alltoall (built with
 * -DAAPC_INTERCEPT: the generated dispatcher, its way chosen per call), byte for byte against
 * PMPI_Alltoall, and the way every call took.
 *
 * Communicators: MPI_COMM_WORLD, a dup of it, the halves (rank < P/2), the even and odd ranks,
 * MPI_COMM_WORLD in reversed order. Blocks: MPI_BYTE blocks of 0, 1, 7, 8, 64, 511, 512, 4096,
 * 8192, 32768 and 65536 bytes; where the block is a multiple of 4 bytes, the odd ranks describe
 * it as count/4 elements of a contiguous 4-byte type (the same type signature, another
 * description: every rank must still choose the same way). Each call: the intercepted
 * MPI_Alltoall, then PMPI_Alltoall as the reference, compared byte for byte; the way it took is
 * the one whose count of aapc_alltoall_ways_served() grew (none: "none", a call with nothing to
 * move, or a communicator the run-time routine does not take); every rank must report the same
 * way (an MPI_Allreduce of MIN and MAX).
 *
 * With --alltoallv, then the same for MPI_Alltoallv with every count the block (the ways of
 * aapc_alltoallv_ways_served(): the library, chosen by size, the phases or the log rounds in
 * the tree's digits), printed as
 * "vway COMM BYTES WAY", and the reductions the call made (library_calls.h: PMPI_Allreduce and
 * PMPI_Iallreduce on any communicator, the fewest and the most of any rank) as
 * "vreductions COMM BYTES MIN MAX".
 *
 * Rank 0 prints, per call, "way COMM BYTES WAY" (COMM: world, dup, halves, parity, reversed;
 * for the sub-communicators the line of the part holding world rank 0), failures as
 * "FAIL ...", and finally "select_check: N passed, M failed". Exit status 0 only if M == 0.
 *
 * usage: select_check [--max-bytes N] [--alltoallv]
 */
#include "library_calls.h" /* first: it sets _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_alltoall_cluster.h"
#include "aapc_alltoallv_cluster.h"

static const char *way_name(int w)
{
    static const char *const names[] = {"library", "phases", "leaders", "loground"};
    return w >= 0 && w < AAPC_N_WAYS ? names[w] : "none";
}

/* The way the last call took: the index whose count grew since `before` (-1: none). */
static int way_taken(const long long before[AAPC_N_WAYS], void (*served)(long long *))
{
    long long now[AAPC_N_WAYS];
    served(now);
    for (int w = 0; w < AAPC_N_WAYS; w++)
        if (now[w] != before[w])
            return w;
    return -1;
}

static int passed = 0, failed = 0;

static void one(const char *cname, MPI_Comm comm, int bytes, MPI_Datatype four, int world_rank,
                int v)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t total = (size_t)bytes * (size_t)size;
    unsigned char *send = malloc(total + 1), *got = malloc(total + 1), *want = malloc(total + 1);
    if (send == NULL || got == NULL || want == NULL) {
        fprintf(stderr, "select_check: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < total; i++)
        send[i] = (unsigned char)(rank * 37 + i * 11 + (i >> 8) * 5 + 3);
    memset(got, 0xa5, total + 1);
    memset(want, 0x5a, total + 1);
    int odd_four = bytes % 4 == 0 && world_rank % 2 == 1;
    MPI_Datatype type = odd_four ? four : MPI_BYTE;
    int count = odd_four ? bytes / 4 : bytes;
    int *counts = malloc(sizeof *counts * (size_t)size);
    int *displs = malloc(sizeof *displs * (size_t)size);
    if (counts == NULL || displs == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int q = 0; q < size; q++) {
        counts[q] = count;
        displs[q] = q * count; /* in elements of type */
    }
    void (*served)(long long *) = v ? aapc_alltoallv_ways_served : aapc_alltoall_ways_served;
    long long before[AAPC_N_WAYS];
    served(before);
    long reductions = library_reductions;
    int rc = v ? MPI_Alltoallv(send, counts, displs, type, got, counts, displs, type, comm)
               : MPI_Alltoall(send, count, type, got, count, type, comm);
    int way = way_taken(before, served);
    reductions = library_reductions - reductions;
    int rrc = PMPI_Alltoall(send, bytes, MPI_BYTE, want, bytes, MPI_BYTE, comm);
    free(counts);
    free(displs);
    int bad = rc != MPI_SUCCESS || rrc != MPI_SUCCESS || memcmp(got, want, total) != 0 ||
              got[total] != 0xa5;
    int mm[5] = {way, -way, bad, (int)reductions, -(int)reductions}, all[5];
    PMPI_Allreduce(mm, all, 5, MPI_INT, MPI_MAX, comm);
    int same = all[0] == -all[1];
    if (all[2] || !same) {
        failed++;
        if (world_rank == 0)
            printf("FAIL %s%s %d: %s\n", v ? "v " : "", cname, bytes,
                   all[2] ? "bytes differ or an error code" : "the ranks took different ways");
    } else {
        passed++;
    }
    if (world_rank == 0)
        printf("%s %s %d %s\n", v ? "vway" : "way", cname, bytes, way_name(way));
    if (world_rank == 0 && v)
        printf("vreductions %s %d %d %d\n", cname, bytes, -all[4], all[3]);
    free(send);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    long max_bytes = -1;
    int with_v = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
            max_bytes = atol(argv[++i]);
        else if (strcmp(argv[i], "--alltoallv") == 0)
            with_v = 1;
    int wr, wp;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wp);
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_BYTE, &four);
    MPI_Type_commit(&four);
    MPI_Comm dup, halves, parity, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wr < wp / 2, wr, &halves);
    MPI_Comm_split(MPI_COMM_WORLD, wr % 2, wr, &parity);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wp - wr, &reversed);
    struct {
        const char *name;
        MPI_Comm comm;
    } comms[] = {{"world", MPI_COMM_WORLD}, {"dup", dup}, {"halves", halves},
                 {"parity", parity}, {"reversed", reversed}};
    const int sizes[] = {0, 1, 7, 8, 64, 511, 512, 4096, 8192, 32768, 65536};
    for (int v = 0; v <= with_v; v++)
        for (size_t c = 0; c < sizeof comms / sizeof *comms; c++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                if (max_bytes < 0 || sizes[s] <= max_bytes)
                    one(comms[c].name, comms[c].comm, sizes[s], four, wr, v);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&halves);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&reversed);
    MPI_Type_free(&four);
    if (wr == 0)
        printf("select_check: %d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed != 0;
}
