/*
 * tune_boundaries.c: the tuned routine of `aapcgen tune` at and around its size boundaries.
 *
 * Links against one tuned directory (tuning/<topo>/tuned or a test's). Arguments: block sizes in
 * bytes. For each size B, twice with different data, it calls the registry entry "tuned" and
 * PMPI_Alltoall with MPI_BYTE blocks of B bytes and (when B is a multiple of 4) MPI_INT blocks of
 * B/4 elements, so the dispatch must use count x type size. Each result is checked against the
 * content an all-to-all must deliver (block j of rank i's receive buffer = block i of rank j's
 * send buffer), with one guard byte past the end. Rank 0 prints one line per case,
 *     case <bytes> <MPI_BYTE|MPI_INT> <seed> tuned=<ok|wrong> pmpi=<ok|wrong> library=<calls>
 * (ok only when every rank got the right content and MPI_SUCCESS; calls: how many ranks' tuned
 * calls the routine handed to the library's PMPI_Alltoall, i.e. which range ran: library_calls.h),
 * and finally
 *     tune_boundaries: N passed, M failed
 * counting the tuned routine's cases. Exit status 0 only if M == 0. The pmpi column shows what
 * the library's own selection (e.g. under a tuning file) delivered for that size.
 */
#include "library_calls.h" /* first: it sets _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_registry.h"

static aapc_alltoall_fn find_tuned(void)
{
    for (int i = 0; i < aapc_nvariants; i++) {
        if (strcmp(aapc_variants[i].variant, "tuned") == 0) {
            return aapc_variants[i].fn;
        }
    }
    return NULL;
}

static unsigned char pattern(size_t k, int rank, int seed)
{
    return (unsigned char)((k * 7u + (size_t)rank * 131u + (size_t)seed * 29u + 1u) & 0xffu);
}

/* 1 on every rank when fn delivered the right content everywhere (collective); *library: the
 * number of ranks whose call fn handed to the library's PMPI_Alltoall. */
static int check(aapc_alltoall_fn fn, long bytes, MPI_Datatype type, int type_size, int seed,
                 int *library)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int count = (int)(bytes / type_size);
    size_t total = (size_t)bytes * (size_t)size;
    unsigned char *sb = malloc(total + 1), *rb = malloc(total + 1);
    for (size_t k = 0; k < total + 1; k++) {
        sb[k] = pattern(k, rank, seed);
        rb[k] = 0xa5;
    }
    library_watch(MPI_COMM_WORLD);
    int ok = fn(sb, count, type, rb, count, type, MPI_COMM_WORLD) == MPI_SUCCESS && rb[total] == 0xa5;
    int handed = library_unwatch() > 0;
    MPI_Allreduce(&handed, library, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; ok && j < size; j++) {
        for (long t = 0; t < bytes; t++) {
            if (rb[(size_t)j * (size_t)bytes + (size_t)t] !=
                pattern((size_t)rank * (size_t)bytes + (size_t)t, j, seed)) {
                ok = 0;
                break;
            }
        }
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    free(sb);
    free(rb);
    return all;
}

static int pmpi_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                         MPI_Comm comm)
{
    return PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    aapc_alltoall_fn tuned = find_tuned();
    if (tuned == NULL) {
        if (rank == 0) {
            fprintf(stderr, "tune_boundaries: no \"tuned\" entry in aapc_variants[]\n");
        }
        MPI_Finalize();
        return 2;
    }
    int passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        long bytes = atol(argv[i]);
        for (int seed = 0; seed < 2; seed++) {
            for (int k = 0; k < (bytes % 4 == 0 ? 2 : 1); k++) {
                MPI_Datatype type = k == 0 ? MPI_BYTE : MPI_INT;
                int tsize = k == 0 ? 1 : 4;
                int library = 0, unused = 0;
                int t_ok = check(tuned, bytes, type, tsize, seed, &library);
                int p_ok = check(pmpi_alltoall, bytes, type, tsize, seed, &unused);
                if (t_ok) {
                    passed++;
                } else {
                    failed++;
                }
                if (rank == 0) {
                    printf("case %ld %s %d tuned=%s pmpi=%s library=%d\n", bytes,
                           k ? "MPI_INT" : "MPI_BYTE", seed, t_ok ? "ok" : "wrong",
                           p_ok ? "ok" : "wrong", library);
                }
            }
        }
    }
    if (rank == 0) {
        printf("tune_boundaries: %d passed, %d failed\n", passed, failed);
    }
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
