/*
 * bench_local_copy.c: three ways to copy data described by a non-contiguous datatype within
 * one process (a column of every other double, resized, on both sides): MPI_Sendrecv to self,
 * MPI_Isend/MPI_Irecv to self, and MPI_Pack into a stage then MPI_Unpack. The library's local
 * copies (aapc_local_copy in runtime_c/common/aapc_exec.c, aapc_shm_typed_copy) take the last
 * one; this measures why (docs/measurements/typed-blocks.md). Prints the fastest of 200 copies
 * (10 from 1 MiB) per size, in us. Run on one rank: mpiexec -n 1 ./bench_local_copy
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const long sizes[] = {8192, 131072, 1L << 20, 16L << 20};
    printf("| bytes | Sendrecv to self us | Isend/Irecv to self us | Pack + Unpack us |\n"
           "|---|---|---|---|\n");
    for (int k = 0; k < 4; k++) {
        long n = sizes[k] / 8; /* doubles */
        MPI_Datatype col, colr;
        MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &col);
        MPI_Type_create_resized(col, 0, (MPI_Aint)n * 16, &colr);
        MPI_Type_commit(&colr);
        double *a = malloc((size_t)n * 16), *b = malloc((size_t)n * 16);
        char *stage = malloc((size_t)n * 8);
        if (a == NULL || b == NULL || stage == NULL) {
            fprintf(stderr, "bench_local_copy: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (long i = 0; i < 2 * n; i++)
            a[i] = (double)i, b[i] = 0.0;
        int reps = sizes[k] < (1L << 20) ? 200 : 10;
        double best[3] = {1e9, 1e9, 1e9};
        for (int r = 0; r < reps; r++) {
            double t0 = MPI_Wtime();
            MPI_Sendrecv(a, 1, colr, 0, 0, b, 1, colr, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
            double t1 = MPI_Wtime();
            MPI_Request q[2];
            MPI_Irecv(b, 1, colr, 0, 1, MPI_COMM_SELF, &q[0]);
            MPI_Isend(a, 1, colr, 0, 1, MPI_COMM_SELF, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            double t2 = MPI_Wtime();
            int pos = 0;
            MPI_Pack(a, 1, colr, stage, (int)(n * 8), &pos, MPI_COMM_SELF);
            pos = 0;
            MPI_Unpack(stage, (int)(n * 8), &pos, b, 1, colr, MPI_COMM_SELF);
            double t3 = MPI_Wtime(), took[3] = {t1 - t0, t2 - t1, t3 - t2};
            for (int w = 0; w < 3; w++)
                best[w] = took[w] < best[w] ? took[w] : best[w];
        }
        long wrong = 0;
        for (long i = 0; i < n; i++)
            wrong += b[2 * i] != (double)(2 * i) || b[2 * i + 1] != 0.0;
        printf("| %ld | %.1f | %.1f | %.1f |%s\n", sizes[k], best[0] * 1e6, best[1] * 1e6,
               best[2] * 1e6, wrong ? " WRONG" : "");
        free(a);
        free(b);
        free(stage);
        MPI_Type_free(&colr);
        MPI_Type_free(&col);
    }
    MPI_Finalize();
    return 0;
}
