/*
 * shm_errors.c: the shared-memory collectives (runtime_c/shm, -DAAPC_INTERCEPT_SHM) raise an
 * invalid root or count through the communicator's error handler, as the MPI library does.
 *
 * Every rank makes the same mistake on a duplicate of MPI_COMM_WORLD whose handler counts its
 * calls and returns: MPI_Bcast and MPI_Reduce with a root out of range, MPI_Allreduce,
 * MPI_Allgather and MPI_Alltoall with a negative count. Each must return an error of the
 * expected class and call the handler exactly once; a valid MPI_Bcast and MPI_Barrier after
 * them must succeed without calling it.
 *
 *   mpiexec -n 4 ./shm_errors     prints "shm_errors: N checks, F failed" on rank 0
 */
#include <mpi.h>
#include <stdio.h>

static int handled, failures, checks;

static void count_calls(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    handled++;
}

static void expect(const char *what, int rc, int want_class)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    int want_calls = want_class == MPI_SUCCESS ? 0 : 1;
    checks++;
    if (cls != want_class || handled != want_calls) {
        failures++;
        fprintf(stderr, "shm_errors: %s: class %d (want %d), handler called %d times (want %d)\n",
                what, cls, want_class, handled, want_calls);
    }
    handled = 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm comm;
    MPI_Errhandler eh;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_create_errhandler(count_calls, &eh);
    MPI_Comm_set_errhandler(comm, eh);
    int buf[64] = {0}, out[64 * 64] = {0};
    expect("MPI_Bcast root = size", MPI_Bcast(buf, 4, MPI_INT, p, comm), MPI_ERR_ROOT);
    expect("MPI_Reduce root = -1",
           MPI_Reduce(buf, out, 4, MPI_INT, MPI_SUM, -1, comm), MPI_ERR_ROOT);
    expect("MPI_Allreduce count = -1",
           MPI_Allreduce(buf, out, -1, MPI_INT, MPI_SUM, comm), MPI_ERR_COUNT);
    expect("MPI_Allgather count = -1",
           MPI_Allgather(buf, -1, MPI_INT, out, -1, MPI_INT, comm), MPI_ERR_COUNT);
    expect("MPI_Alltoall count = -1",
           MPI_Alltoall(buf, -1, MPI_INT, out, -1, MPI_INT, comm), MPI_ERR_COUNT);
    buf[0] = me == 0 ? 42 : 0;
    expect("MPI_Bcast valid", MPI_Bcast(buf, 1, MPI_INT, 0, comm), MPI_SUCCESS);
    checks++;
    if (buf[0] != 42)
        failures++;
    expect("MPI_Barrier", MPI_Barrier(comm), MPI_SUCCESS);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&eh);
    int all = 0, sum = 0;
    MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&checks, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("shm_errors: %d checks, %d failed\n", sum, all);
    MPI_Finalize();
    return all != 0;
}
