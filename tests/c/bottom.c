/*
 * bottom.c: MPI_Alltoall and MPI_Alltoallv with MPI_BOTTOM buffers and absolute-address
 * datatypes (MPI_Get_address, MPI_Type_create_struct), a valid MPI usage a routine must not
 * treat as a null buffer. Run with several ranks per machine (AAPC_MACHINE) it exercises the
 * leader-based path, which packs the user's data (small blocks), and the per-rank path (large
 * blocks), in the order small, large, small on one communicator.
 *
 * Each case is validated on every rank against the values it computes itself; ints of block j
 * from rank i are value(i, j, k). Blocks: 16, 2048 (8 KiB) and 8192 ints, then 16 again; the
 * receive type has holes (every other int) so its gaps must survive.
 * Output: "bottom: N passed, M failed" from rank 0; exit status 0 only if M is 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int passes, failures;

static int value(int from, int to, int k)
{
    return from * 1000003 + to * 1009 + k;
}

static void check(const char *what, int ok)
{
    int all = 0, rank;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!ok)
        fprintf(stderr, "bottom: %s wrong on rank %d\n", what, rank);
    if (rank == 0) {
        all ? passes++ : failures++;
        if (!all)
            printf("FAIL %s\n", what);
    }
}

/* One element = c ints at the absolute address of buf, every `stride`-th int, with extent
   c * stride ints: element j of it is block j. */
static MPI_Datatype absolute(int *buf, int c, int stride)
{
    MPI_Datatype v, s, t;
    MPI_Aint addr;
    int one = 1;
    MPI_Get_address(buf, &addr);
    MPI_Type_vector(c, 1, stride, MPI_INT, &v);
    MPI_Type_create_struct(1, &one, &addr, &v, &s);
    MPI_Type_create_resized(s, addr, (MPI_Aint)c * stride * (MPI_Aint)sizeof(int), &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&v);
    MPI_Type_free(&s);
    return t;
}

int main(int argc, char **argv)
{
    int rank, p;
    char what[96];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const int sizes[] = {16, 2048, 8192, 16};
    for (int t = 0; t < 4; t++) {
        int c = sizes[t];
        int *s = malloc(sizeof(int) * (size_t)c * (size_t)p);
        int *r = malloc(sizeof(int) * 2 * (size_t)c * (size_t)p);
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c; k++)
                s[j * c + k] = value(rank, j, k);
        for (int i = 0; i < 2 * c * p; i++)
            r[i] = -7;
        MPI_Datatype st = absolute(s, c, 1), rt = absolute(r, c, 2);
        int ok = MPI_Alltoall(MPI_BOTTOM, 1, st, MPI_BOTTOM, 1, rt, MPI_COMM_WORLD) ==
                 MPI_SUCCESS;
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c; k++)
                ok &= r[2 * (j * c + k)] == value(j, rank, k) && r[2 * (j * c + k) + 1] == -7;
        snprintf(what, sizeof what, "alltoall MPI_BOTTOM %d ints (call %d)", c, t);
        check(what, ok);
        /* Alltoallv: c ints to every rank but itself, blocks in reverse order */
        int *sc = malloc(sizeof(int) * (size_t)p), *sd = malloc(sizeof(int) * (size_t)p);
        int *rc = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
        for (int j = 0; j < p; j++) {
            sc[j] = rc[j] = j == rank ? 0 : 1;
            sd[j] = rd[j] = p - 1 - j;
        }
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c; k++)
                s[(p - 1 - j) * c + k] = value(rank, j, k);
        for (int i = 0; i < 2 * c * p; i++)
            r[i] = -7;
        ok = MPI_Alltoallv(MPI_BOTTOM, sc, sd, st, MPI_BOTTOM, rc, rd, rt, MPI_COMM_WORLD) ==
             MPI_SUCCESS;
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c; k++) {
                int at = 2 * ((p - 1 - j) * c + k);
                ok &= r[at] == (j == rank ? -7 : value(j, rank, k)) && r[at + 1] == -7;
            }
        snprintf(what, sizeof what, "alltoallv MPI_BOTTOM %d ints (call %d)", c, t);
        check(what, ok);
        MPI_Type_free(&st);
        MPI_Type_free(&rt);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
        free(s);
        free(r);
    }
    if (rank == 0)
        printf("bottom: %d passed, %d failed\n", passes, failures);
    int bad = failures;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad ? 1 : 0;
}
