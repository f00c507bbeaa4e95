/* abi_notice.c: a C program that looks, to the library, like a Fortran one under the MPI ABI:
 * it defines mpi_alltoall_ (the Fortran binding's name; build with -rdynamic so the dynamic
 * linker sees it) unless built with -DNO_FORTRAN, and makes one MPI_Alltoall. The library built
 * with mpicc_abi must say once, at start-up, that Fortran calls go to the MPI library
 * (runtime_c/fortran/aapc_fortran_abi.c); tests/test_fortran.py runs it. */
#include <mpi.h>
#include <stdio.h>

#ifndef NO_FORTRAN
void mpi_alltoall_(void);
void mpi_alltoall_(void) {} /* never called: only its presence matters */
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, ok = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int send[64], recv[64];
    for (int i = 0; i < size && i < 64; i++)
        send[i] = rank * 100 + i;
    int rc = MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size && i < 64; i++)
        ok &= recv[i] == i * 100 + rank;
    if (rank == 0)
        printf("abi_notice: %s\n", rc == MPI_SUCCESS && ok ? "ok" : "wrong");
    MPI_Finalize();
    return 0;
}
