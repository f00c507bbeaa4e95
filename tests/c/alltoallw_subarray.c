/*
 * alltoallw_subarray.c: MPI_Alltoallw as distributed FFTs call it (mpi4py-fft, 2DECOMP&FFT):
 * a global transpose of a 2-D array between row slabs and column slabs, one subarray datatype
 * per peer on each side, byte for byte against PMPI_Alltoallw on the same arguments.
 *
 * Rank r holds rows [r0, r1) of a global NR x NC array of doubles (value = row * NC + col +
 * 0.25 * case) and receives columns [c0, c1) of all rows. Send block j: my rows x j's columns
 * (MPI_Type_create_subarray of my slab); receive block j: j's rows x my columns (a subarray of
 * my column slab). Cases: several shapes (uneven slabs, a peer with no rows or columns), on
 * MPI_COMM_WORLD and on the halves of a split; a mix where the blocks to even peers are sent as
 * contiguous doubles (copies after the array) and the others as subarrays; a case with a
 * resized subarray type (lower bound -8, extent 8: the bounds are not the data's) at a byte
 * displacement of 8; then on the rows and the columns of a 2-D process grid (MPI_Cart_sub),
 * every row (then every column) transposing at once, in even and uneven shapes, and with
 * siblings whose datatypes take different paths (contiguous doubles, subarrays).
 *
 *   mpiexec -n 4 ./alltoallw_subarray
 * prints "alltoallw_subarray: N checks, F failed" on rank 0; exit status 1 when F > 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

static void split_range(int n, int parts, int who, int *lo, int *hi)
{
    *lo = (int)((long long)n * who / parts);
    *hi = (int)((long long)n * (who + 1) / parts);
}

/* One transpose of an nr x nc array on comm; mode 0: subarrays both sides; 1: contiguous
   packed copies to even peers; 2: resized send types at byte displacements; 3: contiguous
   doubles on both sides (received in peer order). */
static void transpose(MPI_Comm comm, int nr, int nc, int mode, double tag)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    int r0, r1, c0, c1;
    split_range(nr, p, me, &r0, &r1);
    split_range(nc, p, me, &c0, &c1);
    int myrows = r1 - r0, mycols = c1 - c0;
    size_t slab = (size_t)myrows * (size_t)nc + 1, cols = (size_t)nr * (size_t)mycols + 1;
    double *a = malloc(2 * slab * sizeof *a), *packed = a + slab; /* copies after the array */
    double *got = malloc(cols * sizeof *got), *want = malloc(cols * sizeof *want);
    int *sc = calloc((size_t)p, sizeof *sc), *sd = calloc((size_t)p, sizeof *sd);
    int *rc = calloc((size_t)p, sizeof *rc), *rd = calloc((size_t)p, sizeof *rd);
    MPI_Datatype *st = malloc(sizeof *st * (size_t)p), *rt = malloc(sizeof *rt * (size_t)p);
    MPI_Datatype *owned = malloc(sizeof *owned * 3 * (size_t)p);
    int nowned = 0;
    for (int i = 0; i < myrows; i++)
        for (int c = 0; c < nc; c++)
            a[(size_t)i * nc + c] = (double)(r0 + i) * nc + c + tag;
    size_t at = 0, got_at = 0;
    for (int j = 0; j < p; j++) {
        int jr0, jr1, jc0, jc1;
        split_range(nr, p, j, &jr0, &jr1);
        split_range(nc, p, j, &jc0, &jc1);
        st[j] = rt[j] = MPI_DOUBLE;
        if (myrows > 0 && jc1 > jc0) {
            if ((mode == 1 && j % 2 == 0) || mode == 3) { /* a contiguous copy, after the array */
                sd[j] = (int)((slab + at) * sizeof(double));
                for (int i = 0; i < myrows; i++)
                    for (int c = jc0; c < jc1; c++)
                        packed[at++] = a[(size_t)i * nc + c];
                sc[j] = myrows * (jc1 - jc0);
            } else {
                int sizes[2] = {myrows, nc}, sub[2] = {myrows, jc1 - jc0}, start[2] = {0, jc0};
                MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &st[j]);
                if (mode == 2) { /* bounds that are not the data's: lb -8, extent 8 */
                    MPI_Datatype r;
                    MPI_Type_create_resized(st[j], -(MPI_Aint)sizeof(double),
                                            (MPI_Aint)sizeof(double), &r);
                    owned[nowned++] = st[j];
                    st[j] = r;
                    sd[j] = (int)sizeof(double); /* the data one double further on */
                } else {
                    sd[j] = 0;
                }
                MPI_Type_commit(&st[j]);
                owned[nowned++] = st[j];
                sc[j] = 1;
            }
        }
        if (mode == 3) { /* contiguous doubles on both sides: one datatype (rule U) */
            rc[j] = (jr1 - jr0) * mycols;
            rd[j] = (int)(got_at * sizeof(double));
            got_at += (size_t)rc[j];
        } else if (mycols > 0 && jr1 > jr0) {
            int sizes[2] = {nr, mycols}, sub[2] = {jr1 - jr0, mycols}, start[2] = {jr0, 0};
            MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &rt[j]);
            MPI_Type_commit(&rt[j]);
            owned[nowned++] = rt[j];
            rc[j] = 1;
        }
    }
    const void *sbuf = a;
    memset(got, 0xAB, cols * sizeof *got);
    memset(want, 0xAB, cols * sizeof *want);
    int e1 = MPI_Alltoallw(sbuf, sc, sd, st, got, rc, rd, rt, comm);
    int e2 = PMPI_Alltoallw(sbuf, sc, sd, st, want, rc, rd, rt, comm);
    checks++;
    if (e1 != MPI_SUCCESS || e2 != MPI_SUCCESS || memcmp(got, want, cols * sizeof *got) != 0) {
        failures++;
        fprintf(stderr, "alltoallw_subarray: rank %d %dx%d mode %d differs (rc %d %d)\n", me, nr,
                nc, mode, e1, e2);
    }
    for (int i = 0; i < nowned; i++)
        MPI_Type_free(&owned[i]);
    free(a);
    free(got);
    free(want);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
    free(owned);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half);
    const int shapes[][2] = {{64, 48}, {7, 5}, {3, 200}, {1, 1}, {256, 256}};
    for (int k = 0; k < 5; k++)
        for (int mode = 0; mode < 3; mode++) {
            transpose(MPI_COMM_WORLD, shapes[k][0], shapes[k][1], mode, 0.25 * k);
            transpose(half, shapes[k][1], shapes[k][0], mode, 0.5 * k);
        }
    MPI_Comm_free(&half);
    /* a process grid's rows and columns (MPI_Cart_sub, as mpi4py-fft makes its pencils), each
       transposing at the same time as its siblings: under AAPC_SIBLINGS=union the even shapes
       (blocks of one size everywhere) run the union of the siblings' all-to-alls, the uneven
       ones each sibling's own MPI_Alltoallv */
    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(p, 2, dims);
    MPI_Comm grid, sub[2];
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    for (int d = 0; d < 2; d++) {
        int remain[2] = {d == 0, d == 1};
        MPI_Cart_sub(grid, remain, &sub[d]);
    }
    const int grid_shapes[][2] = {{64, 48}, {7, 5}};
    for (int k = 0; k < 2; k++)
        for (int mode = 0; mode < 3; mode++)
            for (int d = 0; d < 2; d++)
                transpose(sub[d], grid_shapes[k][d], grid_shapes[k][1 - d], mode, 0.125 * k);
    /* siblings on different paths at once: the odd ones' blocks contiguous doubles (reduced to
       MPI_Alltoallv as they are), the even ones' subarrays (packed): no union, no wait */
    int coords[2];
    MPI_Cart_coords(grid, me, 2, coords);
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 2; d++)
            transpose(sub[d], grid_shapes[k][d], grid_shapes[k][1 - d],
                      coords[1 - d] % 2 ? 3 : 0, 0.375 * k);
    MPI_Comm_free(&sub[0]);
    MPI_Comm_free(&sub[1]);
    MPI_Comm_free(&grid);
    int all = 0;
    MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("alltoallw_subarray: %d checks, %d failed\n", checks * p, all);
    MPI_Finalize();
    return all != 0;
}
