/*
 * aapc_fortran_args.c: the arguments of a Fortran call as the C binding takes them (the
 * Fortran entry points of aapc_fortran_alltoall.c; aapc_fortran.h).
 *
 * Algorithm: Open MPI's Fortran MPI_IN_PLACE and MPI_BOTTOM are common blocks
 * (mpi_fortran_in_place_, mpi_fortran_bottom_ for gfortran; the other manglings for other
 * compilers), defined in libmpi, in its Fortran libraries and in every program that includes
 * mpif.h. The dynamic linker binds every reference to one definition, the first in its search
 * order; the weak references below are bound to that same one (and stay NULL where no library
 * defines them), so a buffer argument equal to one of them is the sentinel, exactly the test of
 * Open MPI's own wrappers (OMPI_F2C_IN_PLACE, OMPI_F2C_BOTTOM). Integer arrays are used as
 * they are where MPI_Fint is an int (every default build), else copied. The Fortran .TRUE.
 * (1 for gfortran, -1 for some compilers) is what the library's own PMPI_INITIALIZED stores
 * after MPI_Init (asked once; 1 where no Fortran binding is loaded). Cost: a few pointer
 * comparisons per call; a copy of the counts only where MPI_Fint is not an int.
 */
#include "aapc_fortran.h" /* mpi.h: which MPI this is */

#if defined(AAPC_INTERCEPT) &&                                                                 \
    (defined(OPEN_MPI) || (defined(MPICH) && !defined(MPI_ABI_VERSION)))
#include <stddef.h>

/* The bindings' own MPI_INITIALIZED under each mangling (weak: NULL where undefined) */
extern void pmpi_initialized(MPI_Fint *flag, MPI_Fint *ierr) __attribute__((weak));
extern void pmpi_initialized_(MPI_Fint *flag, MPI_Fint *ierr) __attribute__((weak));
extern void pmpi_initialized__(MPI_Fint *flag, MPI_Fint *ierr) __attribute__((weak));
extern void PMPI_INITIALIZED(MPI_Fint *flag, MPI_Fint *ierr) __attribute__((weak));

MPI_Fint aapc_fortran_true(void)
{
    static MPI_Fint known; /* 0: not asked yet (.TRUE. is never 0) */
    MPI_Fint t = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (t != 0)
        return t;
    void (*ask)(MPI_Fint *, MPI_Fint *) = pmpi_initialized_    ? pmpi_initialized_
                                          : pmpi_initialized   ? pmpi_initialized
                                          : pmpi_initialized__ ? pmpi_initialized__
                                                               : PMPI_INITIALIZED;
    MPI_Fint flag = 0, ierr = 0;
    if (ask != NULL)
        ask(&flag, &ierr);
    t = ask != NULL && ierr == 0 && flag != 0 ? flag : 1; /* called after MPI_Init: true */
    __atomic_store_n(&known, t, __ATOMIC_RELAXED);
    return t;
}
#endif

#if defined(AAPC_INTERCEPT) && defined(OPEN_MPI)
#include <stdlib.h>

#include "aapc_mpi.h" /* aapc_peers */

/* Open MPI's Fortran sentinels under each name mangling (weak: NULL where undefined) */
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));

static int is_one_of(const void *buf, const void *a, const void *b, const void *c, const void *d)
{
    return buf != NULL && (buf == a || buf == b || buf == c || buf == d);
}

void *aapc_fortran_buffer(void *buf, int in_place_ok)
{
    if (in_place_ok && is_one_of(buf, &MPI_FORTRAN_IN_PLACE, &mpi_fortran_in_place,
                                 &mpi_fortran_in_place_, &mpi_fortran_in_place__))
        return MPI_IN_PLACE;
    if (is_one_of(buf, &MPI_FORTRAN_BOTTOM, &mpi_fortran_bottom, &mpi_fortran_bottom_,
                  &mpi_fortran_bottom__))
        return MPI_BOTTOM;
    return buf;
}

const int *aapc_fortran_ints(const MPI_Fint *a, int n, int **copy)
{
    *copy = NULL;
    if (sizeof(MPI_Fint) == sizeof(int) || a == NULL)
        return (const int *)(const void *)a;
    *copy = malloc(sizeof **copy * (size_t)(n > 0 ? n : 1));
    if (*copy == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        (*copy)[i] = (int)a[i];
    return *copy;
}

int aapc_fortran_peers(MPI_Comm comm)
{
    int n = 0;
    return comm != MPI_COMM_NULL && aapc_peers(comm, &n) == MPI_SUCCESS ? n : 0;
}
#endif
