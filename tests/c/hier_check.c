/*
 * hier_check.c: the leader-based collectives of runtime_c/hier/aapc_hier_coll.c against the MPI
 * library, byte for byte.
 *
 *     hier_check NMACHINES RANKS_PER_MACHINE
 *
 * Cases: Bcast from every root (ints, 0 to 100000 elements); Allgather of 0, 1, 1000 and 50000
 * ints, and in place; Allreduce MPI_SUM on ints and doubles, and a non-commutative user
 * operation (2x2 integer matrix product, so the order of the operands shows), and in place; a
 * sub-communicator of another size (falls back to the library). Prints
 *     hier_check: N passed, M failed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "aapc_hier.h"

static int nm, r, me, size, passed, failed;

static void report(const char *name, int bad)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        failed++;
        if (me == 0)
            printf("FAIL %s\n", name);
    } else {
        passed++;
    }
}

static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) { /* b = a x b, entries mod 1000 */
        int c[4] = {(a[0] * b[0] + a[1] * b[2]) % 1000, (a[0] * b[1] + a[1] * b[3]) % 1000,
                    (a[2] * b[0] + a[3] * b[2]) % 1000, (a[2] * b[1] + a[3] * b[3]) % 1000};
        memcpy(b, c, sizeof c);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nm = argc > 2 ? atoi(argv[1]) : 0;
    r = argc > 2 ? atoi(argv[2]) : 0;
    int counts[] = {0, 1, 1000, 50000};
    char name[64];
    for (int root = 0; root < size; root++) { /* Bcast */
        int n = root % 2 ? 100000 : 7, bad = 0;
        int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            a[i] = b[i] = me == root ? i * 31 + root : -1;
        bad |= aapc_hier_bcast(a, n, MPI_INT, root, MPI_COMM_WORLD, nm, r) != MPI_SUCCESS;
        PMPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD);
        bad |= memcmp(a, b, sizeof(int) * (size_t)n) != 0;
        snprintf(name, sizeof name, "bcast-root-%d", root);
        report(name, bad);
        free(a);
        free(b);
    }
    for (int c = 0; c < 4; c++) { /* Allgather, normal and in place */
        for (int inplace = 0; inplace < 2; inplace++) {
            int n = counts[c], bad = 0;
            size_t tot = (size_t)n * (size_t)size;
            int *s = malloc(sizeof(int) * (size_t)(n + 1)), *x = malloc(sizeof(int) * (tot + 1));
            int *y = malloc(sizeof(int) * (tot + 1));
            for (int i = 0; i < n; i++)
                s[i] = me * 100003 + i;
            for (size_t i = 0; i < tot; i++)
                x[i] = y[i] = -7;
            if (inplace) {
                memcpy(x + (size_t)me * n, s, sizeof(int) * (size_t)n);
                memcpy(y + (size_t)me * n, s, sizeof(int) * (size_t)n);
            }
            bad |= aapc_hier_allgather(inplace ? MPI_IN_PLACE : s, n, MPI_INT, x, n, MPI_INT,
                                       MPI_COMM_WORLD, nm, r) != MPI_SUCCESS;
            PMPI_Allgather(inplace ? MPI_IN_PLACE : s, n, MPI_INT, y, n, MPI_INT, MPI_COMM_WORLD);
            bad |= memcmp(x, y, sizeof(int) * tot) != 0;
            snprintf(name, sizeof name, "allgather-%d%s", n, inplace ? "-in-place" : "");
            report(name, bad);
            free(s);
            free(x);
            free(y);
        }
    }
    MPI_Op noncomm;
    MPI_Op_create(matmul, 0, &noncomm);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    for (int k = 0; k < 4; k++) { /* Allreduce: int sum, double sum, matrices, in place */
        int n = 5000, bad = 0;
        size_t bytes = (size_t)n * 4 * sizeof(int);
        char *s = malloc(bytes), *x = malloc(bytes), *y = malloc(bytes);
        MPI_Datatype t = k == 1 ? MPI_DOUBLE : (k >= 2 ? mat : MPI_INT);
        MPI_Op op = k >= 2 ? noncomm : MPI_SUM;
        int elems = k >= 2 ? n : (k == 1 ? n * 2 : n * 4);
        for (size_t i = 0; i < bytes / sizeof(int); i++)
            ((int *)s)[i] = (int)((me * 7 + (int)i * 13) % 997) + 1;
        if (k == 1)
            for (int i = 0; i < elems; i++)
                ((double *)s)[i] = me + i * 0.25;
        memcpy(x, s, bytes);
        memcpy(y, s, bytes);
        if (k == 3) {
            bad |= aapc_hier_allreduce(MPI_IN_PLACE, x, elems, t, op, MPI_COMM_WORLD, nm, r) !=
                   MPI_SUCCESS;
            PMPI_Allreduce(MPI_IN_PLACE, y, elems, t, op, MPI_COMM_WORLD);
        } else {
            bad |= aapc_hier_allreduce(s, x, elems, t, op, MPI_COMM_WORLD, nm, r) != MPI_SUCCESS;
            PMPI_Allreduce(s, y, elems, t, op, MPI_COMM_WORLD);
        }
        bad |= memcmp(x, y, bytes) != 0;
        const char *names[] = {"allreduce-int-sum", "allreduce-double-sum",
                               "allreduce-noncommutative", "allreduce-noncommutative-in-place"};
        report(names[k], bad);
        free(s);
        free(x);
        free(y);
    }
    MPI_Comm half; /* another size: falls back to the library */
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    {
        int v = me, w = me, bad = 0;
        bad |= aapc_hier_allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, half, nm, r) != MPI_SUCCESS;
        PMPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_INT, MPI_SUM, half);
        report("split-comm-fallback", bad || v != w);
    }
    MPI_Comm_free(&half);
    MPI_Type_free(&mat);
    MPI_Op_free(&noncomm);
    if (me == 0)
        printf("hier_check: %d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed != 0;
}
