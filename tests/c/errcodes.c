/*
 * errcodes.c: what the error codes of a routine say, later.
 *
 *   errcodes                 under MPI_ERRORS_RETURN, three misuses of one class
 *                            (MPI_ERR_COUNT: sendcount -1, recvcount -1, an Alltoallv count
 *                            -1) and one of another (MPI_ERR_TYPE); each code's
 *                            MPI_Error_string is read right after its call and again after all
 *                            of them: an earlier code must keep its string (a routine that
 *                            reuses one code per class and replaces its string fails this).
 *                            Prints "errcodes: N passed, M failed" from rank 0.
 *   errcodes --before-init   MPI_Alltoall on MPI_COMM_WORLD before MPI_Init: the MPI library
 *                            reports it (MPICH: "... before initializing ..."), which a routine
 *                            must let it do rather than fail in a call of its own.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int passes, failures, rank;

static void check(const char *what, int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
        all ? passes++ : failures++;
        printf("%s %s\n", all ? "ok" : "FAIL", what);
    }
}

int main(int argc, char **argv)
{
    int s[64] = {0}, r[64], counts[64], displs[64] = {0};
    if (argc > 1 && strcmp(argv[1], "--before-init") == 0) {
        int rc = MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);
        printf("errcodes: MPI_Alltoall before MPI_Init returned %d\n", rc);
        return 0;
    }
    MPI_Init(&argc, &argv);
    int p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 64; i++)
        counts[i] = 1;
    counts[0] = -1;
    int code[4], len;
    char at_once[4][MPI_MAX_ERROR_STRING], later[MPI_MAX_ERROR_STRING];
    code[0] = MPI_Alltoall(s, -1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_string(code[0], at_once[0], &len);
    code[1] = MPI_Alltoall(s, 1, MPI_INT, r, -1, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_string(code[1], at_once[1], &len);
    code[2] = MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT,
                            MPI_COMM_WORLD);
    MPI_Error_string(code[2], at_once[2], &len);
    code[3] = MPI_Alltoall(s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_string(code[3], at_once[3], &len);
    const int classes[4] = {MPI_ERR_COUNT, MPI_ERR_COUNT, MPI_ERR_COUNT, MPI_ERR_TYPE};
    char what[160];
    for (int i = 0; i < 4; i++) {
        int cls = -1;
        MPI_Error_class(code[i], &cls);
        MPI_Error_string(code[i], later, &len);
        if (rank == 0)
            printf("code %d: %s\n", i, at_once[i]);
        snprintf(what, sizeof what, "code %d has its class", i);
        check(what, cls == classes[i]);
        snprintf(what, sizeof what, "code %d keeps its string after later errors", i);
        check(what, strcmp(later, at_once[i]) == 0);
    }
    if (rank == 0)
        printf("errcodes: %d passed, %d failed\n", passes, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
